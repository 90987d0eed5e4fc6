"""A plugin exercising the wire: output models whose JSON Schema root is not an object, names some
clients refuse, every content kind (text, image, audio, links, embeds), a titled template with a
non-ASCII literal, and a tool that answers with a lot of text."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Sequence
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, RootModel

from mcp_providers import (
    Audio,
    Content,
    Embed,
    Image,
    Link,
    ReadRequest,
    Resource,
    ResourceProvider,
    ResourceTemplate,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class Node(BaseModel):
    name: str
    children: list[Node] = []


class Item(BaseModel):
    x: int


class Items(RootModel[list[Item]]):
    pass


class Echo(BaseModel):
    text: str = ""
    times: int = 1


class Shown(BaseModel):
    shown: str


class Guides(ResourceProvider):
    name = "guides"
    prefixes = ("docs://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="docs://index", name="index", title="The index", mime_type="text/plain")]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="docs://guías/{slug}", name="guide", title="A guide")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=f"guide {request.params.get('slug', 'index')}")


class Shapes(ToolProvider):
    name = "shapes"

    def tools(self) -> Sequence[Tool]:
        return [
            Tool(name="tree", title="A tree", description="A recursive output.", input_model=Echo, output_model=Node),
            Tool(name="items", description="An array output.", input_model=Echo, output_model=Items),
            Tool(
                name="everything",
                title="Every block",
                description="Every content kind.",
                input_model=Echo,
                output_model=Shown,
            ),
            Tool(name="echo", description="Repeats text.", input_model=Echo),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        args: Any = call.arguments
        if call.tool.name == "tree":
            return ToolResult(output=Node(name="root", children=[Node(name="leaf")]))
        if call.tool.name == "items":
            return ToolResult(output=Items([Item(x=1), Item(x=2)]))
        if call.tool.name == "echo":
            return ToolResult(text=args.text * args.times)
        return ToolResult(
            output=Shown(shown="all"),
            text="some text",
            links=(Link("docs://index", "index"),),
            embedded=(Embed("docs://gu%C3%ADas/intro", text="guide intro", mime_type="text/plain"),),
            content=(Image(PNG, "image/png"), Audio(b"RIFF0000WAVE", "audio/wav")),
        )


class Badly(ToolProvider):
    name = "badly-named"

    def tools(self) -> Sequence[Tool]:
        return [
            Tool(name="docs.search", description="A dotted name.", input_model=Echo),
            Tool(name="t" * 70, description="A long name.", input_model=Echo),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text="ok")


def plugin(*providers: object) -> Any:
    resources = [p for p in providers if isinstance(p, ResourceProvider)]
    tools = [p for p in providers if isinstance(p, ToolProvider)]
    return SimpleNamespace(
        register_resource_providers=hookimpl(lambda settings: resources),
        register_tool_providers=hookimpl(lambda settings: tools),
    )


class RawSession:
    """A composed server over in-memory streams, spoken to in raw JSON-RPC dicts (any protocol version).

    Answers are dumped exactly as the stdio transport writes them (``by_alias``, ``exclude_unset``).
    """

    def __init__(self, send: Any, receive: Any) -> None:
        self._send, self._receive, self._next = send, receive, 0
        self.notifications: list[dict[str, Any]] = []
        """Every notification received while waiting for an answer, in order."""

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        self._next += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            message["params"] = params
        await self._send.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(message)))
        while True:
            item = await self._receive.receive()
            answer = item.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
            if answer.get("id") == self._next:
                return answer
            if "id" not in answer:
                self.notifications.append(answer)

    async def notify(self, method: str) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        note = {"jsonrpc": "2.0", "method": method}
        await self._send.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(note)))


@contextlib.asynccontextmanager
async def raw_session(composition: Any, version: str | None) -> AsyncIterator[tuple[RawSession, dict[str, Any]]]:
    """``(session, initialize result)`` for a session that negotiated ``version``; with a 2026-era
    version (every request then carries the envelope) or ``None`` there is no ``initialize`` and
    the result is ``{}``."""
    import anyio
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    server = composition.server
    to_server, server_in = anyio.create_memory_object_stream[Any](100)
    server_out, from_server = anyio.create_memory_object_stream[Any](100)
    async with to_server, server_in, server_out, from_server, anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.run(server_in, server_out, server.create_initialization_options()))
        session = RawSession(to_server, from_server)
        result: dict[str, Any] = {}
        if version in HANDSHAKE_PROTOCOL_VERSIONS:
            init = await session.request(
                "initialize",
                {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
            )
            assert init["result"]["protocolVersion"] == version, init
            await session.notify("notifications/initialized")
            result = init["result"]
        yield session, result
        tg.cancel_scope.cancel()
