"""Other processes and the state of the whole process, in a read (tester twenty-six F1-F3, F7): a
signal sent, a limit set, native code run through ``ctypes``, a handler or the identity changed,
POSIX shared memory created or removed. Each call here would change nothing if it went through
(the same value set again, a signal ignored by default, a segment of this test's own), so a
broken guard shows as a missing refusal, not as damage.

The embedded level (the audit hook alone) is in ``test_embedded_guards.py``.
"""

from __future__ import annotations

import _ctypes
import _multiprocessing
import _posixshmem
import _signal
import _socket
import _thread
import asyncio
import ctypes
import faulthandler
import fcntl
import gc
import importlib
import inspect
import multiprocessing
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import cffi
import pytest
from sink_support import _scope

from mcp_providers.errors import SideEffectRefused

_LIMIT = resource.getrlimit(resource.RLIMIT_NOFILE)
_SHM = f"/mcp-providers-test-{os.getpid()}"
_SEM = f"/mcp-providers-sem-{os.getpid()}"
_BUFFER = ctypes.create_string_buffer(8)
_PROBE, _HEARD = "mcp-providers-test-probe", []  # what a hook added in a read would hear

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
    # tester twenty-seven: the same kinds under other names and in other modules
    "_signal.signal": lambda: _signal.signal(signal.SIGWINCH, _signal.getsignal(signal.SIGWINCH)),
    "signal.pthread_sigmask": lambda: signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH]),
    "os.dup2": lambda: os.dup2(2, 2),
    "os.closerange": lambda: os.closerange(1_000_000, 1_000_001),
    "threading.stack_size": lambda: threading.stack_size(threading.stack_size()),
    "gc.set_threshold": lambda: gc.set_threshold(*gc.get_threshold()),
    "faulthandler.cancel_dump_traceback_later": lambda: faulthandler.cancel_dump_traceback_later(),
    "time.clock_settime": lambda: time.clock_settime(time.CLOCK_MONOTONIC, 0),
    "ctypes.memmove": lambda: ctypes.memmove(_BUFFER, _BUFFER, 0),
    "cffi.FFI.dlopen": lambda: cffi.FFI().dlopen(None),
    "_multiprocessing.SemLock": lambda: _multiprocessing.SemLock(1, 1, 1, _SEM, False),
    # tester twenty-eight: hooks that run later, outside the read; the standard descriptors' modes
    "threading.settrace": lambda: threading.settrace(sys.gettrace()),
    "threading.setprofile": lambda: threading.setprofile(sys.getprofile()),
    "asyncio.set_event_loop_policy": lambda: asyncio.set_event_loop_policy(asyncio.get_event_loop_policy()),
    "os.set_blocking": lambda: os.set_blocking(2, os.get_blocking(2)),
    # tester thirty-two F8: a KeyboardInterrupt (or any signal's handler) raised in the main thread
    "_thread.interrupt_main": lambda: _thread.interrupt_main(signal.SIGWINCH),
}
AUDITED |= {
    "sys.setprofile": lambda: sys.setprofile(sys.getprofile()),
    "sys.settrace": lambda: sys.settrace(sys.gettrace()),
    "sys.addaudithook": lambda: sys.addaudithook(lambda event, _: _HEARD.append(event) if event == _PROBE else None),
    "ctypes.cdata": lambda: ctypes.c_char.from_address(ctypes.addressof(_BUFFER)),
    "ctypes.PyObj_FromPtr": lambda: _ctypes.PyObj_FromPtr(id(_BUFFER)),
    "fcntl.fcntl": lambda: fcntl.fcntl(2, fcntl.F_SETFL, fcntl.fcntl(2, fcntl.F_GETFL)),
}


@pytest.mark.parametrize("name", [*AUDITED, *UNAUDITED])
def test_each_change_to_another_process_or_the_whole_process_is_refused_in_a_read(name: str) -> None:
    call = {**AUDITED, **UNAUDITED}[name]
    with _scope() as scope, pytest.raises(SideEffectRefused, match="side-effect-in-resource-read"):
        call()
        if name == "sys.addaudithook":  # CPython swallows a RuntimeError there, and drops the new hook
            sys.audit(_PROBE)
            assert _HEARD == []
            raise scope.refused or AssertionError("not refused")
    assert [v["category"] for v in scope.violations] == ["process"]
    assert not os.path.exists(f"/dev/shm{_SHM}") and not os.path.exists(f"/dev/shm/sem.{_SEM[1:]}")


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
        signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the idiom to read the mask
        assert threading.stack_size() >= 0
        read, write = os.pipe()  # what a read opens, it may close
        os.close(read)
        os.close(write)
        multiprocessing.Lock()  # a semaphore removed as soon as made: no file stays
        read, write = os.pipe()
        os.set_blocking(read, False)  # its own descriptors' modes are the read's business
        fcntl.fcntl(write, fcntl.F_SETFL, os.O_NONBLOCK)
        assert fcntl.fcntl(2, fcntl.F_GETFL) >= 0
        os.close(read)
        os.close(write)
    assert scope.violations == []


_ENDS = {
    "os._exit": "os._exit(7)",
    "os.abort": "os.abort()",
    "faulthandler._sigsegv": "faulthandler._sigsegv()",
    "faulthandler.dump_traceback_later": "faulthandler.dump_traceback_later(0.05, exit=True); time.sleep(0.5)",
    "os.close": "os.close(1)",
    "os.login_tty": "os.login_tty(os.open('/dev/null', os.O_RDWR))",
}


@pytest.mark.parametrize("name", _ENDS)
def test_a_read_cannot_end_the_process_or_take_its_standard_descriptors(name: str) -> None:
    """Run where a missing guard costs only a child process (tester twenty-seven F1, F6, F11)."""
    script = (
        "import faulthandler, os, sys, time\n"
        "from mcp_providers import _sideeffects\n"
        "from mcp_providers.errors import SideEffectRefused\n"
        "with _sideeffects.side_effect_scope(provider='p', plugin='plugin', target='mem://x'):\n"
        f"    try:\n        {_ENDS[name]}\n"
        "    except SideEffectRefused as exc:\n        print('refused:', exc, file=sys.stderr)\n"
        "time.sleep(0.3)\nprint('alive', os.getsid(0) != os.getpid())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "alive True\n", (done.returncode, done.stdout, done.stderr)
    assert "refused: side-effect-in-resource-read" in done.stderr, done.stderr


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
    for name in UNAUDITED:
        home = name.split(".")[0]  # signal.py's wrappers call _signal's natives: those are guarded
        owner: Any = importlib.import_module("_signal" if home == "signal" else home)
        for part in name.split(".")[1:]:
            owner = getattr(owner, part)
        assert getattr(owner, "__mcp_providers_guarded__", False), name
    for module, native in ((signal, _signal), (socket, _socket), (os, sys.modules[os.name])):
        for attribute, value in vars(native).items():  # a re-export is the one guard under both names
            if callable(value) and getattr(value, "__mcp_providers_guarded__", False):
                held = getattr(module, attribute, value)
                wrapper = inspect.isfunction(held) and held.__module__ == module.__name__  # signal.py's own
                assert held is value or wrapper, (module, attribute)


_FIRST_FINALIZER = """
import os, sys, weakref
from mcp_providers import _sideeffects

class Held:
    pass

held = Held()
with _sideeffects.side_effect_scope(provider="p", plugin="plugin", target="mem://x"):
    weakref.finalize(held, print, "finalized at exit")  # the process's first: weakref registers its exit hook
print("served")
"""


def test_exit_work_a_library_registers_first_in_a_read_runs_as_the_host_s_at_exit() -> None:
    """weakref registers one exit hook for every finalizer of the process, when the first is made: a
    read may be that first use, so exit work is not bound to the read that registered it (binding
    it refused the whole process's finalizers at exit, seen in a CI run)."""
    done = subprocess.run([sys.executable, "-c", _FIRST_FINALIZER], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "served\nfinalized at exit\n", (done.stdout, done.stderr)
    assert "refused" not in done.stderr, done.stderr
