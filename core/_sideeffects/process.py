"""Other processes and the state of the whole process, judged in a scope (testers twenty-six F1-F3,
F7 and twenty-seven F1-F6, F11, F12).

A read that signals a process, ends this one, lowers its limits or runs native code it cannot show
changes what every later request meets, as a file written would. Two levels, as for files:

- Audited, so judged at both levels by :func:`judge_event` from the audit hook (:data:`EVENTS`):
  a signal sent (``os.kill``, ``os.killpg``, ``signal.pthread_kill``; signal 0 sends nothing, it
  asks whether the target exists, and passes), resource limits set (``resource.setrlimit``,
  ``resource.prlimit`` with new limits; without, it reads), the host name
  (``socket.sethostname``), a profile or trace function or an audit hook installed (each sees
  every later request), and native code through ``ctypes``: a library loaded (``ctypes.dlopen``:
  its initialisers run), a function looked up (``ctypes.dlsym``: Python 3.11 raises no event for
  the call itself, so a function looked up before the read is not seen, as a C extension's own
  calls are not), raw memory reached by address (``from_address``, ``PyObj_FromPtr``), an
  ``fcntl`` setter (``F_SETFL`` ...) on a standard descriptor, and ``fcntl.ioctl`` on one with any
  request but a question (``FIONBIO``, ``TIOCSWINSZ`` ...), or with ``TIOCSTI``/``TIOCCONS`` on any
  descriptor (they reach a terminal other processes read); and a native library loaded as an
  extension module from where the import system would not find it by its name
  (``ExtensionFileLoader(name, path)``: the "import" event's file; a first import passes).
- Unaudited, so wrapped process-wide only (:func:`patch_process_state`, :data:`UNAUDITED`), under
  every module name that holds them (``os`` and ``posix``; ``signal`` and the ``_signal`` natives
  its wrappers call, so ``importlib.reload(signal)`` finds them guarded; ``socket`` and
  ``_socket``; ``threading`` and ``_thread``): who the process is and how it is scheduled
  (``os.setuid`` and its kin, ``os.setgroups``, ``os.nice``, ``os.setpriority``, ``os.setsid``,
  ``os.setpgid``, ``os.setpgrp``, ``os.chroot``, ``os.login_tty``, the ``os.sched_set*`` calls),
  its end (``os.abort``, ``os._exit``, ``faulthandler``'s crash helpers and timers), its standard
  descriptors (``os.close`` of 0, 1 or 2: the protocol channel under stdio; ``os.dup2`` and
  ``os.closerange`` of any), its signal handlers, mask and timers (``signal.signal``,
  ``signal.pthread_sigmask`` but the idiom that reads the mask, ``signal.alarm``,
  ``signal.setitimer``, ``signal.siginterrupt``, ``signal.set_wakeup_fd``), a signal sent by
  ``signal.pidfd_send_signal`` or ``signal.raise_signal`` or simulated by ``_thread.interrupt_main``
  (any signal number: a ``KeyboardInterrupt`` in the main thread ends the server; tester
  thirty-two F8), the interpreter's settings
  (``sys.setrecursionlimit``, ``sys.setswitchinterval``, ``sys.set_int_max_str_digits``,
  ``sys.setdlopenflags``, ``socket.setdefaulttimeout``, ``threading.stack_size`` with a size, the
  ``gc`` switches and thresholds, ``faulthandler``'s handlers), the clocks (``time.clock_settime``),
  POSIX shared memory and semaphores, files under ``/dev/shm`` (``_posixshmem.shm_open`` with
  ``O_CREAT``, ``O_TRUNC`` or write access, ``_posixshmem.shm_unlink``, a
  ``_multiprocessing.SemLock`` made with a name it keeps, ``_multiprocessing.sem_unlink``), and,
  once imported, ``ctypes.memmove``/``memset`` and ``cffi``'s ``FFI.dlopen``; hooks for later
  threads (``threading.settrace``/``setprofile``), the event loop policy, and a standard
  descriptor's blocking mode (``os.set_blocking``), inheritance (``os.set_inheritable``) and
  terminal settings (``termios.tcsetattr``, ``tcflush``, ``tcflow``, ``tcsendbreak``,
  ``tcsetwinsize``: ``tty.setraw`` calls them; a file object by its ``fileno()``); ``tracemalloc``
  started, stopped or cleared, and ``logging``'s process-wide switches (``logging.disable``,
  ``setLoggerClass``, ``setLogRecordFactory``, ``captureWarnings``).
- Work a read registers to run later (``atexit.register``, ``os.register_at_fork``,
  ``codecs.register``) is neither refused nor followed: libraries register it when first used, a
  read may be that first use, and what they register is often the process's own (``weakref``'s
  exit hook runs every finalizer of the process), so binding it to the read would judge the host.

Hooks set by assignment (``sys.excepthook``, ``threading.excepthook``, ``sys.unraisablehook``,
``sys.displayhook``, ``sys.breakpointhook``), the import system's lists (``sys.meta_path``,
``sys.path_hooks``, ``sys.path``, ``sys.path_importer_cache``) and the locale (``locale.setlocale``:
``locale.getpreferredencoding()`` sets and restores it, so the call is not refused, the locale left
changed is) are compared around the read's code rather than wrapped: :mod:`.assigned`.

Left alone, as settings libraries make on first use (a read may be that use) or restore:
``warnings`` filters (set at import, restored by ``catch_warnings``), ``logging.basicConfig`` and
loggers' levels and handlers.

Left alone: ``os.close`` of another of the host's descriptors (nothing tells a descriptor the
read opened from one it did not); a guard's ``__wrapped__`` and references saved in lists, plain
dicts and partials (:mod:`.saved`); native code reached without these (a C extension, a
``CFUNCTYPE`` made from a raw address). A refusal a library swallows (``sys.addaudithook`` drops
the new hook and swallows any exception) changes nothing, and the read may still be answered: the
receipt lists the refusal. Finalizers (``weakref.finalize``, ``__del__``) and work run in a
context the read made empty (``contextvars.Context().run``, ``loop.call_soon(...,
context=Context())``; a task started with one is followed process-wide: :func:`.scope.carried`)
are not followed; per-thread settings (``sys.set_asyncgen_hooks``,
``sys.set_coroutine_origin_tracking_depth``) are the thread's.
"""

from __future__ import annotations

import fcntl
import importlib
import importlib.machinery
import os
import signal
import socket
import sys
import termios
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects import lowlevel
from mcp_providers._sideeffects.imports import patch_on_import
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


_SETTERS = frozenset(getattr(fcntl, n) for n in dir(fcntl) if n.startswith("F_SET"))
"""``fcntl`` commands that change a descriptor (``F_SETFL``: ``O_NONBLOCK``, ``O_APPEND`` ...)."""

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
    "ctypes.cdata": lambda a: f"reaching raw memory at {a[0]!r} through ctypes (from_address: writable)",
    "ctypes.PyObj_FromPtr": lambda a: f"taking a Python object from the raw address {a[0]!r} through ctypes",
    "sys.setprofile": lambda a: "installing a profile function (it sees every later call of the thread)",
    "sys.settrace": lambda a: "installing a trace function (it sees every later line of the thread)",
    "sys.addaudithook": lambda a: "adding an audit hook (it sees every later audited event of the process)",
    "fcntl.ioctl": lambda a: _ioctl(a),
    "import": lambda a: _extension(a),
    "fcntl.fcntl": lambda a: (
        _std_fd(a, f"changing the flags of (fcntl {a[1] if len(a) > 1 else '?'!r})")
        if len(a) > 1 and a[1] in _SETTERS
        else None
    ),
}
"""Audit events of this module's kind, and what each attempts."""


_IOCTL_NAMES = {getattr(termios, n): n for n in dir(termios) if n.startswith(("TIOC", "FIO", "TC"))}
_IOCTL_QUERIES = frozenset(
    getattr(termios, n)
    for n in ("FIONREAD", "TIOCINQ", "TIOCOUTQ", "TIOCMGET", "TIOCGSERIAL", "TIOCGICOUNT", "TIOCGLCKTRMIOS")
    if hasattr(termios, n)
) | frozenset(v for v, n in _IOCTL_NAMES.items() if n.startswith(("TIOCG", "TCGET")))
"""``ioctl`` requests that only ask (a window size, the terminal's settings, bytes waiting)."""
_IOCTL_ANY_FD = frozenset(getattr(termios, n) for n in ("TIOCSTI", "TIOCCONS") if hasattr(termios, n))
"""``ioctl`` requests that reach past the descriptor: input pushed into a terminal other processes
read (``TIOCSTI``), the console's output redirected (``TIOCCONS``)."""


def _ioctl(args: tuple[Any, ...]) -> str | None:
    """``fcntl.ioctl(fd, request, ...)``: any request but a question, on a standard descriptor (the
    tester's ``FIONBIO`` made stdin non-blocking as ``os.set_blocking`` would); on any descriptor,
    one that reaches another process's terminal."""
    request = args[1] if len(args) > 1 else None
    name = _IOCTL_NAMES.get(request, repr(request))
    if request in _IOCTL_ANY_FD:
        return f"fcntl.ioctl {name} on descriptor {args[0]!r} (it reaches a terminal other processes read)"
    if request in _IOCTL_QUERIES:
        return None
    return _std_fd(args, f"changing (fcntl.ioctl {name})")


def _extension(args: tuple[Any, ...]) -> str | None:
    """An "import" event: with a file, the import system loads it as an extension module (a
    ``dlopen``: its initialisers run). Passes where the path finder would find that module by its
    name; from anywhere else (``ExtensionFileLoader(name, path)``, tester twenty-nine F7) it is a
    native library loaded as ``ctypes.CDLL`` would, whose code cannot be judged."""
    name, filename = args[0] if args else None, args[1] if len(args) > 1 else None
    if not isinstance(filename, str) or not isinstance(name, str) or _found_by_import(name, filename):
        return None  # an import by name, or the module the path finder would load
    return f"loading the native library {filename!r} as the extension module {name!r} (its code cannot be judged)"


def _found_by_import(name: str, filename: str) -> bool:
    """Whether ``filename`` is where the path finder looks for extension module ``name``: its last
    part with an extension suffix, in a ``sys.path`` folder (top level) or its package's ``__path__``."""
    parent, _, last = name.rpartition(".")
    names = {last + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES}
    if os.path.basename(filename) not in names:
        return False
    if parent:
        folders = list(getattr(sys.modules.get(parent), "__path__", None) or ())
    else:
        folders = [entry or os.getcwd() for entry in sys.path if isinstance(entry, str)]
    folder = os.path.realpath(os.path.dirname(filename))
    return any(os.path.realpath(entry) == folder for entry in folders)


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
_STANDING = ("setgroups", "initgroups", "nice", "setpriority", "setsid", "setpgid", "setpgrp", "chroot", "login_tty")
_SCHEDULER = ("sched_setaffinity", "sched_setscheduler", "sched_setparam")
_ENDING = ("abort", "_exit", "closerange", "dup2")  # the process ends, or descriptors it holds are replaced
_HANDLERS = ("signal", "alarm", "setitimer", "siginterrupt", "set_wakeup_fd", "pidfd_send_signal", "raise_signal")
_INTERPRETER = ("setrecursionlimit", "setswitchinterval", "set_int_max_str_digits", "setdlopenflags")
_COLLECTOR = ("disable", "enable", "set_threshold", "freeze", "unfreeze", "set_debug")
_FAULTS = ("enable", "disable", "register", "unregister", "dump_traceback_later", "cancel_dump_traceback_later")
_CLOCKS = ("clock_settime", "clock_settime_ns")

Row = tuple[Any, str, Describe, tuple[Any, ...]]
"""``(module, name, describe, homes)``: the call, what it attempts, every module holding it."""


def _std_fd(args: tuple[Any, ...], what: str) -> str | None:
    """``what`` the process's standard descriptor ``args[0]`` (0-2: the protocol channel under
    stdio) would undergo, else ``None``: another descriptor is the read's own business."""
    fd = args[0] if args else None
    if type(fd) is int and 0 <= fd <= 2:
        return f"{what} the process's standard descriptor {fd} (the protocol channel under stdio)"
    return None


def _queried(what: str, asks: Callable[[tuple[Any, ...]], bool]) -> Describe:
    """Like :func:`_said`, but a call ``asks`` takes for a question (it changes nothing) passes."""
    said = _said(what)
    return lambda a: None if asks(a) else said(a)


def _mask_query(args: tuple[Any, ...]) -> bool:  # pthread_sigmask(SIG_BLOCK, []): the idiom to read the mask
    return len(args) > 1 and args[0] in (signal.SIG_BLOCK, signal.SIG_UNBLOCK) and not list(args[1])


def _semaphore(args: tuple[Any, ...]) -> str | None:
    name, unlink = (args[3], args[4]) if len(args) > 4 else (None, True)
    if name is None or unlink:
        return None  # unnamed, or removed at once: no file stays (multiprocessing.Lock() makes these)
    return f"creating the named semaphore {name!r} (a file under /dev/shm that stays)"


def _unaudited_table() -> list[Row]:
    import _socket
    import _thread
    import asyncio
    import faulthandler
    import gc
    import threading
    import time

    _multiprocessing, _posixshmem, _signal = _natives()

    def rows(module: Any, names: tuple[str, ...], homes: tuple[Any, ...], said: str = "") -> list[Row]:
        prefix = said or module.__name__
        return [(module, n, _said(f"{prefix}.{n}"), homes) for n in names]

    crashes = tuple(n for n in dir(faulthandler) if n.startswith("_") and not n.startswith("__"))  # _sigsegv...
    table = rows(os, (*_IDENTITY, *_STANDING, *_SCHEDULER, *_ENDING), lowlevel.HOMES, "os")
    table.append((os, "close", lambda a: _std_fd(a, "closing"), lowlevel.HOMES))  # others: the read's own
    table.append((os, "set_blocking", lambda a: _std_fd(a, "changing the blocking mode of"), lowlevel.HOMES))
    table += rows(threading, ("settrace", "setprofile"), (threading,))  # every later thread's hooks
    table += rows(asyncio.events, ("set_event_loop_policy",), (asyncio, asyncio.events), "asyncio")
    table += rows(_signal, _HANDLERS, (signal, _signal), "signal")  # the natives signal.py's wrappers call
    table.append((_signal, "pthread_sigmask", _queried("signal.pthread_sigmask", _mask_query), (signal, _signal)))
    table += rows(sys, _INTERPRETER, (sys,))
    table += rows(_socket, ("setdefaulttimeout",), (socket, _socket), "socket")
    table.append((_thread, "stack_size", _queried("threading.stack_size", lambda a: not a), (_thread, threading)))
    table.append((_thread, "interrupt_main", _said("_thread.interrupt_main"), (_thread, threading)))  # ends a server
    table += rows(gc, _COLLECTOR, (gc,))
    table += rows(faulthandler, (*_FAULTS, *crashes), (faulthandler,))
    table += rows(time, _CLOCKS, (time,))
    table.append((_posixshmem, "shm_open", _shm_open, (_posixshmem,)))
    table.append((_posixshmem, "shm_unlink", _said_file("removing POSIX shared memory"), (_posixshmem,)))
    table.append((_multiprocessing, "sem_unlink", _said_file("removing the named semaphore"), (_multiprocessing,)))
    return table


_TERMINAL_SETTERS = ("tcsetattr", "tcflush", "tcflow", "tcsendbreak", "tcsetwinsize")


def _descriptor_table() -> list[Row]:
    """A standard descriptor's mode, changed by calls that raise no audit event (tester twenty-nine
    F4): ``termios``' setters (``tty.setraw`` calls them; a file object is taken by its
    ``fileno()``) and ``os.set_inheritable``."""
    table: list[Row] = [(termios, n, _terminal(n), (termios,)) for n in _TERMINAL_SETTERS]
    table.append((os, "set_inheritable", lambda a: _std_fd(a, "changing the inheritance of"), lowlevel.HOMES))
    return table


_TRACING = ("start", "stop", "clear_traces", "reset_peak")
_LOGGING = ("disable", "setLoggerClass", "setLogRecordFactory", "captureWarnings")


def _settings_table() -> list[Row]:
    """Process settings every later request meets, with no audit event (tester twenty-nine F6):
    ``tracemalloc`` (every allocation traced, or the host's tracing ended) and ``logging``'s
    process-wide switches (every record silenced, every logger or record made otherwise)."""
    import _tracemalloc
    import logging
    import tracemalloc

    table = [(_tracemalloc, n, _said(f"tracemalloc.{n}"), (tracemalloc, _tracemalloc)) for n in _TRACING]
    return table + [(logging, n, _said(f"logging.{n}"), (logging,)) for n in _LOGGING]


def _terminal(name: str) -> Describe:
    return lambda a: _std_fd(_fileno(a), f"termios.{name} of")


def _fileno(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` with a file object first replaced by its descriptor, as ``termios`` takes one."""
    if args and type(args[0]) is not int and hasattr(args[0], "fileno"):
        try:
            return (args[0].fileno(), *args[1:])
        except (OSError, ValueError):
            return args
    return args


def _natives() -> tuple[Any, Any, Any]:
    """``_multiprocessing``, ``_posixshmem`` and ``_signal``: C modules typeshed has no stubs for."""
    return tuple(importlib.import_module(n) for n in ("_multiprocessing", "_posixshmem", "_signal"))  # type: ignore[return-value]


def _said_file(what: str) -> Describe:
    return lambda a: f"{what} {a[0]!r} (a file under /dev/shm)"


UNAUDITED: list[tuple[Any, str]] = []
"""``(module, name)`` of each call :func:`patch_process_state` wrapped (what exists on this platform)."""


def _wrap(module: Any, name: str, describe: Describe, homes: tuple[Any, ...]) -> None:
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

    guarded.__name__, guarded.__doc__ = getattr(original, "__name__", name), original.__doc__
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    guarded.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
    lowlevel.replace(name, original, guarded, homes)
    UNAUDITED.append((module, name))


def patch_process_state() -> None:
    """Wrap every call of :data:`UNAUDITED`'s kind (see the module docstring), once; ``ctypes``'
    raw memory writers and ``cffi``'s loader when those are imported (now or later)."""
    for module, name, describe, homes in _unaudited_table():
        _wrap(module, name, describe, homes)
    for module, name, describe, homes in _descriptor_table() + _settings_table():
        _wrap(module, name, describe, homes)
    _guard_semaphores(_natives()[0])
    patch_on_import("ctypes", _patch_ctypes)
    patch_on_import("cffi", _patch_cffi)


def _patch_ctypes(ctypes: Any) -> None:
    for name in ("memmove", "memset"):  # foreign functions made at import: no audit event per call
        _wrap(ctypes, name, _said(f"writing raw memory with ctypes.{name}"), (ctypes,))


def _patch_cffi(cffi: Any) -> None:
    """``FFI.dlopen`` (a library, or the process's own symbols with ``None``) raises no audit event."""
    _wrap(cffi.FFI, "dlopen", lambda a: f"loading {_library(a[1] if len(a) > 1 else None)} through cffi", (cffi.FFI,))


def _guard_semaphores(module: Any) -> None:
    """``_multiprocessing.SemLock`` made with a name kept (``unlink=False``) leaves a file in
    ``/dev/shm``: a subclass judges the making, everything else it inherits."""
    original = module.SemLock
    if getattr(original, "__mcp_providers_guarded__", False):
        return

    class SemLock(original):  # type: ignore[misc,valid-type]
        __mcp_providers_guarded__ = True
        __wrapped__ = original

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            scope = scope_var.get()
            if scope is not None and (attempted := _semaphore(args)) is not None:
                scope.attempt(attempted, "process", event="_multiprocessing.SemLock")
            return super().__new__(cls, *args, **kwargs)

    module.SemLock = SemLock
    UNAUDITED.append((module, "SemLock"))


def guarded_homes() -> tuple[Any, ...]:
    """The modules :func:`patch_process_state` put guards in (for saved references)."""
    return tuple(dict.fromkeys(module for module, _ in UNAUDITED if module is not os))
