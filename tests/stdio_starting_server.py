"""A composed server served by ``serve_stdio`` whose one provider never finishes starting (its
``lifespan`` waits for ever on its way in, as a source that never answers would).

Run as ``python tests/stdio_starting_server.py MARKER [SECONDS]``; used by
``tests/test_stdio_end_while_starting.py``. The provider writes ``started`` to MARKER when its
lifespan begins and ``stopped`` when it is left; with SECONDS it starts after that long instead.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import SimpleNamespace

import anyio

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve.transport.stdio_loop import serve_stdio
from mcp_providers.testing import compose

MARKER = Path(sys.argv[1])
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else None


class NeverStarts(ResourceProvider):
    name = "never-starts"
    prefixes = ("never://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="never://a", name="a", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="a")

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        MARKER.write_text("started")
        try:
            await (anyio.sleep(SECONDS) if SECONDS is not None else anyio.sleep_forever())
            yield
        finally:
            MARKER.write_text("stopped")


def plugin() -> SimpleNamespace:
    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [NeverStarts()]

    return SimpleNamespace(register_resource_providers=register_resource_providers)


if __name__ == "__main__":
    server = compose({"never_starts": plugin()}).server
    anyio.run(lambda: serve_stdio(server))
