"""Bearer tokens over streamable HTTP: the verified subject reaches policy, receipts and the audit log."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from test_clients import _http_server

from mcp_providers import RECEIPT_KEY

pytestmark = pytest.mark.anyio

ALICE = "alice-token-5f0c9b7e"
BOB = "bob-token-0a1d2c3b"


def write_config(tmp_path: Path) -> Path:
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "config.toml"
    config.write_text(f"""
allow = ["ssg_catalog", "policy"]

[server]
audit_log = "{audit}"

[server.auth]
tokens = [{{subject = "alice", token_env = "TEST_ALICE_TOKEN"}}, {{subject = "bob", token_env = "TEST_BOB_TOKEN"}}]

[plugins.policy]
[[plugins.policy.rules]]
effect = "deny"
subjects = ["bob"]
actions = ["read", "expand"]
targets = ["documcp://ssgs/*"]
reason = "bob may not read the catalog"
""")
    return config


async def test_bearer_subject_is_authorized_receipted_and_audited(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    env = {"MCP_PROVIDERS_CONFIG": str(config), "TEST_ALICE_TOKEN": ALICE, "TEST_BOB_TOKEN": BOB}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with _http_server() as url:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}) as http,
                Client(streamable_http_client(url, http_client=http), cache=None) as alice,
            ):
                result = await alice.read_resource("documcp://ssgs/available")
                assert result.meta is not None and result.meta[RECEIPT_KEY]["subject"] == "alice"
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {BOB}"}) as http,
                Client(streamable_http_client(url, http_client=http), cache=None) as bob,
            ):
                with pytest.raises(MCPError) as err:
                    await bob.read_resource("documcp://ssgs/available")
                assert err.value.code == -32003 and "bob may not read the catalog" in err.value.message
            async with httpx2.AsyncClient() as anonymous:
                response = await anonymous.post(
                    url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={"Accept": "application/json, text/event-stream"},
                )
                assert response.status_code == 401
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    reads = [line for line in lines if line["operation"] == "resources/read"]
    # One line per request, named by its method; a denial also says which action was refused.
    assert [(r["subject"], r["decision"]) for r in reads] == [("alice", "allowed"), ("bob", "denied")]
    denials = [line for line in lines if line["decision"] == "denied"]
    assert len(denials) == 1 and denials[0]["subject"] == "bob" and "bob may not read" in denials[0]["reason"]
    assert denials[0]["action"] == "read" and denials[0]["operation"] == "resources/read"
    text = (tmp_path / "audit.jsonl").read_text()
    assert ALICE not in text and BOB not in text  # never secrets
    assert '"ssgs"' not in text  # never content
    assert all(line["subject"] in ("alice", "bob") for line in lines)


async def test_the_bearer_gate_gives_each_access_token_its_own_user() -> None:
    """The gate makes the SDK's user objects once per access token object a verifier answers with
    (a remembered JWT), and new ones for another token: one caller never gets another's user."""
    from mcp.server.auth.provider import AccessToken

    from mcp_providers._serve.identity.server import ResourceServer
    from mcp_providers._serve.transport.auth import BearerGate

    tokens = {name: AccessToken(token=name, client_id=name, scopes=["s"], expires_at=None) for name in ("t-a", "t-b")}

    class Verifier:
        async def verify_token(self, token: str) -> AccessToken | None:
            return tokens.get(token) or AccessToken(token=token, client_id=token, scopes=[], expires_at=None)

    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        from mcp.server.auth.middleware.auth_context import get_access_token

        assert get_access_token() is scope["user"].access_token  # the SDK's accessor sees it too
        seen.append((scope["user"], scope["auth"]))

    gate = BearerGate(app, ResourceServer(Verifier(), None, (), ()), "/mcp")
    for token in ("t-a", "t-b", "t-a", "fresh-1", "fresh-2"):
        await gate({"type": "http", "headers": [(b"authorization", f"Bearer {token}".encode())]}, None, None)  # type: ignore[arg-type]
    users = [user for user, _ in seen]
    assert [u.access_token.token for u in users] == ["t-a", "t-b", "t-a", "fresh-1", "fresh-2"]
    assert users[0] is users[2] and users[0] is not users[1]
    assert seen[0][1].scopes == ["s"] and seen[3][1].scopes == []
    from mcp.server.auth.middleware.auth_context import get_access_token

    assert get_access_token() is None  # reset once the request is done


async def test_two_authorization_headers_are_an_invalid_request() -> None:
    """RFC 6750 §3.1: a request presenting more than one token is ``invalid_request`` (400); taking
    the first would let whatever sits in front of the server judge another token than we do."""
    from mcp.server.auth.provider import AccessToken

    from mcp_providers._serve.identity.server import ResourceServer
    from mcp_providers._serve.transport.auth import BearerGate

    class Verifier:
        async def verify_token(self, token: str) -> AccessToken | None:
            return AccessToken(token=token, client_id=token, scopes=[], expires_at=None)

    passed: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        passed.append(scope["user"].access_token.token)

    async def send(message: Any) -> None:
        sent.append(message)

    gate = BearerGate(app, ResourceServer(Verifier(), None, (), ()), "/mcp")
    two = [(b"authorization", b"Bearer token-one"), (b"authorization", b"Bearer token-two")]
    await gate({"type": "http", "headers": two}, None, send)  # type: ignore[arg-type]
    assert passed == [] and sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["error"] == "invalid_request"
    await gate({"type": "http", "headers": two[:1]}, None, send)  # type: ignore[arg-type]
    assert passed == ["token-one"]
