"""Per-user access (jwt_bearer): the defects a fresh-eyes trial found, as tests.

Thirty concurrent requests refused with one revoked token ask one new token between them (each
forgets only the token that failed); a subject whose user claim changed is served as the new
ServiceNow user, not from the old one's cached token; a user token the instance echoes in an error
is masked in the read's error and the tool's result.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from jwt_support import OBO_CLIENT, OBO_SECRET, key_pair, obo_env, obo_instance
from mcp import MCPError
from servicenow_support import DEV_PASSWORD, DEV_USER, compose_servicenow

from mcp_providers import RECEIPT_KEY
from mcp_providers.identity import Principal
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

ALICE_SEES = ["INC0010001", "INC0010002", "INC0010004", "INC0010007", "INC0010008", "INC0010010"]
BOB_SEES = ["INC0010001", "INC0010003", "INC0010004", "INC0010007", "INC0010009", "INC0010010"]


@pytest.fixture
def issuer() -> str:
    return f"https://idp-{secrets.token_hex(4)}.example.test"


def person(issuer: str, subject: str, email: str | None = None) -> Principal:
    return Principal(
        subject, issuer=issuer, client_id="mcp-client", claims={"email": email or f"{subject}@example.test"}
    )


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    for name, value in {**obo_env(), "SN_TEST_DEV_PASSWORD": DEV_PASSWORD}.items():
        monkeypatch.setenv(name, value)
    grant = {
        "client_id": OBO_CLIENT,
        "client_secret": OBO_SECRET,
        "public_key_pem": key_pair()[1],
        "user_field": "email",
    }
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}, jwt_bearer=grant) as running:
        yield running


@pytest.fixture
def composition(emulator: Emulator) -> Any:
    return compose_servicenow(obo_instance(emulator.base_url, name="corp"))


async def body(client: Any, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    return dict(json.loads(result.contents[0].text))


def numbers(records: list[dict[str, Any]]) -> list[str]:
    return sorted(r["number"] if isinstance(r["number"], str) else r["number"]["value"] for r in records)


async def test_concurrent_requests_after_a_revocation_ask_one_new_token(composition, issuer, emulator):
    """One revoked token, ten concurrent tool calls of the same user: each sees 401, each forgets the
    cache entry (even the fresh one another call just obtained), so more than one new token is asked."""
    async with connect(composition, principal=person(issuer, "alice")) as client:
        await body(client, "servicenow://corp/incidents")
        assert len(emulator.token_requests()) == 1
        emulator.revoke_user_tokens("alice")

        async def one(i: int) -> None:
            await client.call_tool(
                "servicenow_query_table",
                {"instance": "corp", "table": "incident", "fields": ["number"], "limit": i + 1},
            )

        async with anyio.create_task_group() as group:
            for i in range(30):
                group.start_soon(one, i)
    statuses = [r.status for r in emulator.token_requests()]
    assert statuses == [200, 200], statuses


async def test_a_subject_whose_user_claim_changed_acts_as_the_new_user(emulator, composition, issuer):
    """One (issuer, subject) whose token now carries another email (the user_claim): the broker's
    key ignores the claim, so the cached token of the *previous* ServiceNow user is used."""
    before = person(issuer, "u-123", "alice@example.test")
    after = person(issuer, "u-123", "bob@example.test")
    async with connect(composition, principal=before) as client:
        assert numbers((await body(client, "servicenow://corp/incidents"))["data"]) == ALICE_SEES
    async with connect(composition, principal=after) as client:
        result = await client.read_resource("servicenow://corp/incidents")
    seen = numbers(json.loads(result.contents[0].text)["data"])
    receipt = (result.meta or {})[RECEIPT_KEY]
    assert seen == BOB_SEES, f"acts as bob@ but saw alice's view; receipt upstream {receipt.get('upstream')}"


async def test_a_user_token_echoed_by_the_instance_is_masked(composition, issuer, emulator):
    """The instance answers 500 quoting the user token (without an Authorization/Bearer prefix)."""
    async with connect(composition, principal=person(issuer, "alice")) as client:
        await body(client, "servicenow://corp/incidents")
        (token,) = emulator.issued_tokens()
        emulator.fail_next(1, status=500, message=f"Session {token} failed", scope="table")
        with pytest.raises(MCPError) as failed:
            await client.read_resource("servicenow://corp/incidents")
        emulator.fail_next(1, status=500, message=f"Session {token} failed", scope="table")
        tool = await client.call_tool("servicenow_query_table", {"instance": "corp", "table": "incident"})
    text = json.dumps(failed.value.error.model_dump(mode="json")) + json.dumps(tool.model_dump(mode="json"))
    assert token not in text


@pytest.mark.parametrize("kind", ["ec", "rsa1024", "garbage"])
async def test_check_warns_of_a_private_key_that_cannot_sign(emulator, monkeypatch, caplog, kind):
    """A key that is set but cannot sign (EC, 1024-bit RSA, not PEM) is warned of by check, plugins
    and serve, as an unset variable is, naming the variable and never showing the value."""
    import logging

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    from mcp_providers.testing import check

    def pem(k: Any) -> str:
        return k.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()

    value = {
        "ec": lambda: pem(ec.generate_private_key(ec.SECP256R1())),
        "rsa1024": lambda: pem(rsa.generate_private_key(public_exponent=65537, key_size=1024)),
        "garbage": lambda: "garbage-key-material-0451",
    }[kind]()
    monkeypatch.setenv("SN_TEST_OBO_KEY", value)
    with caplog.at_level(logging.WARNING):
        composition = compose_servicenow(obo_instance(emulator.base_url, name="corp"))
        problems = await check(composition)
    said = problems + [r.getMessage() for r in caplog.records if "SN_TEST_OBO_KEY" in r.getMessage()]
    assert said, "check passed and nothing named SN_TEST_OBO_KEY"
    assert value not in caplog.text and value not in " ".join(problems)
