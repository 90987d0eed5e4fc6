"""Issue 42 (build 5): ``SIGTERM`` stops a ``serve --http`` replica within the grace period.

Real ``serve --http`` process, real clients of both eras, the emulator slowing one upstream answer
so a request is in flight when the signal comes; nothing mocked.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from cluster_support import replicas, write_config
from mcp import Client

from mcp_providers.plugins.servicenow.emulator import Emulator

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RECORD = "servicenow://dev/incidents/INC0010001"
VERSION = "2025-11-25"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def _session(http: httpx2.AsyncClient, url: str) -> str:
    """A 2025-era session watching ``RECORD`` (raw HTTP: the test sees its GET stream end)."""
    init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    response = await http.post(url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                          "params": init})  # fmt: skip
    session = response.headers["mcp-session-id"]
    headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": VERSION}
    await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    watch = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": RECORD}}
    assert (await http.post(url, headers=headers, json=watch)).status_code == 200
    return session


def _faults_left(emulator: Emulator) -> int:
    return emulator.pending_faults()


async def test_sigterm_ends_both_eras_streams_gracefully_finishes_the_request_in_flight_and_exits_within_10_s(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    config = write_config(tmp_path, dev_emulator.base_url, None, 60)  # one poll round, at start-up
    with replicas(config, 1) as (replica,):
        ended: dict[str, Any] = {}
        async with anyio.create_task_group() as tasks, httpx2.AsyncClient(timeout=30) as http:
            session = await _session(http, replica.url)
            get_open, listening = anyio.Event(), anyio.Event()

            async def legacy_stream() -> None:
                headers = {"Accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": VERSION}
                async with http.stream("GET", replica.url, headers=headers) as response:
                    assert response.status_code == 200
                    get_open.set()
                    async for _ in response.aiter_lines():
                        pass
                ended["2025"] = time.monotonic()  # the server ended it; the client did not

            async def modern_stream() -> None:
                async with (
                    Client(replica.url, cache=None) as client,
                    client.listen(resource_subscriptions=[RECORD]) as stream,
                ):
                    listening.set()
                    async for _ in stream:
                        pass
                ended["2026"] = time.monotonic()  # a graceful close ends the loop; a dropped stream raises

            async def slow_read() -> None:
                async with Client(replica.url, cache=None) as client:
                    ended["read"] = await client.read_resource(RECORD)

            tasks.start_soon(legacy_stream)
            tasks.start_soon(modern_stream)
            await get_open.wait()
            await listening.wait()
            dev_emulator.fail_next(status=None, delay_seconds=2)  # the next upstream answer takes 2 s
            tasks.start_soon(slow_read)
            with anyio.fail_after(10):
                while _faults_left(dev_emulator):  # the read has reached the emulator: it is in flight
                    await anyio.sleep(0.02)
            signalled = time.monotonic()
            replica.proc.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(lambda: replica.proc.wait(timeout=30))
            stopped = time.monotonic() - signalled
        print(f"SIGTERM with a listen stream, a GET stream and a 2 s request open: exited in {stopped:.2f} s")
        assert stopped < 10
        assert ended["read"].contents  # the request in flight was answered, not cut
        assert ended["2026"] - signalled < 1 and ended["2025"] - signalled < 1  # ended at once, not at the end
        assert "stopping: ended 1 listen stream and the GET streams of 1 session" in replica.log.read_text()
