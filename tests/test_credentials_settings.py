"""A cached upstream credential is handed out only under the settings it was obtained under, and
the caller is judged against the current settings on every use, not only when obtaining.

Tester twenty-two, F6: the broker (kept by the runtime across reloads) keyed a credential by the
upstream's name and the caller only. A reload that narrowed an OpenAPI service's ``auth.issuers``
went on serving a partner caller whose credential was cached; one that changed a ServiceNow
instance's ``user_claim`` went on serving alice as her old user; one that moved the instance's
``url`` sent the old instance's bearer token to the new host. The key now holds a fingerprint of
everything that went into obtaining the credential (the upstream's ``fingerprint``: its auth
table, URL, token endpoint, client id, the issuers it maps) and of the server's identity settings
(the broker's ``identity``: trusted issuers, audience), and the broker asks the upstream's
``admit(principal)`` before every hand-out, cached or not. The served reloads are in
``tests/openapi/test_openapi_reload_credentials.py`` and
``tests/servicenow/test_servicenow_reload_credentials.py``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_providers._serve.state.credentials import Sealer, identity_fingerprint, key_text
from mcp_providers.config import AuthConfig, ServerSettings
from mcp_providers.credentials import (
    CacheKey,
    Credential,
    CredentialBroker,
    CredentialRefused,
    MemoryStore,
    cache_key,
)
from mcp_providers.identity import TRUSTED_ISSUERS, Principal
from mcp_providers.plugins.servicenow.errors import NoVerifiedCaller
from mcp_providers.plugins.servicenow.jwt_bearer import JwtBearerUpstream
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import InstanceSettings
from mcp_providers.plugins.upstream.oauth import ClientCredentials, TokenExchange
from mcp_providers.plugins.upstream.settings import ServerSettings as UpstreamSettings
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

CORP, PARTNER = "https://corp.idp.example.test", "https://partner.idp.example.test"
MALLORY = Principal("mallory", issuer=PARTNER, access_token="partner-mallory-token-3c4d")
ALICE = Principal("alice", issuer=CORP, access_token="corp-alice-token-1a2b")


class Settled:
    """An upstream with settings: ``fingerprint`` says what it obtains under, ``admit`` refuses
    callers of ``refused`` issuers; each obtain grants a new credential."""

    def __init__(self, fingerprint: str = "v1") -> None:
        self.name, self.fingerprint = "svc:settled", fingerprint
        self.refused: set[str | None] = set()
        self.calls: list[str] = []

    def admit(self, principal: Principal) -> None:
        if principal.issuer in self.refused:
            raise CredentialRefused(f"svc:settled serves no caller of {principal.issuer!r}")

    async def obtain(self, principal: Principal) -> Credential:
        self.admit(principal)
        self.calls.append(principal.subject)
        return Credential(f"granted-{len(self.calls)}", time.time() + 600, principal.subject, "test")


async def test_a_credential_is_handed_only_under_the_settings_it_was_obtained_under() -> None:
    broker, upstream = CredentialBroker(), Settled("v1")
    first = await broker.credential(upstream, ALICE)
    assert await broker.credential(upstream, ALICE) is first  # same settings: cached
    upstream.fingerprint = "v2"  # a reload changed what it is obtained under
    second = await broker.credential(upstream, ALICE)
    assert second.token != first.token and upstream.calls == ["alice", "alice"]
    await broker.forget(upstream, ALICE, second)  # forgets under the current settings only
    upstream.fingerprint = "v1"
    assert await broker.credential(upstream, ALICE) is first


async def test_the_caller_is_judged_on_every_use_not_only_when_obtaining() -> None:
    broker, upstream = CredentialBroker(), Settled()
    await broker.credential(upstream, MALLORY)
    upstream.refused.add(PARTNER)  # settings now refuse the issuer of a cached caller
    with pytest.raises(CredentialRefused, match="serves no caller of"):
        await broker.credential(upstream, MALLORY)
    assert upstream.calls == ["mallory"]  # refused before the cache and before obtain


async def test_brokers_of_other_server_identity_settings_share_no_credential() -> None:
    store, upstream = MemoryStore(), Settled()
    corp_only = CredentialBroker(store, identity="corp")
    first = await corp_only.credential(upstream, ALICE)
    assert await CredentialBroker(store, identity="corp").credential(upstream, ALICE) is first
    other = await CredentialBroker(store, identity="corp+partner").credential(upstream, ALICE)
    assert other.token != first.token and len(upstream.calls) == 2


def test_the_key_and_its_redis_name_hold_the_settings_and_the_identity() -> None:
    upstream = Settled("fp-1")
    key = cache_key(upstream, ALICE, "id-1")
    assert key == CacheKey("svc:settled", ALICE.share_key, "fp-1", "id-1")
    assert cache_key(Settled("fp-1"), ALICE) == CacheKey("svc:settled", ALICE.share_key, "fp-1", "")
    sealer = Sealer(b"k" * 32)
    names = {sealer.name(k) for k in (key, key._replace(settings="fp-2"), key._replace(identity="id-2"))}
    assert len(names) == 3
    assert key_text(CacheKey("svc", Principal("bob").share_key, "fp", "id")) == (
        '["credential-key/3","svc",["","bob","",[],[],"{}"],"fp","id"]'
    )


def test_an_upstream_without_settings_keeps_the_empty_fingerprint() -> None:
    class Plain:
        name = "svc:plain"

        async def obtain(self, principal: Principal) -> Credential:
            raise AssertionError("not called")

    assert cache_key(Plain(), ALICE) == CacheKey("svc:plain", ALICE.share_key, "", "")


def _upstream_table(**changes: Any) -> dict[str, Any]:
    auth = {"type": "on_behalf_of", "token_endpoint": "https://as.example.test/token", "client_id_env": "F6_ID",
            "client_secret_env": "F6_SECRET", "issuers": [CORP, PARTNER], "issuers_share_users": True}  # fmt: skip
    table = {"name": "who", "url": "https://who.example.test/mcp", "prefixes": ["whoami://"], "auth": auth}
    auth.update(changes.pop("auth", {}))
    return {**table, **changes}


def _exchange(trusted: tuple[str, ...] = (CORP, PARTNER), **changes: Any) -> TokenExchange:
    settings = UpstreamSettings.model_validate(_upstream_table(**changes), context={TRUSTED_ISSUERS: trusted})
    return TokenExchange(settings)


AUTH_CHANGES: list[dict[str, Any]] = [
    {"auth": {"token_endpoint": "https://other-as.example.test/token"}},
    {"auth": {"client_id_env": "F6_OTHER_ID"}},
    {"auth": {"scope": "notes:read"}},
    {"auth": {"resource": "https://who.example.test/other"}},
    {"auth": {"audience": "who-api"}},
    {"auth": {"client_auth": "client_secret_post"}},
    {"auth": {"issuers": [CORP], "issuers_share_users": False}},
    {"url": "https://elsewhere.example.test/mcp"},
]


def test_every_setting_that_goes_into_an_exchange_changes_its_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("F6_ID", "gateway")
    base = _exchange().fingerprint
    assert _exchange().fingerprint == base  # stable: the same settings, another object (a reload)
    seen = {base} | {_exchange(**change).fingerprint for change in AUTH_CHANGES}
    unnamed = {"issuers": [], "issuers_share_users": False}  # the one issuer [server.auth] trusts is served
    seen |= {_exchange(trusted=(issuer,), auth=unnamed).fingerprint for issuer in (CORP, PARTNER)}
    monkeypatch.setenv("F6_ID", "another-client")  # the client id the variable holds
    seen.add(_exchange().fingerprint)
    assert len(seen) == len(AUTH_CHANGES) + 4


def test_the_client_credentials_identity_changes_with_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    def client(**changes: Any) -> ClientCredentials:
        table = _upstream_table(**changes)
        table["auth"] = {k: v for k, v in table["auth"].items() if not k.startswith("issuers")}
        table["auth"]["type"] = "client_credentials"
        return ClientCredentials(UpstreamSettings.model_validate(table))

    monkeypatch.setenv("F6_ID", "gateway")
    changes = [c for c in AUTH_CHANGES if "issuers" not in c.get("auth", {})]
    prints = {client().fingerprint} | {client(**c).fingerprint for c in changes}
    assert client().fingerprint == client().fingerprint and len(prints) == len(changes) + 1


async def test_an_exchange_whose_issuers_were_narrowed_refuses_a_cached_caller_before_anything_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("F6_ID", "gateway")
    monkeypatch.setenv("F6_SECRET", "gateway-secret-0f6e")
    narrowed = _exchange(auth={"issuers": [CORP], "issuers_share_users": False})
    broker = CredentialBroker()
    held = Credential("exchanged-for-mallory-77aa", time.time() + 600, "mallory", "token_exchange")
    await broker.store.put(cache_key(narrowed, MALLORY), held, 600)  # cached under these very settings
    with pytest.raises(CredentialRefused) as refused:
        await broker.credential(narrowed, MALLORY)
    assert str(refused.value) == (
        "upstream 'who' (streamable-http) is reached on behalf of each caller; it serves callers of "
        f"{CORP!r} only (auth.issuers), and this caller's issuer is {PARTNER!r}"
    )
    assert narrowed.requests == 0 and "exchanged-for-mallory" not in str(refused.value)


def _instance(**changes: Any) -> JwtBearerUpstream:
    auth = {"type": "jwt_bearer", "client_id": "mcp-on-behalf", "client_secret_env": "F6_SN_SECRET",
            "private_key_env": "F6_SN_KEY", "user_claim": "email", "issuers": [CORP, PARTNER],
            "issuers_share_users": True, **changes.pop("auth", {})}  # fmt: skip
    table = {"name": "corp", "url": "https://corp.service-now.example.test", "auth": auth, **changes}
    settings = InstanceSettings.model_validate(table, context={TRUSTED_ISSUERS: (CORP, PARTNER)})
    return JwtBearerUpstream(settings, Redactor())


SN_CHANGES: list[dict[str, Any]] = [
    {"url": "https://capture.example.test"},
    {"auth": {"user_claim": "upn"}},
    {"auth": {"client_id": "another-client"}},
    {"auth": {"token_path": "/oauth/token"}},
    {"auth": {"audience": "token_endpoint"}},
    {"auth": {"issuers": [CORP], "issuers_share_users": False}},
    {"auth": {"local_user": "svc.local"}},
    {"auth": {"key_id": "key-2"}},
]


def test_every_setting_that_goes_into_a_jwt_bearer_grant_changes_its_fingerprint() -> None:
    base = _instance().fingerprint
    assert _instance().fingerprint == base
    prints = {base} | {_instance(**change).fingerprint for change in SN_CHANGES}
    assert len(prints) == len(SN_CHANGES) + 1


async def test_a_jwt_bearer_instance_judges_the_caller_on_every_use() -> None:
    narrowed = _instance(auth={"issuers": [CORP], "issuers_share_users": False})
    partner = Principal("mallory", issuer=PARTNER, claims={"email": "mallory@example.test"})
    broker = CredentialBroker()
    held = Credential("sn-token-of-mallory-5e5e", time.time() + 600, "mallory@example.test", "jwt_bearer")
    await broker.store.put(cache_key(narrowed, partner), held, 600)
    with pytest.raises(NoVerifiedCaller, match=r"it serves callers of .* only \(auth.issuers\)"):
        await broker.credential(narrowed, partner)
    assert narrowed.token_requests == 0


def test_the_identity_fingerprint_holds_the_trusted_issuers_and_the_audience() -> None:
    def jwt(*issuers: str, **more: Any) -> AuthConfig:
        return AuthConfig(mode="jwt", issuer=issuers, resource_url="https://mcp.example.test/mcp", **more)

    prints = [identity_fingerprint(a) for a in (None, jwt(CORP), jwt(CORP, PARTNER),
                                                jwt(CORP, audience="https://other.example.test/mcp"),
                                                jwt(CORP, subject_claim="oid"))]  # fmt: skip
    assert len(set(prints)) == len(prints)
    assert identity_fingerprint(jwt(CORP)) == identity_fingerprint(jwt(CORP))


def test_the_identity_fingerprint_holds_where_the_servers_trust_comes_from() -> None:
    """Moving the keys (``jwks_url``), the introspection endpoint or its client is vouching for
    callers by other means: a credential cached under the old ones must not be reused."""

    def auth(mode: Any, **more: Any) -> AuthConfig:
        return AuthConfig(mode=mode, issuer=(CORP,), resource_url="https://mcp.example.test/mcp", **more)

    client = {"client_id_env": "MCP_CLIENT_ID", "client_secret_env": "MCP_CLIENT_SECRET"}
    prints = [identity_fingerprint(a) for a in (
        auth("jwt"), auth("jwt", jwks_url="https://keys.example.test/a"),
        auth("jwt", jwks_url="https://keys.example.test/b"), auth("jwt", algorithms=("ES256",)),
        auth("jwt", at_jwt_issuers=(CORP,)), auth("introspection", **client),
        auth("introspection", introspection_endpoint="https://idp.example.test/a", **client),
        auth("introspection", introspection_endpoint="https://idp.example.test/b", **client),
        auth("introspection", **{**client, "client_id_env": "OTHER_CLIENT_ID"}),
    )]  # fmt: skip
    assert len(set(prints)) == len(prints)


def test_the_runtimes_broker_is_keyed_by_the_servers_identity_settings() -> None:
    def broker(*issuers: str) -> CredentialBroker:
        auth = AuthConfig(mode="jwt", issuer=issuers, resource_url="https://mcp.example.test/mcp")
        return compose({}, server=ServerSettings(auth=auth)).runtime.credentials

    assert broker(CORP).identity == broker(CORP).identity != broker(CORP, PARTNER).identity
    assert compose({}).runtime.credentials.identity == identity_fingerprint(None)
