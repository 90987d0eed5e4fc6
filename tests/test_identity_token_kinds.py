"""Round 4 item 11: only access tokens are access tokens, and admins carry the required scopes.

An ID token, a back-channel logout token or a refresh token is signed by the same issuer (or
answered ``active`` by its introspection endpoint) and may name this server in ``aud``; none of
them is a credential for calling it (RFC 9068 §4, RFC 7662 §2.2, OpenID Connect Core §2, OpenID
Connect Back-Channel Logout §2.4). ``[server.admin] subjects`` get no pass on ``[server.auth]
required_scopes``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from identity_standin import StandInIdP, standin_idp

from mcp_providers._serve.identity import IntrospectionVerifier, JwtVerifier
from mcp_providers._serve.transport.admin import AdminGate
from mcp_providers._serve.transport.auth import http_auth
from mcp_providers.config import AdminSettings, AuthConfig

pytestmark = pytest.mark.anyio

RESOURCE = "http://127.0.0.1:8125/mcp"
LOGOUT = {"http://schemas.openid.net/event/backchannel-logout": {}}


@pytest.fixture
def idp(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInIdP]:
    monkeypatch.setenv("TEST_KINDS_ID", "mcp-resource-server")
    monkeypatch.setenv("TEST_KINDS_SECRET", "s3cret:with/odd&chars")
    with standin_idp(path="/realms/kinds") as served:
        yield served


def jwt_verifier(idp: StandInIdP, **options: Any) -> JwtVerifier:
    made = JwtVerifier(AuthConfig(mode="jwt", issuer=idp.issuer, **options), RESOURCE, RESOURCE)
    made.start()
    return made


def signed(idp: StandInIdP, header_typ: str | None = None, /, **claims: Any) -> str:
    """A token of ``idp`` with these claims; ``header_typ`` None leaves the JOSE ``typ`` out."""
    headers = {"kid": "rsa-1", "typ": header_typ}  # PyJWT drops a typ of None
    token = jwt.encode(idp.claims(RESOURCE, **claims), idp.rsa_key, algorithm="RS256", headers=headers)
    assert ("typ" in jwt.get_unverified_header(token)) == (header_typ is not None)
    return token


NOT_ACCESS = {
    "ID token (nonce, typ JWT)": ("JWT", {"nonce": "n-0S6_WzA2Mj", "auth_time": 1}, "nonce claim"),
    "logout token (typ logout+jwt)": ("logout+jwt", {"events": LOGOUT, "jti": "x"}, "typ 'logout+jwt'"),
    "logout token with a plain typ": ("JWT", {"events": LOGOUT, "jti": "x"}, "events claim"),
    "security event (secevent+jwt)": ("secevent+jwt", {}, "typ 'secevent+jwt'"),
    "Keycloak ID token (typ claim ID)": (None, {"typ": "ID"}, "typ claim 'ID'"),
    "Keycloak refresh token (typ claim Refresh)": (None, {"typ": "Refresh"}, "typ claim 'Refresh'"),
    "Cognito ID token (token_use id)": (None, {"token_use": "id"}, "token_use claim 'id'"),
    "DPoP proof (dpop+jwt)": ("dpop+jwt", {}, "typ 'dpop+jwt'"),
    "ID token of a code flow without nonce (at_hash)": ("JWT", {"at_hash": "77QmUPtjPfzWtF2AnpK9RQ"}, "at_hash claim"),
    "ID token of a hybrid flow (c_hash)": (None, {"c_hash": "LDktKdoQak3Pk0cnXxCltA"}, "c_hash claim"),
}


@pytest.mark.parametrize("case", NOT_ACCESS, ids=list(NOT_ACCESS))
async def test_a_signed_token_that_is_no_access_token_is_refused_by_name(
    idp: StandInIdP, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    typ, claims, check = NOT_ACCESS[case]
    token = signed(idp, typ, **claims)
    with caplog.at_level(logging.WARNING, logger="mcp_providers.identity"):
        assert await jwt_verifier(idp).verify_token(token) is None
    assert f"not an access token ({check})" in caplog.text, caplog.text
    assert token not in caplog.text


ACCESS = {
    "no typ": (None, {}),
    "typ JWT": ("JWT", {}),
    "typ at+jwt": ("at+jwt", {}),
    "typ application/at+jwt, any case": ("Application/AT+JWT", {}),
    "Keycloak < 25 access token: nonce with typ claim Bearer": ("JWT", {"nonce": "n", "typ": "Bearer"}),
    "Cognito access token": (None, {"token_use": "access"}),
}


@pytest.mark.parametrize("case", ACCESS, ids=list(ACCESS))
async def test_access_tokens_as_identity_providers_issue_them_are_accepted(idp: StandInIdP, case: str) -> None:
    typ, claims = ACCESS[case]
    assert await jwt_verifier(idp).verify_token(signed(idp, typ, **claims)) is not None


async def test_an_issuer_named_in_at_jwt_issuers_must_say_at_jwt(
    idp: StandInIdP, caplog: pytest.LogCaptureFixture
) -> None:
    strict = jwt_verifier(idp, at_jwt_issuers=(idp.issuer,))
    assert await strict.verify_token(signed(idp, "at+jwt")) is not None
    assert await strict.verify_token(signed(idp, "application/at+jwt")) is not None
    with caplog.at_level(logging.WARNING, logger="mcp_providers.identity"):
        assert await strict.verify_token(signed(idp, "JWT")) is None
        assert await strict.verify_token(signed(idp)) is None
    assert "typ 'JWT' is not at+jwt (RFC 9068 §4)" in caplog.text
    assert "typ is not at+jwt (RFC 9068 §4)" in caplog.text


def test_at_jwt_issuers_must_be_trusted_issuers() -> None:
    with pytest.raises(ValueError, match=r"at_jwt_issuers names 'https://other.example.com', which issuer does not"):
        AuthConfig(mode="jwt", issuer="https://idp.example.com", at_jwt_issuers=("https://other.example.com",))


def introspection_verifier(idp: StandInIdP) -> IntrospectionVerifier:
    config = AuthConfig(mode="introspection", issuer=idp.issuer, client_id_env="TEST_KINDS_ID",
                        client_secret_env="TEST_KINDS_SECRET")  # fmt: skip
    made = IntrospectionVerifier(config, RESOURCE, RESOURCE)
    made.start()
    return made


@pytest.mark.parametrize(
    ("answer", "check"),
    [
        ({"token_type": "refresh_token"}, "token_type 'refresh_token'"),
        ({"token_type": "id_token"}, "token_type 'id_token'"),
        ({"token_type": "N_A"}, "token_type 'N_A'"),
        ({"typ": "Refresh"}, "typ claim 'Refresh'"),  # Keycloak's answer about a refresh token
        ({"token_use": "refresh_token"}, "token_use claim 'refresh_token'"),  # ORY Hydra's
    ],
)
async def test_introspection_of_a_token_that_is_no_access_token_is_refused(
    idp: StandInIdP, answer: dict[str, Any], check: str, caplog: pytest.LogCaptureFixture
) -> None:
    idp.introspection["opaque-token-000000000001"] = {"active": True, "sub": "alice", "aud": RESOURCE,
                                                      "exp": int(time.time()) + 300, **answer}  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="mcp_providers.identity"):
        assert await introspection_verifier(idp).verify_token("opaque-token-000000000001") is None
    assert f"not an access token ({check})" in caplog.text, caplog.text


@pytest.mark.parametrize("token_type", ["Bearer", "bearer", "access_token"])
async def test_introspection_of_an_access_token_is_accepted(idp: StandInIdP, token_type: str) -> None:
    idp.introspection["opaque-token-000000000002"] = {
        "active": True,
        "sub": "alice",
        "aud": RESOURCE,
        "token_type": token_type,
    }
    assert await introspection_verifier(idp).verify_token("opaque-token-000000000002") is not None


async def test_an_admin_subject_needs_the_required_scopes_like_any_caller(idp: StandInIdP) -> None:
    auth = http_auth(AuthConfig(mode="jwt", issuer=idp.issuer, resource_url=RESOURCE, required_scopes=("mcp:read",)))
    gate = AdminGate(AdminSettings(subjects=("ops",)), auth)
    assert await gate.who(signed(idp, sub="ops", scope="profile")) is None
    assert await gate.who(signed(idp, sub="ops", scope=None)) is None
    admitted = await gate.who(signed(idp, sub="ops", scope="profile mcp:read"))
    assert admitted is not None and admitted.key == (idp.issuer, "ops")
