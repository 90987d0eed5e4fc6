"""Nothing per-user is readable in the cluster's Redis (round 4 item 14).

Was: task records (a tool's whole result, its questions and the caller's answers) sat in Redis as
plain JSON, and rate-limit keys were an unsalted SHA-256 of ``(issuer, subject)``, reversible by
hashing guesses. Now, with the deployment key, every per-user value is sealed (AES-256-GCM, its
Redis key as associated data) and every key naming a caller is an HMAC: task records, cached
``max_age`` reads, resumable-stream events and rate-limit buckets. Without the key, tasks are
refused under ``[cluster]`` rather than kept in the clear. Against a real ``redis-server``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import uuid
from collections.abc import Iterator

import mcp_types as types
import pytest
import redis
from mcp import MCPError
from real_parts import redis_server

from mcp_providers._serve.methods.tasks import owner_of
from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers._serve.state.events import RedisEventStore
from mcp_providers._serve.state.sealing import Sealing, sealing_for
from mcp_providers._serve.state.shared_reads import SharedReads
from mcp_providers._serve.state.tasks import KEYLESS, Change, RedisTasks, TaskRecord
from mcp_providers._serve.steps.ratelimit import RateLimiter
from mcp_providers.config import ClusterSettings, CredentialsSettings, LimitsSettings
from mcp_providers.identity import Principal
from mcp_providers.models import Freshness
from mcp_providers.providers import Content

pytestmark = pytest.mark.anyio

SECRET = "INC0042 payroll figures for alice"
ALICE = Principal("alice", issuer="static")


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as (url, _):
        yield url


@pytest.fixture
def cluster(redis_url: str) -> ClusterSettings:
    return ClusterSettings(redis_url=redis_url, key_prefix=f"seal-{uuid.uuid4().hex[:8]}")


def _sealing() -> Sealing:
    return Sealing(secrets.token_bytes(32))


def _everything(cluster: ClusterSettings) -> bytes:
    """Every key and value of the deployment, as Redis holds them, in one blob."""
    out = b""
    with redis.Redis.from_url(cluster.redis_url) as r:
        for key in r.keys(f"{cluster.key_prefix}*"):
            kind = r.type(key)
            if kind == b"string":
                value = r.get(key) or b""
            elif kind == b"stream":
                value = json.dumps([[i.decode(), {k.decode(): v.hex() for k, v in f.items()}]
                                    for i, f in r.xrange(key)]).encode()  # fmt: skip
                value += b"".join(v for _, f in r.xrange(key) for v in f.values())
            else:
                value = r.dump(key) or b""
            out += key + b"\n" + value + b"\n"
    return out


def _unreadable(blob: bytes, *plain: str) -> None:
    for text in plain:
        assert text.encode() not in blob, text
        assert base64.b64encode(text.encode()) not in blob, text


def _record(task_id: str) -> TaskRecord:
    return TaskRecord(task_id, owner_of(ALICE), "query", "working", 1000.0, 1000.0, 3600.0, 1000)


# -- task records ---------------------------------------------------------------------------------


async def test_a_task_record_in_redis_holds_nothing_readable(cluster: ClusterSettings) -> None:
    backend = RedisBackend(cluster)
    try:
        store = RedisTasks(backend, sealing=_sealing())
        await store.create(_record("t1"))
        await store.change("t1", Change(ask={"input-1": {"method": "elicitation/create", "params": {"q": "salary?"}}}))
        await store.change("t1", Change(answer={"input-1": {"action": "accept", "content": {"salary": "91234"}}}))
        blob = _everything(cluster)
        _unreadable(blob, "salary?", "91234", owner_of(ALICE), "query", "elicitation")
        await store.change("t1", Change(status="completed", result={"content": [{"type": "text", "text": SECRET}]}))
        _unreadable(_everything(cluster), SECRET, owner_of(ALICE), "completed")
        record = await store.get("t1")
        assert record is not None and record.result == {"content": [{"type": "text", "text": SECRET}]}
        assert record.owner == owner_of(ALICE)
    finally:
        await backend.aclose()


async def test_a_record_moved_under_another_id_or_read_with_another_key_does_not_open(cluster: ClusterSettings) -> None:
    backend = RedisBackend(cluster)
    try:
        sealing = _sealing()
        store = RedisTasks(backend, sealing=sealing)
        await store.create(_record("mine"))
        with redis.Redis.from_url(cluster.redis_url) as r:
            r.set(f"{cluster.key_prefix}:task:theirs", r.get(f"{cluster.key_prefix}:task:mine") or b"")
            r.set(f"{cluster.key_prefix}:task:plain", _record("plain").to_json())  # an older, unsealed record
        assert await store.get("mine") is not None
        assert await store.get("theirs") is None
        assert await store.get("plain") is None
        assert await RedisTasks(backend, sealing=_sealing()).get("mine") is None  # another deployment key
    finally:
        await backend.aclose()


async def test_without_the_deployment_key_a_task_is_refused_not_kept_in_the_clear(cluster: ClusterSettings) -> None:
    backend = RedisBackend(cluster)
    try:
        with pytest.raises(MCPError) as refused:
            await RedisTasks(backend, sealing=None).create(_record("t"))
        assert "MCP_PROVIDERS_CREDENTIALS_KEY" in refused.value.error.message == KEYLESS
        assert _everything(cluster) == b""
    finally:
        await backend.aclose()


def test_the_sealing_comes_from_the_credential_stores_key_variable() -> None:
    key = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
    assert sealing_for(CredentialsSettings(key_env="MY_KEY"), {"MY_KEY": key}) is not None
    assert sealing_for(CredentialsSettings(key_env="MY_KEY"), {}) is None
    assert sealing_for(None, {"MCP_PROVIDERS_CREDENTIALS_KEY": key}) is not None


# -- keys naming a caller, reads, stream events ---------------------------------------------------


async def test_rate_limit_keys_are_an_hmac_not_a_hash_anyone_can_guess(cluster: ClusterSettings) -> None:
    sealing = _sealing()
    limiter = RateLimiter(LimitsSettings(), cluster, None, sealing.name)
    try:
        await limiter.check(ALICE, "tools/call")
    finally:
        await limiter.aclose()
    blob = _everything(cluster)
    assert b":limits" in blob  # counted in Redis
    guess = hashlib.sha256(json.dumps(list(ALICE.key)).encode()).hexdigest()[:32]
    assert guess.encode() not in blob
    assert sealing.name(json.dumps(list(ALICE.key)).encode())[:32].encode() in blob


async def test_a_cached_max_age_read_is_sealed_and_shared_between_replicas(cluster: ClusterSettings) -> None:
    sealing = _sealing()
    one, two = RedisBackend(cluster), RedisBackend(cluster)
    freshness = Freshness(kind="max_age", max_age_seconds=60)
    key = ("payroll", "hr://payroll/alice", ALICE.share_key)
    reads = [SharedReads(b, lambda uri: freshness, sealing) for b in (one, two)]
    calls: list[str] = []

    async def read() -> Content:
        calls.append("read")
        return Content(text=SECRET)

    try:
        assert (await reads[0].run(key, read)).text == SECRET
        assert (await reads[1].run(key, read)).text == SECRET
    finally:
        await one.aclose()
        await two.aclose()
    assert calls == ["read"] and reads[1].hits == 1  # the second replica got the sealed entry
    blob = _everything(cluster)
    _unreadable(blob, SECRET, "payroll", "alice")
    assert hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest().encode() not in blob


async def test_a_stream_event_is_sealed_and_replays(cluster: ClusterSettings) -> None:
    backend = RedisBackend(cluster)
    backend.sealing = _sealing()
    backend.connected = True  # what its listener says once subscribed (not started here)
    store = RedisEventStore(backend, "session-1")
    result = types.JSONRPCResponse(jsonrpc="2.0", id=7, result={"content": [{"type": "text", "text": SECRET}]})
    try:
        first = await store.store_event("stream-a", types.JSONRPCResponse(jsonrpc="2.0", id=6, result={}))
        await store.store_event("stream-a", result)
        _unreadable(_everything(cluster), SECRET)
        replayed: list[object] = []

        async def collect(event: object) -> None:
            replayed.append(event.message)  # type: ignore[attr-defined]

        assert await store.replay_events_after(first, collect) == "stream-a"
        assert replayed == [result]
    finally:
        await backend.aclose()
