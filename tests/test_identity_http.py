"""The HTTP server as an OAuth 2.1 resource server: RFC 9728 metadata, the challenges of RFC 6750
and MCP authorization (401 naming the metadata and scope, 403 insufficient_scope, 503 with
Retry-After), each hostile token refused while valid callers go on being served.

Real parts: uvicorn on loopback serving the real ASGI app (``embedding.mount``, the CLI's uvicorn
config), httpx and the SDK's MCP client, and a stand-in identity provider on loopback
(``identity_standin``; hand-signed tokens, as every case here but the control is hostile).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from identity_standin import StandInIdP, standin_idp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from mcp_providers import RECEIPT_KEY
from mcp_providers._serve.transport.limits import proxy_headers_settings, uvicorn_config
from mcp_providers.config import AuthConfig, ServerSettings
from mcp_providers.embedding import mount
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Resource
from mcp_providers.providers import Content, ReadRequest, ResourceProvider
from mcp_providers.testing import compose

pytestmark = pytest.mark.slow

URI = "memo://notes/one"
READ = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": URI}}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2025-11-25"}  # fmt: skip


class Notes(ResourceProvider):
    name = "notes"
    prefixes = ("memo://notes/",)

    def resources(self) -> list[Resource]:
        return [Resource(uri=URI, name="one", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="hello")


class NotesPlugin:
    @hookimpl
    def register_resource_providers(self, settings: Any) -> list[ResourceProvider]:
        return [Notes()]


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def uvicorn_serving(app: Any, port: int, trusted_proxies: tuple[str, ...] = ()) -> Iterator[str]:
    """``app`` under uvicorn (the CLI's config) on ``127.0.0.1:port``; yields its origin."""
    import uvicorn

    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, **proxy_headers_settings(trusted_proxies)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextlib.contextmanager
def mounted(
    auth: AuthConfig, *, path: str = "/mcp", port: int | None = None, stateless: bool = True,
    trusted_proxies: tuple[str, ...] = (),
) -> Iterator[str]:  # fmt: skip
    """A composition with ``[server.auth] = auth`` mounted at ``path``; yields the origin."""
    app = Starlette()
    composition = compose({"notes": NotesPlugin()}, server=ServerSettings(auth=auth))
    mount(app, composition, path, stateless=stateless, json_response=stateless)
    with uvicorn_serving(app, port or free_port(), trusted_proxies) as origin:
        yield origin


@pytest.fixture
def idp() -> Iterator[StandInIdP]:
    with standin_idp(path="/realms/test") as served:
        yield served


class Site:
    """A JWT-guarded server on loopback and what a test needs of it."""

    def __init__(self, idp: StandInIdP, origin: str, path: str = "/mcp") -> None:
        self.idp, self.origin, self.path = idp, origin, path
        self.resource = origin + path

    def token(self, **override: Any) -> str:
        return self.idp.sign(self.idp.claims(self.resource, **override))

    def post(self, token: str | None = None, body: Any = READ) -> httpx2.Response:
        headers = dict(HEADERS)
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        return httpx2.post(self.resource, json=body, headers=headers, timeout=10)

    def read_ok(self, token: str | None = None) -> bool:
        response = self.post(token or self.token())
        return response.status_code == 200 and response.json()["result"]["contents"][0]["text"] == "hello"


def jwt_auth(idp: StandInIdP, resource: str, **options: Any) -> AuthConfig:
    return AuthConfig(
        mode="jwt",
        issuer=idp.issuer,
        resource_url=resource,
        required_scopes=("mcp:read",),
        http_timeout_seconds=2,
        **options,
    )  # fmt: skip  (0.5 s was outrun under load at start-up)


@pytest.fixture
def site(idp: StandInIdP) -> Iterator[Site]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with mounted(jwt_auth(idp, resource, jwks_min_refresh_seconds=0.3), port=port) as origin:
        yield Site(idp, origin)


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The ``WWW-Authenticate: Bearer k="v", ...`` parameters."""
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer"), value
    return {k.strip(): v.strip().strip('"') for k, _, v in (p.partition("=") for p in value[6:].split(",")) if k}


def test_the_metadata_is_published_at_both_paths_without_a_token(site: Site) -> None:
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        response = httpx2.get(site.origin + path, timeout=10)
        assert response.status_code == 200, path
        assert response.json() == {
            "resource": site.resource,
            "authorization_servers": [site.idp.issuer],
            "scopes_supported": ["mcp:read"],
            "bearer_methods_supported": ["header"],
        }


def test_no_token_gets_401_naming_the_metadata_and_the_scope(site: Site) -> None:
    response = site.post(None)
    assert response.status_code == 401
    assert challenge(response) == {
        "resource_metadata": f"{site.origin}/.well-known/oauth-protected-resource/mcp",
        "scope": "mcp:read",
    }  # no error code: the request had no credentials (RFC 6750 §3.1)


def test_a_refused_token_gets_401_invalid_token_naming_the_metadata(site: Site) -> None:
    response = site.post(site.token(aud="https://other.example.com/api"))
    assert response.status_code == 401
    got = challenge(response)
    assert got["error"] == "invalid_token" and got["scope"] == "mcp:read"
    assert got["resource_metadata"] == f"{site.origin}/.well-known/oauth-protected-resource/mcp"


def test_a_missing_scope_gets_403_insufficient_scope_naming_it(site: Site) -> None:
    response = site.post(site.token(scope="profile email"))
    assert response.status_code == 403
    got = challenge(response)
    assert got["error"] == "insufficient_scope" and got["scope"] == "mcp:read"
    assert "missing scope: mcp:read" in got["error_description"]
    assert site.read_ok()


def test_every_hostile_token_is_refused_and_the_next_valid_caller_is_served(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    idp, now = site.idp, int(time.time())
    good = site.token()
    hostile = {
        "expired": site.token(iat=now - 900, exp=now - 600),
        "not yet valid": site.token(nbf=now + 600),
        "wrong issuer": site.token(iss="https://evil.example.com"),
        "wrong audience": site.token(aud="https://other.example.com/api"),
        "another resource": site.token(aud=site.origin + "/other"),
        "unknown kid": idp.sign(idp.claims(site.resource), kid="made-up"),
        "disallowed alg": idp.unsigned(idp.claims(site.resource)),
        "HS256": idp.hs256_with_public_key(idp.claims(site.resource)),
        "bad signature": idp.tampered(good, sub="admin"),
    }
    with caplog.at_level(logging.WARNING, logger="mcp_providers"):
        for case, token in hostile.items():
            response = site.post(token)
            assert response.status_code == 401, case
            assert challenge(response)["error"] == "invalid_token", case
            assert site.read_ok(good), f"a valid caller was not served right after {case}"
    refusals = [r.getMessage() for r in caplog.records if "bearer token refused" in r.getMessage()]
    assert len(refusals) == len(hostile)
    for token in [*hostile.values(), good]:
        for part in token.split("."):
            assert not part or part not in caplog.text


def test_a_token_expired_within_the_leeway_is_served_and_one_beyond_it_is_refused_and_logged(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    now = int(time.time())
    assert site.read_ok(site.token(iat=now - 300, exp=now - 10))  # default leeway: 30 s
    with caplog.at_level(logging.WARNING, logger="mcp_providers"):
        assert site.post(site.token(iat=now - 300, exp=now - 45)).status_code == 401
    assert "bearer token refused: expired" in caplog.text


def test_an_uncheckable_token_gets_503_with_retry_after_and_cached_keys_keep_serving(site: Site) -> None:
    site.idp.jwks_mode, site.idp.slow_seconds = "slow", 30.0
    time.sleep(0.35)  # past the refresh interval the start-up fetch opened
    started = time.monotonic()
    response = site.post(site.idp.sign(site.idp.claims(site.resource), kid="rotated-while-down"))
    assert time.monotonic() - started < 20  # bounded by http_timeout_seconds (2 s), not by the IdP's 30 s
    assert response.status_code == 503 and int(response.headers["retry-after"]) >= 1
    assert response.json()["error"] == "temporarily_unavailable"
    assert "127.0.0.1" not in response.text and "/jwks" not in response.text  # no internal address
    assert site.read_ok()  # the cached key still verifies
    site.idp.jwks_mode = "garbage"
    time.sleep(0.35)
    assert site.post(site.idp.sign(site.idp.claims(site.resource), kid="again")).status_code == 503
    assert site.read_ok()


@pytest.mark.anyio
async def test_a_real_mcp_client_with_a_valid_token_reads_as_its_principal(idp: StandInIdP) -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with mounted(jwt_auth(idp, resource), port=port, stateless=False):
        token = idp.sign(idp.claims(resource))
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(resource, http_client=http), cache=None) as client,
        ):
            result = await client.read_resource(URI)
            assert result.meta is not None and result.meta[RECEIPT_KEY]["subject"] == "alice"
            # The verifier's Principal is the one the pipeline records (issuer and client id too).
            receipt = result.meta[RECEIPT_KEY]
            assert (receipt.get("issuer"), receipt.get("clientId")) == (idp.issuer, "cli"), receipt
        async with httpx2.AsyncClient() as anonymous:
            refused = await anonymous.post(resource, json=READ, headers=HEADERS)
            assert refused.status_code == 401


def test_a_mount_path_is_honoured_in_the_metadata_and_the_challenge(idp: StandInIdP) -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/api/mcp"
    with mounted(jwt_auth(idp, resource), path="/api/mcp", port=port) as origin:
        site = Site(idp, origin, "/api/mcp")
        metadata = httpx2.get(f"{origin}/.well-known/oauth-protected-resource/api/mcp", timeout=10)
        assert metadata.status_code == 200 and metadata.json()["resource"] == resource
        assert challenge(site.post(None))["resource_metadata"] == metadata.url.__str__()
        assert site.read_ok()


@pytest.mark.parametrize(
    ("tail", "suffix"),
    [("/mcp/", "/mcp/"), ("", ""), ("/", ""), ("/mcp?tenant=a", "/mcp?tenant=a")],
    ids=["trailing slash", "origin only", "origin with slash", "query"],
)
def test_the_challenge_names_metadata_that_answers_with_the_resource_exactly(
    idp: StandInIdP, tail: str, suffix: str
) -> None:
    """Round 4 item 19 (RFC 9728 §3.1, §3.3): the metadata URL the 401 names answers 200, and its
    ``resource`` is the configured identifier as written (no slash added, none dropped)."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}{tail}"
    with mounted(jwt_auth(idp, resource), port=port) as origin:
        url = challenge(Site(idp, origin).post(None))["resource_metadata"]
        assert url == f"{origin}/.well-known/oauth-protected-resource{suffix}"
        metadata = httpx2.get(url, timeout=10)
        assert metadata.status_code == 200, (url, metadata.status_code)
        assert metadata.json()["resource"] == resource
        # a token for the identifier as written is accepted
        token = idp.sign(idp.claims(resource))
        assert Site(idp, origin).post(token).status_code == 200


def test_a_resource_url_with_a_fragment_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"has a fragment; a resource identifier has none"):
        AuthConfig(mode="jwt", issuer="https://idp.example.com", resource_url="https://mcp.example.com/mcp#x")


def test_jwt_mode_in_a_mount_without_resource_url_is_refused_with_the_fix(idp: StandInIdP) -> None:
    from mcp_providers.errors import ConfigError

    auth = AuthConfig(mode="jwt", issuer=idp.issuer)
    composition = compose({"notes": NotesPlugin()}, server=ServerSettings(auth=auth))
    with pytest.raises(ConfigError, match=r'needs resource_url, the URL clients use .*resource_url = "https://'):
        mount(Starlette(), composition, "/mcp")


@pytest.mark.parametrize(("trusted", "scheme"), [((), "http"), (("127.0.0.1",), "https")])
def test_x_forwarded_proto_is_believed_only_from_a_trusted_proxy(
    trusted: tuple[str, ...], scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Static tokens without resource_url: the metadata names the URL the request came in on.
    monkeypatch.setenv("TEST_STATIC_TOKEN", "static-token-0123456789abcdef")
    auth = AuthConfig(tokens=[{"subject": "ops", "token_env": "TEST_STATIC_TOKEN"}],
                      issuer_url="https://login.example.com")  # fmt: skip
    with mounted(auth, trusted_proxies=trusted) as origin:
        response = httpx2.get(f"{origin}/.well-known/oauth-protected-resource/mcp",
                              headers={"x-forwarded-proto": "https"}, timeout=10)  # fmt: skip
        assert response.status_code == 200
        assert response.json()["resource"] == f"{scheme}://{origin.removeprefix('http://')}/mcp"
        assert response.json()["authorization_servers"] == ["https://login.example.com/"]


def test_static_tokens_without_an_authorization_server_publish_no_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_STATIC_TOKEN", "static-token-0123456789abcdef")
    auth = AuthConfig(tokens=[{"subject": "ops", "token_env": "TEST_STATIC_TOKEN", "scopes": ["mcp:read"]}])
    with mounted(auth) as origin:
        assert httpx2.get(f"{origin}/.well-known/oauth-protected-resource", timeout=10).status_code == 404
        site = Site(StandInIdP(), origin)
        assert site.post(None).status_code == 401
        assert site.read_ok("static-token-0123456789abcdef")
        assert json.loads(site.post("static-token-0123456789abcdeX").content)["error"] == "invalid_token"


def test_a_session_answers_only_the_principal_that_opened_it(idp: StandInIdP) -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with mounted(jwt_auth(idp, resource), port=port, stateless=False):
        alice, mallory = idp.sign(idp.claims(resource)), idp.sign(idp.claims(resource, sub="mallory"))
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        opening = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        opened = httpx2.post(resource, json=opening, headers={**HEADERS, "authorization": f"Bearer {alice}"})
        session = opened.headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        other = httpx2.post(resource, json=ping, headers={**HEADERS, "authorization": f"Bearer {mallory}",
                                                          "mcp-session-id": session})  # fmt: skip
        assert other.status_code == 404  # the SDK answers as if the session did not exist
        own = httpx2.post(resource, json=ping, headers={**HEADERS, "authorization": f"Bearer {alice}",
                                                        "mcp-session-id": session})  # fmt: skip
        assert own.status_code == 200
