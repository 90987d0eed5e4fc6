"""An OpenAPI service reached as each caller (RFC 8693 token exchange) or as the gateway (client
credentials), end to end.

Real parts: the authorization server (``oidc_server.mjs``, token exchange on, refusing carol), a
small FastAPI service on loopback that checks each bearer token with the authorization server's
keys (JWKS: signature, ``iss``, ``aud`` = its own origin) and answers whom it sees, and
``mcp-providers serve --http`` (``[server.auth] mode = "jwt"``) composing that service twice:
``people`` on behalf of each caller, ``gateway`` as this server's own client. alice and bob log in
(authorization code + PKCE) and read and call through the composed server: the service sees each
as themselves, the receipts and audit lines say so, and no caller's own token ever reaches it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from identity_support import (
    IdentityProvider,
    McpServer,
    authorization_code_token,
    exchange_provider,
    free_port,
    jwt_server_config,
    mcp_server,
)
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ValidationError

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.identity import Principal
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins.openapi.settings import ServiceSettings
from mcp_providers.testing import compose, connect

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

GATEWAY, GATEWAY_SECRET = "openapi-gateway", "gateway-Secr3t-for-openapi-8e2a"
ENV = {"OA_GATEWAY_ID": GATEWAY, "OA_GATEWAY_SECRET": GATEWAY_SECRET}
SERVICES = """
[[plugins.openapi.services]]
name = "people"
document = "{origin}/openapi.json"
base_url = "{origin}"

[plugins.openapi.services.auth]
type = "on_behalf_of"
token_endpoint = "{token_endpoint}"
client_id_env = "OA_GATEWAY_ID"
client_secret_env = "OA_GATEWAY_SECRET"
scope = "mcp:read"

[[plugins.openapi.services]]
name = "gateway"
document = "{origin}/openapi.json"
base_url = "{origin}"

[plugins.openapi.services.auth]
type = "client_credentials"
token_endpoint = "{token_endpoint}"
client_id_env = "OA_GATEWAY_ID"
client_secret_env = "OA_GATEWAY_SECRET"
scope = "mcp:read"
"""


@dataclass
class Service:
    """The FastAPI service's origin and what it saw: every request (``(path, sub or None, sha256
    of the bearer or None)``), and the SHA-256s of tokens it treats as revoked."""

    origin: str
    hits: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    revoked: set[str] = field(default_factory=set)

    def seen(self, path: str | None = None) -> list[tuple[str | None, str | None]]:
        """``(sub, digest)`` of the requests it accepted a token on (at ``path``, if given)."""
        return [(sub, digest) for p, sub, digest in self.hits if sub is not None and path in (None, p)]


class Note(BaseModel):
    text: str


def service_app(service: Service, issuer: str, jwks_uri: str) -> FastAPI:
    """The protected service: a bearer token of ``issuer`` whose ``aud`` is the service's origin."""
    keys = jwt.PyJWKClient(jwks_uri)
    api = FastAPI(title="People", version="1.0")

    def caller(request: Request) -> dict[str, str] | None:
        header = request.headers.get("authorization", "")
        token = header.removeprefix("Bearer ") if header.startswith("Bearer ") else None
        digest = hashlib.sha256(token.encode()).hexdigest() if token else None
        claims = None
        if token and digest not in service.revoked:
            with contextlib.suppress(jwt.PyJWTError):
                key = keys.get_signing_key_from_jwt(token)
                claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=service.origin, issuer=issuer)
        service.hits.append((request.url.path, claims["sub"] if claims else None, digest))
        return None if claims is None else {"sub": str(claims["sub"]), "client_id": str(claims.get("client_id"))}

    def refused() -> JSONResponse:
        return JSONResponse({"detail": "a bearer token of the issuer for this service"}, status_code=401)

    @api.get("/whoami", operation_id="whoami")
    def whoami(request: Request) -> Any:
        seen = caller(request)
        return refused() if seen is None else seen

    @api.post("/notes", operation_id="addNote")
    def add_note(note: Note, request: Request) -> Any:
        seen = caller(request)
        return refused() if seen is None else {**seen, "note": note.text}

    @api.get("/stubborn", operation_id="stubborn")
    def stubborn(request: Request) -> Any:
        caller(request)  # recorded, then refused whatever it is: its answer quotes the credential
        echoed = "x" * 283 + request.headers.get("authorization", "")  # the token starts 10 bytes before the cut
        return PlainTextResponse(echoed, status_code=401)

    return api


@contextlib.contextmanager
def serving(asgi: Any, port: int) -> Iterator[None]:
    """``asgi`` under uvicorn in a thread on loopback ``port``."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=0.1)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def exchange_idp(oidc_runtime: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityProvider]:
    folder = tmp_path_factory.mktemp("openapi-exchange-idp")
    with exchange_provider(oidc_runtime, folder, GATEWAY, GATEWAY_SECRET) as running:
        yield running


@pytest.fixture(scope="module")
def service(exchange_idp: IdentityProvider) -> Iterator[Service]:
    port = free_port()
    running = Service(origin=f"http://127.0.0.1:{port}")
    with serving(service_app(running, exchange_idp.issuer, str(exchange_idp.metadata["jwks_uri"])), port):
        yield running


def settings_toml(exchange_idp: IdentityProvider, service: Service) -> str:
    return SERVICES.replace("{origin}", service.origin).replace("{token_endpoint}", exchange_idp.token_endpoint)


@pytest.fixture(scope="module")
def server(
    exchange_idp: IdentityProvider, service: Service, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpServer]:
    config = jwt_server_config([exchange_idp.issuer], settings_toml(exchange_idp, service), allow=["openapi"])
    with mcp_server(tmp_path_factory.mktemp("openapi-exchange-server"), config, env=ENV) as running:
        yield running


@contextlib.asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def test_two_users_reach_the_service_as_themselves_and_the_gateway_as_its_client(
    exchange_idp: IdentityProvider, service: Service, server: McpServer
) -> None:
    tokens = {name: await authorization_code_token(exchange_idp, server.url, name) for name in ("alice", "bob")}
    for name, token in tokens.items():
        async with session(server.url, token) as client:
            read = await client.read_resource("openapi://people/whoami")
            assert json.loads(read.contents[0].text) == {"sub": name, "client_id": GATEWAY}  # type: ignore[union-attr]
            assert read.meta is not None
            assert read.meta[RECEIPT_KEY]["upstream"] == {
                "name": "openapi:people", "subject": name, "grant": "token_exchange", "service": "People 1.0",
                "operationId": "whoami", "method": "GET", "url": f"{service.origin}/whoami",
            }  # fmt: skip
            called = await client.call_tool("people_addNote", {"body": {"text": f"from {name}"}})
            assert not called.is_error, called.content
            said = json.loads(called.content[0].text)  # type: ignore[union-attr]
            assert said == {"sub": name, "client_id": GATEWAY, "note": f"from {name}"}
            pooled = await client.read_resource("openapi://gateway/whoami")  # the gateway, whoever asks
            assert json.loads(pooled.contents[0].text) == {"sub": GATEWAY, "client_id": GATEWAY}  # type: ignore[union-attr]
            assert pooled.meta is not None
            upstream = pooled.meta[RECEIPT_KEY]["upstream"]
            assert (upstream["subject"], upstream["grant"]) == (GATEWAY, "client_credentials")
    audited = [json.loads(line) for line in server.audit.read_text().splitlines()]
    served = {(a["subject"], a["upstream"]["subject"], a["upstream"]["grant"]) for a in audited if "upstream" in a}
    assert served == {("alice", "alice", "token_exchange"), ("bob", "bob", "token_exchange"),
                      ("alice", GATEWAY, "client_credentials"), ("bob", GATEWAY, "client_credentials")}  # fmt: skip
    assert {sub for sub, _ in service.seen()} >= {GATEWAY, "alice", "bob"}
    inbound = {digest(t) for t in tokens.values()}
    assert not inbound & {d for _, _, d in service.hits}, "a caller's own token reached the service"
    logged = server.log.read_text() + server.audit.read_text()
    for secret in (GATEWAY_SECRET, *tokens.values()):
        assert secret not in logged


async def test_a_refused_exchange_fails_closed_with_a_clear_error(
    exchange_idp: IdentityProvider, service: Service, server: McpServer
) -> None:
    token = await authorization_code_token(exchange_idp, server.url, "carol")
    before = len(service.hits)
    async with session(server.url, token) as client:
        asks = (
            lambda: client.read_resource("openapi://people/whoami"),
            lambda: client.call_tool("people_addNote", {"body": {"text": "from carol"}}),
        )
        for ask in asks:
            with pytest.raises(MCPError) as refused:
                await ask()
            assert refused.value.error.code == -32003
            assert refused.value.error.message.startswith(
                "service 'people': the authorization server refused a token exchange for caller 'carol' "
                "(HTTP 400: invalid_grant"
            )
            assert token not in refused.value.error.message
    assert len(service.hits) == before, "a request was sent for a caller whose exchange was refused"


async def test_a_token_the_service_rejects_is_exchanged_anew_once_and_the_request_served(
    exchange_idp: IdentityProvider, service: Service, server: McpServer
) -> None:
    token = await authorization_code_token(exchange_idp, server.url, "bob")
    async with session(server.url, token) as client:
        await client.read_resource("openapi://people/whoami")
        bobs = {d for sub, d in service.seen() if sub == "bob"}
        service.revoked |= {d for d in bobs if d is not None}  # every token of bob's it has seen
        before = len(service.hits)
        read = await client.read_resource("openapi://people/whoami")
        assert json.loads(read.contents[0].text)["sub"] == "bob"  # type: ignore[union-attr]
        after = service.hits[before:]
        assert [(sub is None, d in bobs) for _, sub, d in after] == [(True, True), (False, False)]  # 401, then anew
        bobs = {d for sub, d in service.seen() if sub == "bob"}
        service.revoked |= {d for d in bobs if d is not None}
        before = len(service.hits)
        called = await client.call_tool("people_addNote", {"body": {"text": "again"}})  # a POST body, sent twice
        assert json.loads(called.content[0].text) == {"sub": "bob", "client_id": GATEWAY, "note": "again"}  # type: ignore[union-attr]
    after = service.hits[before:]
    assert [(sub is None, d in bobs) for _, sub, d in after] == [(True, True), (False, False)]


async def test_a_service_answering_401_to_every_token_is_asked_twice_and_its_answer_is_masked(
    exchange_idp: IdentityProvider, service: Service, server: McpServer
) -> None:
    token = await authorization_code_token(exchange_idp, server.url, "alice")
    before = len(service.hits)
    async with session(server.url, token) as client:
        with pytest.raises(MCPError) as failed:
            await client.read_resource("openapi://people/stubborn")
    assert failed.value.error.code == -32006
    message = failed.value.error.message
    assert "stubborn (GET /stubborn) failed with HTTP 401: " + "x" * 283 + "Bearer [redacted]" in message
    attempts = [(sub, d) for path, sub, d in service.hits[before:] if path == "/stubborn"]
    assert len(attempts) == 2 and {sub for sub, _ in attempts} == {"alice"}, attempts  # once more, not again
    assert len({d for _, d in attempts}) == 2  # the second with a new token
    assert token not in message and "eyJ" not in message


async def test_a_caller_without_a_verified_token_is_refused_before_anything_is_sent(
    exchange_idp: IdentityProvider, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    people = {"name": "people", "document": f"{service.origin}/openapi.json", "base_url": service.origin,
              "auth": {"type": "on_behalf_of", "token_endpoint": exchange_idp.token_endpoint,
                       "client_id_env": "OA_GATEWAY_ID", "client_secret_env": "OA_GATEWAY_SECRET"}}  # fmt: skip
    composed = compose({"openapi": openapi_plugin}, {"openapi": {"services": [people]}})
    [resources] = [d.provider for d in composed.assembly.declared if d.provider.name == "openapi-people"]
    before = len(service.hits)
    bare = Principal("alice", issuer=exchange_idp.issuer)  # who, but no verified token to exchange
    async with composed.running():
        for principal in (None, bare):
            async with connect(composed, principal=principal) as client:
                with pytest.raises(MCPError) as refused:
                    await client.read_resource("openapi://people/whoami")
                assert refused.value.error.code == -32003
                assert "brought no verified access token to exchange" in refused.value.error.message
                with pytest.raises(MCPError) as called:
                    await client.call_tool("people_addNote", {"body": {"text": "hello"}})
                assert called.value.error.code == -32003
    assert len(service.hits) == before, "a request reached the service"
    assert resources.service.oauth.requests == 0, "a token request was sent"


@pytest.mark.parametrize("kind", ["on_behalf_of", "client_credentials"])
def test_the_oauth_settings_are_the_upstream_plugins(kind: str) -> None:
    oauth = {"type": kind, "token_endpoint": "https://idp.example.com/token", "client_id_env": "CID",
             "client_secret_env": "CSECRET", "scope": "tickets:read"}  # fmt: skip
    table = {"name": "tickets", "document": "https://tickets.example.com/openapi.json"}
    assert ServiceSettings.model_validate({**table, "auth": oauth}).auth.type == kind  # type: ignore[union-attr]
    remote = {**oauth, "token_endpoint": "http://idp.example.com/token"}
    with pytest.raises(ValidationError, match="is plain http to a host that is not loopback, so the client secret"):
        ServiceSettings.model_validate({**table, "auth": remote})
    secret = "sk_live_51HxSecretValue"
    with pytest.raises(ValidationError, match="must be the NAME of one of our environment variables") as pasted:
        ServiceSettings.model_validate({**table, "auth": {**oauth, "client_secret_env": f"{secret}!"}})
    assert secret not in str(pasted.value)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):  # an upstream session setting
        ServiceSettings.model_validate({**table, "auth": {**oauth, "idle_seconds": 5}})
