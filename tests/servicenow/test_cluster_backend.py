"""Issue 24 (items 17, 18, 19, 23): the Redis backend itself, against a real ``redis-server``.

- 17: every deployment names its own namespace (``key_prefix`` is required), two deployments on
  one Redis share nothing, and a malformed cached read falls back to the provider;
- 18: the poll lease lasts ``lease_seconds`` (a :class:`redis.asyncio.lock.Lock`), renewed while
  its poller claims it; the shared read lock is a ``Lock`` too (it never frees another's);
- 19: two backends ("replicas" in this process) really deliver through Redis;
- 23: a listener's bug, a relay bug and a lost Redis are told apart in the log.
"""

from __future__ import annotations

import logging
import subprocess
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from cluster_support import RedisServer, free_port
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from prefork import python
from pydantic import ValidationError

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve.state import cluster, shared_reads
from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers._serve.state.shared_reads import SharedReads
from mcp_providers.config import ClusterSettings
from mcp_providers.identity import Principal
from mcp_providers.testing import compose

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

URI = "count://report"


def _settings(redis: RedisServer, prefix: str | None = None, **extra: Any) -> ClusterSettings:
    return ClusterSettings(redis_url=redis.url, key_prefix=prefix or f"t{uuid.uuid4().hex[:8]}", **extra)


# -- 17: one namespace per deployment ---------------------------------------------------------------


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*python(), "-m", "mcp_providers", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip


@pytest.mark.parametrize("command", [["check"], ["serve", "--strict"], ["serve", "--http", "PORT"],
                                     ["serve", "--http", "PORT", "--workers", "2"]])  # fmt: skip
def test_a_cluster_without_key_prefix_is_refused_at_start_up(tmp_path: Path, command: list[str]) -> None:
    command = [f"127.0.0.1:{free_port()}" if part == "PORT" else part for part in command]
    config = tmp_path / "config.toml"
    config.write_text('allow = []\n[cluster]\nredis_url = "redis://127.0.0.1:6379/0"\nlease_seconds = 5\n')
    result = _run(*command, "-c", str(config))
    assert result.returncode != 0
    assert "key_prefix is required with [cluster]" in result.stderr, result.stderr
    assert "every other deployment on that Redis another" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_a_cluster_section_built_in_code_needs_a_key_prefix_too() -> None:
    with pytest.raises(ValidationError, match="key_prefix is required"):
        ClusterSettings(redis_url="redis://127.0.0.1:6379/0")
    with pytest.raises(ValidationError, match="key_prefix"):
        ClusterSettings(redis_url="redis://127.0.0.1:6379/0", key_prefix="")


class Counting(ResourceProvider):
    """A ``max_age`` resource whose upstream reads are counted; its text names the deployment."""

    name = "counting"
    prefixes = ("count://",)

    def __init__(self, deployment: str) -> None:
        self.deployment, self.reads = deployment, 0

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=URI, name="report", mime_type="text/plain", freshness=Freshness.max_age(30))]

    async def read(self, request: ReadRequest) -> Content:
        self.reads += 1
        return Content(text=f"{self.deployment} report for {request.subject}")


class Plugin:
    def __init__(self, deployment: str) -> None:
        self.provider = Counting(deployment)

    @hookimpl
    def register_resource_providers(self, settings: Any) -> Sequence[ResourceProvider]:
        return [self.provider]


async def _read(reads: SharedReads, provider: Counting, subject: str = "alice") -> Content:
    principal = Principal(subject, issuer="static")
    request = ReadRequest(uri=URI, resource=provider.resources()[0], params={}, principal=principal)
    content: Content = await reads.run(("counting", URI, subject), lambda: provider.read(request))
    return content


def _shared_reads(settings: ClusterSettings, deployment: str) -> tuple[Any, SharedReads, Counting]:
    plugin = Plugin(deployment)
    runtime = compose({"counting": plugin}, cluster=settings).runtime
    reads = runtime.invoker._coalescer
    assert isinstance(reads, SharedReads)
    return runtime, reads, plugin.provider


async def test_two_deployments_on_one_redis_share_no_read_event_lease_or_snapshot(redis_server: RedisServer) -> None:
    prod_runtime, prod_reads, prod = _shared_reads(_settings(redis_server, "prod"), "prod")
    staging_runtime, staging_reads, staging = _shared_reads(_settings(redis_server, "staging"), "staging")
    prod_backend, staging_backend = prod_runtime.shared, staging_runtime.shared
    heard: list[ServerEvent] = []
    staging_backend.bus.subscribe(heard.append)
    async with prod_runtime.running(), staging_runtime.running():
        assert (await _read(staging_reads, staging)).text == "staging report for alice"
        assert (await _read(prod_reads, prod)).text == "prod report for alice"  # not staging's cached read
        assert prod.reads == staging.reads == 1
        await prod_backend.bus.publish(ResourceUpdated(uri=URI))
        await anyio.sleep(0.3)
        assert heard == []  # prod's update is not staging's
        assert await prod_backend.hold("poll/dev", 30) and await staging_backend.hold("poll/dev", 30)
        await prod_backend.remember("poll/dev", "prod snapshot")
        assert await staging_backend.recall("poll/dev") is None


MALFORMED: dict[str, bytes] = {
    "not-json": b"not json at all",
    "truncated": b'{"text": "half a rep',
    "json-null": b"null",
    "json-list": b'["text", "blob"]',
    "json-number": b"42",
    "json-string": b'"a report"',
    "no-keys": b"{}",
    "missing-key": b'{"text": "x", "blob": null, "mime_type": null}',
    "text-not-a-string": b'{"text": 5, "blob": null, "mime_type": null, "as_of": null}',
    "neither-text-nor-blob": b'{"text": null, "blob": null, "mime_type": null, "as_of": null}',
    "blob-not-base64": b'{"text": null, "blob": "***", "mime_type": null, "as_of": null}',
    "as-of-not-a-time": b'{"text": "x", "blob": null, "mime_type": null, "as_of": "yesterday"}',
    "not-utf8": b'{"text": "\xff\xfe report", "blob": null, "mime_type": null, "as_of": null}',
    "utf16": '{"text": "x", "blob": null, "mime_type": null, "as_of": null}'.encode("utf-16"),
    "unknown-key": b'{"text": "x", "blob": null, "mime_type": null, "as_of": null, "subject": "bob"}',
}


@pytest.mark.parametrize("raw", list(MALFORMED.values()), ids=list(MALFORMED))
async def test_a_malformed_cached_read_falls_back_to_the_provider_and_is_logged_once(
    redis_server: RedisServer, raw: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, reads, provider = _shared_reads(_settings(redis_server), "prod")
    backend = runtime.shared
    async with runtime.running():
        await _read(reads, provider)  # fills the entry: the one key under {key_prefix}:read:
        (entry,) = await backend.call("find", lambda r: r.keys(backend.key("read", "*")))
        await backend.call("spoil", lambda r: r.set(entry, raw, px=30_000))
        with caplog.at_level(logging.WARNING, "mcp_providers.cluster"):
            first = await _read(reads, provider)
            second = await _read(reads, provider)
    assert first.text == second.text == "prod report for alice"
    assert provider.reads == 2 and reads.hits == 1  # the provider again, then the repaired entry
    warnings = [r for r in caplog.records if "malformed cached read" in r.getMessage()]
    assert len(warnings) == 1, caplog.text


async def test_a_malformed_snapshot_or_event_is_ignored_not_fatal(redis_server: RedisServer) -> None:
    backend = RedisBackend(_settings(redis_server))
    heard: list[ServerEvent] = []
    backend.bus.subscribe(heard.append)
    async with backend.running():
        await backend.call("plant", lambda r: r.set(backend.key("state", "poll/dev"), b"\xff\xfe"))
        assert await backend.recall("poll/dev") is None
        for raw in (b"\xff", b"[]", b"7", b'{"kind": "resource_updated"}', b'{"kind": "resource_updated", "uri": 5}',
                    b'{"kind": "nope"}'):  # fmt: skip
            await backend.call("publish", lambda r, raw=raw: r.publish(backend.channel, raw))
        await backend.bus.publish(ResourceUpdated(uri=URI))
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.02)
        assert heard == [ResourceUpdated(uri=URI)] and backend.connected


# -- 18: the lease is lease_seconds, a redis Lock ---------------------------------------------------


async def test_the_poll_lease_lasts_lease_seconds_and_is_renewed_while_its_poller_claims_it(
    redis_server: RedisServer,
) -> None:
    settings = _settings(redis_server, lease_seconds=0.6)
    a, b = RedisBackend(settings, "a"), RedisBackend(settings, "b")
    async with a.running(), b.running():
        assert await a.hold("poll/dev", 30)  # the poller claims 30 s; the lease is 0.6 s, renewed
        ttl = await a.call("ttl", lambda r: r.pttl(a.key("lease", "poll/dev")))
        assert 0 < ttl <= 600, ttl
        await anyio.sleep(1.5)  # more than two leases: still a's, renewed in the background
        assert not await b.hold("poll/dev", 30)
        assert await a.call("owner", lambda r: r.get(a.key("lease", "poll/dev"))) == b"a"


async def test_a_dead_holder_loses_the_lease_after_lease_seconds_not_after_its_claim(
    redis_server: RedisServer,
) -> None:
    settings = _settings(redis_server, lease_seconds=0.5)
    dead, b = RedisBackend(settings, "dead"), RedisBackend(settings, "b")
    assert await dead.hold("poll/dev", 60)  # never renewed: as a replica that died
    await dead.aclose()
    async with b.running():
        assert not await b.hold("poll/dev", 60)
        with anyio.fail_after(2):
            while not await b.hold("poll/dev", 60):
                await anyio.sleep(0.05)
        assert b.held == {"poll/dev"}


async def test_a_lease_whose_poller_stopped_asking_is_let_go(redis_server: RedisServer) -> None:
    settings = _settings(redis_server, lease_seconds=0.6)
    a, b = RedisBackend(settings, "a"), RedisBackend(settings, "b")
    async with a.running(), b.running():
        assert await a.hold("poll/dev", 0.1)  # claims 0.1 s, then never asks again
        with anyio.fail_after(2):
            while not await b.hold("poll/dev", 30):
                await anyio.sleep(0.05)
        assert a.held == set()


async def test_the_read_lock_of_a_slow_read_never_frees_another_replicas_lock(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_reads, "READ_LOCK_SECONDS", 0.3)
    runtime, reads, _ = _shared_reads(_settings(redis_server), "prod")
    backend = runtime.shared
    digest = reads.digest(("counting", URI, "alice"))
    other = backend.lock("reading", digest, 30)

    async def slow_read() -> Content:
        await anyio.sleep(0.3)  # A's lock expires meanwhile, and another replica takes it
        assert await backend.call("take", lambda r: other.acquire(token="other-replica"))
        return Content(text="slow")

    async with runtime.running():
        assert (await reads.run(("counting", URI, "alice"), slow_read)).text == "slow"
        assert await backend.call("owner", lambda r: r.get(backend.key("reading", digest))) == b"other-replica"


# -- 19: the cross-replica bus goes through Redis ---------------------------------------------------

EVENTS: list[ServerEvent] = [ResourceUpdated(uri=URI), ToolsListChanged(), PromptsListChanged(), ResourcesListChanged()]


async def test_an_event_published_on_one_replica_reaches_the_other_through_redis(redis_server: RedisServer) -> None:
    settings = _settings(redis_server)
    a, b = RedisBackend(settings, "a"), RedisBackend(settings, "b")
    on_a: list[ServerEvent] = []
    on_b: list[ServerEvent] = []
    a.bus.subscribe(on_a.append)
    b.bus.subscribe(on_b.append)
    async with a.running(), b.running():
        for event in EVENTS:
            await a.bus.publish(event)
        await b.bus.publish(ResourceUpdated(uri="count://from-b"))
        with anyio.fail_after(5):
            while len(on_b) < 5 or len(on_a) < 5:
                await anyio.sleep(0.02)
        await anyio.sleep(0.2)
    assert on_b == on_a == [*EVENTS, ResourceUpdated(uri="count://from-b")]  # each once, in order


async def test_a_publish_is_not_delivered_locally_behind_redis_back(redis_server: RedisServer) -> None:
    backend = RedisBackend(_settings(redis_server))
    heard: list[ServerEvent] = []
    backend.bus.subscribe(heard.append)
    async with backend.running():
        # running() stops waiting for the subscription after timeout_seconds (1 s) so a server starts without
        # Redis; on a loaded machine the subscription can come later, and a publish before it reaches no one.
        with anyio.fail_after(30):
            while not backend.connected:
                await anyio.sleep(0.02)
        await backend.call("plant", lambda r: r.publish(backend.channel, cluster.encode(ToolsListChanged())))
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.02)
    assert heard == [ToolsListChanged()]  # what reached Redis from outside the process is delivered


# -- 23: bugs are told from a lost Redis ------------------------------------------------------------


def _broken_listener(event: ServerEvent) -> None:
    raise RuntimeError("a listener's bug")


async def test_a_listener_bug_is_logged_by_name_and_the_others_still_get_the_event(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    backend = RedisBackend(_settings(redis_server))
    heard: list[ServerEvent] = []
    backend.bus.subscribe(_broken_listener)
    backend.bus.subscribe(heard.append)
    with caplog.at_level(logging.INFO, "mcp_providers.cluster"):
        async with backend.running():
            for _ in range(2):
                await backend.bus.publish(ToolsListChanged())
            with anyio.fail_after(5):
                while len(heard) < 2:
                    await anyio.sleep(0.02)
            assert backend.connected
    failures = [r for r in caplog.records if "_broken_listener" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info is not None for r in failures), caplog.text
    assert "cluster backend lost" not in caplog.text


async def test_a_bug_in_the_relay_is_logged_with_its_traceback_not_as_redis_lost(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_decode(text: Any) -> ServerEvent:
        raise KeyError("a decoding bug")

    backend = RedisBackend(_settings(redis_server))
    async with backend.running():
        monkeypatch.setattr(cluster, "decode", broken_decode)
        with caplog.at_level(logging.INFO, "mcp_providers.cluster"):
            await backend.bus.publish(ToolsListChanged())
            with anyio.fail_after(5):
                while "relay" not in caplog.text:
                    await anyio.sleep(0.02)
    (failure,) = [r for r in caplog.records if "relay" in r.getMessage()]
    assert failure.exc_info is not None and failure.exc_info[0] is KeyError
    assert "cluster backend lost" not in caplog.text


async def test_redis_going_away_is_one_warning_naming_the_error(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    backend = RedisBackend(_settings(redis_server, timeout_seconds=0.5))
    with caplog.at_level(logging.INFO, "mcp_providers.cluster"):
        async with backend.running():
            redis_server.stop()
            with anyio.fail_after(6):
                while backend.connected:
                    await anyio.sleep(0.05)
            await anyio.sleep(1.2)  # reconnection attempts meanwhile: no more warnings
    (lost,) = [r for r in caplog.records if "cluster backend lost" in r.getMessage()]
    assert lost.exc_info is None and "Error" in lost.getMessage(), lost.getMessage()
    assert "relay" not in caplog.text
