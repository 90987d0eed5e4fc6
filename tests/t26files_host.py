"""Run as its own process by ``test_side_effect_tester26_files.py`` (``python t26files_host.py
scoped|enforce DIR``): what a read may do to bytecode caches, ``sys.pycache_prefix`` and a host's log
handler, at one side-effect level. Prints one JSON object: for each case ``"allowed"`` or
``"refused"`` (a ``SideEffectRefused``), and what the files hold afterwards.
"""

from __future__ import annotations

import builtins
import contextvars
import ctypes
import importlib
import importlib.util
import io
import json
import logging
import logging.handlers
import marshal
import mmap
import os
import py_compile
import stat
import struct
import sys
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects import bytecode, levels
from mcp_providers._sideeffects.levels import enter_scope, exit_scope
from mcp_providers.errors import SideEffectRefused

MODE, DIR = sys.argv[1], sys.argv[2]
seen: dict[str, Any] = {}
temps = iter(range(1000, 2000))  # a refused replace leaves its temp: each case makes a new one
sys.dont_write_bytecode = False


def path(*names: str) -> str:
    return os.path.join(DIR, *names)


def in_read(label: str, fn: Callable[[], Any]) -> None:
    """``fn`` inside a guarded read: ``seen[label]`` says whether its writes were allowed."""
    scope, token = enter_scope("p", "pl", f"res://{label}", "read", "enforce")
    try:
        fn()
        seen[label] = "refused" if scope.refused is not None else "allowed"  # a handler swallows it
    except SideEffectRefused:
        seen[label] = "refused"
    except OSError as err:  # allowed, and the file system said no
        seen[label] = f"allowed ({type(err).__name__})"
    finally:
        exit_scope(scope, token)


def write_source(name: str, text: str) -> str:
    with open(path(name + ".py"), "w") as f:
        f.write(text)
    return path(name + ".py")


def planted(source: str, text: str) -> bytes:
    """A valid timestamp pyc for ``source`` (its mtime and size) whose code is ``text``'s."""
    st = os.stat(source)
    header = importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size)
    return header + marshal.dumps(compile(text, source, "exec"))


def honest(source: str, mode: py_compile.PycInvalidationMode) -> bytes:
    """What the import system would write for ``source``: ``py_compile`` into a file of its own."""
    out = path("honest-" + os.path.basename(source) + "c")
    py_compile.compile(source, cfile=out, doraise=True, invalidation_mode=mode)
    with open(out, "rb") as f:
        return f.read()


def via_temp(cache: str, data: bytes, *, keep_open: bool = False) -> None:
    """As ``importlib._bootstrap_external._write_atomic``: an O_EXCL temp, then ``os.replace``."""
    temp = f"{cache}.{next(temps)}"
    fd = os.open(temp, os.O_EXCL | os.O_CREAT | os.O_WRONLY, 0o666)
    if keep_open:
        os.write(fd, data)
        try:
            os.replace(temp, cache)
        finally:
            os.close(fd)
        return
    with io.FileIO(fd, "wb") as file:
        file.write(data)
    os.replace(temp, cache)


def native_mapping() -> tuple[Any, Any]:
    """``mmap(2)`` and ``munmap(2)`` through ``ctypes``, loaded and looked up by the host before any
    read (in a read, loading a library and looking a function up are refused themselves)."""
    libc = ctypes.CDLL(None, use_errno=True)
    mapper, unmapper = libc.mmap, libc.munmap
    mapper.restype = ctypes.c_void_p
    mapper.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    unmapper.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return mapper, unmapper


def held_map(cache: str, data: bytes) -> None:
    """An honest temp written, then a shared mapping of it made (by the host's code: ``mmap(2)``
    through ``ctypes``, which keeps no descriptor, unlike ``mmap.mmap``) and its descriptor closed,
    then replaced: the mapping could write it after it was judged."""
    temp = f"{cache}.{next(temps)}"
    fd = os.open(temp, os.O_EXCL | os.O_CREAT | os.O_RDWR, 0o666)
    os.write(fd, data)
    shared = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED
    address = contextvars.Context().run(MAPPING[0], None, len(data), *shared, fd, 0)
    os.close(fd)
    seen["mapped temp reached the replace"] = True  # refused there, not before (ctypes in a read is)
    try:
        os.replace(temp, cache)
    finally:
        contextvars.Context().run(MAPPING[1], address, len(data))


def content(name: str) -> bytes | None:
    try:
        with open(name, "rb") as f:
            return f.read()
    except OSError:
        return None


MAPPING = native_mapping()
if MODE == "enforce":
    levels.install()
else:
    levels.install_scoped()
sys.path.insert(0, DIR)

# -- F4: bytecode caches ------------------------------------------------------------------------
victim = write_source("victim", "X = 1\n")
cache = importlib.util.cache_from_source(victim)
os.makedirs(os.path.dirname(cache), exist_ok=True)
evil = planted(victim, "X = 2\n")
good = honest(victim, py_compile.PycInvalidationMode.TIMESTAMP)


def plant_open() -> None:
    with open(cache, "wb") as out:
        out.write(evil)


in_read("open a cache for writing", plant_open)
in_read("os.open a cache for writing", lambda: os.close(os.open(cache, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)))
in_read("replace a planted temp into a cache", lambda: via_temp(cache, evil))
in_read("replace an honest temp held open", lambda: via_temp(cache, good, keep_open=True))
in_read("replace an honest temp mapped", lambda: held_map(cache, good))
seen["cache after plants"] = content(cache) is None
in_read("replace an honest temp into a cache", lambda: via_temp(cache, good))
seen["cache is the honest one"] = content(cache) == good
in_read("remove a cache", lambda: os.remove(cache))
in_read("rename a cache away", lambda: os.rename(cache, path("moved.pyc")))
in_read("truncate a cache", lambda: os.truncate(cache, 0))
in_read("chmod a cache", lambda: os.chmod(cache, stat.S_IRUSR))
in_read(
    "replace a cache by another cache",
    lambda: os.replace(cache, importlib.util.cache_from_source(victim, optimization=1)),
)
seen["cache kept"] = content(cache) == good


def reopen_temp() -> None:
    temp = f"{cache}.{next(temps)}"
    os.close(os.open(temp, os.O_EXCL | os.O_CREAT | os.O_WRONLY))
    with open(temp, "wb") as out:  # an existing temp opened again: no O_EXCL
        out.write(good)


def linked_temp() -> None:
    temp = f"{cache}.{next(temps)}"
    with io.FileIO(os.open(temp, os.O_EXCL | os.O_CREAT | os.O_WRONLY), "wb") as out:
        out.write(good)
    contextvars.Context().run(os.link, temp, path("second-name"))  # the host's code, outside the read
    os.replace(temp, cache)


def header(magic: bytes = importlib.util.MAGIC_NUMBER, flags: int = 0, stamp: bytes | None = None) -> bytes:
    return magic + struct.pack("<I", flags) + (good[8:16] if stamp is None else stamp) + good[16:]


def remade_while_judged() -> None:
    """Another thread of the read, while this replace is judged: moves the honest temp onto the
    cache itself, then makes the temp's name again with other bytes (run here, inside the
    judgement, so the interleaving is certain): the judged replace would move those."""
    temp = f"{cache}.{next(temps)}"
    with io.FileIO(os.open(temp, os.O_EXCL | os.O_CREAT | os.O_WRONLY), "wb") as out:
        out.write(good)
    real = bytecode.same_code

    def meddling(found: Any, expected: Any) -> bool:
        bytecode.same_code = real
        os.replace(temp, cache)
        try:
            with io.FileIO(os.open(temp, os.O_EXCL | os.O_CREAT | os.O_WRONLY), "wb") as out:
                out.write(evil)
        except SideEffectRefused:
            seen["remake a temp while judged"] = "refused"
        return real(found, expected)

    bytecode.same_code = meddling
    os.replace(temp, cache)


def with_stdlib_replaced(module: Any, name: str, fake: Any) -> Callable[[], None]:
    """A planted temp replaced while a read has swapped a stdlib function the judgement could use."""

    def run() -> None:
        real = getattr(module, name)
        setattr(module, name, fake)
        try:
            via_temp(cache, evil)
        finally:
            setattr(module, name, real)

    return run


honest_code = compile("X = 1\n", victim, "exec")
in_read("a planted temp with marshal.loads replaced", with_stdlib_replaced(marshal, "loads", lambda _b: honest_code))
in_read(
    "a planted temp with compile replaced",
    with_stdlib_replaced(builtins, "compile", lambda *_a, **_k: marshal.loads(evil[16:])),
)
seen["cache after swapped functions"] = content(cache) == good
seen["remake a temp while judged"] = "allowed"
in_read("replace while the temp is remade", remade_while_judged)
seen["cache after a remade temp"] = content(cache) == good
in_read(
    "create a temp of a cache of no source",
    lambda: os.close(os.open(cache.replace("victim", "nosource") + ".1", os.O_EXCL | os.O_CREAT | os.O_WRONLY)),
)
in_read("reopen a cache temp for writing", reopen_temp)
in_read("replace a temp with a second link", linked_temp)
in_read("replace a temp of another magic", lambda: via_temp(cache, header(magic=b"\x00\x00\r\n")))
in_read(
    "replace a temp of another mtime", lambda: via_temp(cache, header(stamp=struct.pack("<II", 1, len(b"X = 1\n"))))
)
seen["cache still kept"] = content(cache) == good


def others_temp() -> str:
    """A temp of the cache that another writer is making (the import system in another process,
    or the host outside any read): created and written honestly, not yet replaced onto the cache."""
    temp = f"{cache}.{next(temps)}"
    with io.FileIO(os.open(temp, os.O_EXCL | os.O_CREAT | os.O_WRONLY), "wb") as out:
        out.write(good)
    return temp


def write_into(temp: str, flags: int) -> Callable[[], None]:
    """The read writes into a temp it did not create; the other writer replaces it onto the cache
    while the read still runs (unjudged: not a read), so the read's end finds no temp to sweep."""

    def run() -> None:
        try:
            with io.FileIO(os.open(temp, flags), "wb") as out:
                out.write(evil)
        finally:
            contextvars.Context().run(os.replace, temp, cache)

    return run


for label, flags in (("", os.O_WRONLY | os.O_TRUNC), (" with O_CREAT", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
    in_read("write into another writer's cache temp" + label, write_into(others_temp(), flags))
    seen["cache after another writer's temp" + label] = content(cache) == good

hashed = write_source("hashed", "Y = 0\n")
hashed_cache = importlib.util.cache_from_source(hashed)  # a checked hash-based cache, then its source edited:
CHECKED = py_compile.PycInvalidationMode.CHECKED_HASH
py_compile.compile(hashed, cfile=hashed_cache, doraise=True, invalidation_mode=CHECKED)
hashed = write_source("hashed", "Y = 3\n")  # the import system would write a checked one (tester 28 F10)
hashed_good = honest(hashed, CHECKED)
hashed_wrong = hashed_good[:8] + b"\x00" * 8 + hashed_good[16:]
in_read("replace a temp of another hash", lambda: via_temp(hashed_cache, hashed_wrong))
in_read("replace an honest hash-based temp", lambda: via_temp(hashed_cache, hashed_good))
other = write_source("other", "Z = 4\n")
in_read("replace another source's honest temp", lambda: via_temp(importlib.util.cache_from_source(other), good))

lazy = write_source("lazy_first_import", "VALUE = 42\n")
in_read("first import", lambda: importlib.import_module("lazy_first_import"))
seen["first import cached"] = os.path.isfile(importlib.util.cache_from_source(lazy))
seen["first import value"] = sys.modules["lazy_first_import"].VALUE
sys.modules.pop("victim", None)
seen["victim.X"] = importlib.import_module("victim").X

# -- F9: sys.pycache_prefix set in a read -------------------------------------------------------


def prefixed(fn: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        old = sys.pycache_prefix
        sys.pycache_prefix = path("prefix")
        try:
            fn()
        finally:
            sys.pycache_prefix = old

    return run


os.mkdir(path("prefix"))
in_read(
    "makedirs under a prefix set in the read", prefixed(lambda: os.makedirs(path("prefix", "made", "by", "a", "read")))
)
seen["prefix made"] = os.path.exists(path("prefix", "made"))
deep: list[str] = []
prefixed(lambda: deep.append(importlib.util.cache_from_source(victim)))()  # victim.py's cache under it
os.makedirs(os.path.dirname(deep[0]))
in_read(
    "a cache temp under a prefix set in the read",
    prefixed(lambda: os.close(os.open(deep[0] + ".1", os.O_EXCL | os.O_CREAT | os.O_WRONLY))),
)
seen["prefixed temp made"] = os.path.exists(deep[0] + ".1")

# -- F10: a host log handler retargeted in a read ------------------------------------------------
with open(path("victim.cfg"), "w") as f:
    f.write("important = true\n")
handler = logging.FileHandler(path("app.log"), delay=True)
host = logging.getLogger("host")
host.addHandler(handler)
host.propagate = False


def retarget(base: str, mode: str) -> Callable[[], None]:
    def run() -> None:
        saved = handler.baseFilename, handler.mode, handler.stream
        handler.baseFilename, handler.mode, handler.stream = base, mode, None  # type: ignore[assignment]
        try:
            host.error("written by a resource read")
        finally:
            if handler.stream is not None:
                handler.stream.close()
            handler.baseFilename, handler.mode, handler.stream = saved

    return run


levels.install_scoped()  # a composition's start (scoped: the handler is seen here)
err = io.StringIO()
sys.stderr, stderr = err, sys.stderr
try:
    in_read("log to the host log", lambda: host.error("a record"))
    in_read("retarget the host handler", retarget(path("victim.cfg"), "w"))
    in_read("reopen the host log in mode w", retarget(path("app.log"), "w"))
    rotating = logging.handlers.RotatingFileHandler(path("r.log"), maxBytes=100, backupCount=2, delay=True)
    host.addHandler(rotating)
    levels.install_scoped()  # seen (scoped) while no read runs
    with open(path("cfg.1"), "w") as f:
        f.write("kept")

    def remove_retargeted() -> None:  # as its rollover would, under its lock: a rotation of "cfg"?
        saved = rotating.baseFilename
        rotating.baseFilename = path("cfg")
        rotating.acquire()
        try:
            os.remove(path("cfg.1"))
        finally:
            rotating.release()
            rotating.baseFilename = saved

    in_read("remove a rotation of a retargeted handler", remove_retargeted)

    # Its rollover settings: a namer set after it was made (the cookbook's way), before any read
    named = logging.handlers.RotatingFileHandler(path("n.log"), maxBytes=60, backupCount=2, delay=True)
    named.namer = lambda name: name.replace("n.log.", "n-") + ".log"
    rolls = logging.getLogger("host.rolls")
    rolls.addHandler(named)
    rolls.propagate = False
    levels.install_scoped()
    with open(path("victim2.cfg"), "w") as f:
        f.write("important = true\n")
    in_read(
        "roll over with the host's namer", lambda: [rolls.error("a record long enough to roll over") for _ in range(3)]
    )
    seen["named rotations"] = sorted(n for n in os.listdir(DIR) if n.startswith("n"))

    def under_lock(change: Callable[[], None], write: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:  # as the handler's own rollover would: its lock held, its stream closed
            saved = named.namer, named.rotator, named.backupCount, named.stream
            change()
            named.acquire()
            try:
                named.stream = None  # type: ignore[assignment]
                write()
            finally:
                named.namer, named.rotator, named.backupCount, named.stream = saved
                named.release()

        return run

    def retarget_namer() -> None:
        named.namer = lambda name: path("victim2.cfg")

    def set_rotator() -> None:
        named.rotator = lambda source, dest: None

    def set_backups() -> None:
        named.backupCount = 500

    with open(path("n-400.log"), "w") as f:
        f.write("kept")
    in_read("a namer set in a read names a victim", under_lock(retarget_namer, lambda: os.remove(path("victim2.cfg"))))
    in_read("a rotator set in a read removes the log", under_lock(set_rotator, lambda: os.remove(path("n.log"))))
    in_read("a backup count set in a read", under_lock(set_backups, lambda: os.remove(path("n-400.log"))))
    seen["victim2.cfg"] = (content(path("victim2.cfg")) or b"(removed)").decode()
finally:
    sys.stderr = stderr
seen["victim.cfg"] = content(path("victim.cfg")).decode()  # type: ignore[union-attr]
seen["app.log"] = content(path("app.log")).decode()  # type: ignore[union-attr]
print(json.dumps(seen))
