"""``mode = "jwt"``: every hostile token is refused by name, keys are cached and refetched sparingly,
and an identity provider that misbehaves never lets a token through nor hangs a request.

The identity provider is a real loopback HTTP server (``identity_standin``); tokens here are
hand-signed because every case is hostile (the happy path runs against ``oidc-provider``)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator

import anyio
import pytest
from identity_standin import StandInIdP, standin_idp

from mcp_providers._serve.identity import IdentityUnavailable, JwtVerifier
from mcp_providers.config import AuthConfig
from mcp_providers.errors import ConfigError
from mcp_providers.identity import PRINCIPAL_CLAIM, from_access_token

pytestmark = pytest.mark.anyio

RESOURCE = "http://127.0.0.1:8123/mcp"


@pytest.fixture
def idp() -> Iterator[StandInIdP]:
    with standin_idp(path="/realms/test") as served:
        yield served


def verifier(idp: StandInIdP, **options: object) -> JwtVerifier:
    config = AuthConfig(mode="jwt", issuer=idp.issuer, groups_claim="groups", claims=("email",), **options)
    made = JwtVerifier(config, RESOURCE, RESOURCE)
    made.start()
    return made


async def test_a_valid_token_becomes_the_principal_with_its_groups_scopes_and_selected_claims(
    idp: StandInIdP,
) -> None:
    checker = verifier(idp)
    access = await checker.verify_token(idp.sign(idp.claims(RESOURCE, extra="not kept")))
    assert access is not None and access.resource == RESOURCE and access.scopes == ["mcp:read"]
    principal = from_access_token(access)
    assert (principal.subject, principal.issuer, principal.client_id) == ("alice", idp.issuer, "cli")
    assert principal.groups == {"itil"} and principal.scopes == {"mcp:read"}
    assert dict(principal.claims) == {"email": "alice@example.com"}
    assert access.claims is not None and access.claims["iss"] == idp.issuer  # the SDK's session binding reads it
    assert access.claims[PRINCIPAL_CLAIM] is principal


@pytest.mark.parametrize(
    ("groups", "expected"),
    [("IT Support", {"IT Support"}), ("staff itil", {"staff itil"}), (["a b", "c"], {"a b", "c"})],
)
async def test_a_groups_claim_is_never_split_on_spaces(idp: StandInIdP, groups: object, expected: set[str]) -> None:
    access = await verifier(idp).verify_token(idp.sign(idp.claims(RESOURCE, groups=groups)))
    assert access is not None and from_access_token(access).groups == expected


async def test_an_es256_token_verifies_with_the_ec_key(idp: StandInIdP) -> None:
    access = await verifier(idp).verify_token(idp.sign(idp.claims(RESOURCE), kid="ec-1", alg="ES256"))
    assert access is not None and access.subject == "alice"


def _hostile(idp: StandInIdP) -> dict[str, tuple[str, str]]:
    """Each hostile token, with the check its refusal must name."""
    now = int(time.time())
    good = idp.sign(idp.claims(RESOURCE))
    return {
        "expired": (idp.sign(idp.claims(RESOURCE, iat=now - 900, exp=now - 600)), "expired"),
        "not yet valid": (idp.sign(idp.claims(RESOURCE, nbf=now + 600)), "not yet valid"),
        "issued in the future": (idp.sign(idp.claims(RESOURCE, iat=now + 600)), "issued in the future"),
        "wrong issuer": (idp.sign(idp.claims(RESOURCE, iss="https://evil.example.com")), "wrong issuer"),
        "wrong audience": (idp.sign(idp.claims("https://other.example.com/api")), "wrong audience"),
        "another resource on this host": (idp.sign(idp.claims("http://127.0.0.1:8123/other")), "wrong audience"),
        "no audience": (idp.sign(idp.claims(RESOURCE, aud=None)), "no audience"),
        "empty audience": (idp.sign(idp.claims(RESOURCE, aud=[])), "no audience"),
        "audience not strings": (idp.sign(idp.claims(RESOURCE, aud=[RESOURCE, 7])), "aud claim is not"),
        "no expiry": (idp.sign(idp.claims(RESOURCE, exp=None)), "missing claim"),
        "unknown kid": (idp.sign(idp.claims(RESOURCE), kid="made-up"), "unknown kid"),
        "alg none": (idp.unsigned(idp.claims(RESOURCE)), "disallowed alg"),
        "HS256 keyed with the public key": (idp.hs256_with_public_key(idp.claims(RESOURCE)), "disallowed alg"),
        "tampered payload": (idp.tampered(good, sub="admin"), "bad signature"),
        "RS256 header on the EC key": (idp.sign(idp.claims(RESOURCE), kid="ec-1", alg="RS256"), "key does not fit"),
        "not a JWT": ("not-a-jwt-at-all-0123456789", "malformed token"),
        # RFC 7519 §2: a NumericDate is a JSON number; PyJWT alone takes "9999999999" too.
        "exp as a numeric string": (idp.sign(idp.claims(RESOURCE, exp=str(now + 300))), "exp claim is not a number"),
        "nbf as a numeric string": (idp.sign(idp.claims(RESOURCE, nbf=str(now - 10))), "nbf claim is not a number"),
        "iat as a numeric string": (idp.sign(idp.claims(RESOURCE, iat=str(now))), "iat claim is not a number"),
        # RFC 9068 §2.2 / RFC 7662 §2.2: client_id is a string; it was read as "no client id".
        "client_id as a number": (idp.sign(idp.claims(RESOURCE, client_id=42)), "client_id claim is not a string"),
        "azp as a list": (idp.sign(idp.claims(RESOURCE, client_id=None, azp=["a"])), "azp claim is not a string"),
    }


CASES = [
    "expired", "not yet valid", "issued in the future", "wrong issuer", "wrong audience",
    "another resource on this host", "no audience", "empty audience", "audience not strings", "no expiry",
    "unknown kid", "alg none",
    "HS256 keyed with the public key", "tampered payload", "RS256 header on the EC key", "not a JWT",
    "exp as a numeric string", "nbf as a numeric string", "iat as a numeric string",
    "client_id as a number", "azp as a list",
]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
async def test_each_hostile_token_is_refused_naming_the_check_and_never_the_token(
    idp: StandInIdP, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    checker = verifier(idp)
    token, check = _hostile(idp)[case]
    with caplog.at_level(logging.WARNING, logger="mcp_providers.identity"):
        assert await checker.verify_token(token) is None
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and check in refusals[0], refusals
    for part in token.split("."):
        assert not part or part not in caplog.text
    # The same verifier goes on accepting a valid token right after.
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE))) is not None


def test_the_hmac_and_none_algorithms_cannot_even_be_configured() -> None:
    for bad in (["none"], ["HS256"], ["RS256", "HS512"]):
        with pytest.raises(ValueError, match="never accepted"):
            AuthConfig(mode="jwt", issuer="https://idp.example.com", algorithms=bad)


async def test_an_algorithm_not_pinned_is_refused_even_with_a_good_key(idp: StandInIdP) -> None:
    checker = verifier(idp, algorithms=["RS256"])
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid="ec-1", alg="ES256")) is None
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE))) is not None


async def test_leeway_accepts_a_token_expired_within_it_and_not_beyond(idp: StandInIdP) -> None:
    checker = verifier(idp, leeway_seconds=30)
    now = int(time.time())
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE, exp=now - 10))) is not None
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE, exp=now - 60))) is None


async def test_a_flood_of_random_kids_fetches_the_jwks_at_most_once(idp: StandInIdP) -> None:
    checker = verifier(idp)
    assert idp.counts["jwks"] == 1  # start-up

    async def one() -> None:
        assert await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid=uuid.uuid4().hex)) is None

    async with anyio.create_task_group() as tg:
        for _ in range(100):
            tg.start_soon(one)
    for _ in range(100):
        await one()
    assert idp.counts["jwks"] <= 2, idp.counts  # start-up plus at most one refresh
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE))) is not None


async def test_a_new_kid_is_fetched_once_the_interval_has_passed(idp: StandInIdP) -> None:
    checker = verifier(idp, jwks_min_refresh_seconds=0.2)
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid="rotated")) is None
    fetched = idp.counts["jwks"]
    await anyio.sleep(0.3)
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid="rotated")) is None
    assert idp.counts["jwks"] == fetched + 1


@pytest.mark.parametrize("mode", ["garbage", "empty", "down", "slow"])
async def test_a_broken_jwks_keeps_cached_keys_working_and_an_uncached_kid_is_unavailable(
    idp: StandInIdP, mode: str
) -> None:
    checker = verifier(idp, http_timeout_seconds=0.5, jwks_min_refresh_seconds=0.3)
    idp.jwks_mode = mode
    await anyio.sleep(0.35)  # past the interval the start-up fetch opened
    started = time.monotonic()
    with pytest.raises(IdentityUnavailable) as unavailable:
        await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid="rotated-while-down"))
    assert time.monotonic() - started < 2.5  # bounded by the timeout, not the identity provider
    assert unavailable.value.retry_after >= 1 and "/jwks" not in str(unavailable.value)  # callers see it
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE))) is not None  # cached key
    # Within the interval an uncached kid stays unavailable without another fetch.
    fetched = idp.counts["jwks"]
    with pytest.raises(IdentityUnavailable):
        await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid="rotated-while-down"))
    assert idp.counts["jwks"] == fetched


async def test_a_jwks_that_recovers_serves_again(idp: StandInIdP) -> None:
    checker = verifier(idp, jwks_min_refresh_seconds=0.2)
    idp.jwks_mode = "down"
    await anyio.sleep(0.3)
    with pytest.raises(IdentityUnavailable):
        await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid="other"))
    idp.jwks_mode = "ok"
    await anyio.sleep(0.3)
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid="other")) is None  # known: refused, 401


def test_discovery_falls_back_to_openid_configuration() -> None:
    with standin_idp(path="/realms/x", oidc_only=True) as idp:
        checker = verifier(idp)
        assert checker.keys[idp.issuer].url == f"{idp.origin}/jwks"


def test_discovery_refuses_metadata_naming_another_issuer() -> None:
    impostor = "https://impostor.example.com"
    said = rf"names issuer '{impostor}', not the configured"
    with standin_idp(published_issuer=impostor) as idp, pytest.raises(ConfigError, match=said):
        verifier(idp)


def test_an_unreachable_issuer_is_named_at_start_up() -> None:
    with standin_idp() as idp:
        gone = idp.issuer
    with pytest.raises(ConfigError) as err:
        JwtVerifier(AuthConfig(mode="jwt", issuer=gone, http_timeout_seconds=1), RESOURCE, RESOURCE).start()
    assert f"cannot discover issuer {gone}" in str(err.value)
    assert "/.well-known/oauth-authorization-server" in str(err.value)


def test_a_jwks_unusable_at_start_up_is_named() -> None:
    unusable = r"keys of issuer .* cannot be loaded: .*/jwks answered something"
    with standin_idp(jwks_mode="garbage") as idp, pytest.raises(ConfigError, match=unusable):
        verifier(idp)


async def test_two_issuers_each_verify_their_own_tokens_and_share_no_keys() -> None:
    with standin_idp(path="/a") as one, standin_idp(path="/b", key_slot=1) as two:
        config = AuthConfig(mode="jwt", issuer=[one.issuer, two.issuer])
        checker = JwtVerifier(config, RESOURCE, RESOURCE)
        checker.start()
        first = await checker.verify_token(one.sign(one.claims(RESOURCE)))
        second = await checker.verify_token(two.sign(two.claims(RESOURCE)))
        assert first is not None and second is not None
        assert from_access_token(first).key == (one.issuer, "alice") != from_access_token(second).key
        # Issuer b's claims signed with issuer a's key: refused.
        assert await checker.verify_token(one.sign(two.claims(RESOURCE))) is None


async def test_a_remembered_token_is_checked_again_once_the_issuer_changes_its_keys(idp: StandInIdP) -> None:
    checker = verifier(idp, jwks_min_refresh_seconds=0.2)
    token = idp.sign(idp.claims(RESOURCE))
    assert await checker.verify_token(token) is not None
    assert await checker.verify_token(token) is not None  # remembered
    idp.key_slot = 1  # the issuer replaces its keys (same kid names, new key material)
    await anyio.sleep(0.3)
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE), kid="new")) is None  # refetches the set
    assert await checker.verify_token(token) is None  # its key is gone: verified again, and refused
    assert await checker.verify_token(idp.sign(idp.claims(RESOURCE))) is not None


async def test_a_remembered_token_is_never_accepted_past_its_exp(idp: StandInIdP) -> None:
    checker = verifier(idp, leeway_seconds=0)
    token = idp.sign(idp.claims(RESOURCE, exp=int(time.time()) + 2))
    access = await checker.verify_token(token)
    assert access is not None and access.token == token
    again = await checker.verify_token(token)
    assert again is not None and again.token == token  # remembered, with the caller's own token
    await anyio.sleep(2.5)
    assert await checker.verify_token(token) is None


@pytest.mark.parametrize(
    ("scope", "expected"),
    [("a b", ["a", "b"]), ("a  b ", ["a", "b"]), ("a\tb", ["a\tb"]), ("mcp:read\nmcp:admin", ["mcp:read\nmcp:admin"])],
)
async def test_a_scope_claim_is_split_on_spaces_only(idp: StandInIdP, scope: str, expected: list[str]) -> None:
    """RFC 6749 §3.3: scope tokens are separated by spaces (%x20) and hold no other whitespace, so a
    tab or a newline never splits one scope string into two grants."""
    access = await verifier(idp).verify_token(idp.sign(idp.claims(RESOURCE, scope=scope)))
    assert access is not None and access.scopes == expected
