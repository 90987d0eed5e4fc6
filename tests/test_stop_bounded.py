"""``serve`` ends within its bound even when a provider cannot be stopped (tester nineteen).

A provider's ``lifespan`` stuck in a call that cannot be cancelled (a blocking connect in a worker
thread, a shielded wait), on its way in or out, kept ``serve`` running for ever after ``SIGTERM`` or
the end of stdin: the providers' task group waits for every task it holds. The process ``serve``
owns now ends :data:`~mcp_providers._serve.lifespans.EXIT_SECONDS` after its runtime began to stop,
saying so; an embedder's process (no bound set) is never ended by the library.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Sequence

import anyio
import pytest

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve import lifespans
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio


class Stuck(ResourceProvider):
    """Its lifespan's way out waits on a worker thread that nothing can cancel, until ``release``."""

    name = "stuck"
    prefixes = ("stuck://",)

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="stuck://a", name="a", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="a")

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        yield
        await anyio.to_thread.run_sync(self.release.wait)  # not cancellable, as a blocking connect


def _composition(release: threading.Event, owned: bool) -> object:
    provider = Stuck(release)

    class Plugin:
        @hookimpl
        def register_resource_providers(self) -> Sequence[ResourceProvider]:
            return [provider]

    composition = compose({"stuck": Plugin()})
    composition.runtime.owns_process = owned
    return composition


async def test_a_process_serve_owns_ends_when_a_provider_cannot_be_stopped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()
    exits: list[int] = []

    def exit_process(code: int) -> None:  # os._exit in serve; here the stuck thread is let go instead
        exits.append(code)
        release.set()

    monkeypatch.setattr(lifespans, "STOP_SECONDS", 0.2)
    monkeypatch.setattr(lifespans, "_exit_process", exit_process)
    monkeypatch.setattr("mcp_providers._serve.runtime.STOP_SECONDS", 0.2)
    monkeypatch.setattr("mcp_providers._serve.runtime.TASKS_STOP_SECONDS", 0.1)
    monkeypatch.setattr("mcp_providers._serve.runtime.EXIT_MARGIN", 0.3)
    composition = _composition(release, owned=True)
    fallback = threading.Timer(5.0, release.set)  # a broken bound fails the test rather than hang it
    fallback.start()
    with caplog.at_level(logging.ERROR, "mcp_providers"):
        async with composition.running():  # type: ignore[attr-defined]
            pass
    fallback.cancel()
    assert exits == [1]
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert len(said) == 1 and "did not stop within 0.6 s" in said[0] and "exiting now" in said[0]


async def test_the_bound_is_the_sum_of_the_stops_own_bounds_and_a_margin() -> None:
    """Each step of the stop has its bound (task bodies, lifespans, audit sinks, the cluster): a
    stop that ends within them is never taken for a stuck one; ``check`` and embedders get none."""
    from mcp_providers._serve.methods.tasks import STOP_SECONDS as TASKS

    composition = _composition(threading.Event(), owned=True)
    runtime = composition.runtime  # type: ignore[attr-defined]
    assert runtime.stop_bound() == TASKS + lifespans.STOP_SECONDS + lifespans.EXIT_MARGIN
    runtime.owns_process = False
    assert runtime.stop_bound() is None


async def test_an_embedders_process_is_never_ended_by_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    exits: list[int] = []
    monkeypatch.setattr(lifespans, "STOP_SECONDS", 0.2)
    monkeypatch.setattr(lifespans, "_exit_process", exits.append)
    composition = _composition(release, owned=False)
    threading.Timer(1.5, release.set).start()  # the stuck call ends by itself, late
    async with composition.running():  # type: ignore[attr-defined]
        pass
    assert exits == []


async def test_a_stop_that_ends_in_time_leaves_the_process_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    release.set()
    exits: list[int] = []
    monkeypatch.setattr(lifespans, "_exit_process", exits.append)
    monkeypatch.setattr("mcp_providers._serve.runtime.STOP_SECONDS", 0.1)
    monkeypatch.setattr("mcp_providers._serve.runtime.TASKS_STOP_SECONDS", 0.1)
    monkeypatch.setattr("mcp_providers._serve.runtime.EXIT_MARGIN", 0.1)
    composition = _composition(release, owned=True)
    async with composition.running():  # type: ignore[attr-defined]
        pass
    await anyio.sleep(0.5)  # past the bound: the watch ended with the stop
    assert exits == []
