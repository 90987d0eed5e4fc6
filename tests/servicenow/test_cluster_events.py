"""Issue 14: with ``[cluster]``, a stateful 2025-era session's streams are kept in Redis and
resumable with ``Last-Event-ID``; real ``redis-server``, raw HTTP (httpx2), nothing mocked."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from cluster_support import RedisServer, free_port, replicas, write_config
from mcp import Client
from mcp.server.streamable_http import EventMessage

from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers._serve.state.events import UNSTORED, RedisEventStore
from mcp_providers.config import ClusterSettings
from mcp_providers.plugins.servicenow.emulator import Emulator

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RECORD = "servicenow://dev/incidents/INC0010001"
VERSION = "2025-11-25"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def _events(response: httpx2.Response) -> AsyncIterator[dict[str, Any]]:
    """The SSE events of ``response``: ``{"id": ..., "data": <parsed JSON or None>}``."""
    event: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line:
            if event:
                yield event
            event = {}
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            event["id"] = value
        elif field == "data":
            event["data"] = json.loads(value) if value else None


async def _post(http: httpx2.AsyncClient, url: str, session: str | None, message: dict[str, Any]) -> httpx2.Response:
    headers = {**ACCEPT, **({"mcp-session-id": session, "mcp-protocol-version": VERSION} if session else {})}
    response = await http.post(url, json=message, headers=headers)
    assert response.status_code in (200, 202), response.text
    return response


async def _open_session(http: httpx2.AsyncClient, url: str) -> str:
    init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    response = await _post(http, url, None, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    session = response.headers["mcp-session-id"]
    await _post(http, url, session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    await _post(http, url, session, {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                                     "params": {"uri": RECORD}})  # fmt: skip
    return session


async def _updates(http: httpx2.AsyncClient, url: str, session: str, last: str | None, count: int,
                   seconds: float) -> list[dict[str, Any]]:  # fmt: skip
    """The first ``count`` ``resources/updated`` events on the session's GET stream (resumed after
    ``last``), or as many as came within ``seconds``."""
    headers = {"Accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": VERSION}
    if last is not None:
        headers["last-event-id"] = last
    seen: list[dict[str, Any]] = []
    with anyio.move_on_after(seconds):
        async with http.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200
            async for event in _events(response):
                if (event.get("data") or {}).get("method") == "notifications/resources/updated":
                    seen.append(event)
                if len(seen) >= count:
                    break
    return seen


async def _update(url: str, emulator: Emulator, urgency: str) -> None:
    sys_id = next(str(r["sys_id"]) for r in emulator.records("incident") if r["number"] == "INC0010001")
    args = {"instance": "dev", "table": "incident", "sys_id": sys_id, "values": {"urgency": urgency}}
    async with Client(url, cache=None) as caller:
        result = await caller.call_tool("servicenow_update_record", args)
        assert not result.is_error, result.content


async def test_a_2025_session_resumes_its_get_stream_with_last_event_id_from_redis(
    tmp_path: Path, dev_emulator: Emulator, secrets_env: Mapping[str, str], redis_server: RedisServer
) -> None:
    config = write_config(tmp_path, dev_emulator.base_url, redis_server.url, 60)
    with replicas(config, 1) as (replica,):
        async with httpx2.AsyncClient(timeout=10) as http:
            session = await _open_session(http, replica.url)
            async with anyio.create_task_group() as tasks:  # the GET stream is open before the update
                first: list[dict[str, Any]] = []

                async def listen() -> None:
                    first.extend(await _updates(http, replica.url, session, None, 1, 10))

                tasks.start_soon(listen)
                await anyio.sleep(0.5)
                await _update(replica.url, dev_emulator, "2")
            (received,) = first
            assert received["data"]["params"]["uri"] == RECORD
            # the GET stream is closed now: these two updates are kept, not delivered
            await _update(replica.url, dev_emulator, "3")
            await _update(replica.url, dev_emulator, "1")
            await anyio.sleep(0.5)
            replayed = await _updates(http, replica.url, session, received["id"], 2, 5)
            assert [e["data"]["params"]["uri"] for e in replayed] == [RECORD, RECORD], replayed
            assert len({received["id"], *(e["id"] for e in replayed)}) == 3
            again = await _updates(http, replica.url, session, replayed[0]["id"], 1, 5)
            assert [e["id"] for e in again] == [replayed[1]["id"]]
            # another session naming this session's event id gets none of its events
            other = await _open_session(http, replica.url)
            assert await _updates(http, replica.url, other, received["id"], 1, 1) == []


def _settings(url: str, **extra: Any) -> ClusterSettings:
    return ClusterSettings(redis_url=url, key_prefix=f"events{time.monotonic_ns()}", **extra)


async def test_streams_are_bounded_in_length_and_time(redis_server: RedisServer) -> None:
    import mcp_types as types

    backend = RedisBackend(_settings(redis_server.url, stream_max_events=10, stream_ttl_seconds=30))
    async with backend.running():
        store = RedisEventStore(backend).for_session("s1")
        note = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/resources/list_changed")
        ids = [await store.store_event("_GET_stream", note) for _ in range(500)]
        key = backend.key("sse", "s1:_GET_stream")
        length = await backend.call("len", lambda r: r.xlen(key))
        ttl = await backend.call("ttl", lambda r: r.pttl(key))
        assert length < 150 and 0 < ttl <= 30_000, (length, ttl)  # MAXLEN ~ trims by whole nodes
        sent: list[EventMessage] = []

        async def collect(message: EventMessage) -> None:
            sent.append(message)

        assert await store.replay_events_after(ids[-3], collect) == "_GET_stream"
        assert [m.event_id for m in sent] == ids[-2:]


async def test_redis_down_events_are_not_kept_and_a_replay_fails_with_a_clear_error_at_once() -> None:
    backend = RedisBackend(_settings(f"redis://127.0.0.1:{free_port()}/0", timeout_seconds=1))
    store = RedisEventStore(backend).for_session("s1")
    started = time.monotonic()
    assert await store.store_event("_GET_stream", None) == UNSTORED
    sent: list[EventMessage] = []

    async def collect(message: EventMessage) -> None:
        sent.append(message)

    backend.connected = True  # as if Redis went away between two health checks
    assert await store.store_event("_GET_stream", None) == UNSTORED
    assert await store.replay_events_after("X0dFVF9zdHJlYW0.1-0", collect) is None
    assert time.monotonic() - started < 3
    (error,) = sent
    assert "cluster backend (Redis at 127.0.0.1" in error.message.error.message  # type: ignore[union-attr]
