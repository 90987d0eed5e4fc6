"""Embedding: mounted in a Starlette app over real HTTP, attached to a low-level Server, added to MCPServer."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp import Client, MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import TextResource
from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from mcp_providers import (
    Content,
    Message,
    Prompt,
    PromptArgument,
    PromptProvider,
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
from mcp_providers._serve.composition import Composition
from mcp_providers.embedding import add_to_mcpserver, attach, mount
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

COLOURS = {"red": "#ff0000", "green": "#00ff00"}


class Colours(ResourceProvider):
    name = "colours"
    prefixes = ("emb://colours/",)
    open = 0

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="emb://colours/all", name="all", mime_type="application/json")]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="emb://colours/by-name/{colour}", name="colour", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        if request.uri == "emb://colours/all":
            return Content(text=json.dumps(sorted(COLOURS)))
        return Content(text=COLOURS[request.params["colour"]])

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        Colours.open += 1
        try:
            yield
        finally:
            Colours.open -= 1


class MixInput(BaseModel):
    a: str = Field(description="first colour")
    b: str = "green"


class MixOutput(BaseModel):
    mixed: str


class Mixer(ToolProvider):
    name = "mixer"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="mix", description="Mix two colours", input_model=MixInput, output_model=MixOutput)]

    async def call(self, call: ToolCall) -> ToolResult:
        args = call.arguments
        assert isinstance(args, MixInput)
        return ToolResult(output=MixOutput(mixed=f"{args.a}+{args.b}"))


class Greeting(PromptProvider):
    name = "greeting"

    def prompts(self) -> Sequence[Prompt]:
        return [
            Prompt(name="greet", description="Greet someone", arguments=(PromptArgument(name="who", required=True),))
        ]

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        return [Message(role="user", text=f"Say hello to {arguments['who']}")]


class Plugin:
    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [Colours()]

    @hookimpl
    def register_tool_providers(self) -> list[ToolProvider]:
        return [Mixer()]

    @hookimpl
    def register_prompt_providers(self) -> list[PromptProvider]:
        return [Greeting()]


def _composition() -> Composition:
    return compose({"embedded": Plugin()})


async def _all_resource_uris(client: Client) -> list[str]:
    uris, cursor = [], None
    while True:
        page = await client.list_resources(cursor=cursor)
        uris += [r.uri for r in page.resources]
        cursor = page.next_cursor
        if cursor is None:
            return uris


async def _uses_the_composition(client: Client) -> None:
    assert "emb://colours/all" in await _all_resource_uris(client)
    assert json.loads((await client.read_resource("emb://colours/all")).contents[0].text) == ["green", "red"]
    assert (await client.read_resource("emb://colours/by-name/red")).contents[0].text == "#ff0000"
    result = await client.call_tool("mix", {"a": "red"})
    assert not result.is_error
    assert result.structured_content == {"mixed": "red+green"}
    prompt = await client.get_prompt("greet", {"who": "Ada"})
    assert prompt.messages[0].content.text == "Say hello to Ada"


# -- mount -----------------------------------------------------------------------------------------


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.parametrize("stateless", [False, True], ids=["sessions", "stateless"])
async def test_mounted_at_mcp_serves_http_clients_and_the_apps_own_routes(stateless: bool) -> None:
    own_lifespan: list[str] = []

    @contextlib.asynccontextmanager
    async def app_lifespan(app: Starlette) -> AsyncIterator[None]:
        own_lifespan.append("started")
        yield
        own_lifespan.append("stopped")

    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/health", health)], lifespan=app_lifespan)
    mount(app, _composition(), "/mcp", stateless=stateless)

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.02)
        try:
            assert own_lifespan == ["started"]
            assert Colours.open == 1  # the provider's lifespan runs with the app
            async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
                await _uses_the_composition(client)
            async with httpx2.AsyncClient() as http:
                response = await http.get(f"http://127.0.0.1:{port}/health")
                assert (response.status_code, response.text) == (200, "ok")
                missing = await http.get(f"http://127.0.0.1:{port}/elsewhere")
                assert missing.status_code == 404
        finally:
            server.should_exit = True
    assert own_lifespan == ["started", "stopped"]
    assert Colours.open == 0


def test_mount_rejects_a_relative_path() -> None:
    with pytest.raises(ValueError, match=r"mount path must start with '/', e\.g\. '/mcp'; got 'mcp'"):
        mount(Starlette(), _composition(), "mcp")


# -- attach to a low-level Server --------------------------------------------------------------------

HOST_RESOURCES = [types.Resource(uri=f"host://notes/{i}", name=f"note{i}") for i in range(3)]


def _host_server() -> Server[Any]:
    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        # Two pages, so the chained cursor must carry the host's own cursor.
        start = int(params.cursor) if params and params.cursor else 0
        nxt = "2" if start == 0 else None
        return types.ListResourcesResult(resources=HOST_RESOURCES[start : start + 2], next_cursor=nxt)

    async def read_resource(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ReadResourceResult:
        if not params.uri.startswith("host://notes/"):
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {params.uri}", {"uri": params.uri})
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text="host note")])

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="echo", input_schema={"type": "object"})])

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: Any) -> types.CallToolResult:
        if params.name != "echo":
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool {params.name}")
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(params.arguments))])

    return Server(
        "host",
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_attach_keeps_the_servers_own_resources_and_tools(mode: str) -> None:
    host = _host_server()
    attach(host, _composition())
    async with Client(host, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        await _uses_the_composition(client)
        pages, cursor = [], None
        while True:
            page = await client.list_resources(cursor=cursor)
            pages.append([r.uri for r in page.resources])
            cursor = page.next_cursor
            if cursor is None:
                break
        assert pages == [["host://notes/0", "host://notes/1"], ["host://notes/2", "emb://colours/all"]]
        assert (await client.read_resource("host://notes/1")).contents[0].text == "host note"
        echoed = await client.call_tool("echo", {"x": 1})
        assert json.loads(echoed.content[0].text) == {"x": 1}
        assert {t.name for t in (await client.list_tools()).tools} == {"echo", "mix"}
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["emb://colours/by-name/{colour}"]
        with pytest.raises(MCPError, match="Invalid cursor 'bogus'"):
            await client.list_resources(cursor="bogus")


async def test_attach_runs_the_provider_lifespans_with_the_server() -> None:
    host = _host_server()
    attach(host, _composition())
    assert Colours.open == 0
    async with Client(host, cache=None):
        assert Colours.open == 1
    assert Colours.open == 0


def test_attach_refuses_the_compositions_own_server() -> None:
    composition = _composition()
    with pytest.raises(ValueError, match="attach\\(\\) takes your own Server"):
        attach(composition.server, composition)


# -- add to an MCPServer ---------------------------------------------------------------------------


async def test_add_to_mcpserver_keeps_its_own_resources_and_tools() -> None:
    mcp = MCPServer("host", log_level="WARNING")
    mcp.add_resource(TextResource(uri="memo://hello", name="hello", text="hello world"))

    @mcp.tool()
    def shout(text: str) -> str:
        return text.upper()

    add_to_mcpserver(mcp, _composition())
    async with Client(mcp, cache=None) as client:
        await _uses_the_composition(client)
        assert (await client.read_resource("memo://hello")).contents[0].text == "hello world"
        shouted = await client.call_tool("shout", {"text": "hi"})
        assert shouted.structured_content == {"result": "HI"}
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"shout", "mix"}
        assert tools["mix"].input_schema["required"] == ["a"]
        assert tools["mix"].annotations is not None and tools["mix"].annotations.read_only_hint is True
        with pytest.raises(MCPError):
            await client.read_resource("emb://colours/by-name/blue")


async def test_add_to_mcpserver_takes_every_built_in_plugin_and_keeps_error_codes() -> None:
    from mcp_providers import Config, compose

    mcp = MCPServer("host", log_level="WARNING")
    # ServiceNow's input models use default_factory; its tools exist only with an instance configured
    instance = {"name": "dev", "url": "https://dev.example.com",
                "auth": {"type": "basic", "username": "u", "password_env": "EMBED_TEST_SN_PASSWORD"}}  # fmt: skip
    add_to_mcpserver(mcp, compose(Config(plugins={"servicenow": {"instances": [instance]}})))
    async with Client(mcp, cache=None) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"recommend_ssg", "servicenow_query_table"} <= names
        hugo = await client.read_resource("documcp://ssgs/hugo")
        assert '"hugo"' in hugo.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("documcp://ssgs/nope")  # through a template function
        assert unknown.value.code == -32602 and "No SSG 'nope'" in unknown.value.message
        with pytest.raises(MCPError) as unknown_fixed:
            await client.read_resource("documcp://templates/unknown-config")
        assert unknown_fixed.value.code == -32602


@pytest.mark.slow
async def test_mount_enforces_the_configured_bearer_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client.streamable_http import streamable_http_client

    from mcp_providers import Config, compose
    from mcp_providers.config import AuthConfig, ServerSettings, TokenConfig

    monkeypatch.setenv("EMBED_TEST_TOKEN", "embed-token-7c1e9d2b4a")
    config = Config(
        allow=("ssg_catalog",),
        server=ServerSettings(auth=AuthConfig(tokens=(TokenConfig(subject="carol", token_env="EMBED_TEST_TOKEN"),))),
    )
    app = Starlette()
    mount(app, compose(config), "/mcp", stateless=True, json_response=True)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.02)
        try:
            async with httpx2.AsyncClient() as http:
                anonymous = await http.post(
                    f"http://127.0.0.1:{port}/mcp",
                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={"Accept": "application/json, text/event-stream"},
                )
                assert anonymous.status_code == 401
            async with (
                httpx2.AsyncClient(headers={"Authorization": "Bearer embed-token-7c1e9d2b4a"}) as http,
                Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), cache=None) as c,
            ):
                result = await c.read_resource("documcp://ssgs/available")
                assert result.meta is not None and result.meta["io.mcp-providers/receipt"]["subject"] == "carol"
        finally:
            server.should_exit = True
