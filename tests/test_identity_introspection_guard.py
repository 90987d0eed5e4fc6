"""Round 4 item 6: introspection amplification. A made-up bearer token must not cost the identity
provider one authenticated request each: a negative cache, one question per token, a budget per
client address and a cap on questions in flight stand in front of introspection
(``mcp_providers._serve.identity.guard``). Each guard has a test that fails without it."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from identity_standin import CLIENT_ID, CLIENT_SECRET, StandInIdP, standin_idp
from mcp.server.auth.provider import AccessToken

from mcp_providers._serve.identity import IdentityUnavailable, IntrospectionVerifier, ResourceServer
from mcp_providers._serve.identity.guard import IntrospectionGuard, TooManyTokens, asking_from
from mcp_providers._serve.transport.auth import BearerGate
from mcp_providers.config import AuthConfig

pytestmark = pytest.mark.anyio

RESOURCE = "http://127.0.0.1:8126/mcp"
FOUND = AccessToken(token="", client_id="cli", scopes=[], subject="alice")


def digest(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Asker:
    """An ``ask`` that counts its calls and blocks until :attr:`release` is set."""

    def __init__(self, answer: AccessToken | None = None) -> None:
        self.calls = self.in_flight = self.most_in_flight = 0
        self.release = anyio.Event()
        self.answer = answer

    async def __call__(self) -> AccessToken | None:
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.release.wait()
            return self.answer
        finally:
            self.in_flight -= 1


def guard(**options: Any) -> IntrospectionGuard:
    settings = {"negative_seconds": 60.0, "max_concurrent": 8, "per_client_per_minute": 0, "wait_seconds": 5.0}
    return IntrospectionGuard(**{**settings, **options})


async def test_one_question_per_token_however_many_ask_at_once() -> None:
    asker, checker, answers = Asker(FOUND), guard(negative_seconds=0), []

    async def one() -> None:
        answers.append(await checker.answer(digest("t"), asker))

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(one)
        await anyio.wait_all_tasks_blocked()  # every one of them is waiting now
        asker.release.set()
    assert asker.calls == 1 and answers == [FOUND] * 20


async def test_a_refused_token_is_refused_from_memory_until_the_negative_cache_expires() -> None:
    clock, asker = Clock(), Asker(None)
    asker.release.set()
    checker = guard(clock=clock)
    for _ in range(50):
        assert await checker.answer(digest("bogus"), asker) is None
    assert asker.calls == 1
    clock.now += 59.9
    assert await checker.answer(digest("bogus"), asker) is None and asker.calls == 1
    clock.now += 0.2
    assert await checker.answer(digest("bogus"), asker) is None and asker.calls == 2
    assert await checker.answer(digest("another"), asker) is None and asker.calls == 3  # its own entry


async def test_at_most_max_concurrent_questions_are_in_flight() -> None:
    asker, checker = Asker(None), guard(max_concurrent=3, negative_seconds=0)
    async with anyio.create_task_group() as tg:
        for n in range(10):
            tg.start_soon(checker.answer, digest(f"t{n}"), asker)
        await anyio.wait_all_tasks_blocked()
        assert asker.in_flight == 3
        asker.release.set()
    assert asker.calls == 10 and asker.most_in_flight == 3


async def test_a_question_that_finds_no_free_slot_in_time_is_unavailable() -> None:
    asker, checker = Asker(None), guard(max_concurrent=1, wait_seconds=0.05)
    async with anyio.create_task_group() as tg:
        tg.start_soon(checker.answer, digest("first"), asker)
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(IdentityUnavailable) as busy:
            await checker.answer(digest("second"), asker)
        assert busy.value.status == 503 and busy.value.retry_after >= 1
        asker.release.set()
    assert asker.calls == 1  # the second was never asked


async def test_each_client_address_has_its_own_budget_a_minute() -> None:
    clock, asker = Clock(), Asker(None)
    asker.release.set()
    checker = guard(per_client_per_minute=3, clock=clock)
    with asking_from("203.0.113.7"):
        for n in range(3):
            await checker.answer(digest(f"a{n}"), asker)
        clock.now += 20
        with pytest.raises(TooManyTokens) as over:
            await checker.answer(digest("a3"), asker)
    assert over.value.status == 429 and over.value.retry_after == 40
    assert asker.calls == 3
    with asking_from("198.51.100.1"):
        await checker.answer(digest("b0"), asker)  # another address: its own budget
    with asking_from(None):
        for n in range(5):
            await checker.answer(digest(f"unknown{n}"), asker)  # no address known: no budget
    clock.now += 40
    with asking_from("203.0.113.7"):
        await checker.answer(digest("a4"), asker)  # a new minute
    assert asker.calls == 3 + 1 + 5 + 1


@pytest.fixture
def idp(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInIdP]:
    monkeypatch.setenv("TEST_GUARD_ID", CLIENT_ID)
    monkeypatch.setenv("TEST_GUARD_SECRET", CLIENT_SECRET)
    with standin_idp() as served:
        yield served


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_a_flood_of_made_up_tokens_from_one_address_costs_the_identity_provider_its_budget(
    idp: StandInIdP,
) -> None:
    """End to end through the bearer gate: 300 made-up tokens from one address make at most
    ``introspection_per_client_per_minute`` questions, the rest are 429 with ``Retry-After``; the
    same refused token again is not asked about; a real user's token from another address passes."""
    config = AuthConfig(mode="introspection", issuer=idp.issuer, client_id_env="TEST_GUARD_ID",
                        client_secret_env="TEST_GUARD_SECRET", introspection_per_client_per_minute=20)  # fmt: skip
    verifier = IntrospectionVerifier(config, RESOURCE, RESOURCE)
    verifier.start()
    gate = BearerGate(_ok, ResourceServer(verifier, RESOURCE, (idp.issuer,), ()), "/mcp")
    idp.introspection["real-user-token-0000000001"] = {"active": True, "sub": "alice", "aud": RESOURCE}
    before = idp.counts["introspect"]
    statuses: dict[int, int] = {}

    async def post(client: httpx2.AsyncClient, token: str) -> httpx2.Response:
        response = await client.post("/mcp", headers={"Authorization": f"Bearer {token}"})
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        return response

    flooder = httpx2.AsyncClient(transport=httpx2.ASGITransport(gate, client=("203.0.113.7", 1)), base_url="http://t")
    async with flooder:
        async with anyio.create_task_group() as tg:
            for _ in range(300):
                tg.start_soon(post, flooder, "made-up-" + secrets.token_hex(12))
        assert idp.counts["introspect"] - before == 20, statuses
        assert statuses == {401: 20, 429: 280}
        limited = await post(flooder, "made-up-" + secrets.token_hex(12))
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    user = httpx2.AsyncClient(transport=httpx2.ASGITransport(gate, client=("198.51.100.1", 1)), base_url="http://t")
    async with user:
        assert (await post(user, "real-user-token-0000000001")).status_code == 200
        for _ in range(5):
            assert (await post(user, "the-same-bogus-token-000")).status_code == 401
    assert idp.counts["introspect"] - before == 22  # the real token once, the bogus one once
