"""The import system's bytecode caches (PEP 3147, 488, 552): which writes to them a guarded call may
make (tester twenty-six F4, F9).

A lazy import inside a read writes its cache as ``importlib._bootstrap_external._write_atomic``
does: a temporary file ``<cache>.<id>`` opened ``O_EXCL | O_CREAT | O_WRONLY``, its bytes written
and the descriptor closed, then ``os.replace(temp, cache)``. So, in a scope:

- the temporary file of a cache (``<cache>.<ASCII digits>``) may be created (``O_EXCL`` and
  ``O_CREAT``: never an existing file reopened; while the call runs, and not while another temp
  of the same cache it made is there) and removed (the import system's clean-up when the replace
  fails); one the call leaves is removed when its scope ends and refuses the call (:func:`sweep`;
  tester twenty-eight F13);
- a rename or replace of that temporary file onto *its* cache passes only when its bytes are what
  the import system would write for the source, judged at the ``os.rename`` audit event, before
  the cache is visible: this interpreter's magic number; the flags the import system would write
  there then (:func:`flags_written`: a hash-based cache only over a hash-based one it checks, with
  the same flags, so a read never makes an unchecked cache that pins a module's code past later
  edits of its source; tester twenty-eight F10), with the source's mtime and size (flags 0) or
  hash (:func:`importlib.util.source_hash`); and a code object
  equal to ``compile()`` of the source at the optimization level the cache's name says (code
  objects compared, with the fields ``==`` leaves out, not marshal bytes). No descriptor or memory
  mapping of this process may hold the temporary file then, and it has no other link: writes
  through one could change the bytes after they were judged; and while it is judged its name is
  not made again (another thread could move the judged file away and make a new one there);
- the cache path itself is never opened for writing, removed, truncated, chmod-ed, linked or
  renamed away;
- folders: ``__pycache__`` beside ``.py`` files, and any under ``sys.pycache_prefix`` *as it was
  when the scope's machinery was installed* (:func:`record_prefix`). A read that sets the live
  attribute exempts nothing by it.

A cache path is ``<folder>/__pycache__/<name>.<cache tag>[.opt-N].pyc`` beside ``<folder>/<name>.py``,
or the same name under the recorded prefix followed by the source's folder, and its source exists.

Cost: nothing on an allowed write of any other file; on a temp's creation, one ``lstat`` per
temp the call made before; at the call's end, one per temp it made (none for a call that imported
nothing new); on a cache's replace, one read of the cache's header, of the temporary file and the
source, a ``compile()`` of the source, and a look at ``/proc/self/fd`` and ``/proc/self/maps`` (a
first import in a read; later imports find the cache). Measured with cachegrind
(``PYTHONHASHSEED=0``), before the header read and the temp bookkeeping (tester twenty-eight): a
first import of a 400-line module in a read, 28.7 million instructions more than outside one,
27.7 million of them this judgement (chiefly its compile).

Not covered: a descriptor of the temporary file held by another process (a read starts none).
"""

from __future__ import annotations

import _imp
import collections
import contextlib
import importlib.util
import marshal
import os
import stat
import struct
import sys
import threading
import types
from typing import Any

from mcp_providers._sideeffects.scope import Scope, scope_var
from mcp_providers.errors import SideEffectRefused

_prefix: list[str | None] = [None]  # sys.pycache_prefix, resolved, as it was at install (record_prefix)
_recorded: list[bool] = [False]
_check_mode: list[str] = ["default"]  # _imp.check_hash_based_pycs as it was at install (record_prefix)
_os_open = getattr(os.open, "__wrapped__", os.open)  # the builtin: this runs inside the audit hook
_judging: collections.Counter[str] = collections.Counter()
"""The temporary files whose replace is being judged now. Their names may not be made again
meanwhile (an ``O_EXCL`` create after another thread moved the judged file away): the rename
that follows the judgement would move the new file. The rename's system call comes right after
the audit hook returns, with no other Python code between."""
_judging_lock = threading.Lock()
# The functions and constants the judgement uses, bound when this module is imported: a read that
# swaps ``builtins.compile`` or ``marshal.loads`` for its own judges nothing by them.
_compile, _loads, _source_hash = compile, marshal.loads, importlib.util.source_hash
_MAGIC, _TAG = importlib.util.MAGIC_NUMBER, sys.implementation.cache_tag
_HEADER = 16  # magic, flags, then mtime and size or an 8-byte source hash (PEP 552)
# What code objects' == leaves out (CPython's code_richcompare), compared here too; co_filename is
# set to the source's path by the import system when it loads a cache.
_FIELDS = ("co_stacksize", "co_nlocals", "co_flags", "co_qualname", "co_varnames", "co_cellvars", "co_freevars")


def record_prefix() -> None:
    """Read ``sys.pycache_prefix`` and the hash-based caches' check mode (``--check-hash-based-pycs``)
    once, when the scope's machinery is installed; later changes of the live attributes (a read's
    own included) move no exemption."""
    if not _recorded[0]:
        prefix = sys.pycache_prefix
        _prefix[0] = os.path.realpath(prefix) if prefix else None
        _check_mode[0] = str(getattr(_imp, "check_hash_based_pycs", "default"))
        _recorded[0] = True


def is_cache_dir(path: str) -> bool:
    """Whether ``path`` (resolved) is a folder the import system makes for its caches: a
    ``__pycache__`` beside ``.py`` files, or one under the recorded prefix."""
    root = _prefix[0]
    if root is not None and (path == root or path.startswith(root + os.sep)):
        return True
    parent, name = os.path.split(path)
    try:
        return name == "__pycache__" and any(n.endswith(".py") for n in os.listdir(parent))
    except OSError:
        return False


def cache_source(path: str) -> tuple[str, int] | None:
    """``(source path, optimization level)`` when ``path`` (resolved) is a cache path of this
    interpreter whose source exists, else None."""
    folder, name = os.path.split(path)
    stem, dot, tail = name.rpartition(".")
    tag = _TAG
    if not dot or tail != "pyc" or tag is None:
        return None
    level = 0
    for n in (1, 2):
        if stem.endswith(f".opt-{n}"):
            stem, level = stem[: -len(f".opt-{n}")], n
    base, dot, found_tag = stem.rpartition(".")
    if not dot or found_tag != tag or not base or "." in base:
        return None
    folders = [os.path.dirname(folder)] if os.path.basename(folder) == "__pycache__" else []
    root = _prefix[0]
    if root is not None and folder.startswith(root + os.sep):
        folders.append(folder[len(root) :])  # the prefix, then the source's absolute folder
    for source_folder in folders:
        source = os.path.join(source_folder, base + ".py")
        if os.path.isfile(source):
            return source, level
    return None


def temp_of(path: str) -> str | None:
    """The cache ``path`` (resolved) is the import system's temporary file ``<cache>.<id>`` of, if
    any: ``<id>`` in ASCII digits, as ``_write_atomic`` names it (``id()`` of the path)."""
    cache, dot, tail = path.rpartition(".")
    if dot and tail.isascii() and tail.isdigit() and cache_source(cache) is not None:
        return cache
    return None


def _one_temp(temp: str) -> bool:
    """Whether the calling scope may create ``temp`` (resolved, a cache's temp): while it runs, and
    while no temp of the same cache it made is still there (the import system makes one at a time
    per cache: its module lock holds around the write). Recorded for :func:`sweep`."""
    scope = scope_var.get()
    if scope is None:
        return True
    if scope.ended:
        return False  # work outliving the call: nothing would sweep what it leaves
    cache = temp.rpartition(".")[0]
    with _judging_lock:
        if any(made.rpartition(".")[0] == cache and os.path.lexists(made) for made in scope.cache_temps):
            return False
        scope.cache_temps.append(temp)
    return True


def sweep(scope: Scope) -> SideEffectRefused | None:
    """At the end of ``scope`` (before it is closed): remove each cache temp it created that is
    still there (neither replaced onto its cache nor removed: the import system leaves none), and
    record it as an attempt of the call (tester twenty-eight F13: a read filling ``__pycache__``).

    :returns: the refusal the call is answered with (enforce mode), else None (none left, or warn
        mode: recorded in :attr:`Scope.violations`)."""
    left = [temp for temp in scope.cache_temps if os.path.lexists(temp)]
    scope.cache_temps.clear()
    if not left:
        return None
    token = scope_var.set(None)  # the clean-up is the core's, not the call's
    try:
        for temp in left:
            with contextlib.suppress(OSError):
                os.remove(temp)
    finally:
        scope_var.reset(token)
    try:
        scope.attempt(f"leaving the bytecode cache temp {', '.join(left)} behind (removed)", "file", paths=left)
    except SideEffectRefused as refused:
        return refused
    return None


def expected_cache_write(event: str, args: tuple[Any, ...], paths: list[str]) -> bool:
    """Whether an audited write (``paths`` resolved) is one the import system makes for a cache:
    the exclusive creation of a temporary file, its removal, or its replace onto its own cache
    with honest bytes (:func:`honest`)."""
    if event == "open":
        flags = args[2] if len(args) > 2 and type(args[2]) is int else 0
        creates = flags & (os.O_EXCL | os.O_CREAT) == os.O_EXCL | os.O_CREAT
        return creates and temp_of(paths[0]) is not None and not _judging[paths[0]] and _one_temp(paths[0])
    if event == "os.remove":
        return temp_of(paths[0]) is not None
    if event == "os.rename" and len(paths) == 2:
        if temp_of(paths[0]) != paths[1]:
            return False
        with _judging_lock:
            _judging[paths[0]] += 1
        try:
            return honest(paths[0], paths[1])
        finally:
            with _judging_lock:
                _judging[paths[0]] -= 1
                if not _judging[paths[0]]:
                    del _judging[paths[0]]
    return False


def honest(temp: str, cache: str) -> bool:
    """Whether ``temp`` holds what the import system would write at ``cache`` for its source, and
    nothing in this process can change it any more (no descriptor, mapping or other link)."""
    found = cache_source(cache)
    if found is None or _held(temp):
        return False
    source, level = found
    try:
        data = _read_alone(temp)
        with open(source, "rb") as f:
            source_bytes, source_stat = f.read(), os.fstat(f.fileno())
    except OSError:
        return False
    if data is None or len(data) < _HEADER or data[:4] != _MAGIC:
        return False
    flags = int.from_bytes(data[4:8], "little")
    if flags != flags_written(cache):
        return False
    if flags == 0:
        stamp = struct.pack("<II", int(source_stat.st_mtime) & 0xFFFFFFFF, source_stat.st_size & 0xFFFFFFFF)
        fits = data[8:_HEADER] == stamp
    else:
        fits = data[8:_HEADER] == _source_hash(source_bytes)
    if not fits:
        return False
    try:
        code = _loads(data[_HEADER:])
        expected = _compile(source_bytes, source, "exec", dont_inherit=True, optimize=level)
    except (ValueError, EOFError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return same_code(code, expected)


def flags_written(cache: str) -> int | None:
    """The PEP 552 flags the import system would write at ``cache`` (resolved) now, or None when it
    would write nothing there (``SourceLoader.get_code``): a hash-based cache (flags 1, unchecked,
    or 3, checked) only over a hash-based cache already there whose hash it checks (a checked one,
    or any with ``--check-hash-based-pycs always``; with ``never``, none), keeping its flags; else a
    timestamp cache (flags 0: no cache, an unreadable one, another magic, unknown flags, or a
    timestamp one). The check mode is the one recorded at install (:func:`record_prefix`)."""
    try:
        fd = _os_open(cache, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        head = os.read(fd, _HEADER)
    except OSError:
        return 0
    finally:
        os.close(fd)
    if len(head) < _HEADER or head[:4] != _MAGIC:
        return 0
    flags = int.from_bytes(head[4:8], "little")
    if flags & ~0b11 or not flags & 0b01:
        return 0  # unknown flags are an ImportError to the import system, which then writes a timestamp
    checks = _check_mode[0] != "never" and (flags & 0b10 or _check_mode[0] == "always")
    return flags if checks else None


def same_code(found: Any, expected: types.CodeType) -> bool:
    """Whether ``found`` is a code object equal to ``expected``: ``==`` and the fields it leaves
    out, for each nested code object too."""
    if type(found) is not types.CodeType or found != expected:
        return False
    if any(getattr(found, name) != getattr(expected, name) for name in _FIELDS):
        return False
    pairs = zip(found.co_consts, expected.co_consts, strict=True)  # == compared them: same length
    return all(same_code(a, b) for a, b in pairs if isinstance(b, types.CodeType))


def _read_alone(path: str) -> bytes | None:
    """The bytes of ``path``, a regular file with one link (no other name to write it by)."""
    fd = _os_open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _held(path: str) -> bool:
    """Whether a descriptor or memory mapping of this process refers to ``path``'s file. Looked at
    before the file is read: a new writer cannot appear after (its open would need ``O_EXCL`` on
    an existing file), so the bytes read are the bytes replaced."""
    try:
        st = os.lstat(path)
        fds = os.listdir("/proc/self/fd")
        with open("/proc/self/maps") as f:
            maps = f.read().splitlines()
    except OSError:
        return True  # cannot tell: judged held
    same = (st.st_dev, st.st_ino)
    for fd in fds:
        try:
            other = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed since
        if (other.st_dev, other.st_ino) == same:
            return True
    for line in maps:  # address perms offset major:minor inode [path]
        fields = line.split(maxsplit=5)
        if len(fields) < 5 or fields[4] == "0":
            continue
        major, _, minor = fields[3].partition(":")
        try:
            mapped = (os.makedev(int(major, 16), int(minor, 16)), int(fields[4]))
        except ValueError:
            return True
        named = fields[5].removesuffix(" (deleted)") if len(fields) > 5 else ""
        if mapped == same or named == path:  # an overlay file is shown by its path, its real device
            return True
    return False
