"""The ``jwt_bearer`` upstream without an instance: who may be acted for, the assertion, the key."""

from __future__ import annotations

import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt_support import OBO_CLIENT, OBO_SECRET, key_pair, obo_env, obo_instance

from mcp_providers.credentials import CredentialRefused
from mcp_providers.identity import ANONYMOUS, LOCAL, Principal
from mcp_providers.plugins.servicenow.client import InstancePool
from mcp_providers.plugins.servicenow.errors import NoVerifiedCaller, ServiceNowError
from mcp_providers.plugins.servicenow.jwt_bearer import JwtBearerUpstream, load_private_key
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import InstanceSettings

pytestmark = pytest.mark.anyio

ALICE = Principal("alice", issuer="https://idp.example.test", claims={"email": "alice@example.test"})
URL = "http://127.0.0.1:9"  # nothing listens: any request sent would fail loudly


def upstream(**auth: object) -> JwtBearerUpstream:
    return JwtBearerUpstream(InstanceSettings.model_validate(obo_instance(URL, auth=auth)), Redactor())


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in obo_env().items():
        monkeypatch.setenv(name, value)


def test_the_user_comes_from_the_configured_claim():
    assert upstream().user_of(ALICE) == "alice@example.test"
    assert upstream(user_claim="sub").user_of(ALICE) == "alice"
    assert upstream(local_user="svc.local@example.test").user_of(LOCAL) == "svc.local@example.test"


@pytest.mark.parametrize(
    ("principal", "why"),
    [
        (ANONYMOUS, "no verified caller"),
        (LOCAL, "local \\(stdio\\) caller is not mapped to a user: set auth.local_user"),
        (Principal("bob", issuer="https://idp.example.test"), "carries no 'email' claim"),
        (Principal("bob", issuer="https://idp.example.test", claims={"email": ""}), "carries no 'email' claim"),
        (Principal("bob", issuer="https://idp.example.test", claims={"email": ["b@x"]}), "carries no 'email' claim"),
    ],
)
def test_callers_it_cannot_act_for_are_refused(principal, why):
    with pytest.raises(NoVerifiedCaller, match=why) as refused:
        upstream().user_of(principal)
    assert isinstance(refused.value, CredentialRefused)  # a Denied: -32003, audited as denied
    assert "never as a service account" in refused.value.message


def test_local_user_maps_only_local():
    mapped = upstream(local_user="svc.local@example.test")
    with pytest.raises(NoVerifiedCaller, match="no verified caller"):
        mapped.user_of(ANONYMOUS)


async def test_refused_callers_send_nothing(env):
    corp = JwtBearerUpstream(InstanceSettings.model_validate(obo_instance(URL)), Redactor())
    corp.bind(None)
    with pytest.raises(NoVerifiedCaller):
        await corp.obtain(ANONYMOUS)
    assert corp.token_requests == 0


def test_the_assertion_is_signed_for_the_user(env):
    corp = upstream(key_id="verifier-key-1")
    corp.bind(object())  # type: ignore[arg-type]  -- only the secrets are read here
    now = time.time()
    first, second = corp.assertion("alice@example.test", now=now), corp.assertion("alice@example.test", now=now)
    public = key_pair()[1]
    claims = jwt.decode(first, public, algorithms=["RS256"], audience=OBO_CLIENT, issuer=OBO_CLIENT)
    assert claims["sub"] == "alice@example.test"
    assert claims["iat"] == int(now) and claims["exp"] == int(now) + 300
    assert jwt.get_unverified_header(first) == {"alg": "RS256", "kid": "verifier-key-1", "typ": "JWT"}
    assert jwt.decode(second, public, algorithms=["RS256"], audience=OBO_CLIENT)["jti"] != claims["jti"]
    assert OBO_SECRET not in first


def test_the_audience_may_be_the_token_endpoint(env):
    corp = upstream(audience="token_endpoint", assertion_seconds=60)
    corp.bind(object())  # type: ignore[arg-type]
    token = corp.assertion("alice@example.test")
    claims = jwt.decode(token, key_pair()[1], algorithms=["RS256"], audience=f"{URL}/oauth_token.do")
    assert claims["exp"] - claims["iat"] == 60


def _pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()  # fmt: skip


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("not-a-key-but-a-secret-3f9a", "does not hold an unencrypted PEM private key"),
        (_pem(ec.generate_private_key(ec.SECP256R1())), "RS256 assertions need an RSA key"),
        (_pem(rsa.generate_private_key(public_exponent=65537, key_size=1024)), "1024-bit RSA key"),
    ],
)
def test_a_bad_private_key_is_named_not_shown(value, why):
    with pytest.raises(ValueError, match=why) as refused:
        load_private_key(value, instance="corp", env="SN_TEST_OBO_KEY")
    assert "SN_TEST_OBO_KEY" in str(refused.value)
    assert value.strip().splitlines()[-1] not in str(refused.value) and "BEGIN" not in str(refused.value)


def test_a_one_line_key_with_escaped_newlines_loads():
    private = key_pair()[0]
    assert load_private_key(private.replace("\n", "\\n"), instance="corp", env="K").key_size == 2048


async def test_missing_secrets_fail_every_request_saying_which(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SN_TEST_OBO_SECRET", OBO_SECRET)
    monkeypatch.delenv("SN_TEST_OBO_KEY", raising=False)
    pool = InstancePool([InstanceSettings.model_validate(obo_instance(URL))])
    async with pool.opened():
        with pytest.raises(ServiceNowError, match=r"SN_TEST_OBO_KEY \(from auth.private_key_env\) is not set"):
            await pool.upstreams["corp"].obtain(ALICE)
        with pytest.raises(ServiceNowError, match="SN_TEST_OBO_KEY"):
            await pool.client("corp").list_records("incident")
    assert pool.upstreams["corp"].token_requests == 0


async def test_a_per_user_instance_is_reached_only_through_a_caller(env):
    pool = InstancePool([InstanceSettings.model_validate(obo_instance(URL))])
    async with pool.opened():
        with pytest.raises(ServiceNowError, match="has no caller to act for"):
            await pool.client("corp").list_records("incident")


async def test_anonymous_is_refused_by_the_pool_before_any_request(env):
    pool = InstancePool([InstanceSettings.model_validate(obo_instance(URL))])
    async with pool.opened():
        with pytest.raises(NoVerifiedCaller):
            pool.client_for("corp", _Request(ANONYMOUS))
    assert pool.upstreams["corp"].token_requests == 0


class _Request:
    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    async def credential(self, upstream):  # pragma: no cover - must not be reached
        raise AssertionError("asked for a credential")

    async def forget_credential(self, upstream):  # pragma: no cover
        raise AssertionError("asked to forget")
