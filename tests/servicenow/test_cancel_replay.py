"""A resumed 2025-era stream does not replay the answer to a cancelled request (issue 24 item 15):
the HTTP app leaves it off the live stream, and the Redis event store keeps it unreplayed. Real
``redis-server``."""

from __future__ import annotations

import time

import mcp_types as types
import pytest
from cluster_support import RedisServer
from mcp.server.streamable_http import EventMessage

from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers._serve.state.events import RedisEventStore
from mcp_providers.config import ClusterSettings

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.mark.parametrize("request_id", [7, "call-7"])
async def test_the_answer_to_a_cancelled_request_is_never_replayed(
    redis_server: RedisServer, request_id: object
) -> None:
    # timeout_seconds: a loaded machine may take over the default 1 s to answer; this test is not about outages
    settings = ClusterSettings(redis_url=redis_server.url, key_prefix=f"c{time.monotonic_ns()}", timeout_seconds=10)
    backend = RedisBackend(settings)
    async with backend.running():
        store = RedisEventStore(backend).for_session("s1")
        progress = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress",
                                             params={"progressToken": 1, "progress": 1})  # fmt: skip
        cancelled = types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                       error=types.ErrorData(code=-32800, message="Request cancelled"))  # fmt: skip
        failed = types.JSONRPCError(jsonrpc="2.0", id=8, error=types.ErrorData(code=-32602, message="bad"))
        first = await store.store_event("7", progress)
        ids = [await store.store_event("7", m) for m in (progress, cancelled, failed)]
        assert len(set(ids)) == 3  # every event is numbered
        sent: list[EventMessage] = []

        async def collect(message: EventMessage) -> None:
            sent.append(message)

        assert await store.replay_events_after(first, collect) == "7"
    assert [m.event_id for m in sent] == [ids[0], ids[2]]
    assert [m.message for m in sent] == [progress, failed]
