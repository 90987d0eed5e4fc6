"""The process's stdin and stdout claimed for the wire: while serving, fd 1 points at stderr and fd 0
at the null device, so a provider's stray ``print`` (or a child process inheriting the descriptors)
never corrupts the protocol stream; the wire is served from private duplicates and both
descriptors are restored on exit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
import threading
from collections.abc import Iterator

_claim_lock = threading.Lock()
_claimed = False


@contextlib.contextmanager
def guarded_stdout() -> Iterator[int]:
    """Point fd 1 (and so ``print``, and any child process started meanwhile) at stderr.

    Yields a private, close-on-exec duplicate of the original stdout: the only place
    machine-readable output (the MCP wire, ``plugins --json``) may be written. Enter it before any
    plugin is imported; on exit fd 1 is pointed back at the original stdout.
    """
    with contextlib.suppress(ValueError, OSError):
        sys.stdout.flush()
    saved = _dup_private(1)
    os.dup2(2, 1)
    try:
        yield saved
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()  # what plugins printed belongs to stderr, where fd 1 pointed
        os.dup2(saved, 1)
        os.close(saved)


def pipes_apply(stdout_fd: int) -> bool:
    if sys.platform == "win32":
        return False
    try:
        asyncio.get_running_loop()  # under trio there is none
    except RuntimeError:
        return False
    for fd in (0, stdout_fd):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return False
        # Pipes, sockets and terminals can be polled; other character devices (/dev/null) cannot.
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))):
            return False
    return True


@contextlib.contextmanager
def claimed_std_fds(stdout_fd: int | None = None) -> Iterator[tuple[int, int]]:
    """Move the wire to private descriptors; point fd 0 at the null device and fd 1 at stderr.

    Yields the private ``(stdin, stdout)`` descriptors (close-on-exec, so children never inherit
    the wire). On exit fds 0 and 1 are pointed back at the wire and their blocking mode restored
    (asyncio sets the shared file description non-blocking, which would surprise a parent shell).
    The caller owns closing the private descriptors. With ``stdout_fd`` (fd 1 already moved aside
    by :func:`guarded_stdout`), the wire's output is a duplicate of it and fd 1 is left alone.
    """
    global _claimed
    with _claim_lock:
        if _claimed:
            raise RuntimeError("stdio is already being served in this process (serve_stdio); serve it once")
        _claimed = True
    try:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()  # bytes printed before serving belong to the old stdout, not the wire
        out_fd = 1 if stdout_fd is None else stdout_fd
        blocking = {fd: os.get_blocking(fd) for fd in (0, out_fd)}
        wire_in = _dup_private(0)
        wire_out = _dup_private(out_fd)
        # Dups of the wire that outlive the transports (which close wire_in/wire_out) so the
        # descriptors can be pointed back at the wire on exit.
        keeps = [(0, _dup_private(0))] + ([(1, _dup_private(1))] if stdout_fd is None else [])
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        if stdout_fd is None:
            os.dup2(2, 1)
        try:
            yield wire_in, wire_out
        finally:
            with contextlib.suppress(ValueError, OSError):
                sys.stdout.flush()  # stray prints still buffered go to stderr, as they were written
            for fd, keep in reversed(keeps):
                os.dup2(keep, fd)
                os.close(keep)
            for fd, was in blocking.items():
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, was)
    finally:
        with _claim_lock:
            _claimed = False


def _dup_private(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
