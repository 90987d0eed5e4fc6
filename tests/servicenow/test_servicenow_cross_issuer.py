"""Round 4 item 1: one user served upstream as another across issuers.

A ``jwt_bearer`` instance maps a caller to a ServiceNow user by a claim (``user_claim``); a claim
value names a user only within the issuer that vouched for it. With two issuers trusted by
``[server.auth]``, issuer B's mallory whose token says ``email = alice@example.test`` must never be
served as alice: the settings are refused unless they name the issuer(s) mapped (and several only
with ``issuers_share_users = true``), and a caller of an issuer not mapped is refused before
anything is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jwt_support import OBO_CLIENT, OBO_SECRET, key_pair, obo_env, obo_instance
from mcp import MCPError
from servicenow_support import DEV_PASSWORD, DEV_USER

import mcp_providers.plugins.servicenow as servicenow_plugin
from mcp_providers.config import AuthConfig, ServerSettings
from mcp_providers.errors import DENIED, CompositionError
from mcp_providers.identity import Principal
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

CORP, PARTNER = "https://corp.idp.example.test", "https://partner.idp.example.test"
ALICE = Principal("alice", issuer=CORP, claims={"email": "alice@example.test"})
MALLORY = Principal("mallory", issuer=PARTNER, claims={"email": "alice@example.test"})
ALICE_SEES = ["INC0010001", "INC0010002", "INC0010004", "INC0010007", "INC0010008", "INC0010010"]


def jwt_auth(*issuers: str) -> ServerSettings:
    return ServerSettings(auth=AuthConfig(mode="jwt", issuer=issuers, resource_url="https://mcp.example.test/mcp"))


def composed(base_url: str, server: ServerSettings | None, **auth: Any):
    table = {"instances": [obo_instance(base_url, name="corp", auth=auth)]}
    return compose({"servicenow": servicenow_plugin}, {"servicenow": table}, server=server)


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    for name, value in {**obo_env(), "SN_TEST_DEV_PASSWORD": DEV_PASSWORD}.items():
        monkeypatch.setenv(name, value)
    grant = {"client_id": OBO_CLIENT, "client_secret": OBO_SECRET, "public_key_pem": key_pair()[1],
             "user_field": "email"}  # fmt: skip
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}, jwt_bearer=grant) as running:
        yield running


@pytest.mark.parametrize("claim", ["email", "sub"])
def test_two_trusted_issuers_without_naming_the_mapped_one_are_refused(claim):
    with pytest.raises(CompositionError) as refused:
        composed("http://127.0.0.1:9", jwt_auth(CORP, PARTNER), user_claim=claim)
    text = str(refused.value)
    assert "trusts 2 issuers" in text and CORP in text and PARTNER in text, text
    assert f"{claim!r} value names a user only within the issuer" in text and "auth.issuers" in text, text


def test_naming_two_issuers_needs_the_explicit_word_that_they_share_users():
    with pytest.raises(CompositionError) as refused:
        composed("http://127.0.0.1:9", jwt_auth(CORP, PARTNER), issuers=[CORP, PARTNER])
    assert "issuers_share_users = true" in str(refused.value)
    composed("http://127.0.0.1:9", jwt_auth(CORP, PARTNER), issuers=[CORP, PARTNER], issuers_share_users=True)


def test_an_issuer_the_server_does_not_trust_is_refused():
    with pytest.raises(CompositionError) as refused:
        composed("http://127.0.0.1:9", jwt_auth(CORP), issuers=["https://typo.idp.example.test"])
    assert "is not trusted by [server.auth]" in str(refused.value)


async def _incidents(composition: Any, principal: Principal) -> list[str]:
    async with connect(composition, principal=principal) as client:
        result = await client.read_resource("servicenow://corp/incidents")
    return sorted(r["number"] for r in json.loads(result.contents[0].text)["data"])  # type: ignore[union-attr]


async def _refused(composition: Any, principal: Principal) -> str:
    async with connect(composition, principal=principal) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("servicenow://corp/incidents")
    assert refused.value.error.code == DENIED
    return refused.value.error.message


@pytest.mark.parametrize(
    ("server", "auth"),
    [(jwt_auth(CORP, PARTNER), {"issuers": [CORP]}), (jwt_auth(CORP), {}), (None, {"issuers": [CORP]})],
    ids=["two trusted, one named", "one trusted", "no server config, one named"],
)
async def test_a_caller_of_an_issuer_not_mapped_is_refused_and_nothing_is_sent(emulator, server, auth):
    composition = composed(emulator.base_url, server, **auth)
    message = await _refused(composition, MALLORY)
    assert repr(PARTNER) in message and "auth.issuers" in message, message
    assert emulator.requests == []  # no grant asked for alice's user
    # the same subject name at the other issuer is no more alice upstream than mallory is
    await _refused(composition, Principal("alice", issuer=PARTNER, claims={"email": "alice@example.test"}))
    assert emulator.requests == []
    assert await _incidents(composition, ALICE) == ALICE_SEES


async def test_issuers_said_to_share_users_map_both(emulator):
    composition = composed(emulator.base_url, jwt_auth(CORP, PARTNER), issuers=[CORP, PARTNER],
                           issuers_share_users=True)  # fmt: skip
    assert await _incidents(composition, MALLORY) == ALICE_SEES  # the operator said so
