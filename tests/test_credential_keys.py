"""A cached upstream credential is keyed by everything of the caller an upstream may grant by.

Tester r12, finding 1: the broker kept one credential per (issuer, subject, upstream, claims), so
a token exchanged from a caller's broad-scoped token (or from a token issued to another OAuth
client) was handed to the same subject's later narrower-scoped (or other client's) token. The key
is now the upstream's name and the whole :attr:`Principal.share_key` (issuer, subject, client id,
scopes, groups, selected claims), in memory and in Redis (a stable, unambiguous serialization).

The exchanges here go to a real token endpoint on loopback, which answers each subject token with
a token carrying that subject token's own scope, as an authorization server down-scoping would.
The pooled upstream session per caller is tested end to end in
``tests/identity/test_upstream_token_exchange.py``.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcp_providers._serve.state.credentials import Sealer, key_text
from mcp_providers.credentials import CacheKey, Credential, CredentialBroker, cache_key
from mcp_providers.identity import TRUSTED_ISSUERS, Principal
from mcp_providers.plugins.upstream.oauth import TokenExchange
from mcp_providers.plugins.upstream.settings import ServerSettings as UpstreamSettings

pytestmark = pytest.mark.anyio

IDP = "https://idp.example.test"
SCOPE_OF = {
    "tok-narrow-7c1": "notes:read",
    "tok-broad-9e4": "notes:read notes:write",
    "tok-other-client-2b8": "notes:read",
}
"""What the authorization server knows of each subject token: its scope."""


class TokenEndpoint(BaseHTTPRequestHandler):
    """RFC 8693 token exchange: the issued token names the subject token's own scope."""

    seen: list[str]

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        subject_token = form["subject_token"]
        self.seen.append(subject_token)
        body = json.dumps({
            "access_token": f"upstream[{SCOPE_OF[subject_token]}]#{len(self.seen)}",
            "token_type": "Bearer", "expires_in": 600, "scope": SCOPE_OF[subject_token],
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class Counting:
    """An upstream granting one new credential per obtain, keeping whom it was asked for."""

    def __init__(self, name: str = "svc:counting") -> None:
        self.name, self.calls = name, list[Principal]()

    async def obtain(self, principal: Principal) -> Credential:
        self.calls.append(principal)
        return Credential(f"granted-{len(self.calls)}", time.time() + 600, principal.subject, "jwt_bearer")


@pytest.fixture
def endpoint() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Recording", (TokenEndpoint,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def exchange(endpoint: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> TokenExchange:
    monkeypatch.setenv("K1_GATEWAY_ID", "gateway")
    monkeypatch.setenv("K1_GATEWAY_SECRET", "gateway-secret-61f0")
    auth = {"type": "on_behalf_of", "token_endpoint": endpoint[0], "client_id_env": "K1_GATEWAY_ID",
            "client_secret_env": "K1_GATEWAY_SECRET"}  # fmt: skip
    table = {"name": "who", "url": "http://127.0.0.1:9/mcp", "prefixes": ["whoami://"], "auth": auth}
    return TokenExchange(UpstreamSettings.model_validate(table, context={TRUSTED_ISSUERS: (IDP,)}))


def alice(token: str, *, client_id: str = "notes-app", **more: Any) -> Principal:
    scopes = frozenset(SCOPE_OF[token].split())
    return Principal("alice", issuer=IDP, client_id=client_id, scopes=scopes, access_token=token, **more)


async def test_a_narrower_scoped_token_gets_its_own_exchange_not_the_broad_ones_credential(
    exchange: TokenExchange, endpoint: tuple[str, list[str]]
) -> None:
    broker = CredentialBroker()
    broad = await broker.credential(exchange, alice("tok-broad-9e4"))
    narrow = await broker.credential(exchange, alice("tok-narrow-7c1"))
    assert broad.token == "upstream[notes:read notes:write]#1"
    assert narrow.token == "upstream[notes:read]#2"  # the upstream sees the narrow token's own scope
    assert endpoint[1] == ["tok-broad-9e4", "tok-narrow-7c1"]
    again = await broker.credential(exchange, alice("tok-narrow-7c1"))
    assert again is narrow and broker.obtained == 2  # each still cached under its own key


async def test_a_token_issued_to_another_client_gets_its_own_exchange(
    exchange: TokenExchange, endpoint: tuple[str, list[str]]
) -> None:
    broker = CredentialBroker()
    mine = await broker.credential(exchange, alice("tok-narrow-7c1"))
    other = await broker.credential(exchange, alice("tok-other-client-2b8", client_id="other-app"))
    assert (mine.token, other.token) == ("upstream[notes:read]#1", "upstream[notes:read]#2")
    assert endpoint[1] == ["tok-narrow-7c1", "tok-other-client-2b8"]


async def test_other_groups_or_selected_claims_get_their_own_exchange(
    exchange: TokenExchange, endpoint: tuple[str, list[str]]
) -> None:
    broker = CredentialBroker()
    for principal in (alice("tok-narrow-7c1"), alice("tok-narrow-7c1", groups={"admins"}),
                      alice("tok-narrow-7c1", claims={"email": "alice@example.test"})):  # fmt: skip
        await broker.credential(exchange, principal)
    assert len(endpoint[1]) == 3 and broker.obtained == 3


async def test_forget_drops_only_the_credential_of_that_token() -> None:
    broker, upstream = CredentialBroker(), Counting()
    narrow, broad = (Principal("alice", issuer=IDP, scopes=s) for s in ({"a"}, {"a", "b"}))
    kept = await broker.credential(upstream, broad)
    await broker.credential(upstream, narrow)
    await broker.forget(upstream, narrow)
    assert await broker.credential(upstream, broad) is kept and len(upstream.calls) == 2


def test_the_key_holds_the_upstream_and_the_whole_share_key() -> None:
    principal = alice("tok-broad-9e4", groups={"staff"}, claims={"email": "a@example.test"})
    key = cache_key(Counting("svc:one"), principal)
    assert key == CacheKey("svc:one", principal.share_key)
    assert key.principal == (IDP, "alice", "notes-app", ("notes:read", "notes:write"), ("staff",),
                             '{"email": "a@example.test"}')  # fmt: skip


def test_redis_entry_names_differ_for_every_part_and_never_collide_across_shapes() -> None:
    sealer, again = Sealer(b"k" * 32), Sealer(b"k" * 32)

    def name(upstream: str, **parts: Any) -> str:
        return sealer.name(CacheKey(upstream, Principal("alice", issuer=IDP, **parts).share_key))

    names = [
        name("svc"), name("svc", scopes={"a b"}), name("svc", scopes={"a", "b"}), name("svc", groups={"a b"}),
        name("svc", client_id="a b"), name("svc", claims={"a": "b"}), name("svc", scopes={"a"}, groups={"b"}),
        name("svc", scopes={"b"}, groups={"a"}), name("svc", groups={"a", "b"}),
    ]  # fmt: skip
    assert len(set(names)) == len(names)
    # stable: the same key is named alike by every replica (same deployment key), run after run
    assert again.name(CacheKey("svc", Principal("alice", issuer=IDP, scopes={"a b"}).share_key)) == names[1]
    assert key_text(CacheKey("svc", Principal("alice").share_key)) == (
        '["credential-key/3","svc",["","alice","",[],[],"{}"],"",""]'
    )  # tagged with its shape: an entry kept under an older shape (r11's, r12's without settings) is never read


def test_a_key_of_another_shape_is_refused_not_serialized() -> None:
    with pytest.raises(TypeError, match=r"a credential cache key is a CacheKey \(credentials.cache_key\), not tuple"):
        Sealer(b"k" * 32).name((IDP, "alice", "svc", "{}"))  # type: ignore[arg-type]  # the r11 shape
