"""A JWKS is trusted for a bounded age (tester 30 F3): a key the identity provider withdraws stops
verifying once the set's age has passed; the answer's ``Cache-Control: max-age`` sets the age
within a floor (``jwks_min_refresh_seconds``) and a ceiling (an hour); a refetch that fails keeps
the old set for a bounded grace only, then every token is unavailable (503), never let through.

The identity provider is a real loopback HTTP server; the key set's clock is moved instead of
waiting hours (``time.monotonic`` as the key set reads it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from identity_standin import StandInIdP, standin_idp

import mcp_providers._serve.identity.jwks as jwks_module
from mcp_providers._serve.identity import IdentityUnavailable, JwtVerifier
from mcp_providers._serve.identity.jwks import GRACE_SECONDS, MAX_AGE_SECONDS
from mcp_providers.config import AuthConfig

pytestmark = pytest.mark.anyio

RESOURCE = "http://127.0.0.1:8123/mcp"


class Clock:
    """``time.monotonic`` moved on by :attr:`ahead` seconds."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.ahead


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(jwks_module, "time", made)
    return made


@pytest.fixture
def idp() -> Iterator[StandInIdP]:
    with standin_idp() as served:
        yield served


def verifier(idp: StandInIdP, **options: Any) -> JwtVerifier:
    made = JwtVerifier(AuthConfig(mode="jwt", issuer=idp.issuer, **options), RESOURCE, RESOURCE)
    made.start()
    return made


def withdraw(idp: StandInIdP, kid: str) -> None:
    published = idp.jwks()
    idp.jwks = lambda: {"keys": [k for k in published["keys"] if k["kid"] != kid]}  # type: ignore[method-assign]


def rsa(idp: StandInIdP, **claims: Any) -> str:
    return idp.sign(idp.claims(RESOURCE, **claims), kid="rsa-1")


def ec(idp: StandInIdP, **claims: Any) -> str:
    return idp.sign(idp.claims(RESOURCE, **claims), kid="ec-1", alg="ES256")


@pytest.mark.parametrize("cache_control", [None, "max-age=86400", "public, max-age=604800"])
async def test_a_withdrawn_key_stops_verifying_once_the_set_is_an_hour_old(
    idp: StandInIdP, clock: Clock, cache_control: str | None
) -> None:
    """No ``Cache-Control``, or one asking for longer than the ceiling: an hour at most."""
    idp.jwks_cache_control = cache_control
    checker = verifier(idp)
    remembered = rsa(idp, jti="remembered")
    assert await checker.verify_token(remembered) is not None
    withdraw(idp, "rsa-1")
    clock.ahead = MAX_AGE_SECONDS - 5
    assert await checker.verify_token(rsa(idp, jti="before")) is not None  # within the age: not asked
    fetched = idp.counts["jwks"]
    clock.ahead = MAX_AGE_SECONDS + 1
    assert await checker.verify_token(ec(idp)) is not None  # the other key goes on verifying
    assert idp.counts["jwks"] == fetched + 1
    assert await checker.verify_token(rsa(idp, sub="admin", jti="new")) is None
    assert await checker.verify_token(remembered) is None  # nor is a token verified with it remembered


async def test_a_token_remembered_is_checked_again_once_the_set_is_past_its_age(idp: StandInIdP, clock: Clock) -> None:
    """Only tokens verified with the withdrawn key ride on: no new token triggers the refetch."""
    checker = verifier(idp)
    remembered = rsa(idp)
    assert await checker.verify_token(remembered) is not None
    withdraw(idp, "rsa-1")
    clock.ahead = MAX_AGE_SECONDS + 1
    assert await checker.verify_token(remembered) is None


@pytest.mark.parametrize(("cache_control", "age"), [("max-age=300", 300), ("no-store", 60), ("max-age=5", 60)])
async def test_the_answers_max_age_is_honoured_above_the_floor(
    idp: StandInIdP, clock: Clock, cache_control: str, age: float
) -> None:
    idp.jwks_cache_control = cache_control
    checker = verifier(idp, jwks_min_refresh_seconds=60)
    withdraw(idp, "rsa-1")
    clock.ahead = age - 2
    assert not checker.keys[idp.issuer].stale()  # remembered tokens are still answered from memory
    assert await checker.verify_token(rsa(idp, jti="a")) is not None
    clock.ahead = age + 2
    assert await checker.verify_token(rsa(idp, jti="b")) is None


@pytest.mark.parametrize(("said_age", "age"), [("3590", 60), ("300", 300), ("0", 600), ("soon", 600), ("9999", 60)])
async def test_the_age_a_cache_has_held_the_answer_is_taken_off_its_max_age(
    idp: StandInIdP, clock: Clock, said_age: str, age: float
) -> None:
    """Tester 32 (F11): RFC 9111 §4.2.3, what is left is ``max-age`` less the answer's ``Age``
    (an ``Age`` that is not a number of seconds is not subtracted), held above the floor."""
    idp.jwks_cache_control, idp.jwks_age = "public, max-age=600", said_age
    checker = verifier(idp, jwks_min_refresh_seconds=60)
    withdraw(idp, "rsa-1")
    clock.ahead = age - 2
    assert not checker.keys[idp.issuer].stale()
    clock.ahead = age + 2
    assert checker.keys[idp.issuer].stale()
    assert await checker.verify_token(rsa(idp, jti="b")) is None


async def test_a_flood_past_the_age_costs_one_fetch_per_interval(idp: StandInIdP, clock: Clock) -> None:
    checker = verifier(idp, jwks_min_refresh_seconds=60)
    clock.ahead = MAX_AGE_SECONDS + 1
    fetched = idp.counts["jwks"]
    for n in range(50):
        await checker.verify_token(idp.sign(idp.claims(RESOURCE, jti=str(n)), kid=f"made-up-{n}"))
        assert await checker.verify_token(rsa(idp, jti=f"ok-{n}")) is not None
    assert idp.counts["jwks"] == fetched + 1


async def test_a_failed_refetch_keeps_the_old_set_for_the_grace_only(idp: StandInIdP, clock: Clock) -> None:
    checker = verifier(idp, jwks_min_refresh_seconds=60, http_timeout_seconds=1)
    idp.jwks_mode = "down"
    clock.ahead = MAX_AGE_SECONDS + 1
    assert await checker.verify_token(rsa(idp, jti="a")) is not None  # an outage is ridden out
    clock.ahead = MAX_AGE_SECONDS + GRACE_SECONDS - 1
    assert await checker.verify_token(rsa(idp, jti="b")) is not None
    fetched = idp.counts["jwks"]
    clock.ahead = MAX_AGE_SECONDS + GRACE_SECONDS + 1
    with pytest.raises(IdentityUnavailable) as unavailable:
        await checker.verify_token(rsa(idp, jti="c"))
    assert idp.counts["jwks"] == fetched  # tried 2 s ago: not asked again within the interval
    assert "/jwks" not in str(unavailable.value) and unavailable.value.retry_after > 0
    with pytest.raises(IdentityUnavailable):  # a token verified before is not answered from memory
        await checker.verify_token(rsa(idp, jti="b"))
    idp.jwks_mode = "ok"
    clock.ahead += 61  # the next fetch may be tried, and succeeds
    assert await checker.verify_token(rsa(idp, jti="d")) is not None
