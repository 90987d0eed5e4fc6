"""Issue 14: serving over HTTP and across replicas sharing one Redis; the real parts, nothing mocked.

Each replica is ``mcp-providers serve --http`` in a subprocess with the ServiceNow plugin pointed
at the emulator in this process; Redis is a real ``redis-server`` on a free loopback port.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from cluster_support import RedisServer, Replica, nginx_in_front, replicas, write_config
from mcp import Client
from prefork import python
from waiting import await_until

from mcp_providers.plugins.servicenow.emulator import Emulator

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),  # 2025-11-25 subscribe
]

POLL = 0.5
LEASE = 1.0
"""``[cluster] lease_seconds`` of these replicas (``write_config``'s default)."""
RECORD = "servicenow://dev/incidents/INC0010001"


def _sys_id(emulator: Emulator, number: str) -> str:
    return next(str(r["sys_id"]) for r in emulator.records("incident") if r["number"] == number)


def _poll_requests(emulator: Emulator) -> int:
    """Requests the pollers made (they alone ask for exactly these fields)."""
    return sum(1 for r in emulator.table_requests() if r.query.get("sysparm_fields") == "sys_id,number,sys_updated_on")


class _Updates:
    def __init__(self) -> None:
        self.uris: list[tuple[float, str]] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append((time.monotonic(), message.params.uri))

    async def wait_for(self, uri: str, seconds: float) -> float:
        with anyio.fail_after(seconds):
            while not any(u == uri for _, u in self.uris):
                await anyio.sleep(0.02)
        return next(t for t, u in self.uris if u == uri)


async def test_http_sessions_that_end_leave_no_watchers_and_ops_routes_answer(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    config = write_config(tmp_path, dev_emulator.base_url, None, 60)
    with replicas(config, 1) as (replica,):
        assert replica.get("/healthz")[0] == 200
        assert replica.get("/readyz")[0] == 200
        for _ in range(20):
            async with Client(replica.url, mode="legacy", cache=None) as legacy:  # ends with DELETE
                await legacy.subscribe_resource(RECORD)
                assert replica.metric("mcp_providers_subscriptions") == 1
        await await_until(lambda: replica.metric("mcp_providers_subscriptions") == 0, "every watcher is gone")
        text = replica.get("/metrics")[1]
        assert 'mcp_providers_requests_total{method="resources/subscribe",outcome="ok"} 20.0' in text
        assert "mcp_providers_read_seconds_bucket" in text


async def _through_b_to_a(a: Replica | str, b: Replica | str, emulator: Emulator) -> tuple[float, float]:
    """Seconds from B's tool call to A's listener (2026-07-28), then to A's 2025 session."""
    sys_id = _sys_id(emulator, "INC0010001")
    args = {"instance": "dev", "table": "incident", "sys_id": sys_id}
    a_url, b_url = (x if isinstance(x, str) else x.url for x in (a, b))
    async with (
        Client(a_url, cache=None) as listener,
        Client(b_url, cache=None) as caller,
        listener.listen(resource_subscriptions=[RECORD]) as stream,
    ):
        started = time.monotonic()
        result = await caller.call_tool("servicenow_update_record", {**args, "values": {"urgency": "2"}})
        assert not result.is_error, result.content
        with anyio.fail_after(POLL + 1):
            async for event in stream:
                assert event.uri == RECORD  # type: ignore[union-attr]
                break
        modern = time.monotonic() - started
    updates = _Updates()
    async with (
        Client(a_url, mode="legacy", cache=None, message_handler=updates) as legacy,
        Client(b_url, mode="legacy", cache=None) as caller,
    ):
        await legacy.subscribe_resource(RECORD)
        started = time.monotonic()
        result = await caller.call_tool("servicenow_update_record", {**args, "values": {"urgency": "3"}})
        assert not result.is_error, result.content
        legacy_seconds = await updates.wait_for(RECORD, POLL + 1) - started
    return modern, legacy_seconds


async def test_an_update_made_through_b_reaches_a_listener_on_a_and_one_replica_polls(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str], redis_server: RedisServer
) -> None:
    config = write_config(tmp_path, dev_emulator.base_url, redis_server.url, POLL)
    with replicas(config, 3) as (a, b, c):
        modern, legacy = await _through_b_to_a(a, b, dev_emulator)
        print(f"B's write reached A's listener in {modern:.3f} s (2026-07-28), {legacy:.3f} s (2025-11-25)")

        # One poller across three replicas: about 4 requests (one per watched table) per interval.
        holders = [r for r in (a, b, c) if r.metric("mcp_providers_poll_leases") == 1]
        assert len(holders) == 1
        before, started = _poll_requests(dev_emulator), time.monotonic()
        await anyio.sleep(3)
        rounds = (_poll_requests(dev_emulator) - before) / 4
        elapsed = time.monotonic() - started
        print(f"{rounds:g} poll rounds in {elapsed:.2f} s with 3 replicas at {POLL} s")
        assert rounds <= elapsed / POLL + 1.5

        # Kill the holder: another replica polls within the lease, and a change made meanwhile is seen.
        holder = holders[0]
        others = [r for r in (a, b, c) if r is not holder]
        async with (
            Client(others[0].url, cache=None) as watcher,
            watcher.listen(resource_subscriptions=["servicenow://dev/incidents"]) as stream,
        ):
            holder.kill()
            killed = time.monotonic()
            _patch(dev_emulator, _sys_id(dev_emulator, "INC0010002"), {"short_description": "during handover"})
            with anyio.fail_after(LEASE + POLL + 2):  # the lease runs out, the next poll takes it; slack
                async for event in stream:
                    assert event.uri == "servicenow://dev/incidents"  # type: ignore[union-attr]
                    break
            print(f"after the holder was killed, the change was published in {time.monotonic() - killed:.2f} s")
        assert sum(r.metric("mcp_providers_poll_leases") for r in others) == 1


async def test_three_replicas_behind_nginx_deliver_in_both_eras(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str], redis_server: RedisServer
) -> None:
    config = write_config(tmp_path, dev_emulator.base_url, redis_server.url, POLL)
    with replicas(config, 3) as three, nginx_in_front(three) as url:
        async with Client(url, mode="legacy", cache=None) as legacy:  # a 2025 session stays on its replica
            for _ in range(10):
                assert (await legacy.read_resource("servicenow://dev/incidents")).contents
        served = [r.metric('mcp_providers_requests_total{method="resources/read",outcome="ok"}') for r in three]
        assert sorted(served) == [0, 0, 10], served
        # Through nginx the listener and the caller land wherever nginx sends them; delivery holds.
        modern, legacy_seconds = await _through_b_to_a(url, url, dev_emulator)
        print(f"through nginx: {modern:.3f} s (2026-07-28), {legacy_seconds:.3f} s (2025-11-25)")


async def test_redis_down_leaves_the_replica_ready_but_degraded_serving_reads_and_watches(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str], redis_server: RedisServer
) -> None:
    config = write_config(tmp_path, dev_emulator.base_url, redis_server.url, POLL)
    with replicas(config, 1) as (replica,):
        async with Client(replica.url, mode="legacy", cache=None) as client:
            assert replica.metric("mcp_providers_degraded") == 0
            redis_server.stop()
            with anyio.fail_after(10):  # the listener notices
                while replica.metric("mcp_providers_cluster_connected") != 0:
                    await anyio.sleep(0.1)
            status, body = replica.get("/readyz")
            ready = json.loads(body)
            assert status == 200 and ready["status"] == "degraded", body  # a probe keeps the replica in
            assert ready["problems"] == [] and "Redis" in ready["degraded"][0]
            assert "Error" not in body and "127.0.0.1" not in body  # no exception text, no address
            assert replica.metric("mcp_providers_degraded") == 1
            assert (await client.read_resource("servicenow://dev/incidents")).contents  # no shared state
            await client.subscribe_resource(RECORD)  # hears this replica's updates; re-announced once back
            redis_server.start()
            with anyio.fail_after(10):
                while json.loads(replica.get("/readyz")[1])["status"] != "ready":
                    await anyio.sleep(0.1)
            assert replica.metric("mcp_providers_degraded") == 0


def _patch(emulator: Emulator, sys_id: str, values: dict[str, str]) -> None:
    import base64
    import json
    import urllib.request

    from servicenow_support import DEV_PASSWORD, DEV_USER

    token = base64.b64encode(f"{DEV_USER}:{DEV_PASSWORD}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(f"{emulator.base_url}/api/now/table/incident/{sys_id}", method="PATCH",
                                     data=json.dumps(values).encode(), headers=headers)  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def test_workers_without_a_cluster_are_refused_with_the_reason(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    import subprocess

    config = write_config(tmp_path, dev_emulator.base_url, None, 60)
    run = subprocess.run(
        [*python(), "-m", "mcp_providers", "serve", "--config", str(config), "--http", "127.0.0.1:1",
         "--workers", "2", "--stateless"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "needs a [cluster] section" in run.stderr and "never hears of a change" in " ".join(run.stderr.split())
    run = subprocess.run(
        [*python(), "-m", "mcp_providers", "serve", "--config", str(config), "--http", "127.0.0.1:1",
         "--workers", "2"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2 and "needs --stateless" in run.stderr, run.stderr


def _ready(port: int) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=30) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):  # refused, timed out or 503: not yet
        return False


async def test_workers_share_one_port_and_one_poller(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str], redis_server: RedisServer
) -> None:
    import subprocess

    from cluster_support import free_port, wait_for_port

    config = write_config(tmp_path, dev_emulator.base_url, redis_server.url, POLL)
    port = free_port()
    proc = subprocess.Popen(
        [*python(), "-m", "mcp_providers", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}",
         "--workers", "2", "--stateless"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        # the port is bound by the parent at once; requests are answered once a worker has started
        deadline = time.monotonic() + 60
        while not _ready(port):
            assert time.monotonic() < deadline and proc.poll() is None, "no worker became ready in 60 s"
            await anyio.sleep(0.1)
        sys_id = _sys_id(dev_emulator, "INC0010001")
        for urgency in ("2", "3", "1"):  # each client connection lands on either worker: delivery holds
            async with (
                Client(url, cache=None) as listener,
                Client(url, cache=None) as caller,
                listener.listen(resource_subscriptions=[RECORD]) as stream,
            ):
                values = {"instance": "dev", "table": "incident", "sys_id": sys_id, "values": {"urgency": urgency}}
                assert not (await caller.call_tool("servicenow_update_record", values)).is_error
                with anyio.fail_after(POLL + 1):
                    async for _event in stream:
                        break
        before, started = _poll_requests(dev_emulator), time.monotonic()
        await anyio.sleep(2)
        rounds = (_poll_requests(dev_emulator) - before) / 4
        assert rounds <= (time.monotonic() - started) / POLL + 1.5, rounds
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert proc.returncode == 0
