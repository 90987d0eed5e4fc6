"""Other processes and the state of the whole process, judged in a scope (tester twenty-six F1-F3, F7).

A read that signals a process, lowers the process's limits or runs native code it cannot show
changes what every later request meets, as a file written would. Two levels, as for files:

- Audited, so judged at both levels by :func:`judge_event` from the audit hook (:data:`EVENTS`):
  a signal sent (``os.kill``, ``os.killpg``, ``signal.pthread_kill``; signal 0 sends nothing, it
  asks whether the target exists, and passes), resource limits set (``resource.setrlimit``,
  ``resource.prlimit`` with new limits; without, it reads), the host name
  (``socket.sethostname``), and native code through ``ctypes`` (``ctypes.dlopen``: a library's
  initialisers run as it loads; ``ctypes.dlsym``: a function looked up to be called, whose
  effects nothing here can see; Python 3.11 raises no event for the call itself, so a function
  looked up before the read is not seen, as a C extension's own calls are not).
- Unaudited, so wrapped process-wide only (:func:`patch_process_state`, :data:`UNAUDITED`): who the
  process is and how it is scheduled (``os.setuid`` and its kin, ``os.setgroups``, ``os.nice``,
  ``os.setpriority``, ``os.setsid``, ``os.setpgid``, ``os.setpgrp``, ``os.chroot``, the
  ``os.sched_set*`` calls), its signal handlers and timers (``signal.signal``, ``signal.alarm``,
  ``signal.setitimer``, ``signal.siginterrupt``, ``signal.set_wakeup_fd``) and a signal sent by
  ``signal.pidfd_send_signal`` or ``signal.raise_signal``, the interpreter's limits
  (``sys.setrecursionlimit``, ``sys.setswitchinterval``, ``sys.set_int_max_str_digits``,
  ``sys.setdlopenflags``, ``socket.setdefaulttimeout``), and POSIX shared memory and semaphores,
  files under ``/dev/shm`` (``_posixshmem.shm_open`` with ``O_CREAT``, ``O_TRUNC`` or write access,
  ``_posixshmem.shm_unlink``, ``_multiprocessing.sem_unlink``).

``locale.setlocale`` is left alone: ``locale.getpreferredencoding()`` sets and restores it, so
refusing it would refuse reads that only ask for an encoding.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects import lowlevel
from mcp_providers._sideeffects.scope import Scope, scope_var

Describe = Callable[[tuple[Any, ...]], "str | None"]
"""``audit args -> what was attempted``, or ``None`` when the call changes nothing (a query)."""


def _signal(target: str) -> Describe:
    def described(args: tuple[Any, ...]) -> str | None:
        number = args[1] if len(args) > 1 else None
        if number == 0:
            return None  # signal 0: only asks whether the target exists
        return f"sending signal {_signal_name(number)} to {target} {args[0]!r}"

    return described


def _signal_name(number: Any) -> str:
    try:
        return signal.Signals(number).name
    except (ValueError, TypeError):
        return repr(number)


def _prlimit(args: tuple[Any, ...]) -> str | None:
    if len(args) < 3 or args[2] is None:
        return None  # prlimit(pid, resource): a read of the limit
    return f"setting resource limit {args[1]!r} of process {args[0]!r} to {args[2]!r} (process-wide)"


def _library(name: Any) -> str:
    return "the process's own symbols" if name is None else f"the native library {name!r}"


def _lookup(args: tuple[Any, ...]) -> str:
    symbol = repr(args[1]) if len(args) > 1 else "?"
    return f"looking up the native function {symbol} through ctypes (its effects cannot be judged)"


EVENTS: dict[str, Describe] = {
    "os.kill": _signal("process"),
    "os.killpg": _signal("process group"),
    "signal.pthread_kill": _signal("thread"),
    "resource.setrlimit": lambda a: f"setting resource limit {a[0]!r} to {a[1]!r} (process-wide)",
    "resource.prlimit": _prlimit,
    "socket.sethostname": lambda a: f"setting the host name to {a[0]!r}",
    "ctypes.dlopen": lambda a: f"loading {_library(a[0])} through ctypes (its code cannot be judged)",
    "ctypes.dlsym": _lookup,
    "ctypes.dlsym/handle": _lookup,
    "ctypes.call_function": lambda a: "calling a native function through ctypes (its effects cannot be judged)",
}
"""Audit events of this module's kind, and what each attempts."""


def judge_event(scope: Scope, event: str, args: tuple[Any, ...]) -> None:
    """Judge one of :data:`EVENTS` in ``scope`` (the audit hook calls it for those only)."""
    attempted = EVENTS[event](args)
    if attempted is not None:
        scope.attempt(attempted, "process", event=event)


def _shm_open(args: tuple[Any, ...]) -> str | None:
    flags = args[1] if len(args) > 1 and type(args[1]) is int else 0
    if not flags & (os.O_CREAT | os.O_TRUNC | os.O_RDWR | os.O_WRONLY):
        return None  # read-only: maps nothing it could write
    return f"opening POSIX shared memory {args[0]!r} for writing or creating (a file under /dev/shm)"


def _said(what: str) -> Describe:
    return lambda a: f"{what}{' ' + _args(a) if a else ''} (process-wide)"


def _args(args: tuple[Any, ...]) -> str:
    text = ", ".join(repr(a) for a in args)
    return f"({text if len(text) <= 120 else text[:117] + '...'})"


_IDENTITY = ("setuid", "setgid", "seteuid", "setegid", "setreuid", "setregid", "setresuid", "setresgid")
_STANDING = ("setgroups", "initgroups", "nice", "setpriority", "setsid", "setpgid", "setpgrp", "chroot")
_SCHEDULER = ("sched_setaffinity", "sched_setscheduler", "sched_setparam")
_HANDLERS = ("signal", "alarm", "setitimer", "siginterrupt", "set_wakeup_fd", "pidfd_send_signal", "raise_signal")
_INTERPRETER = ("setrecursionlimit", "setswitchinterval", "set_int_max_str_digits", "setdlopenflags")


def _unaudited_table() -> list[tuple[Any, str, Describe]]:
    import _multiprocessing
    import _posixshmem

    table: list[tuple[Any, str, Describe]] = [(os, n, _said(f"os.{n}")) for n in (*_IDENTITY, *_STANDING, *_SCHEDULER)]
    table += [(signal, n, _said(f"signal.{n}")) for n in _HANDLERS]
    table += [(sys, n, _said(f"sys.{n}")) for n in _INTERPRETER]
    table.append((socket, "setdefaulttimeout", _said("socket.setdefaulttimeout")))
    table.append((_posixshmem, "shm_open", _shm_open))
    table.append((_posixshmem, "shm_unlink", lambda a: f"removing POSIX shared memory {a[0]!r} (under /dev/shm)"))
    table.append((_multiprocessing, "sem_unlink", lambda a: f"removing the named semaphore {a[0]!r} (under /dev/shm)"))
    return table


UNAUDITED: list[tuple[Any, str]] = []
"""``(module, name)`` of each call :func:`patch_process_state` wrapped (what exists on this platform)."""


def _wrap(module: Any, name: str, describe: Describe) -> None:
    original = getattr(module, name, None)
    if original is None or getattr(original, "__mcp_providers_guarded__", False):
        return

    def guarded(*args: Any, **kwargs: Any) -> Any:
        scope = scope_var.get()
        if scope is not None:
            attempted = describe(args)
            if attempted is not None:
                scope.attempt(attempted, "process", event=f"{module.__name__}.{name}")
        return original(*args, **kwargs)

    guarded.__name__, guarded.__doc__ = original.__name__, original.__doc__
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    guarded.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
    lowlevel.replace(name, original, guarded, lowlevel.HOMES if module is os else (module,))
    UNAUDITED.append((module, name))


def patch_process_state() -> None:
    """Wrap every call of :data:`UNAUDITED`'s kind (see the module docstring), once."""
    for module, name, describe in _unaudited_table():
        _wrap(module, name, describe)


def guarded_homes() -> tuple[Any, ...]:
    """The modules :func:`patch_process_state` put guards in (for saved references)."""
    return tuple(dict.fromkeys(module for module, _ in UNAUDITED if module is not os))
