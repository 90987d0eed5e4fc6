"""Served behind ``[server.auth] mode = "jwt"``: real tokens from a real authorization server.

The happy paths use no hand-built token: client credentials from oidc-provider's token endpoint,
and the SDK v2 client's own login (``OAuthClientProvider``: 401, RFC 9728 metadata, RFC 8414
discovery, dynamic client registration, authorization code + PKCE with ``resource``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx2
import jwt
import pytest
from identity_support import SERVICE_CLIENT, IdentityProvider, Login, jwt_server_config, mcp_server, ts_login
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from mcp_providers import RECEIPT_KEY

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

CATALOG = "documcp://ssgs/available"
ACCEPT = {"Accept": "application/json, text/event-stream"}
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


def bearer(token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})


async def test_a_client_credentials_token_reads_a_resource(idp: IdentityProvider, tmp_path: Path) -> None:
    with mcp_server(tmp_path, jwt_server_config([idp.issuer])) as server:
        token = idp.client_credentials_token(server.url)
        async with (
            bearer(token) as http,
            Client(streamable_http_client(server.url, http_client=http), cache=None) as client,
        ):
            result = await client.read_resource(CATALOG)
    assert result.meta is not None
    receipt = result.meta[RECEIPT_KEY]
    assert (receipt["issuer"], receipt["subject"], receipt["clientId"]) == (idp.issuer, SERVICE_CLIENT, SERVICE_CLIENT)
    assert token not in server.log.read_text() and token not in server.audit.read_text()


async def test_a_token_for_another_resource_is_refused(idp: IdentityProvider, tmp_path: Path) -> None:
    with mcp_server(tmp_path, jwt_server_config([idp.issuer])) as server:
        # Same issuer, valid signature, right scope: only the audience (RFC 8707 resource) differs.
        other = idp.client_credentials_token("http://127.0.0.1:9/another-mcp-server")
        ours = idp.client_credentials_token(server.url)
        async with httpx2.AsyncClient() as http:
            refused, served = [
                await http.post(server.url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {token}"})
                for token in (other, ours)
            ]
    assert refused.status_code == 401, refused.text
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    assert served.status_code == 200, served.text
    assert other not in server.log.read_text()


async def test_the_sdk_client_logs_in_through_our_metadata_and_reads(
    idp: IdentityProvider,
    tmp_path: Path,
) -> None:
    with mcp_server(tmp_path, jwt_server_config([idp.issuer])) as server:
        async with httpx2.AsyncClient() as http:
            anonymous = await http.post(server.url, json=INITIALIZE, headers=ACCEPT)
            assert anonymous.status_code == 401
            named = re.search(r'resource_metadata="([^"]+)"', anonymous.headers["www-authenticate"])
            assert named, anonymous.headers["www-authenticate"]
            metadata = (await http.get(named.group(1))).json()
        assert metadata["resource"] == server.url and metadata["authorization_servers"] == [idp.issuer]

        login = Login("alice")
        async with (
            httpx2.AsyncClient(auth=login.provider(server.url)) as http,
            Client(streamable_http_client(server.url, http_client=http), cache=None) as client,
        ):
            result = await client.read_resource(CATALOG)
    assert json.loads(result.contents[0].text)  # type: ignore[union-attr]
    # One trip to this authorization server's endpoint, with PKCE and our resource URL.
    (sent,) = login.authorization_urls
    url = httpx2.URL(sent)
    assert sent.startswith(str(idp.metadata["authorization_endpoint"]))
    assert url.params["resource"] == server.url and url.params["code_challenge_method"] == "S256"
    assert login.storage.client_info is not None and login.storage.tokens is not None  # registered, then issued
    assert url.params["client_id"] == login.storage.client_info.client_id
    issued = jwt.decode(login.storage.tokens.access_token, options={"verify_signature": False})
    assert (issued["iss"], issued["aud"], issued["sub"]) == (idp.issuer, server.url, "alice")
    assert result.meta is not None
    receipt = result.meta[RECEIPT_KEY]
    assert (receipt["issuer"], receipt["subject"]) == (idp.issuer, "alice")


async def test_the_typescript_sdk_client_logs_in_and_reads(
    idp: IdentityProvider,
    oidc_runtime: Path,
    tmp_path: Path,
) -> None:
    with mcp_server(tmp_path, jwt_server_config([idp.issuer])) as server:
        report = ts_login(oidc_runtime, server.url, "bob", CATALOG)
    (sent,) = report["authorizationUrls"]
    url = httpx2.URL(sent)
    assert sent.startswith(str(idp.metadata["authorization_endpoint"]))
    assert url.params["resource"] == server.url and url.params["code_challenge_method"] == "S256"
    assert url.params["client_id"] == report["clientId"]
    claims = report["tokenClaims"]
    assert (claims["iss"], claims["aud"], claims["sub"], claims["groups"]) == (idp.issuer, server.url, "bob", ["staff"])
    receipt = report["result"]["_meta"][RECEIPT_KEY]
    assert (receipt["issuer"], receipt["subject"], receipt["clientId"]) == (idp.issuer, "bob", report["clientId"])
