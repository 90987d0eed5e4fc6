"""An MCP upstream reached ``on_behalf_of`` each caller exchanges the tokens of the issuers it names
only (tester 5, F1): a caller of another issuer trusted by ``[server.auth]`` is refused before
anything reaches the token endpoint, and settings that leave whose callers ambiguous are refused
(the rule of :mod:`mcp_providers.plugins._issuers`, shared with the OpenAPI and ServiceNow plugins).
The end-to-end run with a real authorization server and upstream is in
``tests/identity/test_upstream_token_exchange.py``.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from mcp_providers.config import AuthConfig, ServerSettings
from mcp_providers.credentials import CredentialRefused
from mcp_providers.errors import CompositionError, UpstreamError
from mcp_providers.identity import TRUSTED_ISSUERS, Principal
from mcp_providers.plugins import upstream as upstream_plugin
from mcp_providers.plugins._issuers import IssuerScope
from mcp_providers.plugins._oauth import OnBehalfOfAuth
from mcp_providers.plugins.servicenow.auth_settings import JwtBearerAuth
from mcp_providers.plugins.upstream.oauth import TokenExchange
from mcp_providers.plugins.upstream.settings import ServerSettings as UpstreamSettings
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

CORP, PARTNER = "https://corp.idp.example.test", "https://partner.idp.example.test"


def table(**auth: Any) -> dict[str, Any]:
    oauth = {"type": "on_behalf_of", "token_endpoint": "http://127.0.0.1:9/token", "client_id_env": "U9_ISS_ID",
             "client_secret_env": "U9_ISS_SECRET", **auth}  # fmt: skip
    return {"name": "who", "url": "http://127.0.0.1:9/mcp", "prefixes": ["whoami://"], "auth": oauth}


def exchange(trusted: tuple[str, ...] | None, **auth: Any) -> TokenExchange:
    context = None if trusted is None else {TRUSTED_ISSUERS: trusted}
    return TokenExchange(UpstreamSettings.model_validate(table(**auth), context=context))


@pytest.mark.parametrize(
    ("trusted", "auth"),
    [((CORP, PARTNER), {"issuers": [CORP]}), ((CORP,), {}), (None, {"issuers": [CORP]})],
    ids=["two trusted, one named", "one trusted", "no server config, one named"],
)
async def test_a_caller_of_another_issuer_is_refused_before_the_token_endpoint_is_asked(
    trusted: tuple[str, ...] | None, auth: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("U9_ISS_ID", "gw")
    monkeypatch.setenv("U9_ISS_SECRET", "gw-secret-4d2c")
    upstream = exchange(trusted, **auth)
    with pytest.raises(CredentialRefused) as refused:
        await upstream.obtain(Principal("alice", issuer=PARTNER, access_token="partner-token-5a6b7c"))
    assert str(refused.value) == (
        "upstream 'who' (streamable-http) is reached on behalf of each caller; it serves callers of "
        f"{CORP!r} only (auth.issuers), and this caller's issuer is {PARTNER!r}"
    )
    assert upstream.requests == 0, "the token endpoint was asked"
    with pytest.raises(UpstreamError, match=r"the token endpoint .* cannot be reached"):  # the named issuer's is sent
        await upstream.obtain(Principal("alice", issuer=CORP, access_token="corp-token-1a2b3c"))
    assert upstream.requests == 1


async def test_issuers_said_to_share_users_are_both_exchanged_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("U9_ISS_ID", "gw")
    monkeypatch.setenv("U9_ISS_SECRET", "gw-secret-4d2c")
    upstream = exchange((CORP, PARTNER), issuers=[CORP, PARTNER], issuers_share_users=True)
    for issuer in (CORP, PARTNER):
        with pytest.raises(UpstreamError, match="cannot be reached"):
            await upstream.obtain(Principal("alice", issuer=issuer, access_token=f"{issuer}-token"))
    assert upstream.requests == 2


def test_settings_built_without_the_servers_config_exchange_for_any_verified_caller() -> None:
    """An embedder building settings itself vouches for its callers (as ServiceNow's jwt_bearer)."""
    assert exchange(None).on_behalf.mapped_issuers == ()
    assert exchange((CORP,)).on_behalf.mapped_issuers == (CORP,)


@pytest.mark.parametrize(
    ("issuers", "auth", "why"),
    [
        (
            (CORP, PARTNER),
            {},
            "[server.auth] trusts 2 issuers ('https://corp.idp.example.test', "
            "'https://partner.idp.example.test'), and each caller's own token is sent to "
            "auth.token_endpoint to be exchanged for a token of the same user",
        ),
        ((CORP, PARTNER), {"issuers": [CORP, PARTNER]}, "set auth.issuers_share_users = true"),
        ((CORP,), {"issuers": [PARTNER]}, f"auth.issuers: {PARTNER!r} is not trusted by [server.auth]"),
    ],
    ids=["two trusted, none named", "two named, not shared", "untrusted"],
)
def test_composing_with_whose_callers_ambiguous_is_refused(
    issuers: tuple[str, ...], auth: dict[str, Any], why: str
) -> None:
    server = ServerSettings(auth=AuthConfig(mode="jwt", issuer=issuers, resource_url="https://mcp.example.test/mcp"))
    with pytest.raises(CompositionError) as refused:
        compose({"upstream": upstream_plugin}, {"upstream": {"servers": [table(**auth)]}}, server=server)
    assert why in str(refused.value), str(refused.value)


def test_one_rule_in_one_place() -> None:
    """The upstream, OpenAPI and ServiceNow settings share the rule; ServiceNow keeps no copy."""
    assert issubclass(OnBehalfOfAuth, IssuerScope) and issubclass(JwtBearerAuth, IssuerScope)
    assert importlib.util.find_spec("mcp_providers.plugins.servicenow.issuers") is None
