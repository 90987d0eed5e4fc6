"""Issue 42 (build 4): a 2025-era session whose replica is gone gets 404 through nginx, so its client
starts a new session at once, never a 502 for ever.

Real ``serve --http`` replicas behind the shipped ``deploy/nginx.conf`` on a real nginx; the
session's replica is SIGKILLed; raw HTTP, so the test sees each status.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import anyio
import httpx2
import pytest
from cluster_support import nginx_in_front, replicas, write_config
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost

from mcp_providers.plugins.servicenow.emulator import Emulator

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

VERSION = "2025-11-25"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
READ = {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "servicenow://dev/incidents"}}


async def _initialize(http: httpx2.AsyncClient, url: str) -> str:
    init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    response = await http.post(url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                          "params": init})  # fmt: skip
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": VERSION}
    await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


async def _read(http: httpx2.AsyncClient, url: str, session: str) -> httpx2.Response:
    headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": VERSION}
    return await http.post(url, headers=headers, json=READ)


async def test_a_session_whose_replica_was_killed_gets_404_and_its_client_reads_again_in_a_new_one(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    config = write_config(tmp_path, dev_emulator.base_url, None, 60)
    with replicas(config, 2) as (a, b), nginx_in_front([a, b, b]) as url:  # the conf names three replicas
        async with httpx2.AsyncClient(timeout=30) as http:
            base = url.removesuffix("/mcp")
            for path in ("/metrics", "/status", "/status.json", "/admin/reload"):  # off the public port
                assert (await http.get(base + path)).status_code == 404, path
            assert (await http.get(base + "/readyz")).status_code == 200  # the probes stay
            session = await _initialize(http, url)
            assert (await _read(http, url, session)).status_code == 200
            pinned = {"replica1": a, "replica2": b}[session.split(".")[0]]
            pinned.kill()
            killed = time.monotonic()
            gone = await _read(http, url, session)
            assert gone.status_code == 404, (gone.status_code, gone.text)  # not 502: start a new session
            assert "start a new session" in gone.json()["error"]["message"]
            again = await _initialize(http, url)  # what a client does on 404 (MCP streamable HTTP)
            assert (await _read(http, url, again)).status_code == 200
            print(f"reading again {time.monotonic() - killed:.2f} s after the session's replica was killed")
            assert time.monotonic() - killed < 2


async def test_a_listener_whose_replica_was_killed_listens_again_through_nginx(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    record = "servicenow://dev/incidents/INC0010001"
    config = write_config(tmp_path, dev_emulator.base_url, None, 60)
    with replicas(config, 2) as (a, b), nginx_in_front([a, b, b]) as url:
        async with Client(url, cache=None) as client:
            async with client.listen(resource_subscriptions=[record]) as stream:
                (holder,) = [r for r in (a, b) if r.metric("mcp_providers_subscriptions") == 1]
                holder.kill()
                killed = time.monotonic()
                with anyio.fail_after(5), pytest.raises(SubscriptionLost):  # dropped, not ended gracefully
                    async for _ in stream:
                        pass
            async with client.listen(resource_subscriptions=[record]) as again:  # the other replica
                assert again.honored is not None and record in (again.honored.resource_subscriptions or [])
            print(f"listening again {time.monotonic() - killed:.2f} s after its replica was killed")
            assert time.monotonic() - killed < 2
