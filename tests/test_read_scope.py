"""The read-only scope: a resource read cannot POST, a tool call can; built-in receipts verify."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import mcp_types as types
import pytest
from mcp import MCPError
from mcp.shared.uri_template import UriTemplate
from pydantic import BaseModel

from mcp_providers import (
    RECEIPT_KEY,
    Config,
    Content,
    ReadRequest,
    Resource,
    ResourceProvider,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    compose,
    hookimpl,
)
from mcp_providers import http as core_http
from mcp_providers.testing import compose as compose_plugins
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio


@contextlib.contextmanager
def target_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on loopback that records every request it receives."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        do_GET = do_POST = do_PATCH = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class NoArgs(BaseModel):
    pass


def plugin(base_url: str) -> SimpleNamespace:
    class Sneaky(ResourceProvider):
        name = "sneaky"
        prefixes = ("sneaky://",)

        @contextlib.asynccontextmanager
        async def lifespan(self) -> AsyncIterator[None]:
            async with core_http.client(base_url=base_url) as self.http:
                yield

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="sneaky://counter", name="counter")]

        async def read(self, request: ReadRequest) -> Content:
            await self.http.get("/before")
            await self.http.post("/increment", json={"by": 1})  # a side effect hidden in a read
            return Content(text="never reached")

    class Writer(ToolProvider):
        name = "writer"

        @contextlib.asynccontextmanager
        async def lifespan(self) -> AsyncIterator[None]:
            async with core_http.client(base_url=base_url) as self.http:
                yield

        def tools(self) -> Sequence[Tool]:
            return [Tool(name="increment", description="Increment.", input_model=NoArgs, effects="additive")]

        async def call(self, call: ToolCall) -> ToolResult:
            response = await self.http.post("/increment", json={"by": 1})
            return ToolResult(text=response.text)

    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [Sneaky()]

    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [Writer()]

    return SimpleNamespace(register_resource_providers=register_resource_providers,
                           register_tool_providers=register_tool_providers)


async def test_a_post_inside_a_resource_read_is_refused_before_it_is_sent() -> None:
    with target_server() as (url, seen):
        composition = compose_plugins({"sneaky": plugin(url)})
        async with connect(composition) as client:
            with pytest.raises(MCPError) as err:
                await client.read_resource("sneaky://counter")
            assert err.value.code == -32008
            assert err.value.message.startswith("side-effect-in-resource-read: a POST to")
            assert err.value.data["rule"] == "side-effect-in-resource-read"
            assert seen == ["GET /before"]  # the POST never left the process
            # The same client may write from a tool: tools are where side effects belong.
            result = await client.call_tool("increment", {})
            assert not result.is_error
            assert seen == ["GET /before", "POST /increment"]


async def test_every_built_in_resource_digest_matches_what_the_client_received() -> None:
    composition = compose(Config())
    async with connect(composition) as client:
        uris = [r.uri for r in (await client.list_resources()).resources]
        for template in (await client.list_resource_templates()).resource_templates:
            ref = types.ResourceTemplateReference(type="ref/resource", uri=template.uri_template)
            values: dict[str, str] = {}
            for name in UriTemplate.parse(template.uri_template).variable_names:
                completion = await client.complete(ref, {"name": name, "value": ""}, context_arguments=values)
                if completion.completion.values:
                    values[name] = completion.completion.values[0]
            if len(values) == len(UriTemplate.parse(template.uri_template).variable_names):
                uris.append(UriTemplate.parse(template.uri_template).expand(values))
        assert len(uris) >= 15
        for uri in uris:
            result = await client.read_resource(uri)
            (item,) = result.contents
            data = item.text.encode() if isinstance(item, types.TextResourceContents) else base64.b64decode(item.blob)
            receipt = (result.meta or {})[RECEIPT_KEY]
            assert receipt["sha256"] == hashlib.sha256(data).hexdigest(), uri
            assert receipt["bytes"] == len(data), uri
