"""A plugin's own code, run so that what goes wrong stays its own: its output sent to stderr (never
a stdio MCP stream), its failure told in one line, an interrupt re-raised, and its entry point
loaded only when made for this core, in a thread of its own and within :data:`IMPORT_SECONDS`
(an import that never ends, or raises ``KeyboardInterrupt`` itself, is that plugin's failure; the
operator's Ctrl-C still stops start-up: it reaches the main thread, which only waits). So a
plugin's import may not install a signal handler or ask for the thread's event loop: it is told
so, and does that in a hook or its lifespan instead."""

from __future__ import annotations

import contextlib
import importlib.metadata
import queue
import sys
import threading
from collections.abc import Callable, Iterator

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
    """The operator's Ctrl-C stops start-up; anything else a plugin raises is that plugin's failure."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc


class MadeForAnotherCore(Exception):
    """A plugin's distribution requires a core version other than the running one (the message
    names both); raised instead of importing it."""


IMPORT_SECONDS = 60.0
"""How long one plugin's import may take before it is left out (seconds)."""

_finished: set[str] = set()
"""Modules of entry points whose import finished here: loading one again runs no plugin code (one
still being imported by a thread left behind is not among them, so nothing waits on its lock)."""


class ImportFailed(Exception):
    """A plugin's import did not end within :data:`IMPORT_SECONDS`, raised a ``BaseException``
    that is not an ``Exception``, or needed the main thread (the message says which)."""


def guarded_load(ep: importlib.metadata.EntryPoint) -> Callable[[], object]:
    """How to load ``ep``: the one place an entry point is imported, after its distribution's
    requirement on the core is checked (:func:`~mcp_providers._host.compat.plugin_core_problem`),
    in a daemon thread waited for at most :data:`IMPORT_SECONDS`.

    :raises MadeForAnotherCore: the core is outside that requirement; nothing was imported.
    :raises ImportFailed: the import did not end in time (its thread is left behind), or raised
        ``KeyboardInterrupt``, ``SystemExit`` or another ``BaseException`` of its own.
    """

    def load() -> object:
        problem = plugin_core_problem(ep.dist) if ep.dist is not None else None
        if problem is not None:
            raise MadeForAnotherCore(problem)
        held = _already_there(ep)
        if held is not None:  # a reload, another name for a module imported here: no plugin code runs
            return held[0]
        loaded = _bounded(ep.load, ep.name)
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
    """One daemon thread importing plugins one after another (not a thread per plugin); it ends
    after :data:`_IDLE_SECONDS` with nothing to import. One whose import never ended is left
    behind and a new one takes the next import."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.closed = False
        threading.Thread(target=self._run, name="mcp-providers plugin import", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with _importing:
                    if self.jobs.empty():
                        self.closed = True
                        return
                continue
            job()


_MAIN_THREAD_WORDS = ("main thread", "event loop")
"""What the stdlib says when a call works only on the main thread (``signal.signal``,
``signal.set_wakeup_fd``, ``asyncio.get_event_loop``, ``loop.add_signal_handler``)."""
_IDLE_SECONDS = 2.0
_importing = threading.Lock()
_importer: _Importer | None = None


def _bounded(load: Callable[[], object], name: str) -> object:
    global _importer
    done: list[object] = []
    failed: list[BaseException] = []
    ended = threading.Event()

    def job() -> None:
        try:
            done.append(load())
        except BaseException as exc:  # told in the caller's thread below
            failed.append(exc)
        finally:
            ended.set()

    with _importing:
        if _importer is None or _importer.closed:
            _importer = _Importer()
        _importer.jobs.put(job)
        importer = _importer
    if not ended.wait(IMPORT_SECONDS):  # a Ctrl-C interrupts this wait: it is the operator's, and propagates
        with _importing:
            if _importer is importer:
                _importer = None  # its thread is stuck in this import: the next one gets a new thread
        raise ImportFailed(
            f"its import did not finish within {IMPORT_SECONDS:g} s (a module-level statement that never "
            "returns?); it is left out and its import left running. Fix the import, or leave it out with "
            f"deny = [{name!r}]"
        )
    if failed:
        exc = failed[0]
        if isinstance(exc, ValueError | RuntimeError) and any(w in str(exc) for w in _MAIN_THREAD_WORDS):
            raise ImportFailed(
                f"its import needs the main thread ({one_line(exc)}): plugins are imported in a thread of "
                "their own; install signal handlers or get an event loop in a hook or the provider's "
                "lifespan, not at import"
            ) from exc
        if isinstance(exc, Exception):
            raise exc
        raise ImportFailed(f"its import raised {one_line(exc)}") from exc
    return done[0]
