"""A plugin's own code, run so that what goes wrong stays its own: its output sent to stderr (never
a stdio MCP stream), its failure told in one line, and its entry point loaded only when made for
this core. Its import runs in a thread of its own, waited for at most :data:`PLUGIN_SECONDS`:
one that never ends, or raises ``KeyboardInterrupt`` or ``SystemExit`` itself, is that plugin's
failure, and the operator's Ctrl-C still stops start-up (it reaches the main thread, which only
waits). So a plugin's import may not install a signal handler or ask for the thread's event loop:
it is told so, and does that in a hook or its provider's lifespan instead.

Its hooks and its providers' declarations run in the caller's thread (what they make may be bound
to that thread: an ``sqlite3`` connection, a ``threading.local``, the thread's event loop), so
they cannot be cut short; :func:`watched` says, once, which one has run past
:data:`PLUGIN_SECONDS`, so a start-up that waits on one is never silent."""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from mcp_providers._host.compat import plugin_core_problem


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    # A plugin's print() must never reach a stdio MCP stream.
    with contextlib.redirect_stdout(sys.stderr):
        yield


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def reraise_interrupt(exc: BaseException) -> None:
    """A ``KeyboardInterrupt`` in the caller's thread may be the operator's Ctrl-C: it stops
    start-up; anything else a plugin raises there is that plugin's failure."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc


class MadeForAnotherCore(Exception):
    """A plugin's distribution requires a core version other than the running one (the message
    names both); raised instead of importing it."""


PLUGIN_SECONDS = 60.0
"""How long one plugin's import may take before the plugin is left out, and one of its hook calls
or declarations before the log names it as what composition waits for (seconds)."""

T = TypeVar("T")
log = logging.getLogger("mcp_providers.plugins")

_finished: set[str] = set()
"""Modules of entry points whose import finished here: loading one again runs no plugin code (one
still being imported by a thread left behind is not among them, so nothing waits on its lock)."""


class PluginCodeFailed(Exception):
    """A plugin's import did not end within :data:`PLUGIN_SECONDS`, raised a ``BaseException``
    that is not an ``Exception``, or needed the main thread (the message says which, and what to do)."""


def guarded_load(ep: importlib.metadata.EntryPoint) -> Callable[[], object]:
    """How to load ``ep``: the one place an entry point is imported, after its distribution's
    requirement on the core is checked (:func:`~mcp_providers._host.compat.plugin_core_problem`),
    in the plugin thread (:func:`in_plugin_thread`).

    :raises MadeForAnotherCore: the core is outside that requirement; nothing was imported.
    :raises PluginCodeFailed: the import did not end in time (its thread is left behind), or raised
        ``KeyboardInterrupt``, ``SystemExit`` or another ``BaseException`` of its own.
    """

    def load() -> object:
        problem = plugin_core_problem(ep.dist) if ep.dist is not None else None
        if problem is not None:
            raise MadeForAnotherCore(problem)
        held = _already_there(ep)
        if held is not None:  # a reload, another name for a module imported here: no plugin code runs
            return held[0]
        loaded = in_plugin_thread(ep.load, ep.name, "its import")
        _finished.add(ep.module)
        return loaded

    return load


def _already_there(ep: importlib.metadata.EntryPoint) -> tuple[object] | None:
    """``(object,)`` when ``ep`` names a plain attribute of a module whose import finished here (a
    dict lookup, no plugin code: a module ``__getattr__`` or a nested attribute goes the bounded
    way), else ``None``."""
    module = sys.modules.get(ep.module) if ep.module in _finished else None
    attr = ep.attr
    if module is None or not attr or "." in attr or attr not in vars(module):
        return None
    return (vars(module)[attr],)


class _Importer:
    """One daemon thread running plugin code one call after another (not a thread per call); it
    ends after :data:`_IDLE_SECONDS` with nothing to run. One whose call never ended is left
    behind and a new one takes the next call."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.closed = False
        self.busy = False
        """Running a job: a call made meanwhile (another composition's, a reload's while a hung
        import holds this thread) gets a new thread rather than a place behind it."""
        self.thread = threading.Thread(target=self._run, name="mcp-providers plugin code", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=_IDLE_SECONDS)
                if job is _stop:  # put by settle(), which closed this importer first
                    return
            except queue.Empty:
                with _importing:
                    if self.jobs.empty():
                        self.closed = True
                        return
                continue
            self.busy = True
            job()  # it clears busy itself, before its caller wakes (so its next call finds this thread free)


def _stop() -> None:
    """What :func:`settle` puts on an idle importer's queue: it ends the thread (never run)."""


def settle() -> None:
    """End the plugin threads now that composition is done, and wait for them: an embedding host
    keeps no thread of ours once its composition is made (its app stopped a moment later
    included), where they ended only after :data:`_IDLE_SECONDS` with nothing to run. A thread
    with work (another composition's call, one left hanging) is left to end as it does; a later
    call makes a new one."""
    ending: list[threading.Thread] = []
    with _importing:
        importer, watcher = _importer, _watching
        if importer is not None and not importer.closed and not importer.busy and importer.jobs.empty():
            importer.closed = True  # under _importing: in_plugin_thread makes a new one from now on
            importer.jobs.put(_stop)
            ending.append(importer.thread)
    if watcher is not None:
        with watcher.lock:
            if not watcher.closed and not watcher.calls:
                watcher.closed = True  # begin() takes no call from now on
                watcher.some.set()
                ending.append(watcher.thread)
    for thread in ending:
        thread.join(_IDLE_SECONDS)


_MAIN_THREAD_WORDS = ("main thread", "event loop")
"""What the stdlib says when a call works only on the main thread (``signal.signal``,
``signal.set_wakeup_fd``, ``asyncio.get_event_loop``, ``loop.add_signal_handler``)."""
_IDLE_SECONDS = 2.0
_importing = threading.Lock()
_importer: _Importer | None = None


def in_plugin_thread(call: Callable[[], T], name: str, what: str) -> T:
    """``call()``, a plugin's own code, run in the plugin thread and waited for at most
    :data:`PLUGIN_SECONDS`; ``name`` is the plugin's, ``what`` the call's as a message says it
    (``"its import"``).

    :raises PluginCodeFailed: ``call`` did not end in time (its thread is left behind, and the next
        call gets a new one), raised a ``BaseException`` that is not an ``Exception`` (it is the
        plugin's, never re-raised), or needed the main thread.
    :raises Exception: what ``call`` raised.
    """
    global _importer
    done: list[T] = []
    failed: list[BaseException] = []
    ended = threading.Lock()  # released by the job; a bare lock, not an Event (its Condition costs more per import)
    ended.acquire()

    def job() -> None:
        try:
            done.append(call())
        except BaseException as exc:  # told in the caller's thread below
            failed.append(exc)
        finally:
            importer.busy = False
            ended.release()

    with _importing:
        if _importer is None or _importer.closed or _importer.busy:
            _importer = _Importer()
        importer = _importer
        importer.jobs.put(job)
    if not ended.acquire(timeout=PLUGIN_SECONDS):  # a Ctrl-C interrupts this wait: it is the operator's, and propagates
        with _importing:
            if _importer is importer:
                _importer = None  # its thread is stuck in this call: the next one gets a new thread
        raise PluginCodeFailed(
            f"{what} did not finish within {PLUGIN_SECONDS:g} s (a statement that never returns?); it is left "
            f"out, and {what} left running. Fix it, or leave the plugin out with deny = [{name!r}]"
        )
    if failed:
        raise _failure(failed[0], what)
    return done[0]


def _failure(exc: BaseException, what: str) -> BaseException:
    if isinstance(exc, ValueError | RuntimeError) and any(w in str(exc) for w in _MAIN_THREAD_WORDS):
        failure = PluginCodeFailed(
            f"{what} needs the main thread ({one_line(exc)}): a plugin is imported in a thread of its own; "
            "install signal handlers or get an event loop in a hook or in the provider's lifespan"
        )
        failure.__cause__ = exc
        return failure
    if isinstance(exc, Exception):
        return exc
    failure = PluginCodeFailed(f"{what} raised {one_line(exc)}")
    failure.__cause__ = exc
    return failure


@contextlib.contextmanager
def watched(name: str, what: str) -> Iterator[None]:
    """Run the block (plugin ``name``'s ``what``, e.g. ``"hook settings_model"``, in the caller's
    thread) under :class:`_Watcher`'s eye: past :data:`PLUGIN_SECONDS` the log names it, once."""
    key = None
    while key is None:  # a watcher that has just ended takes no call: the next one made does
        watcher = _watcher()
        key = watcher.begin(name, what)
    try:
        yield
    finally:
        watcher.end(key)


class _Watcher:
    """One daemon thread that looks, every :data:`_WATCH_SECONDS` while a call is watched, for a
    call past :data:`PLUGIN_SECONDS` and logs it once; it ends after :data:`_IDLE_SECONDS` with
    none watched (an embedding host keeps no thread of ours once composition is done)."""

    def __init__(self) -> None:
        self.calls: dict[object, tuple[str, str, float]] = {}
        self.lock = threading.Lock()
        self.some = threading.Event()
        self.closed = False
        self.thread = threading.Thread(target=self._run, name="mcp-providers plugin watch", daemon=True)
        self.thread.start()

    def begin(self, name: str, what: str) -> object | None:
        """A key for :meth:`end`, or ``None`` when this watcher has ended."""
        key = object()
        with self.lock:
            if self.closed:
                return None
            self.calls[key] = (name, what, time.monotonic())
            if len(self.calls) == 1:
                self.some.set()
        return key

    def end(self, key: object) -> None:
        with self.lock:
            self.calls.pop(key, None)
            if not self.calls:
                self.some.clear()

    def _run(self) -> None:
        told: set[object] = set()
        while True:
            if not self.some.wait(_IDLE_SECONDS):
                with self.lock:
                    if not self.calls:
                        self.closed = True
                        return
                continue
            if self.closed:  # by settle(), with no call watched
                return
            time.sleep(_WATCH_SECONDS)
            with self.lock:
                now, calls = time.monotonic(), list(self.calls.items())
            for key, (name, what, started) in calls:
                if key not in told and now - started >= PLUGIN_SECONDS:
                    told.add(key)
                    log.error(
                        "plugin %s: %s has not returned after %g s; composition waits for it (it runs in the "
                        "caller's thread and cannot be cut short): fix it, or leave the plugin out with deny = [%r]",
                        name, what, PLUGIN_SECONDS, name,
                    )  # fmt: skip
            told &= {key for key, _ in calls}


_WATCH_SECONDS = 1.0
_watching: _Watcher | None = None


def _watcher() -> _Watcher:
    global _watching
    with _importing:
        if _watching is None or _watching.closed:
            _watching = _Watcher()
        return _watching
