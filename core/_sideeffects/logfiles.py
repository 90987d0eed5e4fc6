"""The host's log files: which files a ``logging.FileHandler`` may write while a guarded call runs.

A record a provider logs (``httpx2`` logs every request it sends) is emitted by the *host's*
handlers inside the provider's scope, so their writes (the open of a ``delay=True`` file, a
rotating handler's renames and removals, a ``WatchedFileHandler``'s reopen) are judged there. They
are allowed for *what* is written: the file of a handler the host made outside every guarded call
(:data:`_log_files`), in the handler's own mode, and its rotations (``app.log.1``,
``app.log.2026-12-01``). A handler made inside a guarded call is judged like any other open.

How a handler is known to be the host's:

- **Process-wide** (``serve``, ``side_effects="enforce"``): ``logging.FileHandler.__init__`` is
  wrapped (:func:`patch_logging`) and records each handler made outside a scope, attached to a
  logger or not.
- **Scoped** (embedded by default; nothing of the host is patched): the framework counts the
  guarded calls running in the process (:func:`call_began`, :func:`call_ended`) and looks at the
  file handlers attached to loggers (``logging.root`` and every logger of
  ``logging.Logger.manager.loggerDict``, public attributes only) when that count leaves zero and
  when it returns to it, and at each composition's start (:func:`record_log_files`). A handler
  first seen when the count leaves zero (or at a start while it is zero) was made while no
  guarded call ran: it is the host's, whenever it was made (before or after the start, on any
  logger, ``delay=True`` or not). A handler first seen when the count returns to zero was made
  while one ran, and nothing public tells by whom: it is never counted as the host's. So a
  handler the host makes *while* a read runs has its writes inside later reads refused (outside
  them it works as usual); make handlers at start-up or in a lifespan, or opt into enforce.
  Not covered either way: a handler made by a task a read started that outlives it (the scope
  follows the task, the count does not), and one attached to no logger in scoped mode.

Cost: nothing on an allowed write (the record is a dict lookup on the refusal path only); in
scoped mode one walk of the loggers each time the process goes from idle to busy and back (about
10 microseconds per hundred loggers, so some 20 for a read alone; under load calls overlap and
the walks are rare). Process-wide, no walk.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from mcp_providers._sideeffects.scope import scope_var

_log_files: dict[str, str] = {}  # resolved path -> mode, of logging.FileHandlers made outside any scope
_seen: weakref.WeakSet[logging.FileHandler] = weakref.WeakSet()  # handlers already judged host's or not
_running = 0  # guarded calls running in the process now
_lock = threading.Lock()  # the count and the walks (a walk and a count change are one step)
_patched: list[Callable[..., Any]] = []  # the wrapped FileHandler.__init__, once patch_logging ran


def expected_log_write(event: str, args: tuple[Any, ...], paths: list[str]) -> bool:
    """Whether an audited write is a host log handler's: its file opened in its own mode (an
    ``os.open`` has none, so never), or a rename/removal within its rotation family."""
    if event == "open":
        return args[1] is not None and _log_files.get(paths[0]) == args[1]
    return event in ("os.rename", "os.remove") and all(_in_log_family(p) for p in paths)


def _in_log_family(path: str) -> bool:
    """A configured log file or one of its rotations (``app.log.1``, ``app.log.2026-12-01``)."""
    if path in _log_files:
        return True
    return any(path.startswith(base + ".") and os.sep not in path[len(base) :] for base in _log_files)


def _register_log_file(handler: logging.FileHandler) -> None:
    _log_files[os.path.realpath(handler.baseFilename)] = handler.mode


def _attached_file_handlers() -> Iterator[logging.FileHandler]:
    for logger in (logging.root, *list(logging.Logger.manager.loggerDict.values())):
        handlers = getattr(logger, "handlers", None)  # a PlaceHolder has none; most loggers an empty list
        if handlers:
            for handler in list(handlers):
                if isinstance(handler, logging.FileHandler):
                    yield handler


def _look(*, hosts: bool) -> None:
    """Judge each attached handler not seen before: the host's when ``hosts`` (no guarded call
    ran since the last look), else made while one ran (never recorded). Holds :data:`_lock`."""
    for handler in _attached_file_handlers():
        try:
            if handler in _seen:
                continue
            _seen.add(handler)
        except TypeError:  # a subclass made unhashable (``__eq__`` without ``__hash__``): never the host's
            continue
        if hosts:
            _register_log_file(handler)


def record_log_files() -> None:
    """At a composition's start (scoped level): record the handlers attached now, if no guarded
    call is running (else they are judged when the running calls end, like any made meanwhile)."""
    with _lock:
        if _running == 0 and not _patched:
            _look(hosts=True)


def call_began() -> None:
    """A guarded call is about to enter its scope: when none was running, the handlers attached
    since the last look were made by the host."""
    global _running
    with _lock:
        if _running == 0 and not _patched:
            _look(hosts=True)
        _running += 1


def call_ended() -> None:
    """A guarded call has left its scope: when none is running any more, the handlers attached
    since the last look were made while calls ran, so they are not the host's."""
    global _running
    with _lock:
        _running -= 1
        if _running == 0 and not _patched:
            _look(hosts=False)


def patch_logging() -> None:
    """Record every ``logging.FileHandler`` made outside a scope, attached to a logger or not
    (process-wide: ``logging.FileHandler.__init__`` is wrapped). The walks stop: the wrapper sees
    each handler made, so nothing is left to tell apart."""
    with _lock:
        if _patched:
            return
        if _running == 0:
            _look(hosts=True)  # made before the patch, while no call ran
        original = logging.FileHandler.__init__

        def __init__(self: logging.FileHandler, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)  # opens the file now unless delay=True: judged as any open
            if scope_var.get() is None:
                _register_log_file(self)

        logging.FileHandler.__init__ = __init__  # type: ignore[method-assign]
        _patched.append(__init__)
