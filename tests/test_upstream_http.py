"""Upstream MCP servers over streamable HTTP: server-everything's HTTP mode (npm, 2025-era) and an
SDK v2 server (2026-07-28) that records the Authorization header of every request it gets.

One composition per module, its upstreams started once; the last test kills server-everything
mid-session and starts it again on the same port.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import Context, MCPServer
from real_parts import upstream_servers
from serve_support import free_port
from upstream_support import read_timeout_meanwhile
from waiting import await_until, wait_until

import mcp_providers.http
from mcp_providers import _sideeffects
from mcp_providers._serve.reload import Reloader
from mcp_providers.errors import UPSTREAM_ERROR, SideEffectRefused
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins import upstream
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

TOKEN_ENV = "U1_PROBE_TOKEN"
SEEN: list[str | None] = []


def _probe() -> MCPServer:
    async def record(ctx: Any, call_next: CallNext) -> HandlerResult:
        if ctx.request is not None:
            SEEN.append(ctx.request.headers.get("authorization"))
        return await call_next(ctx)

    probe = MCPServer("probe", version="9.9", middleware=[record], log_level="WARNING")

    @probe.resource("probe://items/{item}", mime_type="text/plain")
    def item(item: str) -> str:
        return f"item {item}"

    @probe.tool(description="Add two numbers.")
    def add(a: int, b: int) -> int:
        return a + b

    @probe.resource("probe://status", mime_type="text/plain")
    def status() -> str:
        return "fine"

    def later() -> str:
        return "added later"

    @probe.tool(description="Announce a change of the status and of the tool list (a tool is added).")
    async def announce(ctx: Context) -> str:
        await ctx.notify_resource_updated("probe://status")
        probe.add_tool(later, description="Added by announce.")  # a list_changed that changes nothing reloads nothing
        await ctx.notify_tools_changed()
        return "announced"

    @probe.tool(description="Never answers.")
    async def stall() -> str:
        await anyio.sleep_forever()
        return "never"

    return probe


@contextlib.contextmanager
def _everything(port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    command = upstream_servers()["everything"]
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [*command, "streamableHttp"], env={**os.environ, "PORT": str(port)}, stdout=err, stderr=err
        )
    try:
        wait_until(lambda: f"listening on port {port}" in log.read_text(), "server-everything listens", alive=proc)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def http_upstreams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("http-upstreams")
    probe_port, ev_port = free_port(), free_port()
    server = uvicorn.Server(
        uvicorn.Config(_probe().streamable_http_app(), host="127.0.0.1", port=probe_port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, "the probe server listens")
    with pytest.MonkeyPatch.context() as env:
        env.setenv(TOKEN_ENV, "static-probe-token")
        with contextlib.ExitStack() as later, _everything(ev_port, folder / "everything.log") as proc:
            log = folder / "everything.log"
            yield {"probe": probe_port, "everything": ev_port, "proc": proc, "log": log, "later": later}
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
async def composed(http_upstreams: dict[str, Any]) -> Any:
    settings = {
        "servers": [
            {
                "name": "probe",
                "url": f"http://127.0.0.1:{http_upstreams['probe']}/mcp",
                "auth": {"token_env": TOKEN_ENV},
                "prefixes": ["probe://"],
                "read_timeout": 8,  # 1 s, then 4 s, were outrun under load (a full run beside helpers: 4 s at load 9)
                "effects": {"stall": "additive", "announce": "additive"},
            },
            {
                "name": "everything",
                "url": f"http://127.0.0.1:{http_upstreams['everything']}/mcp",
                "prefixes": ["demo://resource/"],
                "tool_prefix": "ev_",
                "read_timeout": 5,
            },
        ]
    }
    c = compose({"upstream": upstream}, {"upstream": settings})
    async with c.running():
        yield c, Reloader(c, lambda: c.config, load_entrypoints=False, plugins={"upstream": upstream})


async def test_http_upstreams_of_both_eras_serve_with_only_their_static_credential(composed: Any) -> None:
    composed, _reloader = composed
    SEEN.clear()
    async with connect(composed, "auto") as modern, connect(composed, "legacy") as legacy:
        for client in (modern, legacy):
            read = await client.read_resource("probe://items/7")
            assert read.contents[0].text == "item 7"
            assert read.meta[RECEIPT_KEY]["upstream"] == {
                "name": "probe",
                "transport": "streamable-http",
                "serverInfo": "probe 9.9",
                "grant": "static",
                "uri": "probe://items/7",
            }
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
            doc = await client.read_resource("demo://resource/static/document/features.md")
            assert doc.contents[0].text.startswith("# Everything Server")
            assert (await client.call_tool("ev_echo", {"message": "hi"})).content[0].text == "Echo: hi"
    assert SEEN and set(SEEN) == {"Bearer static-probe-token"}  # never the caller's, never missing


async def test_an_upstream_that_hangs_is_bounded_by_its_read_timeout(composed: Any) -> None:
    composed, _reloader = composed
    async with connect(composed) as client:
        with pytest.raises(MCPError) as hung, read_timeout_meanwhile(composed, 1.0, "probe"):
            await client.call_tool("stall", {})  # it never answers: the whole bound is waited out
        assert hung.value.code == UPSTREAM_ERROR
        assert hung.value.message.startswith(
            "upstream 'probe' (streamable-http) did not answer tools/call stall within 1.0 s"
        )
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


async def test_the_side_effect_scope_lets_an_mcp_read_post_through_and_nothing_else(
    http_upstreams: dict[str, Any],
) -> None:
    _sideeffects.install()
    url = f"http://127.0.0.1:{http_upstreams['everything']}/mcp"

    def body(*methods: str) -> str:
        messages = [{"jsonrpc": "2.0", "id": i, "method": m, "params": {}} for i, m in enumerate(methods)]
        return json.dumps(messages[0] if len(messages) == 1 else messages)

    json_type = {"content-type": "application/json"}
    async with mcp_providers.http.client(mcp_endpoint=url) as http, httpx2.AsyncClient() as plain:
        with _sideeffects.side_effect_scope(provider="p", plugin="p", target="demo://x"):
            answer = await http.post(url, content=body("resources/read"), headers=json_type)
            assert answer.status_code < 500  # sent (the server refuses it for want of a session)
            for refused in (body("tools/call"), body("resources/read", "tools/call"), "not json"):
                with pytest.raises(SideEffectRefused, match="a POST to"):
                    await http.post(url, content=refused, headers=json_type)
            # the same read elsewhere than the client's endpoint, or by a client made for none: refused
            with pytest.raises(SideEffectRefused, match="a POST to"):
                await http.post(url + "/other", content=body("resources/read"), headers=json_type)
            with pytest.raises(SideEffectRefused, match="a POST to"):
                await plain.post(url, content=body("resources/read"), headers=json_type)


async def test_an_upstream_killed_mid_session_errors_by_name_restarts_and_the_others_serve(
    composed: Any, http_upstreams: dict[str, Any]
) -> None:
    composed, _reloader = composed
    async with connect(composed) as client:
        failed: list[MCPError] = []

        async def in_flight() -> None:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("ev_trigger-long-running-operation", {"duration": 30, "steps": 30})
            failed.append(caught.value)

        [link] = [d.provider.link for d in composed.assembly.declared if d.provider.name == "upstream-everything-tools"]
        async with anyio.create_task_group() as tg:
            tg.start_soon(in_flight)
            await await_until(lambda: link.in_flight, "the call is in flight")
            http_upstreams["proc"].kill()
        assert failed[0].code == UPSTREAM_ERROR and "upstream 'everything' (streamable-http)" in failed[0].message
        assert (await client.read_resource("probe://items/1")).contents[0].text == "item 1"  # the other serves
        restarted = _everything(http_upstreams["everything"], http_upstreams["log"])
        http_upstreams["proc"] = http_upstreams["later"].enter_context(restarted)  # serves on for the next test

        async def served_again() -> bool:
            try:
                await client.read_resource("demo://resource/static/document/features.md")
            except MCPError:
                return False
            return True

        await await_until(served_again, "the upstream is connected again", every=0.2)
        watched = "demo://resource/static/document/features.md"  # subscribed upstream on the new connection
        async with client.listen(resource_subscriptions=[watched]) as events:
            await client.call_tool("ev_toggle-subscriber-updates", {"enabled": True})  # sends one at once
            with anyio.fail_after(30):  # one at once, then one every 5 s: a hang fails, not waits for ever
                assert str((await events.__anext__()).uri) == watched
        assert link.restarts >= 1


async def test_a_2026_upstream_is_watched_by_listen_its_updates_relayed_its_list_change_reloading(
    composed: Any,
) -> None:
    composed, reloader = composed  # the module's last test: the reload replaces the upstreams' providers
    [probe] = [d.provider for d in composed.assembly.declared if d.provider.name == "upstream-probe"]
    await await_until(lambda: probe.watching, "the upstream's listen stream is open")  # else its update is lost
    async with connect(composed) as client, client.listen(resource_subscriptions=["probe://status"]) as events:
        assert (await client.call_tool("announce", {})).structured_content == {"result": "announced"}
        with anyio.fail_after(30):
            assert str((await events.__anext__()).uri) == "probe://status"
        await await_until(lambda: reloader.last is not None, "the reload the upstream's list change asked for")
    assert reloader.outcomes == {"applied": 1}, reloader.last  # once, however many notices
    assert "upstream 'probe' (streamable-http) sent" in reloader.last.trigger
    assert not composed.startup_failures
