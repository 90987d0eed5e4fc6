"""The emulator as a multi-user instance: the OAuth JWT bearer grant and per-user ACLs (issue 23).

Everything goes over real HTTP (plain ``httpx2``) to an emulator on 127.0.0.1; assertions are
signed with real RSA keys by PyJWT. The hostile-assertion tests emulate what a real instance's
"OAuth JWT API endpoint for external clients" does (sources: ServiceNow docs "JSON Web token
bearer grant" and "Create an OAuth JWT API endpoint for external clients"; the facts are in
``shared/reference/identity.md``):

=======================  ==================================================================
test                     real-instance behaviour emulated
=======================  ==================================================================
wrong key                the signature is checked with the public key of the JWT verifier map
expired                  ``exp`` must be in the future
replayed jti             with the JTI check enabled one assertion buys one token
wrong audience           ``aud`` must be the client id (or the token endpoint, newer releases)
wrong issuer             ``iss`` must be the client id unless another is added to claim validation
unknown / inactive user  ``sub`` must map to an active ``sys_user`` through the user field
bad client secret        the token request carries the endpoint's client id and secret
missing iat              ``iat`` is one of the claims the assertion must include
alg none / HS256         the verifier map holds an RSA public key: only an RS256 signature counts
=======================  ==================================================================

Every refusal is a 401 ``{"error": "access_denied", ...}`` that does not say which check failed;
the tests read the reason from the emulator's request log, so each fails if its own check breaks
(not merely if some other check happens to refuse).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.plugins.servicenow.emulator_jwt import GRANT_TYPE

CLIENT_ID = "mcp-jwt-endpoint"
CLIENT_SECRET = "jwt-Cl1ent-S3cret-5d2e"
SERVICE = ("svc.integration", "svc-Pa55-91c0")
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PUBLIC_PEM = KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()  # fmt: skip
DENIED = {"error": "access_denied", "error_description": "access_denied"}


def _emulator(**options: Any) -> Emulator:
    config = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "public_key_pem": PUBLIC_PEM}
    return Emulator("dev", users=dict([SERVICE]), oauth_clients={"svc-client": "svc-secret"},
                    jwt_bearer=config | options.pop("jwt", {}), **options)  # fmt: skip


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with _emulator() as emulator:
        yield emulator


def claims(sub: str = "alice@example.test", **overrides: Any) -> dict[str, Any]:
    """A valid assertion's claims; an override of ``None`` leaves that claim out."""
    now = int(time.time())
    base = {"iss": CLIENT_ID, "sub": sub, "aud": CLIENT_ID, "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex}
    return {k: v for k, v in (base | overrides).items() if v is not None}


def sign(payload: dict[str, Any], key: rsa.RSAPrivateKey = KEY) -> str:
    return jwt.encode(payload, key, algorithm="RS256")


def grant(emu: Emulator, assertion: str, *, client_id: str = CLIENT_ID, secret: str = CLIENT_SECRET) -> httpx2.Response:
    form = {"grant_type": GRANT_TYPE, "assertion": assertion, "client_id": client_id, "client_secret": secret}
    return httpx2.post(f"{emu.base_url}/oauth_token.do", data=form, trust_env=False)


def user_token(emu: Emulator, sub: str) -> dict[str, str]:
    answer = grant(emu, sign(claims(sub)))
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


def refused_because(emu: Emulator, answer: httpx2.Response, reason: str, *, issued_before: int = 0) -> None:
    """The grant was refused the way a real instance refuses it, for ``reason``, and no token was issued."""
    assert answer.status_code == 401 and answer.json() == DENIED
    last = emu.token_requests()[-1]
    assert last.status == 401 and not last.authenticated
    assert last.detail is not None and reason in last.detail, last.detail
    assert len(emu.issued_tokens()) == issued_before


def _unsigned(header: dict[str, Any], payload: dict[str, Any], signature: bytes = b"") -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = part(json.dumps(header).encode()) + "." + part(json.dumps(payload).encode())
    return head + "." + part(signature)


# -- the grant ------------------------------------------------------------------------------------


def test_grant_issues_a_token_for_the_mapped_user(emu):
    answer = grant(emu, sign(claims()))
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "scope"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == 1800 and body["scope"] == "useraccount"
    assert emu.issued_tokens() == [body["access_token"]]
    me = httpx2.get(f"{emu.base_url}/api/now/table/incident", params={"sysparm_fields": "number"},
                    headers={"Authorization": f"Bearer {body['access_token']}"}, trust_env=False)  # fmt: skip
    assert me.status_code == 200
    assert [(r.path, r.principal, r.authenticated) for r in emu.requests] == [
        ("/oauth_token.do", f"jwt:{CLIENT_ID}/alice", True),
        ("/api/now/table/incident", f"jwt:{CLIENT_ID}/alice", True),
    ]  # fmt: skip
    logged = repr(emu.requests)
    assert CLIENT_SECRET not in logged and body["access_token"] not in logged


def test_audience_may_be_the_token_endpoint(emu):
    """Newer releases name the token endpoint as ``aud``; the client id is accepted as well."""
    assert grant(emu, sign(claims(aud=f"{emu.base_url}/oauth_token.do"))).status_code == 200


def test_user_field_chooses_how_sub_is_mapped():
    with _emulator(jwt={"user_field": "user_name"}) as emulator:
        assert grant(emulator, sign(claims("bob"))).status_code == 200
        refused_because(emulator, grant(emulator, sign(claims("bob@example.test"))), "no sys_user by user_name",
                        issued_before=1)


def test_instance_without_a_jwt_endpoint_refuses_the_grant():
    with Emulator("dev", oauth_clients={CLIENT_ID: CLIENT_SECRET}) as plain:
        refused_because(plain, grant(plain, sign(claims())), "no OAuth JWT API endpoint")


def test_jwt_bearer_configuration_is_checked():
    with pytest.raises(ValueError, match="public_key_pem"):
        Emulator("dev", jwt_bearer={"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET})
    with pytest.raises(ValueError, match="RSA public key"):
        Emulator("dev", jwt_bearer={"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                                    "public_key_pem": "not a key"})  # fmt: skip


# -- hostile assertions ---------------------------------------------------------------------------


def test_wrong_key_is_refused(emu):
    """Real instance: the signature is verified with the public key uploaded to the endpoint's JWT
    verifier map; an assertion signed by any other key is refused."""
    refused_because(emu, grant(emu, sign(claims(), OTHER_KEY)), "signature does not verify")


def test_expired_assertion_is_refused(emu):
    """Real instance: ``exp`` must not have passed."""
    now = int(time.time())
    refused_because(emu, grant(emu, sign(claims(iat=now - 600, exp=now - 60))), "expired")


def test_replayed_jti_is_refused(emu):
    """Real instance with "Enable JTI verification": one assertion (``jti``) buys one token; the
    same assertion posted again is refused."""
    assertion = sign(claims())
    assert grant(emu, assertion).status_code == 200
    again = grant(emu, assertion)
    assert again.status_code == 401 and again.json() == DENIED
    assert "jti was already used" in str(emu.token_requests()[-1].detail)
    assert len(emu.issued_tokens()) == 1


def test_missing_jti_is_refused(emu):
    """Real instance with the JTI check enabled: an assertion without ``jti`` cannot be checked for
    replay and is refused."""
    refused_because(emu, grant(emu, sign(claims(jti=None))), "lacks the 'jti' claim")


def test_wrong_audience_is_refused(emu):
    """Real instance: ``aud`` must be the endpoint's client id (or, in newer releases, the token
    endpoint); an assertion minted for another audience is refused."""
    refused_because(emu, grant(emu, sign(claims(aud="https://other.example.com/oauth_token.do"))), "aud is neither")


def test_wrong_issuer_is_refused(emu):
    """Real instance: ``iss`` must match the client id unless the administrator adds another value
    to the endpoint's claim validation (the emulator has none)."""
    refused_because(emu, grant(emu, sign(claims(iss="someone-else"))), "iss is not the client id")


def test_unknown_user_is_refused(emu):
    """Real instance: ``sub`` must name a ``sys_user`` through the endpoint's user field (here
    ``email``); with no such user no token is issued."""
    refused_because(emu, grant(emu, sign(claims("mallory@example.test"))), "no sys_user by email")


def test_inactive_user_is_refused(emu):
    """Real instance: an inactive (locked out) user cannot get a token; ``dan`` is seeded inactive."""
    refused_because(emu, grant(emu, sign(claims("dan@example.test"))), "'dan' is not active")


def test_bad_client_secret_is_refused(emu):
    """Real instance: the token request must carry the endpoint's client id and secret beside a
    valid assertion."""
    refused_because(emu, grant(emu, sign(claims()), secret="guessed"), "client secret is wrong")


def test_other_client_id_is_refused(emu):
    """Real instance: the client id picks the endpoint (and its verifier map); another client's
    valid credentials do not make the JWT endpoint's assertion acceptable."""
    refused_because(emu, grant(emu, sign(claims()), client_id="svc-client", secret="svc-secret"), "client id")


def test_missing_iat_is_refused(emu):
    """Real instance: ``iat`` is one of the claims an assertion must include."""
    refused_because(emu, grant(emu, sign(claims(iat=None))), "lacks the 'iat' claim")


def test_iat_in_the_future_is_refused(emu):
    """Real instance: an assertion issued in the future (beyond clock skew) is not valid yet."""
    refused_because(emu, grant(emu, sign(claims(iat=int(time.time()) + 600))), "not valid yet")


def test_alg_none_is_refused(emu):
    """Real instance: the verifier map holds an RSA public key, so an unsigned assertion
    (``alg: none``) proves nothing and is refused."""
    refused_because(emu, grant(emu, _unsigned({"alg": "none", "typ": "JWT"}, claims())), "alg 'none' is not RS256")


def test_hs256_signed_with_the_public_key_is_refused(emu):
    """Real instance: only an RS256 signature checked with the public key counts; an HMAC whose
    secret is the (public!) key text is the classic algorithm-confusion forgery."""
    header, payload = {"alg": "HS256", "typ": "JWT"}, claims()
    head = _unsigned(header, payload).rsplit(".", 1)[0]
    forged = _unsigned(header, payload, hmac.new(PUBLIC_PEM.encode(), head.encode(), hashlib.sha256).digest())
    refused_because(emu, grant(emu, forged), "alg 'HS256' is not RS256")


def test_garbage_assertion_is_refused(emu):
    refused_because(emu, grant(emu, "not-a-jwt"), "not a JWT")
