"""Other processes and the state of the whole process, in a read (tester twenty-six F1-F3, F7): a
signal sent, a limit set, native code run through ``ctypes``, a handler or the identity changed,
POSIX shared memory created or removed. Each call here would change nothing if it went through
(the same value set again, a signal ignored by default, a segment of this test's own), so a
broken guard shows as a missing refusal, not as damage.

The embedded level (the audit hook alone) is in ``test_embedded_guards.py``.
"""

from __future__ import annotations

import _posixshmem
import ctypes
import os
import resource
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest
from sink_support import _scope

from mcp_providers._sideeffects import process
from mcp_providers.errors import SideEffectRefused

_LIMIT = resource.getrlimit(resource.RLIMIT_NOFILE)
_SHM = f"/mcp-providers-test-{os.getpid()}"

AUDITED: dict[str, Callable[[], Any]] = {
    "os.kill": lambda: os.kill(os.getpid(), signal.SIGWINCH),
    "os.killpg": lambda: os.killpg(os.getpgid(0), signal.SIGWINCH),
    "signal.pthread_kill": lambda: signal.pthread_kill(threading.get_ident(), signal.SIGWINCH),
    "resource.setrlimit": lambda: resource.setrlimit(resource.RLIMIT_NOFILE, _LIMIT),
    "resource.prlimit": lambda: resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE, _LIMIT),
    "socket.sethostname": lambda: socket.sethostname(socket.gethostname()),
    "ctypes.dlopen": lambda: ctypes.CDLL(None),
}
UNAUDITED: dict[str, Callable[[], Any]] = {
    "os.setuid": lambda: os.setuid(os.getuid()),
    "os.setgroups": lambda: os.setgroups(os.getgroups()),
    "os.nice": lambda: os.nice(0),
    "os.setpgid": lambda: os.setpgid(0, os.getpgid(0)),
    "os.sched_setaffinity": lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)),
    "signal.signal": lambda: signal.signal(signal.SIGWINCH, signal.getsignal(signal.SIGWINCH)),
    "signal.setitimer": lambda: signal.setitimer(signal.ITIMER_REAL, 0),
    "signal.raise_signal": lambda: signal.raise_signal(signal.SIGWINCH),
    "sys.setrecursionlimit": lambda: sys.setrecursionlimit(sys.getrecursionlimit()),
    "sys.set_int_max_str_digits": lambda: sys.set_int_max_str_digits(sys.get_int_max_str_digits()),
    "socket.setdefaulttimeout": lambda: socket.setdefaulttimeout(socket.getdefaulttimeout()),
    "_posixshmem.shm_open": lambda: os.close(_posixshmem.shm_open(_SHM, os.O_CREAT | os.O_RDWR, 0o600)),
    "_posixshmem.shm_unlink": lambda: _posixshmem.shm_unlink(_SHM),
}


@pytest.mark.parametrize("name", [*AUDITED, *UNAUDITED])
def test_each_change_to_another_process_or_the_whole_process_is_refused_in_a_read(name: str) -> None:
    call = {**AUDITED, **UNAUDITED}[name]
    with _scope() as scope, pytest.raises(SideEffectRefused, match="side-effect-in-resource-read"):
        call()
    assert [v["category"] for v in scope.violations] == ["process"]
    assert not os.path.exists(f"/dev/shm{_SHM}")


def test_a_native_function_looked_up_through_ctypes_is_refused_when_the_library_was_loaded_before() -> None:
    libc = ctypes.CDLL(None)  # outside the read: loading is the host's business
    with _scope(), pytest.raises(SideEffectRefused, match="native function 'getppid' through ctypes"):
        libc.getppid()  # ctypes.dlsym; Python 3.11 raises no event for the call itself
    assert libc.getppid() == os.getppid()  # and outside it, the call goes through


def test_what_only_asks_passes_in_a_read() -> None:
    with _scope() as scope:
        os.kill(os.getpid(), 0)  # signal 0: does the process exist?
        signal.pthread_kill(threading.get_ident(), 0)
        assert resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE) == _LIMIT
        assert signal.getsignal(signal.SIGWINCH) is not None
        assert sys.getrecursionlimit() > 0
    assert scope.violations == []


def test_shared_memory_opened_read_only_passes_and_is_not_created() -> None:
    fd = _posixshmem.shm_open(_SHM, os.O_CREAT | os.O_RDWR, 0o600)  # the host's own segment
    os.close(fd)
    try:
        with _scope() as scope:
            os.close(_posixshmem.shm_open(_SHM, os.O_RDONLY))
            with pytest.raises(SideEffectRefused, match="shared memory"):
                _posixshmem.shm_unlink(_SHM)
        assert len(scope.violations) == 1
        assert os.path.exists(f"/dev/shm{_SHM}")
    finally:
        _posixshmem.shm_unlink(_SHM)


def test_the_guards_wrap_every_call_of_the_kind_under_each_name() -> None:
    with _scope():
        pass  # installs every guard
    wrapped = {f"{module.__name__}.{name}" for module, name in process.UNAUDITED}
    assert set(UNAUDITED) <= wrapped | {f"os.{n}" for n in ("setuid", "nice")}
    assert getattr(os.setuid, "__mcp_providers_guarded__", False)
    assert os.setuid is sys.modules[os.name].setuid  # posix's name too
