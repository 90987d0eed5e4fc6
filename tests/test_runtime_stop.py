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
