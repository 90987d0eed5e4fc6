"""The host's log files: which files a ``logging.FileHandler`` may write while a guarded call runs.

A record a provider logs (``httpx2`` logs every request it sends) is emitted by the *host's*
handlers inside the provider's scope, so their writes (the open of a ``delay=True`` file, a
rotating handler's renames and removals, a ``WatchedFileHandler``'s reopen) are judged there. Only
what such a handler does *itself* is allowed, judged on the refusal path: the handler must be the
host's (made outside every guarded call, :data:`_log_files`), hold its lock in this thread (as
``Handler.handle`` does around ``emit``) with its stream closed (as a ``delay=True`` handler's
first record, ``doRollover`` and ``reopenIfNeeded`` leave it before they open), and the write
must be one of:

- the open of its file in its own mode: the ``baseFilename`` and ``mode`` it had when recorded as
  the host's (:data:`_origins`), whatever they are now (a read that points them at another file,
  or sets ``"w"``, writes nothing by it; tester twenty-six F10); its rotations are named from
  that file too, with the ``namer``, ``rotator`` and ``backupCount`` it had when the first guarded
  call after it was recorded began (:func:`settle`: the cookbook sets a namer after making the
  handler), whatever a call sets them to later;
- a rollover's renames within its rotation family, never onto the file: the names the handler's
  own ``rotation_filename`` (its ``namer``) makes of a RotatingFileHandler's ``app.log.N``
  (1 <= N <= ``backupCount``), of a TimedRotatingFileHandler's ``app.log.<suffix>`` with the
  suffix matching its own ``extMatch`` and made by ``strftime`` with its ``suffix`` format (so
  ``app.1.log`` or ``app.<date>.log`` for a namer moving it, ``app.log.1.gz`` for one
  compressing); removals of a family member; the file itself only renamed into its family. The
  handler's file is judged as it is at the write (its path and where it resolves now: a
  symlinked log's first rollover moves the link, the handler then opens a new regular file);
- with a custom ``rotator`` (the logging cookbook's compressing one), the write-open of a family
  member and the removal of the file it copied.

A plain ``FileHandler`` or ``WatchedFileHandler`` has no family: ``app.sqlite`` beside a log ``app``
is nobody's rotation. A read's own code writing a host log's file (not through the handler) is
refused, even in the handler's mode.

How a handler is known to be the host's:

- **Process-wide** (``serve``, ``side_effects="enforce"``): ``logging.FileHandler.__init__`` is
  wrapped (:func:`patch_logging`) and records each handler made outside a scope, attached to a
  logger or not; one made in a scope is judged when made, as if it opened its file in its mode
  then, ``delay=True`` or not.
- **Scoped** (embedded by default; nothing of the host is patched): the framework counts the
  guarded calls running in the process (:func:`call_began`, :func:`call_ended`) and looks at the
  file handlers attached to loggers (``logging.root`` and every logger of
  ``logging.Logger.manager.loggerDict``, and behind their handlers a ``MemoryHandler``'s
  ``target`` and a ``QueueHandler``'s ``listener.handlers``; public attributes only) when that
  count leaves zero and when it returns to it, and at each composition's start
  (:func:`record_log_files`). A handler first seen when the count leaves zero (or at a start
  while it is zero) was made while no guarded call ran: it is the host's, whenever it was made
  (before or after the start, on any logger, ``delay=True`` or not). A handler first seen when
  the count returns to zero was made while one ran, and nothing public tells by whom: it is never
  counted as the host's. So a handler the host makes *while* a read runs has its writes inside
  later reads refused (outside them it works as usual); make handlers at start-up or in a
  lifespan, or opt into enforce. Not covered either way: a handler attached to no logger in
  scoped mode.

What scoped mode cannot tell: a handler made inside a read or a tool and attached to a logger by
a task after that call ended (the scope follows the task, the count does not) is first seen at
the next idle->busy walk and counted as the host's. Its file is then written only by the handler
itself (records logged to it, in its mode: truncated first for mode ``"w"``), never by a read's
own ``open``. Plugin code is trusted: this catches mistakes, not malice. Enforce mode tells, by
wrapping ``FileHandler.__init__``.

Cost: nothing on an allowed write (the handlers are looked at on the refusal path only); in
scoped mode one walk of the loggers each time the process goes from idle to busy and back (about
10 microseconds per hundred loggers, so some 20 for a read alone; under load calls overlap and
the walks are rare). Process-wide, no walk. On the refusal path, a timed handler's candidate
suffixes are the substrings of the written name (some 4 ms for a 250-character name).
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from mcp_providers._sideeffects.scope import scope_var

_log_files: weakref.WeakSet[logging.FileHandler] = weakref.WeakSet()
"""The host's handlers (made outside any scope); their files are resolved at each judged write."""
_origins: weakref.WeakKeyDictionary[logging.FileHandler, tuple[str, str]] = weakref.WeakKeyDictionary()
"""Each host handler's ``baseFilename`` and ``mode`` when it was recorded: a read that sets the
public attributes (to another file, or ``"w"``) moves nothing it may write."""
_settings: weakref.WeakKeyDictionary[logging.FileHandler, tuple[Any, bool, int]] = weakref.WeakKeyDictionary()
"""Each host handler's ``namer``, whether it has a ``rotator``, and its ``backupCount``: when it was
recorded, then once more at the next guarded call's entry (:func:`settle`)."""
_unsettled: weakref.WeakSet[logging.FileHandler] = weakref.WeakSet()  # recorded, not yet settled
unsettled = [False]
"""Whether a handler was recorded since the last :func:`settle` (set after it is added to the unsettled
set, cleared under the lock before they are settled): one list read per guarded call, not a WeakSet's
``len`` (a Python call), for a caller deciding whether to call :func:`settle`."""
_seen: weakref.WeakSet[logging.Handler] = weakref.WeakSet()  # handlers already judged host's or not
_running = 0  # guarded calls running in the process now
_lock = threading.Lock()  # the count and the walks (a walk and a count change are one step)
_patched: list[Callable[..., Any]] = []  # the wrapped FileHandler.__init__, once patch_logging ran
time.strptime("2026", "%Y")  # imports ``_strptime`` now, not first inside an audit hook
_MAX_DEPTH = 4  # handlers behind handlers (a MemoryHandler's target, a QueueHandler's listener)


def expected_log_write(event: str, args: tuple[Any, ...], paths: list[str]) -> bool:
    """Whether an audited write (``event`` "open", "os.rename" or "os.remove"; ``paths`` resolved)
    is one a host handler makes itself, under its lock with its stream closed: the open of its
    file in its own mode (an ``os.open`` has none, so never), or a step of its rollover. Runs on
    the refusal path only."""
    if event not in ("open", "os.rename", "os.remove") or (event == "open" and args[1] is None):
        return False
    for handler in list(_log_files):
        if _handler_at_work(handler) and _writes_its_own(handler, event, args, paths):
            return True
    return False


def _writes_its_own(handler: logging.FileHandler, event: str, args: tuple[Any, ...], paths: list[str]) -> bool:
    """Whether the write is one ``handler`` itself makes (``logging/handlers.py``): ``_open`` of
    its file in its mode; a rollover's renames within its family (``base`` -> ``base.1`` ...,
    never onto ``base``) and removals of an old rotation; with a custom ``rotator`` (the cookbook's
    compressing one), the write-open of the rotation and the removal of ``base`` it copied. The
    file and mode are those the handler had when recorded (:func:`_origin`); the file is resolved
    at this write (a symlink followed now, not at registration)."""
    base, mode = _origin(handler)
    own = {os.path.abspath(base), os.path.realpath(base)}
    rotator = _settings_of(handler)[1]
    if event == "open":
        if paths[0] in own:
            return bool(args[1] == mode)
        return rotator and _rotation(handler, paths[0])
    if event == "os.remove":
        return _rotation(handler, paths[0]) or (paths[0] in own and rotator)
    source, dest = paths
    return (source in own or _rotation(handler, source)) and dest not in own and _rotation(handler, dest)


def _handler_at_work(handler: logging.FileHandler) -> bool:
    """Whether the handler itself is (re)opening or rolling over now: its stream closed (``emit``
    of a ``delay=True`` handler, ``doRollover``, ``reopenIfNeeded`` set it to None first) and its
    lock held by this thread (``Handler.handle`` holds it around ``emit``). ``Condition.notify``
    raises RuntimeError on a lock the calling thread has not acquired (documented)."""
    if getattr(handler, "stream", None) is not None or handler.lock is None:
        return False
    try:
        threading.Condition(handler.lock).notify()
    except RuntimeError:
        return False
    return True


def _rotation(handler: logging.FileHandler, path: str) -> bool:
    """Whether ``path`` (resolved) is a name ``handler``'s rollover gives an old file: its
    ``rotation_filename`` (the ``namer`` applied) of ``base.N`` (1 <= N <= ``backupCount``) for a
    RotatingFileHandler, of ``base.<suffix>`` with the suffix matching its own ``extMatch`` for a
    TimedRotatingFileHandler. A namer cannot be inverted, so the suffixes tried are the parts of
    ``path``'s name that match ``extMatch``, each kept only when the namer makes ``path`` of it.
    Any other handler rotates nothing; a namer that raises names nothing."""
    base = _origin(handler)[0]
    if isinstance(handler, logging.handlers.TimedRotatingFileHandler):
        pattern = getattr(handler, "extMatch", None)
        if not isinstance(pattern, re.Pattern):
            return False
        name = os.path.basename(path)
        found = {name[i:j] for i in range(len(name)) for j in range(i + 1, len(name) + 1)}
        return any(_names(handler, f"{base}.{s}", path) for s in found if _time_suffix(handler, pattern, s))
    if isinstance(handler, logging.handlers.RotatingFileHandler):
        return any(_names(handler, f"{base}.{n}", path) for n in range(1, _settings_of(handler)[2] + 1))
    return False


def _time_suffix(handler: logging.handlers.TimedRotatingFileHandler, pattern: re.Pattern[str], suffix: str) -> bool:
    """Whether ``suffix`` is one the timed handler's rollover makes: it matches its ``extMatch``
    and is what ``time.strftime`` makes with its ``suffix`` format (Python 3.11's ``extMatch``
    also matches ``2026-12-01.sqlite``; its digits match a month 13)."""
    if os.sep in suffix or pattern.fullmatch(suffix) is None:
        return False
    try:
        return time.strftime(handler.suffix, time.strptime(suffix, handler.suffix)) == suffix
    except (ValueError, TypeError):
        return False


def _names(handler: logging.handlers.BaseRotatingHandler, default: str, path: str) -> bool:
    """Whether the handler's ``rotation_filename(default)`` resolves to ``path`` (resolved as the
    audited paths are: :func:`os.path.realpath`), with the namer it had when settled (a subclass's
    own ``rotation_filename``, the host's code, is called as it is)."""
    try:
        if type(handler).rotation_filename is logging.handlers.BaseRotatingHandler.rotation_filename:
            namer = _settings_of(handler)[0]
            named = namer(default) if callable(namer) else default
        else:
            named = type(handler).rotation_filename(handler, default)
        return isinstance(named, str) and os.path.realpath(named) == path
    except Exception:  # a namer's own failure: it names nothing, and the write is refused
        return False


def _origin(handler: logging.FileHandler) -> tuple[str, str]:
    """``(baseFilename, mode)`` as recorded when the handler was found to be the host's (a handler
    never recorded, as in unit tests of the family rules: as it is now)."""
    try:
        return _origins.get(handler) or (handler.baseFilename, handler.mode)
    except TypeError:  # unhashable: never recorded
        return handler.baseFilename, handler.mode


def _rollover_settings(handler: logging.FileHandler) -> tuple[Any, bool, int]:
    return (
        getattr(handler, "namer", None),
        getattr(handler, "rotator", None) is not None,
        getattr(handler, "backupCount", 0),
    )


def _settings_of(handler: logging.FileHandler) -> tuple[Any, bool, int]:
    """``(namer, has a rotator, backupCount)`` as settled (:func:`settle`; a handler never recorded,
    as in unit tests of the family rules: as they are now)."""
    try:
        return _settings.get(handler) or _rollover_settings(handler)
    except TypeError:  # unhashable: never recorded
        return _rollover_settings(handler)


def _register_log_file(handler: logging.FileHandler) -> None:
    with contextlib.suppress(TypeError):  # a subclass made unhashable (``__eq__`` without ``__hash__``)
        _origins.setdefault(handler, (handler.baseFilename, handler.mode))  # the first record holds
        if handler not in _settings:
            _settings[handler] = _rollover_settings(handler)
            _unsettled.add(handler)
            unsettled[0] = True
        _log_files.add(handler)


def settle() -> None:
    """At each guarded call's entry, before its code runs: the rollover settings of the host
    handlers recorded since the last entry are read once more and kept (a namer or rotator the host
    set after making the handler, as the logging cookbook does, counts; one a call sets later,
    not). Nothing to do, one truth test, when no handler was recorded since."""
    if not unsettled[0]:
        return
    with _lock:
        unsettled[0] = False  # before the handlers are read: one recorded meanwhile sets it again
        for handler in list(_unsettled):
            _settings[handler] = _rollover_settings(handler)
            _unsettled.discard(handler)


def _attached_file_handlers() -> Iterator[logging.FileHandler]:
    for logger in (logging.root, *list(logging.Logger.manager.loggerDict.values())):
        handlers = getattr(logger, "handlers", None)  # a PlaceHolder has none; most loggers an empty list
        if handlers:
            yield from _file_handlers(handlers, 0)


def _file_handlers(handlers: Any, depth: int) -> Iterator[logging.FileHandler]:
    """The file handlers among ``handlers`` and those behind them: a ``MemoryHandler``'s ``target``,
    a ``QueueHandler``'s ``listener.handlers`` (public attributes, where they exist)."""
    for handler in list(handlers):
        if isinstance(handler, logging.FileHandler):
            yield handler
        if depth >= _MAX_DEPTH:
            continue
        target = getattr(handler, "target", None)
        if isinstance(target, logging.Handler):
            yield from _file_handlers((target,), depth + 1)
        behind = getattr(getattr(handler, "listener", None), "handlers", None)
        if isinstance(behind, (list, tuple)):
            yield from _file_handlers(behind, depth + 1)


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
    if _patched:  # process-wide: the count is never read again (it only ever gets patched once)
        return
    with _lock:
        if _running == 0 and not _patched:
            _look(hosts=True)
        _running += 1


def call_ended() -> None:
    """A guarded call has left its scope: when none is running any more, the handlers attached
    since the last look were made while calls ran, so they are not the host's."""
    global _running
    if _patched:  # as in call_began; a call begun before the patch leaves the unread count as it is
        return
    with _lock:
        _running -= 1
        if _running == 0 and not _patched:
            _look(hosts=False)


def patch_logging(judge_open: Callable[[str, str], None]) -> None:
    """Record every ``logging.FileHandler`` made outside a scope, attached to a logger or not
    (process-wide: ``logging.FileHandler.__init__`` is wrapped). The walks stop: the wrapper sees
    each handler made, so nothing is left to tell apart. One made in a scope that opened nothing
    (``delay=True``) is judged by ``judge_open(baseFilename, mode)`` as if it opened its file then
    (tester twenty-eight F4: else the host's next record would create and write it, outside the
    call); one that opened it was judged at its open."""
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
            elif getattr(self, "stream", None) is None:
                judge_open(self.baseFilename, self.mode)

        __init__.__wrapped__ = original  # type: ignore[attr-defined]  # a guard: logging's code is not run again
        logging.FileHandler.__init__ = __init__  # type: ignore[method-assign]
        _patched.append(__init__)
