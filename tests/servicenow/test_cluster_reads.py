"""Issue 14: ``max_age`` reads are shared through Redis by replicas, never across subjects.

Two compositions configured with the same ``[cluster]`` are two replicas of one deployment (in
this process); Redis is a real ``redis-server`` on a free loopback port.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
import redis.asyncio as redis
from cluster_support import RedisServer

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve.state.shared_reads import SharedReads
from mcp_providers.config import ClusterSettings
from mcp_providers.identity import Principal
from mcp_providers.testing import compose, connect

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

URI = "count://report"


class Counting(ResourceProvider):
    """A ``max_age`` resource whose upstream reads are counted."""

    name = "counting"
    prefixes = ("count://",)

    def __init__(self) -> None:
        self.reads = 0

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=URI, name="report", mime_type="text/plain", freshness=Freshness.max_age(30))]

    async def read(self, request: ReadRequest) -> Content:
        self.reads += 1
        await anyio.sleep(0.3)  # long enough for a read on the other replica to arrive meanwhile
        return Content(text=f"report read for {request.subject}")


class Plugin:
    def __init__(self) -> None:
        self.provider = Counting()

    @hookimpl
    def register_resource_providers(self, settings: Any) -> Sequence[ResourceProvider]:
        return [self.provider]


async def test_a_max_age_read_through_a_then_b_is_one_upstream_read(redis_server: RedisServer) -> None:
    # A replica waiting for the other's read longer than timeout_seconds reads itself (by design):
    # generous here, so a loaded machine (CI, 3 workers) does not turn a wait into a second read.
    cluster = ClusterSettings(redis_url=redis_server.url, key_prefix=f"t{uuid.uuid4().hex[:8]}", timeout_seconds=10)
    a_plugin, b_plugin = Plugin(), Plugin()
    a, b = compose({"counting": a_plugin}, cluster=cluster), compose({"counting": b_plugin}, cluster=cluster)
    async with connect(a) as through_a, connect(b) as through_b:
        first = await through_a.read_resource(URI)
        second = await through_b.read_resource(URI)
        assert first.contents[0].text == second.contents[0].text  # type: ignore[union-attr]
        assert a_plugin.provider.reads + b_plugin.provider.reads == 1

    # Identical reads in flight on both replicas at once: still one upstream read.
    cluster = ClusterSettings(redis_url=redis_server.url, key_prefix=f"t{uuid.uuid4().hex[:8]}", timeout_seconds=10)
    a_plugin, b_plugin = Plugin(), Plugin()
    a, b = compose({"counting": a_plugin}, cluster=cluster), compose({"counting": b_plugin}, cluster=cluster)
    async with connect(a) as through_a, connect(b) as through_b, anyio.create_task_group() as both:
        both.start_soon(through_a.read_resource, URI)
        both.start_soon(through_b.read_resource, URI)
    assert a_plugin.provider.reads + b_plugin.provider.reads == 1


async def test_a_private_read_is_never_served_to_another_subject(redis_server: RedisServer) -> None:
    cluster = ClusterSettings(redis_url=redis_server.url, key_prefix=f"t{uuid.uuid4().hex[:8]}")
    plugin = Plugin()
    composition = compose({"counting": plugin}, cluster=cluster)
    runtime = composition.runtime
    reads = runtime.invoker._coalescer
    assert isinstance(reads, SharedReads)
    provider = plugin.provider
    async with runtime.running():
        for subject in ("alice", "bob", "alice", "bob"):
            request = ReadRequest(
                uri=URI, resource=provider.resources()[0], params={}, principal=Principal(subject, issuer="static")
            )
            content = await reads.run(("counting", URI, subject), lambda r=request: provider.read(r))
            assert content.text == f"report read for {subject}"
    assert provider.reads == 2 and reads.hits == 2


async def test_a_rate_limit_seen_by_one_replica_holds_back_the_others(
    redis_server: RedisServer, dev_emulator: Any, secrets_env: Any
) -> None:
    from servicenow_support import dev_instance

    import mcp_providers.plugins.servicenow as servicenow_plugin

    cluster = ClusterSettings(redis_url=redis_server.url, key_prefix=f"t{uuid.uuid4().hex[:8]}")
    settings = {"servicenow": {"instances": [dev_instance(dev_emulator, max_retry_after_seconds=5)]}}
    a = compose({"servicenow": servicenow_plugin}, settings, cluster=cluster)
    b = compose({"servicenow": servicenow_plugin}, settings, cluster=cluster)
    dev_emulator.rate_limit(2)
    async with connect(a) as through_a, connect(b) as through_b, anyio.create_task_group() as group:
        group.start_soon(through_a.read_resource, "servicenow://dev/incidents/INC0010001")
        shared = redis.from_url(redis_server.url)
        deadline = anyio.current_time() + 30  # a bound, not a timed assertion
        while not [k async for k in shared.scan_iter(f"{cluster.key_prefix}:*backoff/dev")]:  # A shared the back-off
            assert anyio.current_time() < deadline, "replica A never shared the back-off"
            await anyio.sleep(0.01)
        await shared.aclose()
        for number in range(2, 6):
            group.start_soon(through_b.read_resource, f"servicenow://dev/incidents/INC001000{number}")
    statuses = [r.status for r in dev_emulator.table_requests()]
    assert statuses.count(429) == 1 and statuses.count(200) == 5 and len(statuses) == 6, statuses


class _Interleaved:
    """A stand-in for the Redis backend playing one interleaving: the other replica fills the entry
    and releases its lock between this replica's look at the entry and its look at the lock."""

    def __init__(self) -> None:
        self.looks = 0
        self.filled = False

    def key(self, kind: str, name: str) -> str:
        return f"t:{kind}:{name}"

    def lock(self, kind: str, name: str, seconds: float) -> object:
        return self

    async def acquire(self) -> bool:
        return False  # the other replica leads

    async def locked(self) -> bool:
        return not self.filled

    async def get(self, entry: str) -> bytes | None:
        self.looks += 1
        if self.looks < 3:
            return None  # before the lock attempt, and the waiter's first look
        return b'{"text": "theirs", "blob": null, "mime_type": "text/plain", "as_of": null}'

    async def call(self, what: str, operation: Any) -> Any:
        if what == "check a read":  # the other replica is done now: entry written, then lock released
            self.filled = True
        return await operation(self)


async def test_a_read_whose_leader_finishes_between_the_waiters_two_looks_is_still_shared() -> None:
    backend = _Interleaved()
    shared = SharedReads(backend, lambda uri: Freshness.max_age(30))  # type: ignore[arg-type]
    upstream: list[str] = []

    async def read() -> Content:
        upstream.append("read")
        return Content(text="ours")

    content = await shared.run(("counting", URI, "someone"), read)
    assert upstream == []  # the other replica's read was used, not a second one
    assert content.text == "theirs"
