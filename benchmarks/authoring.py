"""What the decorator form costs a read (issue 39; target: a decorated async function's read at most
1.05x a class provider's, in the same run).

Run alone: ``uv run python -m benchmarks.authoring [--quick]``; or in the full table with
``uv run --group bench python -m benchmarks --only authoring``.

A whole ``resources/read`` of a template URI through the SDK's in-memory client (2026-07-28), cases
interleaved round by round in one process, each on a composition of its own serving the same text:

- a class provider (``ResourceProvider`` with ``templates()`` and an ``async def read``), the baseline;
- the same template declared with ``Plugin.template`` on an ``async def`` function;
- the same on a plain ``def`` function, which runs in a worker thread (reported, no target).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import anyio

from benchmarks.timing import Emit, ainterleaved, per_read_ms, standalone
from mcp_providers import Content, ReadRequest, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose

SECTION = "authoring: read, in-memory"
CLASS, ASYNC, SYNC = "class provider (baseline)", "decorated async function", "decorated plain function (thread)"
TEMPLATE = "bench://{book}/{page}"
URI = "bench://guide/intro"


class ClassProvider(ResourceProvider):
    name = "bench"
    prefixes = ("bench://",)

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template=TEMPLATE, name="page", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=f"{request.params['book']}/{request.params['page']}")


class _Module:
    """A plugin object with the class provider (what a hand-written plugin module holds)."""

    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [ClassProvider()]


def decorated(is_async: bool) -> Plugin:
    plugin = Plugin("bench", prefixes=["bench://"])
    if is_async:

        async def page(book: str, page: str) -> str:
            return f"{book}/{page}"

    else:

        def page(book: str, page: str) -> str:  # type: ignore[misc]
            return f"{book}/{page}"

    plugin.template(TEMPLATE, mime_type="text/plain")(page)
    return plugin


async def measure(rounds: int) -> dict[str, float]:
    from mcp import Client

    servers = {
        CLASS: compose({"bench": _Module()}).server,
        ASYNC: compose({"bench": decorated(True)}).server,
        SYNC: compose({"bench": decorated(False)}).server,
    }
    async with contextlib.AsyncExitStack() as stack:
        cases = {}
        for name, server in servers.items():
            client = await stack.enter_async_context(Client(server, cache=None))
            assert (await client.read_resource(URI)).contents[0].text == "guide/intro"  # type: ignore[union-attr]
            cases[name] = per_read_ms(client, URI, 50)
        return await ainterleaved(cases, 10 * (rounds + rounds // 2))


def run(rounds: int, emit: Emit) -> None:
    result = anyio.run(measure, rounds)
    base = result[CLASS]
    emit(SECTION, CLASS, base, "ms", "baseline")
    ratio = result[ASYNC] / base
    emit(
        SECTION, ASYNC, result[ASYNC], "ms", f"{ratio:.3f}x", f"target <= 1.05x: {'met' if ratio <= 1.05 else 'MISSED'}"
    )
    emit(SECTION, SYNC, result[SYNC], "ms", f"{result[SYNC] / base:.3f}x", "reported")


if __name__ == "__main__":
    standalone("python -m benchmarks.authoring", __doc__, run)
