"""``add_to_mcpserver`` (issue 43): each read, call and prompt is answered by the composition's
pipeline directly, as the MCPServer request's own caller (no in-process client per request): two
callers over HTTP with their own tokens reach the gate as themselves, a deny for one holds for that
one alone, and no ``Client`` is opened while MCPServer answers."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel
from test_embedding import Plugin

from mcp_providers import Decision, Tool, ToolCall, ToolProvider, ToolResult, hookimpl
from mcp_providers.embedding import add_to_mcpserver
from mcp_providers.errors import DENIED
from mcp_providers.identity import Principal, serving_as
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

TOKENS = {"token-ann-5f2c": "ann", "token-bob-9d41": "bob"}


class Verifier:
    """The MCPServer's ``token_verifier``: two static tokens, each its own subject."""

    async def verify_token(self, token: str) -> AccessToken | None:
        subject = TOKENS.get(token)
        if subject is None:
            return None
        return AccessToken(token=token, client_id=f"{subject}-app", scopes=[], subject=subject)


class Watcher:
    """An authorize plugin: records who asked what; denies ``bob`` reading the colour list."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    @hookimpl
    def authorize(self, subject: str, action: str, target: str) -> Decision | None:
        self.asked.append((subject, action, target))
        if subject == "bob" and action == "read" and target == "emb://colours/all":
            return Decision(False, "bob may not read the colour list")
        return None


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def _served_over_http(mcp: MCPServer) -> AsyncIterator[str]:
    port = _free_port()
    app = mcp.streamable_http_app(json_response=True, stateless_http=True)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True


@contextlib.asynccontextmanager
async def _as(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


def _mcpserver(watcher: Watcher, **auth: Any) -> MCPServer:
    composition = compose({"embedded": Plugin(), "watcher": watcher})
    mcp = MCPServer("host", log_level="WARNING", lifespan=lambda _app: composition.running(), **auth)
    add_to_mcpserver(mcp, composition)
    return mcp


@pytest.mark.slow
async def test_two_callers_reach_the_gate_as_themselves_and_a_deny_for_one_holds() -> None:
    watcher = Watcher()
    auth = AuthSettings(
        issuer_url="https://idp.example.com", resource_server_url="http://127.0.0.1/mcp", validate_token_resource=False
    )
    mcp = _mcpserver(watcher, token_verifier=Verifier(), auth=auth)
    async with _served_over_http(mcp) as url, _as(url, "token-ann-5f2c") as ann, _as(url, "token-bob-9d41") as bob:
        read = await ann.read_resource("emb://colours/all")
        assert json.loads(read.contents[0].text) == ["green", "red"]  # type: ignore[union-attr]
        with pytest.raises(MCPError) as denied:
            await bob.read_resource("emb://colours/all")
        assert denied.value.code == DENIED and "bob may not read the colour list" in denied.value.message
        assert (await bob.read_resource("emb://colours/by-name/red")).contents[0].text == "#ff0000"  # type: ignore[union-attr]
        for client in (ann, bob):
            assert (await client.call_tool("mix", {"a": "red"})).structured_content == {"mixed": "red+green"}
            assert (await client.get_prompt("greet", {"who": "Ada"})).messages[0].content.text == "Say hello to Ada"  # type: ignore[union-attr]
    reads = {(s, t) for s, a, t in watcher.asked if a == "read"}
    assert {("ann", "emb://colours/all"), ("bob", "emb://colours/all"), ("bob", "emb://colours/by-name/red")} <= reads
    assert {s for s, a, t in watcher.asked if (a, t) == ("call", "mix")} == {"ann", "bob"}
    assert {s for s, a, t in watcher.asked if (a, t) == ("prompt", "greet")} == {"ann", "bob"}
    assert "local" not in {s for s, _a, _t in watcher.asked}


async def test_in_memory_the_caller_is_local_or_the_one_serving_as_chose() -> None:
    watcher = Watcher()
    mcp = _mcpserver(watcher)
    async with Client(mcp, cache=None) as client:
        await client.read_resource("emb://colours/all")
    with serving_as(Principal("bob", issuer="https://idp.example.com")):
        async with Client(mcp, cache=None) as client:
            with pytest.raises(MCPError) as denied:
                await client.read_resource("emb://colours/all")
    assert denied.value.code == DENIED
    assert [s for s, a, t in watcher.asked if (a, t) == ("read", "emb://colours/all")] == ["local", "bob"]


async def test_no_client_is_opened_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    entered: list[object] = []
    enter = Client.__aenter__

    async def counted(self: Client) -> Client:
        entered.append(self.server)
        return await enter(self)

    monkeypatch.setattr(Client, "__aenter__", counted)
    mcp = _mcpserver(Watcher())
    async with Client(mcp, cache=None) as client:
        for _ in range(3):
            await client.read_resource("emb://colours/by-name/green")
            await client.call_tool("mix", {"a": "red"})
            await client.get_prompt("greet", {"who": "Ada"})
    assert entered == [mcp]  # the test's own client alone


async def test_a_function_called_outside_a_request_says_so() -> None:
    mcp = _mcpserver(Watcher())
    with pytest.raises(Exception) as raised:  # MCPServer wraps it in its ToolError
        await mcp.call_tool("mix", {"a": "red"})
    assert "outside a request MCPServer received" in str(raised.value.__cause__)


def test_adding_twice_appends_one_middleware() -> None:
    mcp = MCPServer("host", log_level="WARNING")
    before = len(mcp.middleware)
    add_to_mcpserver(mcp, compose({"embedded": Plugin()}))
    add_to_mcpserver(mcp, compose({"asker": AskerPlugin()}))  # another composition, other names
    assert len(mcp.middleware) == before + 1


class Ask(BaseModel):
    pass


class Asker(ToolProvider):
    """A tool that asks the user its name (``elicitation/create``; an input round on 2026-07-28)."""

    name = "asker"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="ask", description="Asks a name", input_model=Ask)]

    async def call(self, call: ToolCall) -> ToolResult:
        got = await call.elicit("your name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        return ToolResult(text=f"{got.action}: {got.content.get('n')}")


class AskerPlugin:
    @hookimpl
    def register_tool_providers(self) -> list[ToolProvider]:
        return [Asker()]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_tools_question_reaches_the_mcpservers_client_in_both_eras(mode: str) -> None:
    mcp = MCPServer("host", log_level="WARNING")
    add_to_mcpserver(mcp, compose({"asker": AskerPlugin()}))
    asked: list[str] = []

    async def answer(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"n": "ann"})

    async with Client(mcp, cache=None, mode=mode, elicitation_callback=answer) as client:
        called = await client.call_tool("ask", {})
        assert (client.protocol_version == "2026-07-28") == (mode == "auto")  # an input round; a request
    assert not called.is_error and called.content[0].text == "accept: ann"  # type: ignore[union-attr]
    assert asked == ["your name?"]


async def test_the_output_schema_is_still_the_output_models() -> None:
    mcp = _mcpserver(Watcher())
    async with Client(mcp, cache=None) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["mix"].output_schema is not None and set(tools["mix"].output_schema["properties"]) == {"mixed"}
