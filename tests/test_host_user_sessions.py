"""A session belongs to the caller that opened it, whatever class the host's user is.

The SDK's session manager binds a session to its creator only when ``request.user`` is its own
``AuthenticatedUser``; a host's ``AuthenticationMiddleware`` may leave a user class of its own
carrying an SDK ``AccessToken``, which the composition reads as that token's principal. Tester
nineteen found such a session open to anyone who knew its id: another user's (or an anonymous)
request was served in it, could end it, open its listen stream, and answer its elicitation.

- ``mount()`` makes such a user the SDK's ``AuthenticatedUser`` of the same token, so the session
  is bound to the caller the gate serves: another caller gets 404, as with ``identify=``.
- Where the host's own HTTP serves (``attach()``, ``add_to_mcpserver()`` behind the SDK's app), the
  composition cannot bind the session: such a user is refused in a session (-32003, naming the
  fix), and served where there is none (stateless).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.routing import Mount
from starlette.testclient import TestClient

from mcp_providers import Tool, ToolCall, ToolProvider, ToolResult, compose, hookimpl
from mcp_providers.embedding import attach, mount

VERSION = "2025-06-18"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Empty(BaseModel):
    pass


class WhoAmI(ToolProvider):
    name = "who"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="whoami", description="who is asking", input_model=Empty)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text=f"caller={call.principal.subject}")


class _Plugin:
    @hookimpl
    def register_tool_providers(self) -> Sequence[ToolProvider]:
        return [WhoAmI()]


class HostUser(BaseUser):
    """A host's own user class carrying the SDK's token (not the SDK's ``AuthenticatedUser``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.access_token = AccessToken(
            token=f"t-{name}", client_id="app", subject=name, scopes=[], claims={"iss": "https://idp.example"}
        )

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.name


class Backend(AuthenticationBackend):
    def __init__(self, sdk_user: bool) -> None:
        self.sdk_user = sdk_user

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        name = conn.headers.get("x-user")
        if not name:
            return None
        user = HostUser(name)
        return AuthCredentials(["authenticated"]), (AuthenticatedUser(user.access_token) if self.sdk_user else user)


def _headers(who: str | None, session: str | None = None) -> dict[str, str]:
    found = {**HEADERS, **({"x-user": who} if who else {})}
    return {**found, "mcp-session-id": session, "mcp-protocol-version": VERSION} if session else found


def _open(client: TestClient, who: str) -> str:
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    answer = client.post(
        "/mcp", headers=_headers(who), json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    )
    session = answer.headers["mcp-session-id"]
    client.post("/mcp", headers=_headers(who, session), json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return session


def _whoami(client: TestClient, who: str | None, session: str) -> tuple[int, str]:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    answer = client.post("/mcp", headers=_headers(who, session), json=call)
    return answer.status_code, answer.text


@contextlib.contextmanager
def _mounted(sdk_user: bool) -> Iterator[TestClient]:
    app = Starlette(middleware=[Middleware(AuthenticationMiddleware, backend=Backend(sdk_user))])
    mount(app, compose(plugins={"who": _Plugin()}, load_entrypoints=False), "/mcp")
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        yield client


@pytest.mark.parametrize("sdk_user", [False, True], ids=["host-user-class", "sdk-authenticated-user"])
def test_a_mounted_session_serves_only_the_caller_that_opened_it(sdk_user: bool) -> None:
    with _mounted(sdk_user) as client:
        session = _open(client, "alice")
        status, text = _whoami(client, "alice", session)
        assert status == 200 and "caller=alice" in text
        assert _whoami(client, "bob", session)[0] == 404
        assert _whoami(client, None, session)[0] == 404
        assert client.delete("/mcp", headers=_headers("bob", session)).status_code == 404
        with client.stream("GET", "/mcp", headers={**_headers("bob", session), "accept": "text/event-stream"}) as got:
            assert got.status_code == 404
        assert _whoami(client, "alice", session)[0] == 200  # bob's DELETE ended nothing


def test_an_answer_to_the_callers_elicitation_from_another_user_is_refused() -> None:
    with _mounted(sdk_user=False) as client:
        session = _open(client, "alice")
        answer = {"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"ok": True}}}
        assert client.post("/mcp", headers=_headers("bob", session), json=answer).status_code == 404


def _attached(sdk_user: bool, stateless: bool = False) -> Starlette:
    server = Server("host")
    attach(server, compose(plugins={"who": _Plugin()}, load_entrypoints=False))
    inner = server.streamable_http_app(stateless_http=stateless)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async with inner.router.lifespan_context(inner):
            yield

    backend = Backend(sdk_user)
    return Starlette(
        routes=[Mount("/", app=inner)],
        lifespan=lifespan,
        middleware=[Middleware(AuthenticationMiddleware, backend=backend)],
    )


def test_behind_the_hosts_own_http_a_user_the_sdk_cannot_bind_a_session_to_is_refused() -> None:
    with TestClient(_attached(sdk_user=False), base_url="http://127.0.0.1:8000") as client:
        session = _open(client, "alice")
        status, text = _whoami(client, "alice", session)
        assert "-32003" in text and "AuthenticatedUser" in text and "caller=alice" not in text, (status, text)


def test_behind_the_hosts_own_http_the_sdks_user_is_served_and_bound() -> None:
    with TestClient(_attached(sdk_user=True), base_url="http://127.0.0.1:8000") as client:
        session = _open(client, "alice")
        assert "caller=alice" in _whoami(client, "alice", session)[1]
        assert _whoami(client, "bob", session)[0] == 404


def test_behind_the_hosts_own_stateless_http_a_host_user_class_is_served() -> None:
    """No session, nothing to bind: the host's user class is read as its token's caller, as before."""
    with TestClient(_attached(sdk_user=False, stateless=True), base_url="http://127.0.0.1:8000") as client:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
        answer = client.post("/mcp", headers={**_headers("alice"), "mcp-protocol-version": VERSION}, json=call)
        assert answer.status_code == 200 and "caller=alice" in answer.text, answer.text
