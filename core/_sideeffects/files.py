"""Files and processes, judged through a PEP 578 audit hook (:func:`audit_hook`) that asks the scope's
context variable, so it judges provider code only; plus the process-wide helpers the audit events
cannot do without: :func:`guarded_os_open` (the "open" event carries no ``dir_fd``) and the calls
that raise no audit event (``os.mkfifo``, ``os.mknod``, ``_posixsubprocess.fork_exec``). Which
log files a read may write is :mod:`.logfiles`'s."""

from __future__ import annotations

import functools
import os
import socket
import stat
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects import bytecode, imports, lowlevel, process, writers
from mcp_providers._sideeffects.imports import patch_on_import
from mcp_providers._sideeffects.logfiles import expected_log_write
from mcp_providers._sideeffects.scope import Scope, scope_var

# -- the audit hook (files and processes) -------------------------------------------------------

_WRAPPED: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()
"""The wrappers this module installed, so installing twice wraps nothing twice."""
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.spawn",
        "os.posix_spawn",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
        "os.startfile",
    }
)
# event -> ((index of a written path, index of its dir_fd or -1), ...)
_FILE_EVENTS: dict[str, tuple[tuple[int, int], ...]] = {
    "open": ((0, -1),),
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.mkdir": ((0, 2),),
    "os.rename": ((0, 2), (1, 3)),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.chflags": ((0, -1),),
    "os.truncate": ((0, -1),),
    "os.utime": ((0, 3),),
    "os.symlink": ((1, 2),),
    "os.link": ((0, 2), (1, 3)),  # the source too: a hard link into the scratch folder writes through
    "os.setxattr": ((0, -1),),
    "os.removexattr": ((0, -1),),
    "os.chdir": ((0, -1),),
    "shutil.rmtree": ((0, 1),),
    "shutil.move": ((0, -1), (1, -1)),
    "shutil.copyfile": ((1, -1),),
    "shutil.copymode": ((1, -1),),
    "shutil.copystat": ((1, -1),),
    "shutil.copytree": ((1, -1),),
    "shutil.chown": ((0, -1),),
    "shutil.make_archive": ((0, -1),),
    "shutil.unpack_archive": ((1, -1),),
    "socket.bind": ((1, -1),),  # a Unix socket's path is a new file (only that bind: _binds_a_path)
    "sqlite3.connect": ((0, -1),),  # a database that does not exist yet is a new file (writers.py)
}
_ENVIRONMENT_EVENTS = frozenset({"os.putenv", "os.unsetenv"})  # os.environ[...] = ... and del call them first
_JUDGED = frozenset(_FILE_EVENTS) | _PROCESS_EVENTS | _ENVIRONMENT_EVENTS | frozenset(process.EVENTS)
_JUDGED |= {"exec", "sqlite3.connect/handle"}
_sqlite_connect_call = threading.local()  # .active while the guarded sqlite3.connect runs
_sqlite_guarded = False  # sqlite3.connect wrapped (process-wide level): a connection made past it is refused
_UNGUARDED_SQLITE = "making a SQLite connection past sqlite3.connect (its ATTACH and VACUUM INTO could not be judged)"
_os_open_call = threading.local()  # .pending = (path object, dir_fd) while the guarded os.open runs


def audit_hook(event: str, args: tuple[Any, ...]) -> None:
    # Runs for every audited event in the process: one set lookup when it is not ours.
    if event not in _JUDGED:
        return
    scope = scope_var.get()
    if scope is None:
        return
    if event in _PROCESS_EVENTS:
        detail = _short(args[:2])
        scope.attempt(f"starting a process ({event}{' ' + detail if detail else ''})", "process", event=event)
        return
    if event in process.EVENTS:  # signals, limits, native code: other processes and the whole process
        process.judge_event(scope, event, args)
        return
    if event == "exec":  # a guarded module's code run again would replace its guards
        imports.judge_exec(scope, args)
        return
    if event in _ENVIRONMENT_EVENTS:  # never the value: it may be a secret
        name = os.fsdecode(args[0]) if isinstance(args[0], str | bytes) else repr(args[0])
        scope.attempt(f"changing the environment ({event} {name}, process-wide)", "process", event=event)
        return
    if event == "open" and not _opens_for_writing(args):
        return  # read-only open: the common case
    if event == "socket.bind" and not _binds_a_path(args):
        return  # an address, or a Linux abstract name: no file
    if event == "sqlite3.connect/handle":  # guarded as sqlite3.connect returns it: refuse any other way
        if _sqlite_guarded and not getattr(_sqlite_connect_call, "active", False):
            scope.attempt(_UNGUARDED_SQLITE, "file", event=event)
        return
    if event == "sqlite3.connect":
        created = writers.created_database(path_text(args[0]) if args else None)
        if created is None:
            return  # in memory, read-only, or opened: what the connection writes is not followed
        args = (created,)
    if event == "open" and isinstance(args[0], int):
        _judge_descriptor_open(scope, args)
        return
    _judge_file(scope, event, args)
    if event == "os.symlink":
        _judge_symlink(scope, args)


def judge_open(path: str, mode: str) -> None:
    """Judge in the calling scope an open of ``path`` (absolute) in ``mode`` (``open()``'s) that has
    not happened yet, as its "open" audit event would be: a ``delay=True`` log handler made in a
    scope, judged as if it opened its file when made (tester twenty-eight F4). Outside a scope,
    nothing.

    :raises SideEffectRefused: a write open refused (enforce mode)."""
    access = os.O_RDWR if "+" in mode else os.O_RDONLY if "r" in mode else os.O_WRONLY
    extra = {"w": os.O_CREAT | os.O_TRUNC, "a": os.O_CREAT | os.O_APPEND, "x": os.O_CREAT | os.O_EXCL}
    flags = access | os.O_CLOEXEC | sum(bits for c, bits in extra.items() if c in mode)
    audit_hook("open", (path, mode, flags))


def path_text(raw: Any) -> str | None:
    """A path argument as the system call gets it, as text: ``str``, ``bytes``, ``os.PathLike``,
    or any other bytes-like object (``bytearray``, ``memoryview``, ``array``: a Unix socket's
    ``bind`` takes them, ``os`` functions still do, deprecated); ``None`` for anything else."""
    try:
        if isinstance(raw, str | bytes | os.PathLike):
            return os.fsdecode(raw)
        return os.fsdecode(memoryview(raw).tobytes())
    except TypeError:
        return None


def _binds_a_path(args: tuple[Any, ...]) -> bool:
    """Whether a ``socket.bind`` event makes a file: a Unix socket bound to a path (``socket(7)``:
    a name starting with a NUL byte is abstract, and an empty one autobinds to one)."""
    sock, address = args[0], args[1] if len(args) > 1 else None
    if getattr(sock, "family", None) != getattr(socket, "AF_UNIX", object()):
        return False
    name = path_text(address) if not isinstance(address, int) else None
    return name is not None and name != "" and not name.startswith("\0")


def _opens_for_writing(args: tuple[Any, ...]) -> bool:
    flags = args[2] if len(args) > 2 and type(args[2]) is int else 0
    mode = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
    return bool(flags & _WRITE_FLAGS) or any(c in mode for c in "wax+")


def _judge_descriptor_open(scope: Scope, args: tuple[Any, ...]) -> None:
    """``open(fd, "wb")``, ``os.fdopen``, ``io.FileIO(fd)``: no new file, but a file object on a
    socket's descriptor writes with ``write(2)`` itself, below every send the wire guard reads."""
    try:
        is_socket = stat.S_ISSOCK(os.fstat(args[0]).st_mode)
    except OSError:
        return  # not open: the open fails by itself
    if is_socket:
        attempted = f"opening a socket's descriptor {args[0]} as a file for writing (its bytes would not be judged)"
        scope.attempt(attempted, "http", event="open")


def _judge_symlink(scope: Scope, args: tuple[Any, ...]) -> None:
    """A symlink in the scratch folder may only lead further into it: its target, as written,
    has no ``..`` and, absolute, lies under the folder. So a path under it never climbs out while
    the call's own threads swap folders for links, whichever names they call (and openers without
    a name to serialize, ``io.FileIO``, open with no lock held)."""
    target = path_text(args[0])
    if target is None:
        return  # not a path: the call fails by itself
    parts = target.replace(os.altsep or os.sep, os.sep).split(os.sep)
    inside = os.path.isabs(target) and scope.under_scratch(os.path.normpath(target))
    if ".." in parts or (os.path.isabs(target) and not inside):
        where = _resolve(args[1], args[2] if len(args) > 2 else None)
        attempted = f"making a symlink at {where} to {target} (out of the scratch folder, or climbing with ..)"
        scope.attempt(attempted, "file", event="os.symlink", paths=[where])


def _climbs(raw: Any) -> bool:
    """Whether a path as given has a ``..``: under the scratch folder a concurrent rename by the
    call's own threads could make it climb out between the check and the call."""
    text = path_text(raw)
    if text is None:
        return False
    return ".." in text.replace(os.altsep or os.sep, os.sep).split(os.sep)


def _holds(scope: Scope) -> bool:
    """Whether this thread holds the scope's lock (a guarded opener or tree call, process-wide):
    then no thread of the call can rename or link a folder of the path before the system call,
    so a ``..`` that resolves inside the scratch folder stays there."""
    return lowlevel.holds(scope.lock)


def _in_scratch(scope: Scope, raw: Any, dir_fd: Any) -> bool:
    """Whether ``raw`` (from ``dir_fd``) lands under the scratch folder and says so without ``..``."""
    return not _climbs(raw) and scope.under_scratch(_resolve(raw, dir_fd))


def _judge_file(scope: Scope, event: str, args: tuple[Any, ...]) -> None:
    paths, climbing = [], False
    for index, dir_fd_index in _FILE_EVENTS[event]:
        raw = args[index] if index < len(args) else None
        if raw is None:
            continue
        climbing = climbing or _climbs(raw)
        if event == "open" and args[1] is None:  # os.open: its event has no dir_fd, the guarded call does
            paths.append(_resolve_os_open(raw))
            continue
        dir_fd = args[dir_fd_index] if dir_fd_index >= 0 and dir_fd_index < len(args) else None
        paths.append(_resolve(raw, dir_fd))
    if not paths:
        return
    inside = event != "os.chdir" and all(scope.under_scratch(p) for p in paths)
    if inside and (not climbing or _holds(scope)):
        return
    if _expected_write(event, args, paths):
        return
    shown = " -> ".join(paths)
    if event == "open":
        attempted = f"opening {shown} for writing (mode {args[1] or 'os.open'!s}, flags {args[2]:#o})"
    elif event == "os.chdir":
        attempted = f"changing the working directory to {shown} (process-wide)"
    elif event == "socket.bind":
        attempted = f"binding a Unix socket at {shown} (a new file)"
    elif event == "sqlite3.connect":
        attempted = f"creating the SQLite database {shown} (sqlite3.connect)"
    else:
        attempted = f"{event} of {shown}"
    if inside:
        attempted += " by a path with '..' in the scratch folder (a rename could make it climb out: give it without)"
    scope.attempt(attempted, "file", event=event, paths=paths)


def _resolve(raw: Any, dir_fd: Any) -> str:
    """An absolute, symlink-resolved path for an audited path argument (an fd becomes its target)."""
    try:
        if isinstance(raw, int):
            return os.readlink(f"/proc/self/fd/{raw}")
        path = path_text(raw)
        if path is None:
            return repr(raw)  # not a path: never under the scratch directory
        if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(path):
            path = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
        return os.path.realpath(path)
    except (OSError, TypeError, ValueError):
        return repr(raw)  # unresolvable: never under the scratch directory


def _resolve_os_open(raw: Any) -> str:
    """Where an ``os.open`` event's path lands: the "open" audit event carries no ``dir_fd``, so a
    relative path is only resolvable when the guarded ``os.open`` (:func:`guarded_os_open`) said
    which directory it is relative to; through an unguarded reference it lands somewhere unknown."""
    pending = getattr(_os_open_call, "pending", None)
    if pending is not None and pending[0] is raw:
        return _resolve(raw, pending[1])
    text = path_text(raw)
    if text is None or not os.path.isabs(text):
        cache = _resolve(raw, None)  # the import system writes caches through posix.open, unguarded
        if bytecode.temp_of(cache) is not None:
            return cache
        return f"{text if text is not None else repr(raw)} (relative to a directory descriptor that cannot be known)"
    return _resolve(raw, None)


_real_os_open = getattr(os.open, "__wrapped__", os.open)  # the builtin, even when this module is reloaded


def guarded_os_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
    scope = scope_var.get()
    if scope is None:
        return _real_os_open(path, flags, mode, dir_fd=dir_fd)
    _os_open_call.pending = (path, dir_fd)
    try:
        if flags & _WRITE_FLAGS:  # checked and opened with no swap of the path between (see Scope.lock)
            with lowlevel.holding(scope.lock):
                return _real_os_open(path, flags, mode, dir_fd=dir_fd)
        return _real_os_open(path, flags, mode, dir_fd=dir_fd)
    finally:
        _os_open_call.pending = None


def _expected_write(event: str, args: tuple[Any, ...], paths: list[str]) -> bool:
    """The writes a read may make because of *what* is written, never who asks: the null device
    (opened only: what is written there is discarded), the import system's bytecode caches, written
    as it writes them (:mod:`.bytecode`), and the files of the host's log handlers (:mod:`.logfiles`)."""
    if event == "open" and all(_is_null_device(p) for p in paths):
        return True
    if bytecode.expected_cache_write(event, args, paths):
        return True
    if event == "os.mkdir" and all(bytecode.is_cache_dir(p) for p in paths):
        return True
    return expected_log_write(event, args, paths)  # a host log handler's file, its rotations


_NULL = os.path.realpath(os.devnull)


def _is_null_device(path: str) -> bool:
    """Whether ``path`` (resolved) is the null device itself: a character device, not a file named so."""
    try:
        return path == _NULL and stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def _short(args: tuple[Any, ...]) -> str:
    text = " ".join(os.fsdecode(a) if isinstance(a, str | bytes) else repr(a) for a in args)
    return text if len(text) <= 200 else text[:197] + "..."


def _unaudited(
    module: Any, name: str, category: str, describe: Callable[[tuple[Any, ...]], str], path_at: int = 0
) -> None:
    """Wrap ``module.name`` (a call that raises no audit event) so a scope judges it first; an
    ``os`` function under its ``posix`` name too (:func:`.lowlevel.replace`). A ``"file"`` call
    writes at its argument ``path_at`` (absent or ``None``: nowhere the scope can tell)."""
    original = getattr(module, name, None)
    if original is None or original in _WRAPPED:
        return

    def guarded(*args: Any, **kwargs: Any) -> Any:
        scope = scope_var.get()
        if scope is not None:
            where = args[path_at] if len(args) > path_at else None
            if category == "file" and where is not None and _in_scratch(scope, where, kwargs.get("dir_fd")):
                return original(*args, **kwargs)
            scope.attempt(describe(args), category, event=f"{module.__name__}.{name}")
        return original(*args, **kwargs)

    guarded.__name__, guarded.__doc__ = original.__name__, original.__doc__
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    _WRAPPED.add(guarded)
    lowlevel.replace(name, original, guarded, lowlevel.HOMES if module is os else (module,))


def patch_unaudited() -> None:
    """Calls that create files, start processes or change the whole process without a PEP 578
    event of their own (``os.chdir`` has one; ``os.umask`` none)."""
    import _posixsubprocess

    _unaudited(os, "mkfifo", "file", lambda a: f"creating a FIFO at {_short(a[:1])}")
    _unaudited(os, "mknod", "file", lambda a: f"creating a device node at {_short(a[:1])}")
    _unaudited(os, "umask", "process", lambda a: f"changing the umask to {_short(a[:1])} (process-wide)")
    _unaudited(_posixsubprocess, "fork_exec", "process", lambda a: f"starting a process ({_short(a[:1])})")
    patch_on_import("readline", _patch_readline)
    patch_on_import("_tkinter", _patch_tkinter)
    patch_on_import("sqlite3", _patch_sqlite3)


def _patch_readline(readline: Any) -> None:
    """The history writers (tester twenty-nine F2: no "open" event): judged where they write."""
    for name, at in writers.READLINE_WRITERS:
        _unaudited(readline, name, "file", _history(name, at), at)


def _history(name: str, at: int) -> Callable[[tuple[Any, ...]], str]:
    """What ``readline.name`` writes, its file at argument ``at`` (absent or ``None``: ``~/.history``)."""
    return lambda a: (
        f"readline.{name} writing {_short(a[at : at + 1]) if len(a) > at and a[at] is not None else '~/.history'}"
    )


def _patch_tkinter(tkinter: Any) -> None:
    """A Tcl interpreter (``tkinter.Tk``/``Tcl``): its code writes files and starts processes unseen."""
    what = "making a Tcl interpreter (tkinter: its code writes files and starts processes unseen)"
    _unaudited(tkinter, "create", "process", lambda a: what)


def _patch_sqlite3(sqlite3: Any) -> None:
    """``sqlite3.connect`` (and its ``dbapi2`` and ``_sqlite3`` names): a connection made in a read
    judges ``ATTACH DATABASE`` and ``VACUUM INTO`` of a new file (tester thirty-two F6,
    :func:`.writers.guard_attaches`; the ``sqlite3.connect/handle`` event comes before the
    connection can take an authorizer)."""
    global _sqlite_guarded
    original = sqlite3.connect

    @functools.wraps(original)
    def connect(*args: Any, **kwargs: Any) -> Any:
        scope = scope_var.get()
        if scope is None:
            return original(*args, **kwargs)
        before = getattr(_sqlite_connect_call, "active", False)
        _sqlite_connect_call.active = True
        try:
            connection = original(*args, **kwargs)
        finally:
            _sqlite_connect_call.active = before
        writers.guard_attaches(connection, lambda created: _judge_file(scope, "sqlite3.connect", (created,)))
        return connection

    names: tuple[Any, ...] = (sqlite3, sqlite3.dbapi2, sys.modules.get("_sqlite3"))
    for module in names:
        if module is not None and getattr(module, "connect", None) is original:
            module.connect = connect
    _sqlite_guarded = True
