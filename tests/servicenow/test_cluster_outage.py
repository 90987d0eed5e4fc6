"""Issue 42 (builds 1, 2): the cluster bus goes down and comes back; no update is lost silently.

Real ``redis-server`` stopped and started again, real ``serve --http`` replicas, real clients of both
eras; nothing mocked. The outage lasts a few seconds, not the issue's 20: the mechanism (local
delivery while down, one re-announce of every watched URI once back) does not depend on its length.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from cluster_support import RedisServer, Replica, replicas, write_config
from mcp import Client
from mcp.server.subscriptions import ResourceUpdated, ServerEvent

from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers.config import ClusterSettings
from mcp_providers.plugins.servicenow.emulator import Emulator

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),  # 2025-11-25 subscribe
]

URI = "count://report"
RECORD = "servicenow://dev/incidents/INC0010001"
POLL = 0.5


def _settings(redis: RedisServer) -> ClusterSettings:
    return ClusterSettings(redis_url=redis.url, key_prefix=f"t{uuid.uuid4().hex[:8]}", timeout_seconds=0.5)


async def _until(check: Any, seconds: float = 10) -> None:
    with anyio.fail_after(seconds):
        while not check():
            await anyio.sleep(0.05)


async def test_a_publish_while_redis_is_down_is_delivered_here_and_the_recovery_reannounces_once(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(redis_server)
    a, b = RedisBackend(settings, "a"), RedisBackend(settings, "b")
    on_a: list[ServerEvent] = []
    on_b: list[ServerEvent] = []
    a.bus.subscribe(on_a.append)
    b.bus.subscribe(on_b.append)
    a.on_recovered = lambda: 3  # the hub's count of watched URIs
    with caplog.at_level(logging.INFO, "mcp_providers.cluster"):
        async with a.running(), b.running():
            redis_server.stop()
            await _until(lambda: not a.connected and not b.connected)
            await a.bus.publish(ResourceUpdated(uri=URI))  # never raises: the change has happened
            assert on_a == [ResourceUpdated(uri=URI)] and on_b == []  # delivered here, at once
            redis_server.start()
            await _until(lambda: a.outages.recoveries == 1 and b.outages.recoveries == 1)
            # the update made during the outage is sent on the channel once Redis answers; b hears it
            # if it was subscribed again by then (else b's own re-announce covers its watchers)
            await a.bus.publish(ResourceUpdated(uri="count://after"))
            await _until(lambda: ResourceUpdated(uri="count://after") in on_b)
    assert (a.outages.outages, a.outages.recoveries, a.outages.reannounced) == (1, 1, 3)
    assert (b.outages.outages, b.outages.recoveries, b.outages.reannounced) == (1, 1, 0)
    assert a.outages.waiting == 0
    for word in ("lost", "back"):  # once each per replica, however many reconnection attempts
        lines = [r for r in caplog.records if f"cluster backend {word}" in r.getMessage()]
        assert len(lines) == 2 and all(r.levelno == logging.WARNING for r in lines), caplog.text
    (back,) = [r.getMessage() for r in caplog.records if "re-announced 3 watched URIs" in r.getMessage()]
    assert "sent 1 update made here" in back, back
    assert "Traceback" not in caplog.text


async def test_a_publish_redis_does_not_take_while_the_listener_stays_up_is_sent_later(
    redis_server: RedisServer,
) -> None:
    settings = _settings(redis_server)
    a, b = RedisBackend(settings, "a"), RedisBackend(settings, "b")
    on_b: list[ServerEvent] = []
    b.bus.subscribe(on_b.append)
    async with a.running(), b.running():
        await _until(lambda: a.connected and b.connected)
        # writes (PUBLISH among them) wait 1.5 s; the listeners stay subscribed, and Redis still
        # answers pings: late sends are kept and sent later, never counted as an outage
        await a.call("pause", lambda r: r.execute_command("CLIENT", "PAUSE", "1500", "WRITE"))
        await a.bus.publish(ResourceUpdated(uri=URI))  # times out after 0.5 s: kept
        assert a.outages.waiting == 1 or ResourceUpdated(uri=URI) in on_b
        await _until(lambda: a.outages.waiting == 0 and ResourceUpdated(uri=URI) in on_b)
    assert (a.outages.outages, b.outages.outages) == (0, 0)


@pytest.mark.parametrize(("paused_ms", "outage"), [(1500, False), (3000, True)])
async def test_one_late_answer_to_the_liveness_ping_is_no_outage_two_in_a_row_are(
    redis_server: RedisServer, paused_ms: int, outage: bool
) -> None:
    from redis.asyncio import Redis
    from redis.exceptions import TimeoutError as RedisTimeoutError

    settings = ClusterSettings(redis_url=redis_server.url, key_prefix=f"t{uuid.uuid4().hex[:8]}", timeout_seconds=1)
    a = RedisBackend(settings, "a")  # the first ping gives up after 1 s, a second one after 2 s
    async with a.running(), Redis.from_url(redis_server.url) as operator:
        await _until(lambda: a.connected)
        await operator.execute_command("CLIENT", "PAUSE", str(paused_ms), "ALL")  # as in a failover
        try:
            if outage:
                with pytest.raises((TimeoutError, RedisTimeoutError)):
                    await a.still_there()
            else:
                await a.still_there()
        finally:
            await operator.execute_command("CLIENT", "UNPAUSE")


# -- replicas ------------------------------------------------------------------------------------


class _Watchers:
    """One 2025-era session and one 2026-07-28 listen stream on a replica, both watching ``WATCHED``."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str, float]] = []  # (era, uri, when)

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.heard.append(("2025", message.params.uri, time.monotonic()))

    def both_eras(self, uri: str, since: float) -> bool:
        """Whether both watchers heard of ``uri`` since ``since``."""
        return {era for era, u, t in self.heard if u == uri and t >= since} == {"2025", "2026"}

    async def run(self, replica: Replica, ready: anyio.Event) -> None:
        async with (
            Client(replica.url, mode="legacy", cache=None, message_handler=self.on_message) as legacy,
            Client(replica.url, cache=None) as modern,
            modern.listen(resource_subscriptions=WATCHED) as stream,
        ):
            for uri in WATCHED:
                await legacy.subscribe_resource(uri)
            ready.set()
            async for event in stream:
                self.heard.append(("2026", str(getattr(event, "uri", "")), time.monotonic()))


WATCHED = [RECORD, OTHER := "servicenow://dev/incidents/INC0010002", THIRD := "servicenow://dev/incidents/INC0010003"]


def _poll_requests(emulator: Emulator) -> int:
    """Requests the pollers made (they alone ask for exactly these fields)."""
    return sum(1 for r in emulator.table_requests() if r.query.get("sysparm_fields") == "sys_id,number,sys_updated_on")


def _count(replica: Replica, text: str) -> int:
    return replica.log.read_text().count(text)


def _sys_id(emulator: Emulator, number: str) -> str:
    return next(str(r["sys_id"]) for r in emulator.records("incident") if r["number"] == number)


async def test_redis_down_then_back_every_watcher_of_both_eras_hears_of_the_change_and_replicas_stay_ready(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str], redis_server: RedisServer
) -> None:
    config = write_config(tmp_path, dev_emulator.base_url, redis_server.url, POLL)
    args = {"instance": "dev", "table": "incident", "sys_id": _sys_id(dev_emulator, "INC0010002")}
    with replicas(config, 2) as (a, b):
        on_a, on_b = _Watchers(), _Watchers()
        async with anyio.create_task_group() as tasks, Client(a.url, cache=None) as caller:
            for watchers, replica in ((on_a, a), (on_b, b)):
                ready = anyio.Event()
                tasks.start_soon(watchers.run, replica, ready)
                await ready.wait()
            redis_server.stop()
            await _until(lambda: a.metric("mcp_providers_cluster_connected") == 0 == b.metric(
                "mcp_providers_cluster_connected"))  # fmt: skip

            for replica in (a, b):  # ready, degraded: a probe keeps them in
                status, body = replica.get("/readyz")
                assert status == 200 and '"status":"degraded"' in body.replace(" ", ""), body

            # the replicas still serve: a write through A reaches A's own watchers of both eras now
            started = time.monotonic()
            result = await caller.call_tool("servicenow_update_record", {**args, "values": {"urgency": "2"}})
            assert not result.is_error, result.content
            await _until(lambda: on_a.both_eras(OTHER, started), 5)
            assert not any(u == OTHER for _, u, _ in on_b.heard)  # B cannot hear of it while the bus is down
            # a change made upstream while nobody can poll (the poll lease lives in Redis)
            await anyio.to_thread.run_sync(_patch, dev_emulator, _sys_id(dev_emulator, "INC0010001"), "in the outage")

            redis_server.start()  # empty: the poller's last snapshot is gone with it
            recovered = time.monotonic()
            await _until(lambda: all(w.both_eras(uri, recovered) for w in (on_a, on_b) for uri in WATCHED), 15)
            for replica in (a, b):
                log = replica.log.read_text()[-3000:]
                assert replica.metric("mcp_providers_cluster_outages_total") == 1, log
                assert replica.metric("mcp_providers_cluster_recoveries_total") == 1, log
                assert replica.metric("mcp_providers_cluster_reannounced_total") == 3  # every URI watched, both eras
                assert _count(replica, "cluster backend lost") == 1, replica.log.read_text()[-3000:]
                assert _count(replica, "cluster backend back") == 1
                assert "Traceback" not in replica.log.read_text()

            # pollers resume: once one replica polls again and has a whole round for its baseline
            # (Redis came back empty), a change made upstream reaches every watcher
            await _until(lambda: a.metric("mcp_providers_poll_leases") + b.metric("mcp_providers_poll_leases") == 1)
            rounds = _poll_requests(dev_emulator) + 8  # 4 tables a round: the round under way, then one whole
            await _until(lambda: _poll_requests(dev_emulator) >= rounds)
            resumed = time.monotonic()
            await anyio.to_thread.run_sync(_patch, dev_emulator, _sys_id(dev_emulator, "INC0010003"), "after it")
            await _until(lambda: all(w.both_eras(THIRD, resumed) for w in (on_a, on_b)), 15)
            tasks.cancel_scope.cancel()


def _patch(emulator: Emulator, sys_id: str, text: str) -> None:
    import base64
    import json
    import urllib.request

    from servicenow_support import DEV_PASSWORD, DEV_USER

    token = base64.b64encode(f"{DEV_USER}:{DEV_PASSWORD}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(f"{emulator.base_url}/api/now/table/incident/{sys_id}", method="PATCH",
                                     data=json.dumps({"short_description": text}).encode(),
                                     headers=headers)  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
