"""Issue 23: the credential cache under ``[cluster]``, against a real ``redis-server``.

Two brokers (or two compositions) on one Redis are two replicas: 50 + 50 concurrent asks for one
user cause one obtain in all; every key and value in Redis is read back and holds no token, no
subject, no issuer, no upstream name and no key in plain text; entries live as long as their
credential; ``forget`` on one replica is seen by the other; a value under another key, another
deployment key or tampered with is a miss. A missing or malformed deployment key is a clear
start-up error, never a plaintext cache.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import secrets
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
import redis
from real_parts import redis_server
from test_credentials_served import ALICE, BOB, SECRET, Records, Served, plugin

from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers._serve.state.credentials import RedisCredentialStore, Sealer, broker_for
from mcp_providers.config import ClusterSettings, CredentialsSettings, ServerSettings
from mcp_providers.credentials import Credential, CredentialBroker, cache_key
from mcp_providers.errors import ConfigError, UpstreamError
from mcp_providers.identity import Principal
from mcp_providers.testing import compose, connect

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

KEY_ENV = "TEST_CREDENTIALS_KEY"


def new_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as (url, _):
        yield url


@pytest.fixture
def cluster(redis_url: str) -> ClusterSettings:
    return ClusterSettings(redis_url=redis_url, key_prefix=f"cred-{uuid.uuid4().hex[:8]}")


def everything(url: str, prefix: str) -> dict[bytes, bytes]:
    """Every key of the deployment and its value, as Redis holds them."""
    with redis.Redis.from_url(url) as r:  # GET, not DUMP: DUMP may compress a value and hide plain text
        return {key: (r.get(key) if r.type(key) == b"string" else r.dump(key)) or b"" for key in r.keys(f"{prefix}:*")}


@contextlib.asynccontextmanager
async def replicas(cluster: ClusterSettings, key: str, n: int = 2, **settings: Any) -> AsyncIterator[list[Any]]:
    backends = [RedisBackend(cluster) for _ in range(n)]
    chosen = CredentialsSettings(key_env=KEY_ENV, **settings)
    try:
        yield [broker_for(chosen, cluster, b, {KEY_ENV: key}) for b in backends]
    finally:
        for backend in backends:
            await backend.aclose()


async def test_two_replicas_share_one_obtain_per_user_and_redis_holds_nothing_readable(
    cluster: ClusterSettings,
) -> None:
    key, upstream = new_key(), Records()
    got: list[Credential] = []
    async with replicas(cluster, key) as (one, two):
        assert all(isinstance(b.store, RedisCredentialStore) for b in (one, two))

        async def ask(broker: CredentialBroker, who: Principal) -> None:
            got.append(await broker.credential(upstream, who))

        async with anyio.create_task_group() as tasks:
            for _ in range(50):
                tasks.start_soon(ask, one, ALICE)
                tasks.start_soon(ask, two, ALICE)
        assert upstream.obtains == ["alice"]
        assert len(got) == 100 and len({c.token for c in got}) == 1
        await two.credential(upstream, BOB)
        await one.credential(upstream, BOB)
        assert upstream.obtains == ["alice", "bob"]
    stored = everything(cluster.redis_url, cluster.key_prefix)
    entries = [k for k in stored if b":credential:" in k]
    assert len(entries) == 2  # one per user; the leases are gone
    blob = b"".join(k + v for k, v in stored.items())
    for plain in (SECRET, "alice", "bob", "idp.example.com", "records:test", "jwt_bearer", key, key.rstrip("=")):
        assert plain.encode() not in blob, plain
        assert base64.b64encode(plain.encode()) not in blob, plain


async def test_an_entry_lives_as_long_as_its_credential(cluster: ClusterSettings) -> None:
    upstream = Records()
    async with replicas(cluster, new_key(), n=1) as (broker,):
        await broker.credential(upstream, ALICE)  # Records grants 600 s
    with redis.Redis.from_url(cluster.redis_url) as r:
        (entry,) = r.keys(f"{cluster.key_prefix}:credential:*")
        assert 590_000 < r.pttl(entry) <= 600_000


async def test_forget_on_one_replica_makes_the_other_obtain_once_more(cluster: ClusterSettings) -> None:
    upstream = Records()
    async with replicas(cluster, new_key()) as (one, two):
        first = await one.credential(upstream, ALICE)
        assert await two.credential(upstream, ALICE) == first
        await one.forget(upstream, ALICE)
        second = await two.credential(upstream, ALICE)
        assert await one.credential(upstream, ALICE) == second
    assert second.token != first.token and upstream.obtains == ["alice", "alice"]


async def test_expiry_minus_margin_applies_across_replicas(cluster: ClusterSettings) -> None:
    class Short(Records):
        async def obtain(self, principal: Principal) -> Credential:
            self.obtains.append(principal.subject)
            return Credential(f"{SECRET}-{len(self.obtains)}", time.time() + 90, "alice-up", "jwt_bearer")

    upstream = Short()
    async with replicas(cluster, new_key(), margin_seconds=60) as (one, two):
        await one.credential(upstream, ALICE)
        await two.credential(upstream, ALICE)
        assert upstream.obtains == ["alice"]
    async with replicas(cluster, new_key(), margin_seconds=100) as (three, _):
        await three.credential(upstream, ALICE)  # another key, and 90 s is inside a 100 s margin
    assert upstream.obtains == ["alice", "alice"]


async def test_an_entry_under_another_key_or_deployment_key_or_tampered_is_a_miss(
    cluster: ClusterSettings, caplog: pytest.LogCaptureFixture
) -> None:
    upstream, key = Records(), new_key()
    async with replicas(cluster, key, n=1) as (broker,):
        await broker.credential(upstream, ALICE)
        await broker.credential(upstream, BOB)
    with redis.Redis.from_url(cluster.redis_url) as r:
        sealer = Sealer(base64.urlsafe_b64decode(key))
        alice_key, bob_key = (
            f"{cluster.key_prefix}:credential:{sealer.name(cache_key(upstream, who))}" for who in (ALICE, BOB)
        )
        assert sorted(r.keys(f"{cluster.key_prefix}:credential:*")) == sorted([alice_key.encode(), bob_key.encode()])
        r.set(bob_key, r.get(alice_key) or b"", px=60_000)  # alice's sealed value moved under bob's key
    async with replicas(cluster, key, n=1) as (broker,):
        caplog.set_level(logging.WARNING, "mcp_providers.credentials")
        first = await broker.credential(upstream, ALICE)
        second = await broker.credential(upstream, BOB)
    assert {first.subject, second.subject} == {"alice-up", "bob-up"}
    assert upstream.obtains == ["alice", "bob", "bob"]  # bob's copy of alice's value did not open
    assert "does not decrypt" in caplog.text and SECRET not in caplog.text
    async with replicas(cluster, new_key(), n=1) as (other_deployment,):
        assert (await other_deployment.credential(upstream, ALICE)).subject == "alice-up"
    assert upstream.obtains == ["alice", "bob", "bob", "alice"]
    with redis.Redis.from_url(cluster.redis_url) as r:
        value = bytearray(r.get(alice_key) or b"")
        value[-1] ^= 1  # one bit of the tag flipped
        r.set(alice_key, bytes(value), px=60_000)
    async with replicas(cluster, key, n=1) as (broker,):
        assert (await broker.credential(upstream, ALICE)).subject == "alice-up"
    assert upstream.obtains == ["alice", "bob", "bob", "alice", "alice"]


async def test_two_composed_replicas_serve_fifty_reads_each_with_one_obtain(
    cluster: ClusterSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, new_key())
    upstream = Records()
    server = ServerSettings(credentials=CredentialsSettings(key_env=KEY_ENV))
    compositions = [compose({"records": plugin(Served(upstream))}, server=server, cluster=cluster) for _ in range(2)]
    receipts: list[dict[str, Any]] = []

    async def replica(composition: Any) -> None:
        async with connect(composition, principal=ALICE) as client, anyio.create_task_group() as tasks:
            for n in range(50):
                tasks.start_soon(_read, client, f"rec://items/{n}", receipts)

    async with anyio.create_task_group() as tasks:
        for composition in compositions:
            tasks.start_soon(replica, composition)
    assert upstream.obtains == ["alice"]
    assert len(receipts) == 100
    assert {r["upstream"]["subject"] for r in receipts} == {"alice-up"}


async def _read(client: Any, uri: str, into: list[dict[str, Any]]) -> None:
    from mcp_providers import RECEIPT_KEY

    result = await client.read_resource(uri)
    into.append(dict((result.meta or {})[RECEIPT_KEY]))


async def test_redis_unreachable_still_obtains_never_caching_in_plaintext() -> None:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])  # nothing listens here
    cluster = ClusterSettings(redis_url=f"redis://127.0.0.1:{port}/0", key_prefix="cred-down", timeout_seconds=0.5)
    upstream = Records()
    async with replicas(cluster, new_key(), n=1) as (broker,):
        assert (await broker.credential(upstream, ALICE)).subject == "alice-up"
        await broker.credential(upstream, ALICE)
    assert upstream.obtains == ["alice", "alice"]  # nothing kept anywhere


# -- the deployment key: a clear start-up error, never a plaintext fallback ---------------------------


@pytest.mark.parametrize("value", ["too-short", "A" * 44 + "!", base64.b64encode(b"x" * 31).decode()])
def test_a_malformed_deployment_key_stops_start_up_naming_the_variable(
    cluster: ClusterSettings, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(KEY_ENV, value)
    server = ServerSettings(credentials=CredentialsSettings(key_env=KEY_ENV))
    with pytest.raises(
        ConfigError, match=rf"\${KEY_ENV} is not a valid deployment key: it must be 32 random bytes"
    ) as caught:
        compose({"records": plugin(Served(Records()))}, server=server, cluster=cluster)
    assert value not in str(caught.value) and "secrets.token_bytes(32)" in str(caught.value)


def test_a_missing_deployment_key_with_server_credentials_stops_start_up(
    cluster: ClusterSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    server = ServerSettings(credentials=CredentialsSettings(key_env=KEY_ENV))
    with pytest.raises(ConfigError, match=rf"server.credentials: \${KEY_ENV} is unset; with \[cluster\]"):
        compose({"records": plugin(Served(Records()))}, server=server, cluster=cluster)


def test_a_malformed_default_key_stops_start_up_even_without_the_table(
    cluster: ClusterSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_PROVIDERS_CREDENTIALS_KEY", "not-a-key")
    with pytest.raises(ConfigError, match=r"\$MCP_PROVIDERS_CREDENTIALS_KEY is not a valid deployment key"):
        compose({"records": plugin(Served(Records()))}, cluster=cluster)


async def test_without_a_key_and_without_the_table_a_credential_is_refused_not_kept_in_plaintext(
    cluster: ClusterSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_PROVIDERS_CREDENTIALS_KEY", raising=False)
    upstream = Records()
    backend = RedisBackend(cluster)
    try:
        broker = broker_for(None, cluster, backend, {})
        with pytest.raises(UpstreamError, match=r"\$MCP_PROVIDERS_CREDENTIALS_KEY is unset; the operator must set it"):
            await broker.credential(upstream, ALICE)
    finally:
        await backend.aclose()
    assert upstream.obtains == []
    assert everything(cluster.redis_url, cluster.key_prefix) == {}


def test_without_cluster_no_key_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "not-a-key")  # not read without [cluster]
    server = ServerSettings(credentials=CredentialsSettings(key_env=KEY_ENV, margin_seconds=5))
    composition = compose({"records": plugin(Served(Records()))}, server=server)
    assert composition.runtime.credentials.margin_seconds == 5


class _Fresh(Served):
    """The same reads, declared ``max_age`` (which the cluster's shared read cache would keep)."""

    def templates(self) -> Any:
        from mcp_providers import Freshness, ResourceTemplate

        return [ResourceTemplate(uri_template="rec://items/{id}", name="item", mime_type="text/plain",
                                 freshness=Freshness.max_age(300))]  # fmt: skip


async def test_a_read_made_with_a_user_credential_is_never_kept_in_the_shared_cache(
    cluster: ClusterSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per-user upstream content stays out of Redis (it would sit there readable, and a replica
    answering from it would have no upstream identity for the receipt): each replica reads it
    itself, and every receipt names the upstream identity."""
    monkeypatch.setenv(KEY_ENV, new_key())
    upstream = Records()
    served = [_Fresh(upstream) for _ in range(2)]
    server = ServerSettings(credentials=CredentialsSettings(key_env=KEY_ENV))
    receipts: list[dict[str, Any]] = []
    for provider in served:
        composition = compose({"records": plugin(provider)}, server=server, cluster=cluster)
        async with connect(composition, principal=ALICE) as client:
            await _read(client, "rec://items/7", receipts)
    assert [len(p.tokens) for p in served] == [1, 1]  # the second replica read too, not the cache
    assert [r["upstream"]["subject"] for r in receipts] == ["alice-up", "alice-up"]
    stored = everything(cluster.redis_url, cluster.key_prefix)
    assert not [k for k in stored if b":read:" in k], stored.keys()
    assert b"item 7" not in b"".join(stored.values())
