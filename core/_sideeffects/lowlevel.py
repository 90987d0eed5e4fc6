"""Side-effect guards below the ones in :mod:`.wire` and :mod:`.files` (round 4 item 12); process-wide only.

- **Descriptor sends.** ``os.write``, ``os.writev`` and ``os.sendfile`` (which ``socket.sendfile``
  and asyncio's ``loop.sock_sendfile`` use) write to a socket without its ``send`` methods; on a
  socket's descriptor, inside a scope, the bytes are judged first as a send would be (for
  ``sendfile``, read from the file with ``os.pread``, which moves no file offset). ``os.splice``
  into a socket is refused: its bytes come from a pipe, which cannot be read without taking them
  (Python has no ``tee``). Nothing else moves bytes into a socket: ``pwrite``/``pwritev`` fail on
  one (``ESPIPE``), ``copy_file_range`` takes regular files only, and a file object opened on a
  socket's descriptor is refused when opened (:mod:`.files`).
- **Every name.** ``os`` re-exports the functions of its native module (``posix``; ``nt`` on
  Windows), so each guard is put under both names (:func:`replace`): ``posix.mkfifo`` is
  ``os.mkfifo``, guarded.
- **Path races.** The file guard resolves a path (symlinks included) when the audit event fires,
  just before the system call; a thread of the same call that swaps a folder for a symlink in
  between would make the call write elsewhere. So, inside a scope, every write-open and every
  call that changes the file tree (rename, link, mkdir, remove...) holds the scope's lock from
  its check to its end: the call's own threads cannot swap a path between the two. Code outside
  the scope (a thread the provider started without the call's context) is not covered.

This module imports nothing of the core: :mod:`.levels` and :mod:`.wire` hand it what to ask.
"""

from __future__ import annotations

import _io
import builtins
import contextlib
import io
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

Judge = Callable[[int, bytes], Callable[[int], None]]
"""Judges the bytes about to be written to a socket descriptor (raises to refuse); no scope: no
call. Returns what to call with the count written, so bytes a short write left unsent are not
taken as sent."""

CHUNK = 1 << 20
"""Bytes of a file ``os.sendfile`` sends that are read and judged at a time."""

_TREE_CALLS = (
    "rename", "replace", "symlink", "link", "mkdir", "rmdir", "remove", "unlink", "chmod", "chown",
    "truncate", "utime", "mkfifo", "mknod", "removedirs",
)  # fmt: skip
"""``os`` functions that change the file tree: serialized with write-opens inside a scope."""
_WRITE_MODE = frozenset("wax+")
_holding = threading.local()
"""The scope locks this thread holds through :func:`holding`, innermost last."""


@contextlib.contextmanager
def holding(lock: Any) -> Iterator[None]:
    """Hold ``lock`` (a scope's ``RLock``) and remember that this thread does (:func:`holds`)."""
    with lock:
        held = _holding.__dict__.setdefault("locks", [])
        held.append(lock)
        try:
            yield
        finally:
            held.pop()


def holds(lock: Any) -> bool:
    """Whether this thread holds ``lock`` through :func:`holding` (``RLock`` has no public owner)."""
    return any(held is lock for held in _holding.__dict__.get("locks", ()))


HOMES: tuple[Any, ...] = (os, sys.modules[os.name])
"""Modules whose names reach the same functions: ``os`` and the native module it re-exports
(``posix``; ``nt`` on Windows, absent elsewhere)."""


def replace(name: str, original: Any, wrapper: Any, homes: tuple[Any, ...] = HOMES) -> None:
    """Put ``wrapper`` under ``name`` in every module of ``homes`` that holds ``original`` there
    (``os.write`` and ``posix.write`` are one function: both names get the one wrapper)."""
    for module in homes:
        if getattr(module, name, None) is original:
            setattr(module, name, wrapper)


def _is_socket(fd: Any) -> bool:
    try:
        return isinstance(fd, int) and stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def _file_bytes(in_fd: int, offset: int | None, count: int) -> Iterator[bytes]:
    """What ``os.sendfile(out, in_fd, offset, count)`` would send, in chunks, without moving any offset."""
    position = os.lseek(in_fd, 0, os.SEEK_CUR) if offset is None else offset
    left = count
    while left > 0:
        chunk = os.pread(in_fd, min(CHUNK, left), position)
        if not chunk:
            return
        yield chunk
        position, left = position + len(chunk), left - len(chunk)


def _settled(settle: Callable[[int], None] | None, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(*args)``; if it fails (any exception), nothing was written: ``settle(0)`` first."""
    try:
        return call(*args, **kwargs)
    except BaseException:
        if settle is not None:
            settle(0)
        raise


def guard_descriptor_sends(judge: Callable[[], Judge | None], refuse: Callable[[int, str], None]) -> None:
    """Wrap ``os.write``, ``os.writev``, ``os.sendfile`` and ``os.splice`` (and their ``posix``
    names) so that, inside a scope (``judge()`` is not ``None``), bytes bound for a socket
    descriptor are judged before they are written; ``refuse(fd, what)`` refuses a splice into one."""
    write, writev, sendfile, splice = os.write, os.writev, getattr(os, "sendfile", None), getattr(os, "splice", None)
    if getattr(write, "__mcp_providers_guarded__", False):
        return

    def guarded_write(fd: int, data: Any, /) -> int:
        judging = judge()
        if judging is None or not _is_socket(fd):
            return write(fd, data)
        settle = judging(fd, bytes(data))
        written = int(_settled(settle, write, fd, data))
        settle(written)
        return written

    def guarded_writev(fd: int, buffers: Any, /) -> int:
        judging = judge()
        if judging is None or not _is_socket(fd):
            return writev(fd, buffers)
        buffers = [bytes(b) for b in buffers]
        settle = judging(fd, b"".join(buffers))
        written = int(_settled(settle, writev, fd, buffers))
        settle(written)
        return written

    def guarded_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int, *args: Any, **kwargs: Any) -> int:
        assert sendfile is not None
        judging = judge()
        if judging is None or not _is_socket(out_fd):
            return int(sendfile(out_fd, in_fd, offset, count, *args, **kwargs))
        settles = [(len(chunk), judging(out_fd, chunk)) for chunk in _file_bytes(in_fd, offset, count)]
        first = settles[0][1] if settles else None
        written = int(_settled(first, sendfile, out_fd, in_fd, offset, count, *args, **kwargs))
        left = written
        for size, settle in settles:  # the chunk a short write ended in: what of it was sent
            if left < size:
                settle(left)
                break
            left -= size
        return written

    def guarded_splice(src: int, dst: int, count: int, *args: Any, **kwargs: Any) -> int:
        if judge() is not None and _is_socket(dst):
            refuse(dst, f"os.splice of up to {count} bytes from a pipe into a socket (they cannot be read first)")
        assert splice is not None
        return int(splice(src, dst, count, *args, **kwargs))

    _install((("write", write, guarded_write), ("writev", writev, guarded_writev),
              ("sendfile", sendfile, guarded_sendfile), ("splice", splice, guarded_splice)))  # fmt: skip


def _install(pairs: tuple[tuple[str, Any, Any], ...]) -> None:
    """Put each ``(name, original, guarded)``'s guard under every name of the original (absent: skipped)."""
    for name, original, guarded in pairs:
        if original is None:
            continue
        guarded.__name__, guarded.__doc__ = original.__name__, original.__doc__
        guarded.__wrapped__ = original
        guarded.__mcp_providers_guarded__ = True
        replace(name, original, guarded)


def _writes(mode: Any) -> bool:
    return isinstance(mode, str) and not _WRITE_MODE.isdisjoint(mode)


def serialize_tree_changes(lock_of: Callable[[], Any]) -> None:
    """Make write-opens (``open``/``io.open``) and the calls that change the file tree
    hold the scope's lock (``lock_of()``, ``None`` outside a scope) from their check to their end."""

    def serialized(original: Callable[..., Any], writes: Callable[..., bool] | None) -> Callable[..., Any]:
        if getattr(original, "__mcp_providers_serialized__", False):
            return original

        def call(*args: Any, **kwargs: Any) -> Any:
            lock = lock_of()
            if lock is None or (writes is not None and not writes(*args, **kwargs)):
                return original(*args, **kwargs)
            with holding(lock):
                return original(*args, **kwargs)

        call.__name__, call.__qualname__, call.__doc__ = original.__name__, original.__qualname__, original.__doc__
        call.__wrapped__ = original  # type: ignore[attr-defined]
        call.__mcp_providers_serialized__ = True  # type: ignore[attr-defined]
        for marker in ("__mcp_providers_guarded__",):  # keep what other guards look for
            if getattr(original, marker, False):
                setattr(call, marker, True)
        return call

    def opens_to_write(file: Any = None, mode: Any = "r", *args: Any, **kwargs: Any) -> bool:
        return _writes(kwargs.get("mode", mode))

    original_open = io.open
    # os.open takes the lock itself (files.guarded_os_open); io.FileIO, a class, has no name to
    # wrap: a symlink leading out of the scratch folder is refused instead (files._judge_symlink)
    replace("open", original_open, serialized(original_open, opens_to_write), (io, _io, builtins))
    for name in _TREE_CALLS:
        original = getattr(os, name, None)
        if original is not None:
            replace(name, original, serialized(original, None))
