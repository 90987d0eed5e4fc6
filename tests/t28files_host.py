"""Run as its own process by ``test_side_effect_tester28_files.py`` (``python t28files_host.py
scoped|enforce DIR``): which hash-based caches a read may write (F10), what becomes of a cache temp
a read leaves (F13), and a delayed log handler made in a read (F4), at one side-effect level.
Prints one JSON object: for each case ``"allowed"`` or ``"refused"``, and what the files are after.
"""

from __future__ import annotations

import contextvars
import importlib.util
import json
import logging
import os
import py_compile
import sys
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects import levels, scratch_dir
from mcp_providers._sideeffects.levels import enter_scope, exit_scope
from mcp_providers.errors import SideEffectRefused

MODE, DIR = sys.argv[1], sys.argv[2]
seen: dict[str, Any] = {}
temps = iter(range(1000, 2000))
sys.dont_write_bytecode = False
Unchecked, Checked = py_compile.PycInvalidationMode.UNCHECKED_HASH, py_compile.PycInvalidationMode.CHECKED_HASH
Stamp = py_compile.PycInvalidationMode.TIMESTAMP


def in_read(label: str, fn: Callable[[], Any]) -> None:
    """``fn`` inside a guarded read: ``seen[label]`` says whether the read was refused (in its code,
    swallowed by a library, or when its scope ended)."""
    scope, token = enter_scope("p", "pl", f"res://{label}", "read", "enforce")
    try:
        fn()
        seen[label] = "refused" if scope.refused is not None else "allowed"
    except SideEffectRefused:
        seen[label] = "refused"
    finally:
        left = exit_scope(scope, token)
    if left is not None:
        seen[label] = "refused"


def source(name: str, text: str) -> tuple[str, str]:
    """``(source, cache)`` of a new module ``name`` holding ``text``."""
    path = os.path.join(DIR, name + ".py")
    with open(path, "w") as f:
        f.write(text)
    cache = importlib.util.cache_from_source(path)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    return path, cache


def compiled(path: str, mode: py_compile.PycInvalidationMode) -> bytes:
    """What the import system writes for ``path`` in ``mode`` (``py_compile`` into a file of its own)."""
    out = os.path.join(DIR, "compiled-" + os.path.basename(path) + "c")
    py_compile.compile(path, cfile=out, doraise=True, invalidation_mode=mode)
    with open(out, "rb") as f:
        return f.read()


def via_temp(cache: str, data: bytes) -> None:
    """As ``importlib._bootstrap_external._write_atomic``: an O_EXCL temp, then ``os.replace``."""
    temp = f"{cache}.{next(temps)}"
    fd = os.open(temp, os.O_EXCL | os.O_CREAT | os.O_WRONLY, 0o666)
    os.write(fd, data)
    os.close(fd)
    os.replace(temp, cache)


def rewrite(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
    st = os.stat(path)
    os.utime(path, (st.st_atime, st.st_mtime + 2))


if MODE == "enforce":
    levels.install()
else:
    levels.install_scoped()

# -- F10: a hash-based cache only where the import system would write one -------------------------
for flags, mode in (("unchecked", Unchecked), ("checked", Checked), ("timestamp", Stamp)):
    path, cache = source(f"fresh_{flags}", "V = 1\n")
    data = compiled(path, mode)
    in_read(f"a {flags} cache where there is none", lambda c=cache, d=data: via_temp(c, d))
for old, new in (("checked", Checked), ("checked", Unchecked), ("checked", Stamp), ("unchecked", Unchecked)):
    path, cache = source(f"stale_{old}_{new.name.lower()}", "V = 1\n")
    py_compile.compile(path, cfile=cache, doraise=True, invalidation_mode=Checked if old == "checked" else Unchecked)
    rewrite(path, "V = 2\n")
    data = compiled(path, new)
    in_read(f"a {new.name.lower()} cache over a stale {old} one", lambda c=cache, d=data: via_temp(c, d))
pinned, pinned_cache = source("pinned", "V = 'old'\n")
pinned_data = compiled(pinned, Unchecked)
in_read("the repro's unchecked cache", lambda: via_temp(pinned_cache, pinned_data))
rewrite(pinned, "V = 'new'\n")
sys.path.insert(0, DIR)
seen["pinned.V"] = importlib.import_module("pinned").V


# -- F13: a cache temp the read leaves ------------------------------------------------------------
def left_temp(cache: str, names: list[str]) -> Callable[[], None]:
    def run() -> None:
        for name in names:
            fd = os.open(f"{cache}.{name}", os.O_EXCL | os.O_CREAT | os.O_WRONLY, 0o666)
            os.write(fd, b"not bytecode " * 1000)
            os.close(fd)

    return run


_, stash = source("stash", "V = 1\n")
in_read("a temp left behind", left_temp(stash, ["1"]))
in_read("two temps of one cache", left_temp(stash, ["2", "3"]))
in_read(
    "a temp named by other digits", lambda: (left_temp(stash, ["\u0661\u0662"])(), os.remove(f"{stash}.\u0661\u0662"))
)


def two_at_once() -> None:
    first, second = f"{stash}.4", f"{stash}.5"
    os.close(os.open(first, os.O_EXCL | os.O_CREAT | os.O_WRONLY, 0o666))
    try:
        os.close(os.open(second, os.O_EXCL | os.O_CREAT | os.O_WRONLY, 0o666))
    finally:
        for temp in (first, second):
            if os.path.exists(temp):
                os.remove(temp)


in_read("two temps of one cache at once, both removed", two_at_once)
contexts: list[contextvars.Context] = []
in_read("a context kept for later", lambda: contexts.append(contextvars.copy_context()))
try:  # work the read started, outliving it: nothing would sweep a temp it made
    contexts[0].run(left_temp(stash, ["6"]))
    seen["a temp made after the read ended"] = "allowed"
except SideEffectRefused:
    seen["a temp made after the read ended"] = "refused"
seen["left in __pycache__"] = sorted(n for n in os.listdir(os.path.dirname(stash)) if n.startswith("stash."))
lazy, _ = source("lazy_first_import", "VALUE = 42\n")
in_read("a first import", lambda: importlib.import_module("lazy_first_import"))
seen["first import cached"] = os.path.isfile(importlib.util.cache_from_source(lazy))


# -- F4: a log handler made in a read, whatever its delay --------------------------------------
def delayed_handler(name: str) -> Callable[[], None]:
    def run() -> None:
        logging.getLogger("host.app").addHandler(logging.FileHandler(os.path.join(DIR, name), delay=True))

    return run


def scratch_handler() -> None:
    handler = logging.FileHandler(os.path.join(scratch_dir(), "own.log"), delay=True)
    handler.close()


in_read("a delayed handler made in a read", delayed_handler("delayed.log"))
in_read("a delayed handler on the scratch folder", scratch_handler)
logging.getLogger("host.app").warning("the host logs, later")
seen["delayed.log made"] = os.path.exists(os.path.join(DIR, "delayed.log"))
print(json.dumps(seen))
