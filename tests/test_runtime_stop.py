"""A served composition stops when its caller is cancelled, with several provider lifespans open.

Each lifespan runs in a task of its own; stopping them while the caller's scope is cancelled once
chained one CancelledError to the next until anyio's task group looped for ever reading the chain
(every in-memory test that cancels ``Server.run`` hung).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from types import SimpleNamespace

import anyio
import pytest
from wire_support import raw_session

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

stopped: list[str] = []


def _provider(name: str) -> ResourceProvider:
    class Hosted(ResourceProvider):
        prefixes = (f"{name}://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri=f"{name}://x", name="x")]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text=name)

        @contextlib.asynccontextmanager
        async def lifespan(self) -> AsyncIterator[None]:
            try:
                yield
            finally:
                stopped.append(name)

    Hosted.name = name
    return Hosted()


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25", None])
async def test_cancelling_the_served_server_stops_every_lifespan_promptly(version: str | None) -> None:
    stopped.clear()
    names = ["one", "two", "three"]
    plugins = {n: SimpleNamespace(register_resource_providers=hookimpl(lambda n=n: [_provider(n)])) for n in names}
    composition = compose(plugins)
    with anyio.fail_after(10):
        async with raw_session(composition, version) as (session, _):
            answer = await session.request("resources/read", {"uri": "two://x"} if version else {
                "uri": "two://x", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {}}})  # fmt: skip
            assert answer["result"]["contents"][0]["text"] == "two"
    assert sorted(stopped) == sorted(names)


started: list[str] = []


def _counted(name: str) -> ResourceProvider:
    """A provider whose lifespan records each start and each stop."""
    provider = _provider(name)
    inner = provider.lifespan

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        started.append(name)
        async with inner():
            yield

    provider.lifespan = lifespan  # type: ignore[method-assign]
    return provider


async def _session(composition: object, mode: str, entered: anyio.Event, leave: anyio.Event) -> None:
    from mcp_providers.testing import connect

    async with connect(composition, mode) as client:  # type: ignore[arg-type]
        result = await client.read_resource("one://x")
        assert result.contents[0].text == "one"  # type: ignore[union-attr]
        entered.set()
        await leave.wait()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("first_out", ["first-in", "last-in"])
async def test_two_sessions_in_two_tasks_share_one_start_whichever_ends_first(mode: str, first_out: str) -> None:
    """Two in-memory sessions at once, each in its own task: the providers start once, stop once
    when the last session ends (whichever task that is), and a third session starts them again."""
    stopped.clear()
    started.clear()
    composition = compose({"p": SimpleNamespace(register_resource_providers=hookimpl(lambda: [_counted("one")]))})
    entered = [anyio.Event(), anyio.Event()]
    leave = [anyio.Event(), anyio.Event()]
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_session, composition, mode, entered[0], leave[0])
            await entered[0].wait()
            tasks.start_soon(_session, composition, mode, entered[1], leave[1])
            await entered[1].wait()
            order = [0, 1] if first_out == "first-in" else [1, 0]
            leave[order[0]].set()
            await anyio.sleep(0.1)
            assert stopped == [], "a session ended while another was serving: the providers must stay up"
            leave[order[1]].set()
        assert (started, stopped) == (["one"], ["one"])
        third = [anyio.Event(), anyio.Event()]
        third[1].set()
        await _session(composition, mode, third[0], third[1])
    assert (started, stopped) == (["one", "one"], ["one", "one"])


class _Starting(ResourceProvider):
    """Its lifespan waits for ever on its way in; ``events`` records how far it got."""

    name = "starting"
    prefixes = ("starting://",)

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="starting://x", name="x")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="x")

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.events.append("entered")
        try:
            await anyio.sleep_forever()
            yield
        finally:
            self.events.append("left")


async def test_a_caller_cancelled_while_providers_start_leaves_what_the_start_made() -> None:
    """The first caller cancelled during the start (a stdio client that closed stdin, an HTTP
    session's caller gone): the providers on their way in are left, not waited for (60 s), and the
    start's task group and cluster connection are closed in the task that opened them."""
    events: list[str] = []
    provider = _Starting(events)
    composition = compose({"starting": SimpleNamespace(register_resource_providers=hookimpl(lambda: [provider]))})
    with anyio.fail_after(5):  # STOP_SECONDS (10 s) would pass it if the provider were waited for
        with anyio.move_on_after(0.3):
            async with composition.running():
                pytest.fail("the provider never starts: running() must not be entered")
        assert events == ["entered", "left"]
        assert composition.runtime._tasks is None  # no task group of the start is left open
