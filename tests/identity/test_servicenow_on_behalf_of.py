"""ServiceNow on behalf of the caller, end to end over HTTP: two users (alice, bob) of the real
authorization server log in, call ``mcp-providers serve --http`` with a real MCP client, and the
server reaches a multi-user ServiceNow emulator as each of them through the JWT bearer grant
(``sub`` = the ``email`` claim of their access token).

The emulator's ACLs (``plugins/servicenow/seed.py``) on ``dev``: of the active incidents alice
sees INC0010001/02/04/07/08/10, bob INC0010001/03/04/07/09/10.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from identity_support import IdentityProvider, authorization_code_token, jwt_server_config, mcp_server
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client

from mcp_providers.plugins.servicenow.emulator import Emulator

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

CLIENT_ID = "mcp-on-behalf"
CLIENT_SECRET = "obo-e2e-Cl1ent-S3cret-77c1"
ADMIN, ADMIN_PASSWORD = "sn.admin", "sn-Adm1n-e2e-4c0d"
"""A service account of the emulator, used only by the test itself (as the instance's administrator)."""
SEES = {"alice": ["INC0010001", "INC0010002", "INC0010004", "INC0010007", "INC0010008", "INC0010010"],
        "bob": ["INC0010001", "INC0010003", "INC0010004", "INC0010007", "INC0010009", "INC0010010"]}  # fmt: skip
HIDDEN = {"alice": ("INC0010003", "INC0010009"), "bob": ("INC0010002", "INC0010008")}
INCIDENT = types.ResourceTemplateReference(type="ref/resource", uri="servicenow://{instance}/incidents/{number}")

INSTANCE = """
[[plugins.servicenow.instances]]
name = "corp"
url = "{emulator}"
live_poll = false
timeout_seconds = 10

[plugins.servicenow.instances.auth]
type = "jwt_bearer"
client_id = "{client}"
client_secret_env = "SN_E2E_OBO_SECRET"
private_key_env = "SN_E2E_OBO_KEY"
user_claim = "email"
"""


@pytest.fixture(scope="module")
def keys() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()  # fmt: skip
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()  # fmt: skip
    return private, public


@pytest.fixture
def emulator(keys: tuple[str, str]) -> Iterator[Emulator]:
    grant = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "public_key_pem": keys[1], "user_field": "email"}
    with Emulator("dev", jwt_bearer=grant, users={ADMIN: ADMIN_PASSWORD}) as running:
        yield running


@pytest.fixture
def server(idp: IdentityProvider, emulator: Emulator, keys: tuple[str, str], tmp_path: Path) -> Iterator[Any]:
    config = jwt_server_config(
        [idp.issuer],
        INSTANCE.replace("{emulator}", emulator.base_url).replace("{client}", CLIENT_ID),
        allow=["servicenow"],
        auth='claims = ["email"]',
    )
    env = {"SN_E2E_OBO_SECRET": CLIENT_SECRET, "SN_E2E_OBO_KEY": keys[0]}
    with mcp_server(tmp_path, config, env=env) as running:
        yield running


@contextlib.asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    """A real MCP client over streamable HTTP presenting ``token``."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


async def body(client: Client, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    return dict(json.loads(result.contents[0].text))  # type: ignore[union-attr]


async def test_two_users_read_write_and_complete_as_themselves(idp, emulator, server):
    tokens = {name: await authorization_code_token(idp, server.url, name) for name in ("alice", "bob")}
    for name, token in tokens.items():
        async with session(server.url, token) as client:
            listed = await body(client, "servicenow://corp/incidents")
            assert sorted(r["number"] for r in listed["data"]) == SEES[name]
            one = await body(client, f"servicenow://corp/incidents/{SEES[name][1]}")
            assert one["data"]["number"] == SEES[name][1]
            for number in HIDDEN[name]:
                with pytest.raises(MCPError) as hidden:
                    await client.read_resource(f"servicenow://corp/incidents/{number}")
                assert hidden.value.error.message.endswith(f"no incident {number} on instance 'corp'")
            values = (await client.complete(INCIDENT, {"name": "number", "value": "INC"},
                                            {"instance": "corp"})).completion.values  # fmt: skip
            assert sorted(values) == SEES[name]
            shown = await client.get_prompt("servicenow-incident-brief", {"instance": "corp", "number": SEES[name][1]})
            assert json.loads(shown.messages[1].content.resource.text)["data"]["number"] == SEES[name][1]  # type: ignore[union-attr]
            queried = await client.call_tool("servicenow_query_table", {
                "instance": "corp", "table": "incident", "fields": ["number"],
                "filters": [{"field": "active", "value": "true"}]})  # fmt: skip
            assert queried.structured_content is not None
            assert sorted(r["number"] for r in queried.structured_content["records"]) == SEES[name]
    async with session(server.url, tokens["alice"]) as client:
        note = await client.call_tool(
            "servicenow_add_comment",
            {"instance": "corp", "number": "INC0010002", "text": "Router replaced", "kind": "work_note"},
        )
        assert not note.is_error, note.content
    record = next(r for r in emulator.records("incident") if r["number"] == "INC0010002")
    assert record["sys_updated_by"] == "alice"
    (entry,) = [j for j in emulator.records("sys_journal_field") if j["element_id"] == record["sys_id"]]
    assert (entry["element"], entry["sys_created_by"]) == ("work_notes", "alice")
    assert [r.status for r in emulator.token_requests()] == [200, 200]  # one grant per user, all calls
    audited = [json.loads(line) for line in server.audit.read_text().splitlines()]
    served = {(a["subject"], a["upstream"]["subject"], a["upstream"]["grant"]) for a in audited if "upstream" in a}
    assert served == {("alice", "alice@example.test", "jwt_bearer"), ("bob", "bob@example.test", "jwt_bearer")}
    log = server.log.read_text() + server.audit.read_text()
    for secret in (CLIENT_SECRET, *tokens.values(), *emulator.issued_tokens()):
        assert secret not in log


async def test_a_revoked_token_is_replaced_once_then_a_refused_grant_is_one_clear_error(idp, emulator, server):
    token = await authorization_code_token(idp, server.url, "alice")
    async with session(server.url, token) as client:
        await body(client, "servicenow://corp/incidents")
        assert emulator.revoke_user_tokens("alice") == 1
        assert len((await body(client, "servicenow://corp/incidents"))["data"]) == len(SEES["alice"])
        assert [r.status for r in emulator.token_requests()] == [200, 200]
        alice = next(u for u in emulator.records("sys_user") if u["user_name"] == "alice")
        async with httpx2.AsyncClient(base_url=emulator.base_url, auth=(ADMIN, ADMIN_PASSWORD)) as admin:
            answer = await admin.patch(f"/api/now/table/sys_user/{alice['sys_id']}", json={"active": "false"})
            assert answer.status_code == 200, answer.text
        emulator.revoke_user_tokens("alice")
        with pytest.raises(MCPError) as refused:
            await client.read_resource("servicenow://corp/incidents")
    assert refused.value.error.code == -32003
    assert "refused a token for ServiceNow user 'alice@example.test'" in refused.value.error.message
    assert [r.status for r in emulator.token_requests()] == [200, 200, 401]  # one refresh, refused: no more


async def test_50_concurrent_reads_one_grant_per_user_and_anonymous_refused(idp, emulator, server):
    tokens = {name: await authorization_code_token(idp, server.url, name) for name in ("alice", "bob")}
    for count, name in enumerate(("alice", "bob"), start=1):
        async with session(server.url, tokens[name]) as client, anyio.create_task_group() as group:
            for i in range(50):
                group.start_soon(client.read_resource, f"servicenow://corp/incidents/{SEES[name][i % 6]}")
        assert [r.status for r in emulator.token_requests()] == [200] * count
    before = len(emulator.requests)
    async with httpx2.AsyncClient(timeout=10) as http:  # no token: the server itself answers 401
        answer = await http.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert answer.status_code == 401 and len(emulator.requests) == before
