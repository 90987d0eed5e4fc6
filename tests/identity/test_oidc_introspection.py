"""Served behind ``[server.auth] mode = "introspection"``: opaque tokens the real authorization server
vouches for (RFC 7662), asked with the server's own client credentials."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from identity_support import (
    INTROSPECTION_CLIENT,
    INTROSPECTION_SECRET,
    IdentityProvider,
    authorization_code_token,
    jwt_server_config,
    mcp_server,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from mcp_providers import RECEIPT_KEY

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

CATALOG = "documcp://ssgs/available"
# Every answer is asked afresh (no cache), so a revocation is seen on the next request.
INTROSPECTION = """
client_id_env = "TEST_INTROSPECTION_CLIENT_ID"
client_secret_env = "TEST_INTROSPECTION_CLIENT_SECRET"
introspection_cache_seconds = 0
"""
CREDENTIALS = {
    "TEST_INTROSPECTION_CLIENT_ID": INTROSPECTION_CLIENT,
    "TEST_INTROSPECTION_CLIENT_SECRET": INTROSPECTION_SECRET,
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def initialize(url: str, token: str) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {token}"})


async def test_an_opaque_token_is_introspected_and_refused_once_revoked(idp: IdentityProvider, tmp_path: Path) -> None:
    config = jwt_server_config([idp.issuer], mode="introspection", auth=INTROSPECTION)
    with mcp_server(tmp_path, config, env=CREDENTIALS) as server:
        token = await authorization_code_token(idp, server.url, "alice", opaque=True)
        assert token.count(".") != 2  # opaque: only the introspection endpoint can read it
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(server.url, http_client=http), cache=None) as client,
        ):
            result = await client.read_resource(CATALOG)
        client_id = idp.introspect(token)["client_id"]
        idp.revoke(token, client_id)
        assert idp.introspect(token) == {"active": False}
        revoked = await initialize(server.url, token)
        other = await authorization_code_token(idp, "http://127.0.0.1:9/another-mcp-server", "alice", opaque=True)
        elsewhere = await initialize(server.url, other)
    assert result.meta is not None
    receipt = result.meta[RECEIPT_KEY]
    assert (receipt["issuer"], receipt["subject"], receipt["clientId"]) == (idp.issuer, "alice", client_id)
    assert revoked.status_code == 401 and "resource_metadata=" in revoked.headers["www-authenticate"]
    assert elsewhere.status_code == 401  # active, but issued for another resource
    log = server.log.read_text() + server.audit.read_text()
    assert token not in log and other not in log and INTROSPECTION_SECRET not in log
