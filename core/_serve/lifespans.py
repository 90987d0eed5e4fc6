"""Providers' lifespans, each run in a task of its own: started and stopped side by side.

A provider's ``lifespan`` is entered when the runtime serves it and left when it stops or a reload
drops it (:class:`Hosted`); whatever fails in one ends that provider alone. The runtime starts the
lifespans a composition or a reload adds side by side, and :func:`stopped` ends them side by side,
so N sources that each take a timeout to answer cost about one.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import anyio
import anyio.abc

from mcp_providers._host.contain import cancels_this_task, plugin_code
from mcp_providers.errors import UpstreamError
from mcp_providers.providers import ExtensionProvider, PromptProvider, ResourceProvider, ToolProvider

log = logging.getLogger("mcp_providers.composition")

STOP_SECONDS = 10.0
"""How long a provider's ``lifespan`` may take to end once asked, in seconds."""

EXIT_MARGIN = 5.0
"""Seconds ``serve``'s runtime may take to stop beyond the sum of its steps' own bounds (task
bodies, providers' lifespans, audit sinks, the cluster backend) before the process it owns ends
regardless (:func:`exit_if_stuck`, ``Runtime.stop_bound``)."""

_exit_process: Callable[[int], Any] = os._exit


@contextlib.contextmanager
def exit_if_stuck(seconds: float | None) -> Iterator[None]:
    """End the process with status 1, saying so, if the block has not ended ``seconds`` after it
    began: a lifespan stuck in a call that cannot be cancelled (a blocking connect in a worker
    thread, a shielded wait) held ``serve``'s task group, and so its process, for ever.

    Only for a process ``serve`` owns; ``seconds`` ``None`` (an embedder's process, ``check``): no bound.
    """
    if seconds is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        if done.wait(seconds):
            return
        log.critical(
            "the server did not stop within %g s of being asked: a provider's lifespan or other code is in a call "
            "that cannot be cancelled (the lines above name providers that did not stop); exiting now", seconds,
        )  # fmt: skip
        for handler in logging.getLogger().handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        _exit_process(1)

    threading.Thread(target=watch, name="mcp-providers-exit-watch", daemon=True).start()
    try:
        yield
    finally:
        done.set()


def restore(failures: dict[str, str], before: Mapping[str, str | None]) -> None:
    """Put the failures recorded under ``before``'s names back as they were (``None``: none)."""
    for name, failure in before.items():
        if failure is None:
            failures.pop(name, None)
        else:
            failures[name] = failure


async def stopped(hosted: list[Hosted], *, abandon: bool = False) -> None:
    """Stop ``hosted`` side by side, shielded: each is bounded by :data:`STOP_SECONDS`, so all of
    them take about the slowest one's time, never their sum (N upstream processes that each take
    their grace to leave). No lifespan waits for another's end: each ends in a task of its own.
    ``abandon``: a lifespan still on its way in is cancelled first (nothing waits for it to start)."""
    with anyio.CancelScope(shield=True):  # each stop is bounded; the caller is often cancelled
        async with anyio.create_task_group() as stopping:
            for one in reversed(hosted):
                if one is not IDLE:
                    stopping.start_soon(one.stop, abandon)


_BASE_LIFESPANS = frozenset(
    base.__dict__["lifespan"] for base in (ResourceProvider, ToolProvider, PromptProvider, ExtensionProvider)
)


def opens_nothing(provider: object) -> bool:
    """Whether ``provider``'s ``lifespan`` is a provider base class's own, which opens and closes
    nothing: such a provider is served at once (:data:`IDLE`), with no task, events or cancel scope
    of its own (two tasks per provider were a tenth of ``serve``'s first answer with 100 plugins)."""
    return getattr(getattr(provider, "lifespan", None), "__func__", None) in _BASE_LIFESPANS


class Hosted:
    """One provider's ``lifespan``, run in a task of its own until :meth:`stop`.

    Whatever fails in it, on the way in, while serving (a poller task it started, say) or on the way
    out, ``SystemExit`` included, ends that provider alone: it is logged and recorded in
    ``failures`` (its requests then get an upstream error, ``/readyz`` names it), and the server
    and the other providers go on. Entered in the caller's task instead, a poller's failure in the
    provider's own task group would cancel the task serving every request.
    """

    def __init__(self, lifespan: Callable[[], Any], provider: str, plugin: str, failures: dict[str, str]) -> None:
        self._lifespan, self._provider, self._plugin, self._failures = lifespan, provider, plugin, failures
        self._started, self._stop, self._done = anyio.Event(), anyio.Event(), anyio.Event()
        self._serving = False
        self._scope = anyio.CancelScope()

    def launch(self, tasks: anyio.abc.TaskGroup) -> None:
        """Start the lifespan in a task of ``tasks`` (:meth:`started` waits for it)."""
        tasks.start_soon(self._run)

    async def started(self, within: float | None = None) -> None:
        """Return once the lifespan :meth:`launch` started is serving or has failed, or after
        ``within`` seconds (then it is cancelled and recorded as failed to start)."""
        with anyio.move_on_after(math.inf if within is None else within):
            await self._started.wait()
        if not self._started.is_set():
            log.error("provider %r (plugin %r) did not start within %s s", self._provider, self._plugin, within,
                      extra={"mcp_providers_reported": True})  # fmt: skip
            self.abandon(f"did not start within {within} s")

    def abandon(self, why: str) -> None:
        """Cancel the lifespan if it is still on its way in, recording ``why`` as its failure."""
        if not self._started.is_set():
            self._scope.cancel()
            self._failures[self._provider] = why

    async def stop(self, abandon: bool = False) -> None:
        """Ask the lifespan to end (``abandon``: cancel it if still on its way in) and wait for it,
        shielded: the runtime is often stopped because its caller was cancelled, and each stop
        waiting unshielded would end in a CancelledError of its own, one chained to the next. A
        lifespan that takes longer than :data:`STOP_SECONDS` is left to the task group's cancellation."""
        if abandon and not self._started.is_set():
            self._scope.cancel()
        self._stop.set()
        with anyio.move_on_after(STOP_SECONDS, shield=True) as waited:
            await self._done.wait()
        if waited.cancelled_caught:
            log.error("provider %r (plugin %r) did not stop within %s s", self._provider, self._plugin, STOP_SECONDS)

    async def _run(self) -> None:
        with self._scope:
            await self._serve()

    async def _serve(self) -> None:
        try:
            with plugin_code(self._provider):  # its pollers' SystemExit stays its own failure
                async with self._lifespan():
                    self._serving = True
                    self._failures.pop(self._provider, None)  # an earlier one of that name failed
                    self._started.set()
                    await self._stop.wait()
        except BaseException as exc:
            if cancels_this_task(exc):
                raise
            when = "to stop" if self._stop.is_set() else "while serving" if self._serving else "to start"
            reported = {"mcp_providers_reported": when != "to stop"}  # startup_failures keeps it (logs.REPORTED)
            if isinstance(exc, UpstreamError):  # its source is down or refused: what it says is the whole story
                log.error("provider %r (plugin %r) failed %s: %s", self._provider, self._plugin, when, exc,
                          extra=reported)  # fmt: skip
                log.debug("provider %r failed %s", self._provider, when, exc_info=exc)
            else:
                log.error("provider %r (plugin %r) failed %s", self._provider, self._plugin, when, exc_info=exc,
                          extra=reported)  # fmt: skip
            if when != "to stop":
                self._failures[self._provider] = f"{type(exc).__name__}: {exc}"
        finally:
            self._started.set()
            self._done.set()


class _Idle(Hosted):
    """The lifespan of every provider that :func:`opens_nothing`: serving from the start, nothing to stop."""

    def __init__(self) -> None:
        pass

    def launch(self, tasks: anyio.abc.TaskGroup) -> None:
        return None

    async def started(self, within: float | None = None) -> None:
        return None

    def abandon(self, why: str) -> None:
        return None

    async def stop(self, abandon: bool = False) -> None:
        return None


IDLE: Hosted = _Idle()
"""What the runtime holds for a provider whose ``lifespan`` opens nothing (:func:`opens_nothing`)."""
