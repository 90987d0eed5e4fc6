"""An upstream MCP server on behalf of each caller, by RFC 8693 token exchange, end to end.

Real parts, started once for the module: the authorization server (``oidc_server.mjs`` with its
token exchange grant on, refusing carol), an SDK v2 upstream (``upstream_whoami.py``) that checks
bearer tokens with the authorization server's keys and answers whom it sees, and
``mcp-providers serve --http`` composing that upstream twice: ``on_behalf_of`` (as ``who``) and
``client_credentials`` (as ``svc``, re-homed under ``svc://``). alice and bob log in
(authorization code + PKCE), call the same upstream tool and read the same upstream resource
through the composed server: the upstream sees each as themselves, never their own token.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from identity_support import (
    HERE,
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
from prefork import python
from waiting import await_until, wait_until

from mcp_providers.config import AuthConfig
from mcp_providers.config import ServerSettings as Server
from mcp_providers.credentials import CredentialRefused
from mcp_providers.errors import DENIED
from mcp_providers.identity import Principal
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins import upstream as upstream_plugin
from mcp_providers.plugins.upstream.oauth import TokenExchange
from mcp_providers.plugins.upstream.settings import ServerSettings
from mcp_providers.testing import compose, connect

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

GATEWAY, GATEWAY_SECRET = "mcp-gateway", "gateway-Secr3t-for-exchange-5d1c"
UPSTREAM = """
[[plugins.upstream.servers]]
name = "who"
url = "{upstream}"
prefixes = ["whoami://"]
read_timeout = 10

[plugins.upstream.servers.auth]
type = "on_behalf_of"
token_endpoint = "{token_endpoint}"
client_id_env = "U3_GATEWAY_ID"
client_secret_env = "U3_GATEWAY_SECRET"
scope = "mcp:read"

[[plugins.upstream.servers]]
name = "svc"
url = "{upstream}"
namespace = "svc"
tool_prefix = "svc_"

[plugins.upstream.servers.auth]
type = "client_credentials"
token_endpoint = "{token_endpoint}"
client_id_env = "U3_GATEWAY_ID"
client_secret_env = "U3_GATEWAY_SECRET"
scope = "mcp:read"
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def exchange_idp(oidc_runtime: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityProvider]:
    folder = tmp_path_factory.mktemp("exchange-idp")
    with exchange_provider(oidc_runtime, folder, GATEWAY, GATEWAY_SECRET) as running:
        yield running


@pytest.fixture(scope="module")
def upstream(exchange_idp: IdentityProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    port = free_port()
    folder = tmp_path_factory.mktemp("whoami-upstream")
    log, revoked = folder / "upstream.log", folder / "revoked"
    command = [*python(), str(HERE / "upstream_whoami.py"), str(port), exchange_idp.issuer, str(revoked)]
    with log.open("w") as err:
        proc = subprocess.Popen(command, stdout=err, stderr=err)

    def listening() -> bool:
        with contextlib.closing(socket.socket()) as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(listening, "the whoami upstream listens", alive=proc)
        yield {"url": f"http://127.0.0.1:{port}/mcp", "log": log, "revoked": revoked}
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def server(
    exchange_idp: IdentityProvider, upstream: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpServer]:
    settings = UPSTREAM.replace("{upstream}", upstream["url"]).replace("{token_endpoint}", exchange_idp.token_endpoint)
    config = jwt_server_config([exchange_idp.issuer], settings, allow=["upstream"])
    env = {"U3_GATEWAY_ID": GATEWAY, "U3_GATEWAY_SECRET": GATEWAY_SECRET}
    with mcp_server(tmp_path_factory.mktemp("exchange-server"), config, env=env) as running:
        yield running


@contextlib.asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


def seen_by_upstream(log: Path) -> list[tuple[str, str]]:
    """``(sub, sha256 of the token)`` of every token the upstream accepted, in order."""
    return [tuple(line.split()[1:3]) for line in log.read_text().splitlines() if line.startswith("SEEN ")]  # type: ignore[misc]


async def test_two_users_reach_the_upstream_as_themselves_by_token_exchange(
    exchange_idp: IdentityProvider, upstream: dict[str, Any], server: McpServer
) -> None:
    tokens = {name: await authorization_code_token(exchange_idp, server.url, name) for name in ("alice", "bob")}
    for name, token in tokens.items():
        async with session(server.url, token) as client:
            called = await client.call_tool("whoami", {})
            assert called.structured_content is not None
            assert json.loads(called.structured_content["result"]) == {"sub": name, "client_id": GATEWAY}
            read = await client.read_resource("whoami://me")
            assert json.loads(read.contents[0].text) == {"sub": name, "client_id": GATEWAY}  # type: ignore[union-attr]
            assert read.meta is not None
            assert read.meta[RECEIPT_KEY]["upstream"] == {
                "name": "who", "subject": name, "grant": "token_exchange", "transport": "streamable-http",
                "serverInfo": "whoami-upstream 1.0", "uri": "whoami://me",
            }  # fmt: skip
            pooled = await client.read_resource("svc://whoami/me")  # client_credentials: the gateway, whoever asks
            assert json.loads(pooled.contents[0].text) == {"sub": GATEWAY, "client_id": GATEWAY}  # type: ignore[union-attr]
            assert pooled.meta is not None
            assert pooled.meta[RECEIPT_KEY]["upstream"]["grant"] == "client_credentials"
    audited = [json.loads(line) for line in server.audit.read_text().splitlines()]
    served = {(a["subject"], a["upstream"]["subject"], a["upstream"]["grant"]) for a in audited if "upstream" in a}
    assert served == {("alice", "alice", "token_exchange"), ("bob", "bob", "token_exchange"),
                      ("alice", GATEWAY, "client_credentials"), ("bob", GATEWAY, "client_credentials")}  # fmt: skip
    seen = seen_by_upstream(upstream["log"])
    assert {sub for sub, _ in seen} == {GATEWAY, "alice", "bob"}  # the gateway itself listed it at start
    inbound = {hashlib.sha256(t.encode()).hexdigest() for t in tokens.values()}
    assert not inbound & {digest for _, digest in seen}, "a caller's own token reached the upstream"
    logged = server.log.read_text() + server.audit.read_text()
    for secret in (GATEWAY_SECRET, *tokens.values()):
        assert secret not in logged


async def test_a_refused_exchange_is_a_clear_error_and_nothing_is_served(
    exchange_idp: IdentityProvider, upstream: dict[str, Any], server: McpServer
) -> None:
    token = await authorization_code_token(exchange_idp, server.url, "carol")
    async with session(server.url, token) as client:
        for ask in (lambda: client.call_tool("whoami", {}), lambda: client.read_resource("whoami://me")):
            with pytest.raises(MCPError) as refused:
                await ask()
            assert refused.value.error.code == -32003
            assert refused.value.error.message.startswith(
                "upstream 'who' (streamable-http): the authorization server refused a token exchange for "
                "caller 'carol' (HTTP 400: invalid_grant"
            )
            assert token not in refused.value.error.message
    assert "carol" not in {sub for sub, _ in seen_by_upstream(upstream["log"])}


async def test_a_token_the_upstream_revoked_is_exchanged_anew_once_and_the_request_served(
    exchange_idp: IdentityProvider, upstream: dict[str, Any], server: McpServer
) -> None:
    token = await authorization_code_token(exchange_idp, server.url, "bob")
    async with session(server.url, token) as client:
        await client.read_resource("whoami://me")
        bobs = [digest for sub, digest in seen_by_upstream(upstream["log"]) if sub == "bob"]
        upstream["revoked"].write_text("\n".join(bobs))  # every token of bob's the upstream has seen
        read = await client.read_resource("whoami://me")
        assert json.loads(read.contents[0].text)["sub"] == "bob"  # type: ignore[union-attr]
    fresh = [digest for sub, digest in seen_by_upstream(upstream["log"]) if sub == "bob" and digest not in bobs]
    assert len(set(fresh)) == 1  # one new exchange, used from then on


async def test_each_caller_has_one_upstream_session_closed_when_idle(
    exchange_idp: IdentityProvider, upstream: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("U3_GATEWAY_ID", GATEWAY)
    monkeypatch.setenv("U3_GATEWAY_SECRET", GATEWAY_SECRET)
    settings = {"servers": [{
        "name": "who", "url": upstream["url"], "prefixes": ["whoami://"], "read_timeout": 10,
        "auth": {"type": "on_behalf_of", "token_endpoint": exchange_idp.token_endpoint,
                 "client_id_env": "U3_GATEWAY_ID", "client_secret_env": "U3_GATEWAY_SECRET", "scope": "mcp:read",
                 "idle_seconds": 4}}]}  # fmt: skip  # long enough for the four calls on a loaded machine
    composed = compose({"upstream": upstream_plugin}, {"upstream": settings})
    [link] = [d.provider.link for d in composed.assembly.declared if d.provider.name == "upstream-who-tools"]
    callers = {}
    for name in ("alice", "bob"):
        token = await authorization_code_token(exchange_idp, "http://127.0.0.1:9/mcp", name)
        callers[name] = Principal(name, issuer=exchange_idp.issuer, access_token=token)
    async with composed.running():
        for name in ("alice", "bob", "alice", "bob"):
            async with connect(composed, principal=callers[name]) as client:
                called = await client.call_tool("whoami", {})
                assert called.structured_content is not None
                assert json.loads(called.structured_content["result"])["sub"] == name
        assert (len(link.sessions), link.sessions.opened) == (2, 2)  # one each, kept between requests
        await await_until(lambda: len(link.sessions) == 0, "the idle sessions are closed")


async def test_tokens_of_one_subject_with_other_scopes_or_client_get_their_own_exchange_and_session(
    exchange_idp: IdentityProvider, upstream: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tester r12, finding 1: the pool kept alice's session (and the broker her exchanged token)
    under issuer, subject and claims only, so a later token of hers with narrower scopes or of
    another OAuth client was served over the session, and with the token, of the first."""
    monkeypatch.setenv("U3_GATEWAY_ID", GATEWAY)
    monkeypatch.setenv("U3_GATEWAY_SECRET", GATEWAY_SECRET)
    settings = {"servers": [{
        "name": "who", "url": upstream["url"], "prefixes": ["whoami://"], "read_timeout": 10,
        "auth": {"type": "on_behalf_of", "token_endpoint": exchange_idp.token_endpoint, "scope": "mcp:read",
                 "client_id_env": "U3_GATEWAY_ID", "client_secret_env": "U3_GATEWAY_SECRET"}}]}  # fmt: skip
    composed = compose({"upstream": upstream_plugin}, {"upstream": settings})
    [link] = [d.provider.link for d in composed.assembly.declared if d.provider.name == "upstream-who-tools"]
    tokens = [await authorization_code_token(exchange_idp, "http://127.0.0.1:9/mcp", "alice") for _ in range(2)]
    clients = [jwt.decode(t, options={"verify_signature": False})["client_id"] for t in tokens]
    assert clients[0] != clients[1]  # each login registered its own OAuth client
    broad = Principal("alice", issuer=exchange_idp.issuer, client_id=clients[0], scopes={"mcp:read", "mcp:write"},
                      access_token=tokens[0])  # fmt: skip
    narrow = Principal("alice", issuer=exchange_idp.issuer, client_id=clients[0], scopes={"mcp:read"},
                       access_token=tokens[0])  # fmt: skip
    other = Principal("alice", issuer=exchange_idp.issuer, client_id=clients[1], scopes={"mcp:read"},
                      access_token=tokens[1])  # fmt: skip
    before = {digest for sub, digest in seen_by_upstream(upstream["log"]) if sub == "alice"}
    async with composed.running():
        for principal in (broad, narrow, other, broad, narrow, other):
            async with connect(composed, principal=principal) as client:
                called = await client.call_tool("whoami", {})
                assert called.structured_content is not None
                assert json.loads(called.structured_content["result"])["sub"] == "alice"
        assert (len(link.sessions), link.sessions.opened, link.exchange.requests) == (3, 3, 3)
    fresh = {digest for sub, digest in seen_by_upstream(upstream["log"]) if sub == "alice"} - before
    assert len(fresh) == 3  # the upstream saw one exchanged token per token of alice's, each on its own session


async def test_a_caller_of_another_trusted_issuer_is_refused_and_their_token_never_leaves(
    exchange_idp: IdentityProvider,
    upstream: dict[str, Any],
    start_identity_provider: Callable[[str], IdentityProvider],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tester 5, F1: with two issuers trusted, a caller of the other one (same ``sub``, alice) had
    their token sent to this token endpoint and reached the upstream as this issuer's alice."""
    monkeypatch.setenv("U3_GATEWAY_ID", GATEWAY)
    monkeypatch.setenv("U3_GATEWAY_SECRET", GATEWAY_SECRET)
    other = start_identity_provider("other")  # its own key and issuer, the same accounts
    auth = AuthConfig(mode="jwt", issuer=(exchange_idp.issuer, other.issuer), resource_url="http://127.0.0.1:9/mcp")
    settings = {"servers": [{
        "name": "who", "url": upstream["url"], "prefixes": ["whoami://"], "read_timeout": 10,
        "auth": {"type": "on_behalf_of", "token_endpoint": exchange_idp.token_endpoint, "scope": "mcp:read",
                 "client_id_env": "U3_GATEWAY_ID", "client_secret_env": "U3_GATEWAY_SECRET",
                 "issuers": [exchange_idp.issuer]}}]}  # fmt: skip
    composed = compose({"upstream": upstream_plugin}, {"upstream": settings}, server=Server(auth=auth))
    [link] = [d.provider.link for d in composed.assembly.declared if d.provider.name == "upstream-who-tools"]
    theirs = await authorization_code_token(other, "http://127.0.0.1:9/mcp", "alice")
    ours = await authorization_code_token(exchange_idp, "http://127.0.0.1:9/mcp", "alice")
    async with composed.running():
        async with connect(composed, principal=Principal("alice", issuer=other.issuer, access_token=theirs)) as client:
            for ask in (lambda: client.call_tool("whoami", {}), lambda: client.read_resource("whoami://me")):
                with pytest.raises(MCPError) as refused:
                    await ask()
                assert refused.value.error.code == DENIED
                assert f"this caller's issuer is {other.issuer!r}" in refused.value.error.message
                assert theirs not in refused.value.error.message
        assert link.exchange.requests == 0, "the other issuer's token was sent to the token endpoint"
        async with connect(composed, principal=Principal("alice", issuer=exchange_idp.issuer, access_token=ours)) as c:
            called = await c.call_tool("whoami", {})
            assert called.structured_content is not None
            assert json.loads(called.structured_content["result"])["sub"] == "alice"
        assert link.exchange.requests == 1
    assert hashlib.sha256(theirs.encode()).hexdigest() not in {d for _, d in seen_by_upstream(upstream["log"])}


async def test_a_caller_without_a_verified_token_is_refused_before_anything_is_sent() -> None:
    settings = ServerSettings.model_validate({
        "name": "who", "url": "http://127.0.0.1:9/mcp", "prefixes": ["whoami://"],
        "auth": {"type": "on_behalf_of", "token_endpoint": "http://127.0.0.1:9/token",
                 "client_id_env": "U3_UNSET_ID", "client_secret_env": "U3_UNSET_SECRET"}})  # fmt: skip
    exchange = TokenExchange(settings)
    with pytest.raises(CredentialRefused, match="caller 'local' brought no verified access token to exchange"):
        await exchange.obtain(Principal("local", issuer="local"))
    assert exchange.requests == 0


def test_the_verified_token_a_principal_carries_is_kept_out_of_repr_equality_and_sharing() -> None:
    bare = Principal("alice", issuer="https://idp.test/", claims={"email": "a@x.test"})
    bearing = bare.bearing("eyJ.secret.token")
    assert bearing.access_token == "eyJ.secret.token" and bare.access_token is None
    assert bearing == bare and hash(bearing) == hash(bare) and bearing.share_key == bare.share_key
    assert "secret" not in repr(bearing) and "secret" not in json.dumps(bearing.custody())
    assert bearing.bearing("eyJ.secret.token") is bearing and bearing.bearing(None).access_token is None
