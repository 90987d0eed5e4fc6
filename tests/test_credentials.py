"""Issue 23: the credential broker (``mcp_providers.credentials``) on its own, in one process.

Cache per (upstream, the principal's whole share key) until ``expires_at - margin``; single-flight of concurrent
calls (errors shared, never cached); ``forget``; a credential's token never in its repr or errors;
the request objects reach the broker.
"""

from __future__ import annotations

import time

import anyio
import pytest

from mcp_providers import policy
from mcp_providers.credentials import (
    DEFAULT_BROKER,
    Credential,
    CredentialBroker,
    CredentialRefused,
    MemoryStore,
    cache_key,
)
from mcp_providers.identity import Principal
from mcp_providers.models import Resource
from mcp_providers.providers import CompletionRequest, ReadRequest

pytestmark = pytest.mark.anyio

ALICE = Principal("alice", issuer="https://idp-a.example.com")
ALICE_ELSEWHERE = Principal("alice", issuer="https://idp-b.example.com")
BOB = Principal("bob", issuer="https://idp-a.example.com")
TOKEN = "tok-3f9a1c-secret-value"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class FakeUpstream:
    """A real ``Upstream`` implementation counting its obtains (it grants one token per call)."""

    def __init__(self, name: str = "svc:test", lifetime: float = 600.0, clock: Clock | None = None,
                 delay: float = 0.0, fail: BaseException | None = None) -> None:  # fmt: skip
        self._name, self.lifetime, self.clock, self.delay, self.fail = name, lifetime, clock, delay, fail
        self.calls: list[Principal] = []

    @property
    def name(self) -> str:
        return self._name

    async def obtain(self, principal: Principal) -> Credential:
        self.calls.append(principal)
        number = len(self.calls)
        if self.delay:
            await anyio.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        now = self.clock() if self.clock else time.time()
        return Credential(f"{TOKEN}-{self._name}-{number}", now + self.lifetime, principal.subject, "jwt_bearer")


# -- 1: cache per (issuer, subject, upstream) until expires_at - margin ---------------------------


async def test_a_credential_is_cached_until_expiry_minus_the_margin_then_obtained_again() -> None:
    clock = Clock()
    broker = CredentialBroker(margin_seconds=60, clock=clock)
    upstream = FakeUpstream(lifetime=600, clock=clock)
    first = await broker.credential(upstream, ALICE)
    clock.now += 539  # 61 s left: still handed out
    assert await broker.credential(upstream, ALICE) is first
    assert len(upstream.calls) == 1
    clock.now += 1  # 60 s left: within the margin
    second = await broker.credential(upstream, ALICE)
    assert second is not first and len(upstream.calls) == 2
    assert broker.obtained == 2


async def test_the_margin_is_configurable() -> None:
    clock = Clock()
    broker = CredentialBroker(margin_seconds=300, clock=clock)
    upstream = FakeUpstream(lifetime=600, clock=clock)
    await broker.credential(upstream, ALICE)
    clock.now += 301  # 299 s left: inside a 300 s margin
    await broker.credential(upstream, ALICE)
    assert len(upstream.calls) == 2


async def test_one_subject_at_two_issuers_or_two_upstreams_never_share() -> None:
    broker = CredentialBroker()
    one, other = FakeUpstream("svc:one"), FakeUpstream("svc:other")
    a = await broker.credential(one, ALICE)
    b = await broker.credential(one, ALICE_ELSEWHERE)
    c = await broker.credential(other, ALICE)
    d = await broker.credential(one, BOB)
    assert len({a.token, b.token, c.token, d.token}) == 4
    assert one.calls == [ALICE, ALICE_ELSEWHERE, BOB] and other.calls == [ALICE]
    key = cache_key(one, ALICE)
    assert (key.upstream, key.principal[:2]) == ("svc:one", ("https://idp-a.example.com", "alice"))


async def test_a_credential_shorter_than_the_margin_is_used_once_and_not_kept() -> None:
    broker = CredentialBroker(margin_seconds=60)
    upstream = FakeUpstream(lifetime=30)
    first = await broker.credential(upstream, ALICE)
    second = await broker.credential(upstream, ALICE)
    assert first.token != second.token and len(upstream.calls) == 2


async def test_a_negative_margin_is_refused() -> None:
    with pytest.raises(ValueError, match="margin_seconds must be a finite number of seconds >= 0"):
        CredentialBroker(margin_seconds=-1)


# -- 2: single-flight ------------------------------------------------------------------------------


async def test_fifty_concurrent_calls_cause_one_obtain_and_a_second_principal_a_second() -> None:
    broker = CredentialBroker()
    upstream = FakeUpstream(delay=0.05)
    got: list[Credential] = []

    async def ask(principal: Principal) -> None:
        got.append(await broker.credential(upstream, principal))

    async with anyio.create_task_group() as tasks:
        for _ in range(50):
            tasks.start_soon(ask, ALICE)
        for _ in range(50):
            tasks.start_soon(ask, BOB)
    assert sorted(p.subject for p in upstream.calls) == ["alice", "bob"]
    assert len({c.token for c in got}) == 2 and len(got) == 100


async def test_when_obtain_fails_every_waiter_gets_the_error_and_nothing_is_cached() -> None:
    broker = CredentialBroker()
    upstream = FakeUpstream(delay=0.05, fail=CredentialRefused("svc:test refuses alice: no such user"))
    errors: list[BaseException] = []

    async def ask() -> None:
        try:
            await broker.credential(upstream, ALICE)
        except CredentialRefused as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tasks:
        for _ in range(20):
            tasks.start_soon(ask)
    assert len(upstream.calls) == 1 and len(errors) == 20
    assert all("no such user" in str(e) for e in errors)
    upstream.fail = None  # the upstream grants now: a later call asks again
    credential = await broker.credential(upstream, ALICE)
    assert len(upstream.calls) == 2 and credential.subject == "alice"


async def test_a_cancelled_leader_lets_a_waiter_obtain() -> None:
    broker = CredentialBroker()
    upstream = FakeUpstream(delay=0.2)
    got: list[Credential] = []

    async def wait_then_ask() -> None:
        await anyio.sleep(0.01)
        got.append(await broker.credential(upstream, ALICE))

    async with anyio.create_task_group() as tasks:
        with anyio.move_on_after(0.05):  # the leader's client goes away
            tasks.start_soon(wait_then_ask)
            await broker.credential(upstream, ALICE)
    assert len(got) == 1 and len(upstream.calls) == 2


async def test_obtain_returning_something_else_is_a_type_error_naming_the_upstream() -> None:
    class Wrong(FakeUpstream):
        async def obtain(self, principal: Principal) -> Credential:
            return {"token": TOKEN}  # type: ignore[return-value]

    with pytest.raises(TypeError, match="upstream 'svc:test': obtain\\(\\) returned dict"):
        await CredentialBroker().credential(Wrong(), ALICE)


# -- 3: forget ---------------------------------------------------------------------------------------


async def test_forget_drops_the_credential_and_the_next_call_obtains_once() -> None:
    broker = CredentialBroker()
    upstream = FakeUpstream()
    first = await broker.credential(upstream, ALICE)
    bob = await broker.credential(upstream, BOB)
    await broker.forget(upstream, ALICE)
    second = await broker.credential(upstream, ALICE)
    assert await broker.credential(upstream, ALICE) is second
    assert second.token != first.token
    assert await broker.credential(upstream, BOB) is bob  # only alice's was forgotten
    assert [p.subject for p in upstream.calls] == ["alice", "bob", "alice"]


# -- 6: the token is never shown ---------------------------------------------------------------------


def test_the_repr_of_a_credential_hides_its_token() -> None:
    credential = Credential(TOKEN, 123.0, "alice", "jwt_bearer")
    assert TOKEN not in repr(credential) and TOKEN not in str(credential)
    assert "alice" in repr(credential) and "jwt_bearer" in repr(credential)
    assert credential.custody("svc:test") == {"name": "svc:test", "subject": "alice", "grant": "jwt_bearer"}


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"expires_at": "soon"}, TypeError, "expires_at must be a finite number"),
        ({"expires_at": float("inf")}, TypeError, "expires_at must be a finite number"),
        ({"expires_at": True}, TypeError, "expires_at must be a finite number"),
        ({"subject": ""}, ValueError, "subject must not be empty"),
        ({"grant": 3}, TypeError, "grant must be a string"),
    ],
)
def test_a_malformed_credential_is_refused_without_its_token(fields: dict, error: type, message: str) -> None:
    values = {"token": TOKEN, "expires_at": 1.0, "subject": "alice", "grant": "jwt_bearer", **fields}
    with pytest.raises(error, match=message) as caught:
        Credential(**values)
    assert TOKEN not in str(caught.value)


# -- the requests reach the broker ---------------------------------------------------------------------


async def test_requests_built_by_hand_use_the_process_wide_broker() -> None:
    upstream = FakeUpstream("svc:by-hand")
    request = ReadRequest(uri="x://y", resource=Resource(uri="x://y", name="y"), principal=ALICE)
    credential = await request.credential(upstream)
    assert await CompletionRequest("a", "", principal=ALICE).credential(upstream) is credential
    assert await DEFAULT_BROKER.credential(upstream, ALICE) is credential
    await request.forget_credential(upstream)
    assert (await request.credential(upstream)).token != credential.token
    assert len(upstream.calls) == 2


async def test_policy_credential_is_for_the_current_caller() -> None:
    upstream = FakeUpstream("svc:policy")
    credential = await policy.credential(upstream)  # outside a request: LOCAL
    assert credential.subject == "local"
    await policy.forget_credential(upstream)
    await policy.credential(upstream)
    assert [p.subject for p in upstream.calls] == ["local", "local"]


async def test_the_memory_store_keeps_at_most_its_limit_oldest_dropped_first() -> None:
    store = MemoryStore(max_entries=2)
    broker = CredentialBroker(store)
    upstream = FakeUpstream()
    for who in (ALICE, BOB, ALICE_ELSEWHERE):
        await broker.credential(upstream, who)
    assert len(store) == 2
    await broker.credential(upstream, ALICE)  # the oldest was dropped: obtained again
    assert len(upstream.calls) == 4


async def test_forget_with_the_stale_credential_keeps_a_newer_one() -> None:
    """Requests refused together (one revoked token) each forget the token they used: only the
    first drop counts, so the new credential the first one obtained serves the others too."""
    broker = CredentialBroker()
    upstream = FakeUpstream()
    stale = await broker.credential(upstream, ALICE)
    await broker.forget(upstream, ALICE, stale)
    fresh = await broker.credential(upstream, ALICE)
    await broker.forget(upstream, ALICE, stale)  # a second request refused with the old token
    assert await broker.credential(upstream, ALICE) is fresh
    assert len(upstream.calls) == 2


async def test_a_changed_selected_claim_is_another_credential() -> None:
    """An upstream may pick its user by a claim (ServiceNow's user_claim): one subject whose claim
    changed must not get the credential obtained for the old value."""
    broker = CredentialBroker()
    upstream = FakeUpstream()
    before = Principal("u-1", issuer="https://idp-a.example.com", claims={"email": "alice@example.com"})
    after = Principal("u-1", issuer="https://idp-a.example.com", claims={"email": "bob@example.com"})
    assert (await broker.credential(upstream, before)).token != (await broker.credential(upstream, after)).token
    assert upstream.calls == [before, after]
