"""Embedding entry points under the ways hosts really use them: a lifespan run twice in one
process, a sub-app mount, the host's own authentication, paths and types that cannot work,
and two compositions (or a clash of names) on one server."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from mcp import Client
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from mcp_providers import (
    Content,
    ReadRequest,
    Resource,
    ResourceProvider,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers._serve.composition import Composition
from mcp_providers.embedding import add_to_mcpserver, attach, mount
from mcp_providers.identity import Principal
from mcp_providers.testing import compose

BASE = "http://127.0.0.1:8000"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
SECRET = "ya29.host-session-oauth-token-DO-NOT-LEAK"


class Empty(BaseModel):
    pass


class Hello(ResourceProvider):
    open = 0

    def __init__(self, tag: str) -> None:
        self.name, self.prefixes, self.tag = f"hello-{tag}", (f"lc{tag}://",), tag

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=f"lc{self.tag}://hello", name=f"hello-{self.tag}", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=f"hello {self.tag}")

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        Hello.open += 1
        try:
            yield
        finally:
            Hello.open -= 1


class Whoami(ToolProvider):
    def __init__(self, tag: str) -> None:
        self.name, self.tag = f"who-{tag}", tag

    def tools(self) -> Sequence[Tool]:
        return [Tool(name=f"whoami_{self.tag}", description="who asks", input_model=Empty)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text=f"{call.principal.subject}|{call.principal.issuer}")


class Plugin:
    def __init__(self, tag: str) -> None:
        self.tag = tag

    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [Hello(self.tag)]

    @hookimpl
    def register_tool_providers(self) -> list[ToolProvider]:
        return [Whoami(self.tag)]


def _composition(tag: str = "a") -> Composition:
    return compose({tag: Plugin(tag)})


def _initialize(client: TestClient, path: str = "/mcp") -> Any:
    return client.post(path, headers=HEADERS, json=INIT)


def _whoami(client: TestClient, path: str = "/mcp") -> str:
    opened = _initialize(client, path)
    assert opened.status_code == 200, opened.text
    headers = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    client.post(path, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami_a", "arguments": {}}}
    answer = client.post(path, headers=headers, json=call)
    assert answer.status_code == 200, answer.text
    assert '"isError":false' in answer.text, answer.text
    return answer.text.split('"text":"', 1)[1].split('"', 1)[0]


# -- 1. a host that starts twice in one process ------------------------------------------------------


def test_a_mounted_app_serves_mcp_each_time_its_lifespan_runs() -> None:
    order: list[str] = []

    @contextlib.asynccontextmanager
    async def own(_app: Any) -> AsyncIterator[None]:
        order.append("enter")
        yield
        order.append("exit")

    app = Starlette(lifespan=own)
    mount(app, _composition())
    for _ in range(3):  # as a pytest fixture does: one TestClient per test
        with TestClient(app, base_url=BASE) as client:
            assert Hello.open == 1
            assert _initialize(client).status_code == 200
            assert _whoami(client) == "anonymous|None"
        assert Hello.open == 0
    assert order == ["enter", "exit"] * 3


def test_a_mounted_app_whose_lifespan_overlaps_itself_is_refused_clearly() -> None:
    app = Starlette()
    mount(app, _composition())
    with TestClient(app, base_url=BASE) as client:
        with pytest.raises(RuntimeError, match=r"already running.*one at a time"), TestClient(app, base_url=BASE):
            pass
        assert _initialize(client).status_code == 200  # the first run still serves


@pytest.mark.anyio
async def test_attach_and_add_to_mcpserver_serve_each_time_the_server_runs() -> None:
    composition = _composition()
    server: Server[Any] = Server("host")
    attach(server, composition)
    mcp = MCPServer("host", lifespan=lambda _app: composition.running())
    add_to_mcpserver(mcp, _composition("b"))
    for _ in range(2):
        async with Client(server, cache=None) as client:
            assert Hello.open == 1
            assert (await client.read_resource("lca://hello")).contents[0].text == "hello a"  # type: ignore[union-attr]
        async with Client(mcp, cache=None) as client:
            assert (await client.read_resource("lcb://hello")).contents[0].text == "hello b"  # type: ignore[union-attr]
        assert Hello.open == 0


# -- 2. mounted inside a sub-app, whose lifespan Starlette never runs ----------------------------------


def test_a_mount_in_a_sub_app_says_why_it_cannot_serve_and_what_to_do(caplog: pytest.LogCaptureFixture) -> None:
    inner = Starlette()
    mount(inner, _composition())
    outer = Starlette(routes=[Mount("/api", app=inner)])
    with caplog.at_level(logging.ERROR, "mcp_providers.embedding"), TestClient(outer, base_url=BASE) as client:
        answer = _initialize(client, "/api/mcp")
        again = _initialize(client, "/api/mcp")
    assert answer.status_code == 500 and again.status_code == 500
    body = answer.json()["error"]["message"]
    assert "lifespan" in body and "mount() on the outermost app" in body and "'/api/mcp'" in body
    logged = [r.getMessage() for r in caplog.records if r.name == "mcp_providers.embedding"]
    assert logged == [body]  # once, not per request


def test_a_mounted_app_served_without_its_lifespan_says_so() -> None:
    app = Starlette()
    mount(app, _composition())
    client = TestClient(app, base_url=BASE)  # no `with`: the lifespan never runs
    answer = _initialize(client)
    assert answer.status_code == 500
    assert "lifespan" in answer.json()["error"]["message"]


# -- 3. identity a host's own authentication provides ------------------------------------------------


class HostAuth(AuthenticationBackend):
    def __init__(self, user: Any) -> None:
        self.user = user

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, Any]:
        return AuthCredentials(["authenticated"]), self.user


class SessionUser(SimpleUser):
    def __init__(self, name: str, token: Any) -> None:
        super().__init__(name)
        self.access_token = token


def _hosted(user: Any, **kwargs: Any) -> Starlette:
    app = Starlette(middleware=[Middleware(AuthenticationMiddleware, backend=HostAuth(user))])
    mount(app, _composition(), **kwargs)
    return app


def test_a_host_user_reaches_the_gate_as_anonymous_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "mcp_providers.embedding"), TestClient(_hosted(SimpleUser("alice"))) as c:
        c.base_url = BASE  # type: ignore[assignment]
        assert _whoami(c) == "anonymous|None"
        assert _whoami(c) == "anonymous|None"
    warned = [r.getMessage() for r in caplog.records if "identify=" in r.getMessage()]
    assert len(warned) == 1 and "anonymous" in warned[0] and "alice" not in warned[0]


def test_identify_maps_the_host_user_to_the_principal_the_gate_sees() -> None:
    def identify(request: Request) -> Principal | None:
        return Principal(request.user.display_name, issuer="https://host.example/")

    with TestClient(_hosted(SimpleUser("alice"), identify=identify), base_url=BASE) as client:
        assert _whoami(client) == "alice|https://host.example/"


def test_identify_returning_none_serves_anonymous() -> None:
    with TestClient(_hosted(SimpleUser("alice"), identify=lambda _r: None), base_url=BASE) as client:
        assert _whoami(client) == "anonymous|None"


@pytest.mark.parametrize(
    "token",
    [SECRET, {"sub": "alice"}, type("Duck", (), {"subject": "local", "client_id": None, "token": SECRET})()],
    ids=["string", "dict", "duck-typed"],
)
def test_a_host_identity_that_cannot_be_read_is_refused_not_a_500(token: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG), TestClient(_hosted(SessionUser("alice", token)), base_url=BASE) as client:
        answer = _initialize(client)
    assert answer.status_code == 403, answer.text
    message = answer.json()["error"]["message"]
    assert "access_token" in message and "identify=" in message
    assert SECRET not in answer.text and SECRET not in caplog.text


def test_identify_returning_something_else_is_refused_not_a_500() -> None:
    with TestClient(_hosted(SimpleUser("alice"), identify=lambda _r: "alice"), base_url=BASE) as client:
        answer = _initialize(client)
    assert answer.status_code == 403
    assert "identify= returned str" in answer.json()["error"]["message"]


def test_a_host_token_of_the_sdk_is_read_as_before() -> None:
    token = AccessToken(token=SECRET, client_id="app", subject="alice", scopes=[], claims={"iss": "https://idp/"})
    with TestClient(_hosted(AuthenticatedUser(token)), base_url=BASE) as client:
        assert _whoami(client) == "alice|https://idp/"


def test_identify_and_server_auth_together_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_providers.config import AuthConfig, ServerSettings, TokenConfig

    monkeypatch.setenv("LC_TOKEN", "lifecycle-token-0123456789")
    auth = ServerSettings(auth=AuthConfig(tokens=(TokenConfig(subject="carol", token_env="LC_TOKEN"),)))
    composition = compose({"a": Plugin("a")}, server=auth)
    with pytest.raises(ValueError, match=r"identify= .*\[server\.auth\]"):
        mount(Starlette(), composition, identify=lambda _r: None)


def test_the_pipeline_refuses_a_request_whose_identity_cannot_be_read() -> None:
    from mcp import MCPError

    from mcp_providers._serve.steps.exchange import principal_of

    class Ctx:
        request = type("R", (), {"scope": {"user": SessionUser("alice", SECRET)}})()

    with pytest.raises(MCPError) as refused:
        principal_of(Ctx())  # type: ignore[arg-type]
    assert refused.value.code == -32003 and "access_token" in refused.value.message
    assert SECRET not in str(refused.value)


# -- 4. paths that can never match, and paths the host already routes --------------------------------


@pytest.mark.parametrize(
    "path",
    ["", "mcp", "/mcp?x=1", "/mcp#top", "//x", "/a//b", "/mcp/{tenant}", "/a/./b", "/a/../b", "/a%20b"],
)
def test_a_path_no_request_can_reach_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match=r"mount path .*got " + repr(path).replace("?", r"\?").replace(".", r"\.")):
        mount(Starlette(), _composition(), path)


def test_a_path_the_host_already_routes_is_refused() -> None:
    def own(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("own")

    taken = Starlette(routes=[Route("/mcp", own, methods=["POST"])])
    with pytest.raises(ValueError, match=r"already routes '/mcp'.*another path"):
        mount(taken, _composition())
    catch_all = Starlette(routes=[Mount("/", app=PlainTextResponse("static"))])
    with pytest.raises(ValueError, match=r"already routes '/mcp'"):
        mount(catch_all, _composition())
    twice = Starlette()
    mount(twice, _composition())
    with pytest.raises(ValueError, match=r"already routes '/mcp'"):
        mount(twice, _composition("b"))
    mount(twice, _composition("b"), "/other")  # another path is fine


# -- 5. wrong types ------------------------------------------------------------------------------------


def test_wrong_types_are_named_with_what_is_needed() -> None:
    composition = _composition()
    with pytest.raises(TypeError, match=r"attach\(\) needs an SDK low-level Server.*mount\(\)"):
        attach(Starlette(), composition)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"attach\(\) needs .*add_to_mcpserver\(\)"):
        attach(MCPServer("m"), composition)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"attach\(\) needs a Composition .*compose\(\).*object"):
        attach(Server("s"), object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"mount\(\) needs a Starlette or FastAPI app.*Server"):
        mount(Server("s"), composition)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"mount\(\) needs a Composition .*compose\(\)"):
        mount(Starlette(), object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"mount path must be a str"):
        mount(Starlette(), composition, b"/mcp")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"add_to_mcpserver\(\) needs an MCPServer.*attach\(\)"):
        add_to_mcpserver(Server("s"), composition)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"add_to_mcpserver\(\) needs a Composition"):
        add_to_mcpserver(MCPServer("m"), object())  # type: ignore[arg-type]


# -- 6. two compositions attached to one Server ----------------------------------------------------------


def test_a_second_composition_on_one_server_is_refused_for_what_it_is() -> None:
    server: Server[Any] = Server("host")
    first = _composition()
    attach(server, first)
    with pytest.raises(ValueError, match=r"another composition is attached.*compose") as other:
        attach(server, _composition("b"))
    assert "remove your handler" not in str(other.value)
    with pytest.raises(ValueError, match=r"this composition is already attached"):
        attach(server, first)
    with pytest.raises(ValueError, match=r"is another composition's own server"):
        attach(_composition("c").server, _composition("d"))


# -- 7. add_to_mcpserver and names the MCPServer already has ---------------------------------------------


def test_add_to_mcpserver_refuses_a_name_the_mcpserver_has_naming_both() -> None:
    mcp = MCPServer("host")

    @mcp.tool(name="whoami_a")
    def mine() -> str:
        return "host"

    @mcp.resource("lca://hello")
    def hello() -> str:
        return "host hello"

    with pytest.raises(ValueError) as clash:
        add_to_mcpserver(mcp, _composition())
    said = str(clash.value)
    assert "tool 'whoami_a'" in said and "resource 'lca://hello'" in said and "plugin 'a'" in said
    assert "MCPServer's own" in said


@pytest.mark.anyio
async def test_a_refused_add_to_mcpserver_adds_nothing() -> None:
    mcp = MCPServer("host")

    @mcp.tool(name="whoami_a")
    def mine() -> str:
        return "host"

    with pytest.raises(ValueError):
        add_to_mcpserver(mcp, _composition())
    assert [t.name for t in await mcp.list_tools()] == ["whoami_a"]
    assert await mcp.list_resources() == []


def test_add_to_mcpserver_twice_or_two_clashing_compositions_say_so() -> None:
    mcp = MCPServer("host")
    first = _composition()
    add_to_mcpserver(mcp, first)
    with pytest.raises(ValueError, match=r"this composition was already added"):
        add_to_mcpserver(mcp, first)
    with pytest.raises(ValueError, match=r"tool 'whoami_a'.*another composition"):
        add_to_mcpserver(mcp, _composition())
    add_to_mcpserver(mcp, _composition("b"))  # no shared name: both served


def test_the_rfc9728_paths_must_be_free_but_two_mounts_share_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_providers.config import AuthConfig, ServerSettings, TokenConfig

    monkeypatch.setenv("LC_TOKEN", "lifecycle-token-0123456789")
    token = (TokenConfig(subject="carol", token_env="LC_TOKEN"),)
    auth = ServerSettings(auth=AuthConfig(tokens=token, issuer_url="https://login.example.com"))  # type: ignore[arg-type]

    def own(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("{}")

    taken = Starlette(routes=[Route("/.well-known/oauth-protected-resource", own)])
    with pytest.raises(ValueError, match=r"already routes '/\.well-known/oauth-protected-resource'"):
        mount(taken, compose({"a": Plugin("a")}, server=auth))
    app = Starlette()
    mount(app, compose({"a": Plugin("a")}, server=auth), "/one")
    mount(app, compose({"b": Plugin("b")}, server=auth), "/two")
    with TestClient(app, base_url=BASE) as client:
        for path in ("/one", "/two"):
            described = client.get("/.well-known/oauth-protected-resource" + path).json()
            assert described["resource"].endswith(path) and described["authorization_servers"]
            assert _initialize(client, path).status_code == 401  # the bearer gate, each run


def test_the_session_quota_counts_an_unreadable_identity_as_anonymous_not_a_500() -> None:
    from mcp_providers._serve.transport.sessions import caller_key

    assert caller_key({"type": "http", "user": SessionUser("alice", SECRET)}) is None
    token = AccessToken(token=SECRET, client_id="app", subject="alice", scopes=[], claims={"iss": "https://idp/"})
    assert caller_key({"type": "http", "user": AuthenticatedUser(token)}) == ("https://idp/", "alice")


def test_a_rebound_host_is_refused_before_the_hosts_identity_is_read() -> None:
    """The Host/Origin (DNS-rebinding) check comes first: a request a rebound page sends never
    reaches the embedder's ``identify`` (nor the unreadable-identity refusal, which said 403)."""
    asked: list[str] = []

    def identify(request: Request) -> Principal | None:
        asked.append(request.headers.get("host", ""))
        return None

    with TestClient(_hosted(SimpleUser("alice"), identify=identify), base_url="http://rebound.example") as client:
        answer = _initialize(client)
    assert answer.status_code == 421 and "rebound.example" in answer.text, answer.text
    assert asked == []
    with TestClient(_hosted(SessionUser("alice", SECRET)), base_url="http://rebound.example") as client:
        assert _initialize(client).status_code == 421
