"""What ``add_to_mcpserver`` costs a read (issue 43), against a plain MCPServer resource in the same run.

Run alone: ``uv run python -m benchmarks.embedding [--quick]``; or in the full table with
``uv run --group bench python -m benchmarks --only embedding``.

A whole ``resources/read`` through the SDK's in-memory client (2026-07-28), to one ``MCPServer``
serving three fixed resources of the same text, interleaved round by round in one process:

- a plain MCPServer resource (``TextResource``), the baseline;
- the composition's resource added with ``add_to_mcpserver``: the composition's pipeline is
  called directly, with the MCPServer request's context (the composition held running by the
  MCPServer's lifespan, as ``docs/embedding.md`` shows);
- the path ``add_to_mcpserver`` took before issue 43, rebuilt here for the comparison: a resource
  whose read opens an in-process ``Client`` to the composition's server (a full handshake) per read.

No target: the ratio says what the bridge adds to a read MCPServer serves itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import anyio

from benchmarks.timing import Emit, ainterleaved, per_read_ms, standalone
from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.embedding import add_to_mcpserver
from mcp_providers.testing import compose

SECTION = "embedding: read via MCPServer, in-memory"
PLAIN, BRIDGED, BEFORE = (
    "plain MCPServer resource (baseline)",
    "add_to_mcpserver (pipeline called directly)",
    "a Client per read (the path before issue 43)",
)
TEXT = "x" * 64
URIS = {PLAIN: "plain://doc", BRIDGED: "bench://doc", BEFORE: "before://doc"}


class Doc(ResourceProvider):
    name = "bench"
    prefixes = ("bench://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=URIS[BRIDGED], name="doc", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=TEXT)


class _Module:
    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [Doc()]


def server() -> object:
    """One MCPServer serving the three cases' resources."""
    from mcp import Client
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.resources import FunctionResource, TextResource

    composition = compose({"bench": _Module()})
    mcp = MCPServer("bench", log_level="WARNING", lifespan=lambda _app: composition.running())
    mcp.add_resource(TextResource(uri=URIS[PLAIN], name="plain", text=TEXT, mime_type="text/plain"))
    add_to_mcpserver(mcp, composition)

    async def before() -> str:
        async with Client(composition.server, cache=None) as client:
            result = await client.read_resource(URIS[BRIDGED])
        return str(result.contents[0].text)  # type: ignore[union-attr]

    mcp.add_resource(FunctionResource(uri=URIS[BEFORE], name="before", fn=before, mime_type="text/plain"))
    return mcp


async def measure(rounds: int) -> dict[str, float]:
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(Client(server(), cache=None))  # type: ignore[arg-type]
        cases = {}
        for name, uri in URIS.items():
            assert (await client.read_resource(uri)).contents[0].text == TEXT  # type: ignore[union-attr]
            cases[name] = per_read_ms(client, uri, 50 if name != BEFORE else 10)
        return await ainterleaved(cases, 10 * (rounds + rounds // 2))


def run(rounds: int, emit: Emit) -> None:
    result = anyio.run(measure, rounds)
    base = result[PLAIN]
    emit(SECTION, PLAIN, base, "ms", "baseline")
    for name in (BRIDGED, BEFORE):
        emit(SECTION, name, result[name], "ms", f"{result[name] / base:.2f}x plain", "reported")


if __name__ == "__main__":
    standalone("python -m benchmarks.embedding", __doc__, run)
