"""The test authorization server itself: real oidc-provider tokens, before any MCP server is involved.

These pin what the end-to-end tests rely on: JWT access tokens (RFC 9068) signed by a key in the
issuer's JWKS, ``aud`` bound to the requested resource (RFC 8707), the account's ``groups`` in the
token, authorization code + PKCE through the auto-login interaction, and two instances being two
issuers with the same ``sub`` values.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from identity_support import (
    MODULES_DIR,
    OPAQUE_CLIENT,
    OPAQUE_SECRET,
    PROVIDER_DIR,
    SERVICE_CLIENT,
    IdentityProvider,
    authorization_code_token,
    follow_login,
    install_runtime,
)
from real_parts import STAMP

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

RESOURCE = "http://127.0.0.1:8931/mcp"
OTHER_RESOURCE = "http://127.0.0.1:8932/other"
REDIRECT_URI = "http://127.0.0.1:8933/callback"


def verified_claims(idp: IdentityProvider, token: str, audience: str) -> dict[str, Any]:
    """The token's claims after checking its signature against the issuer's published JWKS."""
    header = jwt.get_unverified_header(token)
    keys = {key["kid"]: key for key in idp.jwks()["keys"]}
    key = jwt.PyJWK(keys[header["kid"]])
    return dict(jwt.decode(token, key, algorithms=["RS256"], audience=audience, issuer=idp.issuer))


def test_client_credentials_token_is_a_jwt_bound_to_the_resource(idp: IdentityProvider) -> None:
    token = idp.client_credentials_token(RESOURCE)
    assert jwt.get_unverified_header(token)["typ"] == "at+jwt"
    claims = verified_claims(idp, token, RESOURCE)
    assert claims["aud"] == RESOURCE and claims["iss"] == idp.issuer
    assert claims["sub"] == SERVICE_CLIENT and claims["client_id"] == SERVICE_CLIENT
    assert claims["scope"] == "mcp:read"
    other = idp.client_credentials_token(OTHER_RESOURCE)
    assert verified_claims(idp, other, OTHER_RESOURCE)["aud"] == OTHER_RESOURCE
    with pytest.raises(jwt.InvalidAudienceError):
        verified_claims(idp, other, RESOURCE)


def test_client_credentials_refuses_a_wrong_secret_and_a_non_url_resource(idp: IdentityProvider) -> None:
    wrong = httpx2.post(
        idp.token_endpoint,
        auth=(SERVICE_CLIENT, "not-the-secret-at-all"),
        timeout=10,
        data={"grant_type": "client_credentials", "resource": RESOURCE, "scope": "mcp:read"},
    )
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    with pytest.raises(AssertionError, match="invalid_target"):
        idp.client_credentials_token("urn:not-a-resource-url")


async def _code_flow_token(idp: IdentityProvider, account: str) -> tuple[str, dict[str, Any]]:
    token = await authorization_code_token(idp, RESOURCE, account, REDIRECT_URI)
    return token, verified_claims(idp, token, RESOURCE)


async def test_authorization_code_with_pkce_logs_the_hinted_account_in_with_its_groups(idp: IdentityProvider) -> None:
    _, alice = await _code_flow_token(idp, "alice")
    _, bob = await _code_flow_token(idp, "bob")
    assert (alice["sub"], alice["groups"], alice["scope"]) == ("alice", ["itil"], "mcp:read")
    assert (bob["sub"], bob["groups"]) == ("bob", ["staff"])
    assert alice["aud"] == RESOURCE and alice["client_id"] != SERVICE_CLIENT


async def test_the_interaction_denies_an_unknown_login_hint(
    start_identity_provider: Callable[[str], IdentityProvider],
) -> None:
    idp = start_identity_provider("a")
    registered = httpx2.post(
        str(idp.metadata["registration_endpoint"]),
        timeout=10,
        json={
            "redirect_uris": [REDIRECT_URI],
            "application_type": "native",
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        },
    )
    authorize = httpx2.URL(str(idp.metadata["authorization_endpoint"])).copy_merge_params(
        {
            "response_type": "code",
            "client_id": registered.json()["client_id"],
            "redirect_uri": REDIRECT_URI,
            "scope": "mcp:read",
            "state": "s",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
            "resource": RESOURCE,
        }
    )
    callback = await follow_login(str(authorize), REDIRECT_URI, "mallory")
    assert callback.code is None and callback.params["error"] == "access_denied"
    assert "mallory" in callback.params["error_description"]


async def test_two_instances_are_two_issuers_with_the_same_subjects(
    start_identity_provider: Callable[[str], IdentityProvider],
) -> None:
    first, second = start_identity_provider("a"), start_identity_provider("b")
    assert first.issuer != second.issuer
    kids = [{key["kid"] for key in idp.jwks()["keys"]} for idp in (first, second)]
    assert not kids[0] & kids[1]  # each instance signs with its own key
    (_, one), (_, two) = await _code_flow_token(first, "alice"), await _code_flow_token(second, "alice")
    assert one["sub"] == two["sub"] == "alice" and one["iss"] != two["iss"]
    token = second.client_credentials_token(RESOURCE)
    with pytest.raises(KeyError):  # the first issuer's keys cannot verify the second's tokens
        verified_claims(first, token, RESOURCE)


def test_installing_again_installs_nothing(idp: IdentityProvider) -> None:
    stamp = MODULES_DIR / STAMP
    before = stamp.stat().st_mtime_ns
    assert install_runtime() == PROVIDER_DIR
    assert stamp.stat().st_mtime_ns == before
    assert (Path(__file__).parent / "package-lock.json").read_text() == stamp.read_text()


def test_an_opaque_client_gets_tokens_that_introspection_reads(idp: IdentityProvider) -> None:
    token = idp.client_credentials_token(RESOURCE, client_id=OPAQUE_CLIENT, secret=OPAQUE_SECRET)
    assert token.count(".") != 2  # not a JWS
    answer = idp.introspect(token)
    assert answer["active"] is True and answer["aud"] == RESOURCE and answer["iss"] == idp.issuer
    assert (answer["client_id"], answer["scope"]) == (OPAQUE_CLIENT, "mcp:read")
    assert "sub" not in answer  # a client-credentials token has no end user: the subject is the client id
    assert idp.introspect(token + "x") == {"active": False}
