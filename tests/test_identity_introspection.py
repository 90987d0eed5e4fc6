"""``mode = "introspection"`` (RFC 7662) against a real loopback endpoint: credentials sent,
inactive refused, audience and issuer checked, answers cached no longer than the token lives."""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Iterator

import anyio
import pytest
from identity_standin import CLIENT_ID, CLIENT_SECRET, StandInIdP, standin_idp

from mcp_providers._serve.identity import IdentityUnavailable, IntrospectionVerifier
from mcp_providers.config import AuthConfig
from mcp_providers.errors import ConfigError
from mcp_providers.identity import from_access_token

pytestmark = pytest.mark.anyio

RESOURCE = "http://127.0.0.1:8124/mcp"
TOKEN = "opaque-token-1f2e3d4c5b6a79880011"


@pytest.fixture
def idp(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInIdP]:
    monkeypatch.setenv("TEST_INTROSPECTION_ID", CLIENT_ID)
    monkeypatch.setenv("TEST_INTROSPECTION_SECRET", CLIENT_SECRET)
    with standin_idp() as served:
        yield served


def verifier(idp: StandInIdP, **options: object) -> IntrospectionVerifier:
    config = AuthConfig(
        mode="introspection",
        issuer=idp.issuer,
        client_id_env="TEST_INTROSPECTION_ID",
        client_secret_env="TEST_INTROSPECTION_SECRET",
        groups_claim="groups",
        **options,
    )
    made = IntrospectionVerifier(config, RESOURCE, RESOURCE)
    made.start()
    return made


def active(idp: StandInIdP, **override: object) -> dict[str, object]:
    return {"active": True, **idp.claims(RESOURCE), **override}


async def test_an_active_token_is_the_principal_and_the_credentials_are_client_secret_basic(idp: StandInIdP) -> None:
    idp.introspection[TOKEN] = active(idp)
    access = await verifier(idp).verify_token(TOKEN)
    assert access is not None and access.token == TOKEN
    principal = from_access_token(access)
    assert (principal.subject, principal.issuer, principal.groups) == ("alice", idp.issuer, frozenset({"itil"}))
    # RFC 6749 §2.3.1: id and secret form-encoded before Basic ("s3cret:with/odd&chars" has a colon).
    sent = base64.b64decode(idp.seen_auth[-1].removeprefix("Basic ")).decode()
    assert sent == "mcp-resource-server:s3cret%3Awith%2Fodd%26chars"


def _without_sub(idp: StandInIdP) -> dict[str, object]:
    return {k: v for k, v in active(idp).items() if k not in ("sub", "client_id")}


async def test_a_client_acting_for_itself_is_its_client_id(idp: StandInIdP) -> None:
    # RFC 7662 makes sub optional; a client-credentials token's caller is the client (RFC 9068 §2.2).
    idp.introspection[TOKEN] = {k: v for k, v in active(idp).items() if k != "sub"}
    access = await verifier(idp).verify_token(TOKEN)
    assert access is not None
    principal = from_access_token(access)
    assert (principal.subject, principal.client_id, principal.issuer) == ("cli", "cli", idp.issuer)


REFUSED = {
    "inactive": (lambda idp: {"active": False}, "inactive"),
    "active-not-a-boolean": (lambda idp: active(idp, active="true"), "inactive"),
    "issuer": (lambda idp: active(idp, iss="https://evil.example.com"), "wrong issuer"),
    "audience": (lambda idp: active(idp, aud="https://other.example.com/api"), "wrong audience"),
    "other-resource": (lambda idp: active(idp, aud=["http://127.0.0.1:8124/other"]), "wrong audience"),
    "expired": (lambda idp: active(idp, exp=1), "expired"),
    "nbf": (lambda idp: active(idp, nbf=4_000_000_000), "not yet valid"),
    "no-sub": (_without_sub, "no sub claim"),
    # One audience rule for every mode (tester 30 F1): an answer naming no audience is a token not
    # bound to this server, refused as a JWT without ``aud`` is.
    "no-audience": (lambda idp: {k: v for k, v in active(idp).items() if k != "aud"}, "no audience"),
    "empty-audience": (lambda idp: active(idp, aud=[]), "no audience"),
    "audience-null": (lambda idp: active(idp, aud=None), "no audience"),
    "audience-not-strings": (lambda idp: active(idp, aud=[RESOURCE, 7]), "aud claim is not"),
    "audience-a-number": (lambda idp: active(idp, aud=8124), "aud claim is not"),
}


@pytest.mark.parametrize("case", list(REFUSED))
async def test_each_refused_answer_names_its_check_and_never_the_token(
    idp: StandInIdP, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    checker = verifier(idp)
    answer, check = REFUSED[case]
    idp.introspection[TOKEN] = answer(idp)
    with caplog.at_level(logging.WARNING, logger="mcp_providers.identity"):
        assert await checker.verify_token(TOKEN) is None
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and check in refusals[0], refusals
    assert TOKEN not in caplog.text
    idp.introspection["good-token-000000000000"] = active(idp)
    assert await checker.verify_token("good-token-000000000000") is not None


async def test_a_positive_answer_is_reused_but_never_past_the_tokens_exp(idp: StandInIdP) -> None:
    checker = verifier(idp, introspection_cache_seconds=300)
    idp.introspection[TOKEN] = active(idp, exp=int(time.time()) + 2)
    assert await checker.verify_token(TOKEN) is not None
    assert await checker.verify_token(TOKEN) is not None
    asked = idp.counts["introspect"]
    assert asked == 2  # the start-up probe and the first answer; the second came from the cache
    idp.introspection[TOKEN] = {"active": False}  # revoked at the identity provider
    await anyio.sleep(2.2)
    assert await checker.verify_token(TOKEN) is None  # exp passed: asked again, and refused
    assert idp.counts["introspect"] == asked + 1


async def test_the_cache_lasts_no_longer_than_introspection_cache_seconds(idp: StandInIdP) -> None:
    checker = verifier(idp, introspection_cache_seconds=0.5)
    idp.introspection[TOKEN] = active(idp)
    assert await checker.verify_token(TOKEN) is not None
    idp.introspection[TOKEN] = {"active": False}
    assert await checker.verify_token(TOKEN) is not None  # cached
    await anyio.sleep(0.6)
    assert await checker.verify_token(TOKEN) is None


async def test_a_refused_answer_is_remembered_only_as_long_as_the_negative_cache_says(idp: StandInIdP) -> None:
    """Round 4 item 6: a refusal is kept ``introspection_negative_cache_seconds`` (0: not at all)."""
    uncached = verifier(idp, introspection_negative_cache_seconds=0)
    assert await uncached.verify_token(TOKEN) is None
    idp.introspection[TOKEN] = active(idp)
    assert await uncached.verify_token(TOKEN) is not None
    del idp.introspection[TOKEN]
    now = [1000.0]
    cached = verifier(idp, introspection_negative_cache_seconds=60)
    cached.guard._clock = lambda: now[0]
    assert await cached.verify_token(TOKEN) is None
    idp.introspection[TOKEN] = active(idp)
    asked = idp.counts["introspect"]
    assert await cached.verify_token(TOKEN) is None  # refused from memory: not asked
    assert idp.counts["introspect"] == asked
    now[0] += 60
    assert await cached.verify_token(TOKEN) is not None  # the minute is over: asked again
    assert idp.counts["introspect"] == asked + 1


async def test_an_endpoint_that_hangs_is_unavailable_within_the_timeout(idp: StandInIdP) -> None:
    checker = verifier(idp, http_timeout_seconds=0.5)
    idp.introspection_mode = "slow"
    started = time.monotonic()
    with pytest.raises(IdentityUnavailable) as unavailable:
        await checker.verify_token(TOKEN)
    assert time.monotonic() - started < 2.0 and unavailable.value.retry_after >= 1
    assert TOKEN not in str(unavailable.value)


def test_wrong_client_credentials_stop_start_up(idp: StandInIdP, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_INTROSPECTION_SECRET", "wrong-secret")
    with pytest.raises(ConfigError, match=r"refused this server's client credentials \(HTTP 401\)") as err:
        verifier(idp)
    assert "wrong-secret" not in str(err.value)


def test_an_unset_credential_variable_is_named(idp: StandInIdP, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_INTROSPECTION_SECRET")
    with pytest.raises(ConfigError, match=r"TEST_INTROSPECTION_SECRET .* is unset"):
        verifier(idp)


def test_the_endpoint_is_discovered(idp: StandInIdP) -> None:
    assert verifier(idp).endpoint == f"{idp.origin}/introspect"
