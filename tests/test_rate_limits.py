"""Rate limits per subject (issue 22, Must show 5): ``[server.limits]``.

One subject over its budget is refused (-32009, a message naming the limit, ``data.retryAfter``,
``Retry-After`` over HTTP) while a second subject is served in the same run: through a real MCP
client over HTTP with two static bearer tokens, in one process and across two replicas sharing a
real ``redis-server``. Anonymous callers share one stricter bucket; the ops routes are never
limited; Redis going away fails open to each replica's own count, never to an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel
from real_parts import redis_server
from test_clients import _http_server

from mcp_providers import (
    Content,
    ReadRequest,
    Resource,
    ResourceProvider,
    ServerSettings,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers._serve.steps.ratelimit import RateLimiter, method_class
from mcp_providers.config import ClusterSettings, LimitsSettings, load_config
from mcp_providers.errors import RATE_LIMITED, ConfigError, RateLimited
from mcp_providers.identity import ANONYMOUS, LOCAL, Principal
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

ALICE = "alice-token-7c1e0f9a"
BOB = "bob-token-2d8b6e4f"
CATALOG = "documcp://ssgs/available"


# -- the config table ------------------------------------------------------------------------------


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_no_table_means_no_limits_and_an_empty_table_the_documented_defaults(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path, "[server]\n")).server.limits is None
    limits = load_config(_config(tmp_path, "[server.limits]\n")).server.limits
    assert limits == LimitsSettings(window_seconds=60, reads=600, calls=120, lists=600, anonymous=60)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("window_seconds = 0", "config.server.limits.window_seconds: Input should be greater than or equal to 1"),
        ("window_seconds = 1.5", "config.server.limits.window_seconds: Input should be a valid integer"),
        ("reads = true", "config.server.limits.reads: Input should be a valid integer"),
        ("calls = -1", "config.server.limits.calls: Input should be greater than or equal to 1"),
        ("burst = 5", "config.server.limits.burst: Extra inputs are not permitted"),
        ("anonymous = 121", "anonymous (121) is more than calls (120)"),
        ("lists = 10\nanonymous = 11", "set anonymous to 10 or less"),
    ],
)
def test_a_bad_limits_table_is_refused_with_a_clear_line(tmp_path: Path, table: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_config(tmp_path, f"[server.limits]\n{table}\n"))
    assert expected in str(err.value)


# -- the limiter, on its own -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "kind"),
    [
        ("resources/read", "reads"), ("prompts/get", "reads"), ("completion/complete", "reads"),
        ("tools/call", "calls"),
        ("resources/list", "lists"), ("resources/templates/list", "lists"), ("tools/list", "lists"),
        ("prompts/list", "lists"), ("resources/subscribe", "lists"), ("subscriptions/listen", "lists"),
        ("resources/unsubscribe", None), ("tasks/get", "reads"), ("tasks/update", "reads"), ("tasks/cancel", None),
        ("com.example/find/go", "calls"),  # an extension's method (SEP-2133)
    ],
)  # fmt: skip
def test_every_served_method_has_its_class(method: str, kind: str | None) -> None:
    assert method_class(method) == kind


async def _served(limiter: RateLimiter, principal: Principal, method: str, times: int) -> int:
    """How many of ``times`` requests the limiter lets through."""
    served = 0
    for _ in range(times):
        with contextlib.suppress(RateLimited):
            await limiter.check(principal, method)
            served += 1
    return served


async def test_each_subject_has_one_budget_per_method_class_keyed_by_issuer_and_subject() -> None:
    limiter = RateLimiter(LimitsSettings(window_seconds=60, reads=3, calls=2, lists=4, anonymous=1))
    alice = Principal("alice", issuer="https://idp-a.example")
    same_sub_elsewhere = Principal("alice", issuer="https://idp-b.example")
    assert await _served(limiter, alice, "resources/read", 5) == 3
    assert await _served(limiter, alice, "prompts/get", 1) == 0  # the same reads budget
    assert await _served(limiter, alice, "tools/call", 5) == 2
    assert await _served(limiter, alice, "tools/list", 3) + await _served(limiter, alice, "resources/subscribe", 3) == 4
    assert await _served(limiter, alice, "resources/unsubscribe", 10) == 10  # giving back is never refused
    assert await _served(limiter, same_sub_elsewhere, "resources/read", 5) == 3  # another issuer's alice
    assert await _served(limiter, LOCAL, "resources/read", 5) == 3


async def test_a_refusal_names_the_limit_its_window_and_when_to_retry() -> None:
    limiter = RateLimiter(LimitsSettings(window_seconds=30, reads=1, calls=1, lists=1, anonymous=1))
    bob = Principal("bob", issuer="static")
    await limiter.check(bob, "tools/call")
    with pytest.raises(RateLimited) as err:
        await limiter.check(bob, "tools/call")
    refused = err.value
    assert refused.code == RATE_LIMITED == -32009
    assert refused.data is not None and set(refused.data) == {"retryAfter", "limit", "allowed", "windowSeconds"}
    assert refused.data["limit"] == "calls" and refused.data["allowed"] == 1 and refused.data["windowSeconds"] == 30
    assert 1 <= refused.retry_after <= 30
    assert "at most 1 tool calls per 30 seconds per subject" in refused.message
    assert f"retry after {refused.retry_after} seconds" in refused.message
    assert "[server.limits] calls = 1" in refused.message


async def test_every_anonymous_caller_shares_one_stricter_bucket_across_methods() -> None:
    limiter = RateLimiter(LimitsSettings(window_seconds=60, reads=5, calls=5, lists=5, anonymous=3))
    another_anonymous = Principal("someone-else")  # no issuer: nobody vouched for it
    assert another_anonymous.anonymous
    assert await _served(limiter, ANONYMOUS, "resources/read", 1) == 1
    assert await _served(limiter, another_anonymous, "tools/list", 1) == 1
    assert await _served(limiter, ANONYMOUS, "tools/call", 1) == 1
    with pytest.raises(RateLimited) as err:
        await limiter.check(another_anonymous, "resources/read")
    assert err.value.data is not None and err.value.data["limit"] == "anonymous"
    assert "shared by every anonymous caller" in err.value.message
    assert await _served(limiter, Principal("carol", issuer="static"), "resources/read", 5) == 5


async def test_without_limits_nothing_is_counted() -> None:
    limiter = RateLimiter(None)
    assert not limiter.enabled
    assert await _served(limiter, ANONYMOUS, "resources/read", 200) == 200


# -- through the pipeline, in memory ---------------------------------------------------------------


class Echo(BaseModel):
    text: str


class Page(ResourceProvider):
    name = "page"
    prefixes = ("rl://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="rl://a", name="a")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="a")


class Echoer(ToolProvider):
    name = "echoer"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="echo", description="Echo the text.", input_model=Echo)]

    async def call(self, call: ToolCall) -> ToolResult:
        assert isinstance(call.arguments, Echo)
        return ToolResult(text=call.arguments.text)


def _small() -> SimpleNamespace:
    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [Page()]

    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [Echoer()]

    return SimpleNamespace(register_resource_providers=register_resource_providers,
                           register_tool_providers=register_tool_providers)  # fmt: skip


async def test_the_pipeline_refuses_over_budget_and_audits_it_while_other_classes_are_served(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    limits = LimitsSettings(window_seconds=60, reads=2, calls=5, lists=5, anonymous=1)
    composition = compose({"small": _small()}, server=ServerSettings(limits=limits, audit_log=audit))
    async with connect(composition) as client:
        for _ in range(2):
            await client.read_resource("rl://a")
        with pytest.raises(MCPError) as err:
            await client.read_resource("rl://a")
        assert err.value.code == -32009 and "at most 2 reads" in err.value.message
        assert isinstance(err.value.data, dict) and 1 <= err.value.data["retryAfter"] <= 60
        assert not (await client.call_tool("echo", {"text": "still served"})).is_error
        assert (await client.list_resources()).resources
    reads = [json.loads(line) for line in audit.read_text().splitlines() if '"resources/read"' in line]
    assert [line["decision"] for line in reads] == ["allowed", "allowed", "error"]
    assert reads[-1]["reason"] == "-32009: RateLimited"
    assert [line["target"] for line in reads] == ["rl://a"] * 3  # refused before routing, still named


# -- Redis that does not answer: the local count, at once --------------------------------------------


@contextlib.contextmanager
def _black_hole() -> Iterator[int]:
    """A loopback port that accepts connections and never answers (Redis hung, not refused)."""
    with contextlib.closing(socket.socket()) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield int(listener.getsockname()[1])


async def test_a_hung_redis_costs_no_wait_and_the_local_count_still_limits() -> None:
    limits = LimitsSettings(window_seconds=60, reads=2, calls=5, lists=5, anonymous=1)
    with _black_hole() as port:
        cluster = ClusterSettings(redis_url=f"redis://127.0.0.1:{port}/0", key_prefix="rl-hung", timeout_seconds=2.0)
        composition = compose({"small": _small()}, server=ServerSettings(limits=limits), cluster=cluster)
        async with connect(composition) as client:
            started = time.monotonic()
            for _ in range(2):
                await client.read_resource("rl://a")
            with pytest.raises(MCPError) as err:
                await client.read_resource("rl://a")
            elapsed = time.monotonic() - started
        assert err.value.code == -32009
        # The cluster listener knows Redis is gone: no request waits timeout_seconds for it.
        assert elapsed < 1.5, f"three requests took {elapsed:.2f} s"
        assert composition.runtime.limiter.degraded


# -- over HTTP: a real client, two static bearer tokens ----------------------------------------------


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _write_config(tmp_path: Path, limits: str, *, auth: bool = True, redis_url: str | None = None) -> Path:
    lines = ['allow = ["ssg_catalog"]', "", "[server]", f'audit_log = "{tmp_path / "audit.jsonl"}"', ""]
    if auth:
        lines += ["[server.auth]", 'tokens = [{subject = "alice", token_env = "RL_ALICE_TOKEN"}, '
                  '{subject = "bob", token_env = "RL_BOB_TOKEN"}]', ""]  # fmt: skip
    lines += ["[server.limits]", limits, ""]
    if redis_url is not None:
        lines += ["[cluster]", f"redis_url = {json.dumps(redis_url)}", 'key_prefix = "rl-test"', ""]
    return _config(tmp_path, "\n".join(lines))


class Caller:
    """One real MCP client over HTTP, with the response headers it saw."""

    def __init__(self, url: str, token: str | None, mode: str = "auto") -> None:
        self.url, self.token, self.mode = url, token, mode
        self.retry_after: list[str | None] = []
        self._stack = contextlib.AsyncExitStack()
        self.client: Client

    async def _seen(self, response: httpx2.Response) -> None:
        if response.request.method == "POST":
            self.retry_after.append(response.headers.get("retry-after"))

    async def __aenter__(self) -> Caller:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        http = await self._stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, event_hooks={"response": [self._seen]})
        )
        transport = streamable_http_client(self.url, http_client=http)
        self.client = await self._stack.enter_async_context(Client(transport, mode=self.mode, cache=None))  # type: ignore[arg-type]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def read(self) -> MCPError | None:
        """``None`` when the read was served, else the error it got."""
        try:
            result = await self.client.read_resource(CATALOG)
        except MCPError as exc:
            return exc
        assert result.contents
        return None


def _assert_refused(refused: MCPError | None, caller: Caller, allowed: int, bucket: str = "reads") -> None:
    assert refused is not None, "the request over the budget was served"
    assert refused.code == -32009, refused.message
    assert f"at most {allowed} " in refused.message and "per 60 seconds" in refused.message
    data = refused.data
    assert isinstance(data, dict) and data["limit"] == bucket and data["allowed"] == allowed
    assert 1 <= data["retryAfter"] <= 60 and f"retry after {data['retryAfter']} seconds" in refused.message
    assert caller.retry_after[-1] == str(data["retryAfter"])  # the HTTP response says it too


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "mode"),
    [((), "auto"), (("--stateless", "--json-response"), "auto"), (("--stateless", "--json-response"), "legacy")],
    ids=["sdk-path", "modern-json-path", "legacy-fast-path"],
)
async def test_one_subject_over_budget_is_refused_while_another_is_served(
    tmp_path: Path, extra: tuple[str, ...], mode: str
) -> None:
    config = _write_config(tmp_path, "reads = 3\nanonymous = 2")
    with _env(MCP_PROVIDERS_CONFIG=str(config), RL_ALICE_TOKEN=ALICE, RL_BOB_TOKEN=BOB), _http_server(*extra) as url:
        async with Caller(url, ALICE, mode) as alice, Caller(url, BOB, mode) as bob:
            assert [await alice.read() for _ in range(3)] == [None, None, None]
            _assert_refused(await alice.read(), alice, 3)
            assert await bob.read() is None  # the other subject, same run, same server
            assert bob.retry_after[-1] is None
            assert (await bob.client.list_resources()).resources  # lists are another budget
            _assert_refused(await alice.read(), alice, 3)
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    reads = [(line["subject"], line["decision"]) for line in lines if line["operation"] == "resources/read"]
    assert reads == [("alice", "allowed")] * 3 + [("alice", "error"), ("bob", "allowed"), ("alice", "error")]


@pytest.mark.slow
async def test_anonymous_callers_share_the_stricter_bucket_and_ops_routes_are_never_limited(tmp_path: Path) -> None:
    config = _write_config(tmp_path, "reads = 10\nanonymous = 2", auth=False)
    with _env(MCP_PROVIDERS_CONFIG=str(config)), _http_server() as url:
        async with Caller(url, None) as first, Caller(url, None) as second:
            assert await first.read() is None
            assert await second.read() is None  # another connection, the same anonymous bucket
            _assert_refused(await first.read(), first, 2, "anonymous")
            _assert_refused(await second.read(), second, 2, "anonymous")
        root = url.removesuffix("/mcp")
        async with httpx2.AsyncClient() as http:
            for _ in range(5):  # more than the anonymous budget, which is spent already
                for path in ("/healthz", "/readyz", "/metrics"):
                    response = await http.get(root + path)
                    assert response.status_code == 200, (path, response.text)
                    assert "retry-after" not in response.headers


# -- two replicas sharing one real redis-server --------------------------------------------------------


@pytest.fixture
def redis_url() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real ``redis-server`` and its process (missing: skipped, or failed under ``CI=true``)."""
    with redis_server() as served:
        yield served


def _redis_keys(url: str) -> list[str]:
    import redis

    with redis.Redis.from_url(url, decode_responses=True) as r:
        return sorted(str(k) for k in r.keys("*"))


async def test_redis_too_slow_to_count_fails_open_to_the_local_count_and_back(
    redis_url: tuple[str, subprocess.Popen[bytes]],
) -> None:
    import redis

    url, _ = redis_url
    limits = LimitsSettings(window_seconds=60, reads=2, calls=5, lists=5, anonymous=1)
    cluster = ClusterSettings(redis_url=url, key_prefix="rl-slow", timeout_seconds=0.5)
    composition = compose({"small": _small()}, server=ServerSettings(limits=limits), cluster=cluster)
    limiter = composition.runtime.limiter
    async with connect(composition) as client:
        await client.read_resource("rl://a")  # counted in Redis: 1 of 2
        with redis.Redis.from_url(url) as admin:
            admin.execute_command("CLIENT", "PAUSE", "10000", "WRITE")  # the count's script waits; PING does not
            try:
                for _ in range(2):  # each waits timeout_seconds for Redis, then counts here
                    await client.read_resource("rl://a")
                assert limiter.degraded
                with pytest.raises(MCPError) as err:
                    await client.read_resource("rl://a")
                assert err.value.code == -32009  # the local count still limits
            finally:
                admin.execute_command("CLIENT", "UNPAUSE")
        await client.read_resource("rl://a")  # Redis again: 2 of 2
        assert not limiter.degraded
        with pytest.raises(MCPError) as err:
            await client.read_resource("rl://a")
        assert err.value.code == -32009


@pytest.mark.slow
async def test_two_replicas_on_redis_share_each_budget_and_fail_open_to_their_own_count(
    tmp_path: Path, redis_url: tuple[str, subprocess.Popen[bytes]]
) -> None:
    url, redis_proc = redis_url
    config = _write_config(tmp_path, "reads = 3\nanonymous = 2", redis_url=url)
    with (
        _env(MCP_PROVIDERS_CONFIG=str(config), RL_ALICE_TOKEN=ALICE, RL_BOB_TOKEN=BOB),
        _http_server() as a_url,
        _http_server() as b_url,
    ):
        async with (
            Caller(a_url, ALICE) as alice_a, Caller(b_url, ALICE) as alice_b,
            Caller(a_url, BOB) as bob_a, Caller(b_url, BOB) as bob_b,
        ):  # fmt: skip
            assert [await alice_a.read(), await alice_b.read(), await alice_a.read()] == [None, None, None]
            _assert_refused(await alice_b.read(), alice_b, 3)  # B counts what A served
            _assert_refused(await alice_a.read(), alice_a, 3)
            assert [await bob_a.read(), await bob_b.read()] == [None, None]  # bob: served on both
            keys = _redis_keys(url)
            limit_keys = [k for k in keys if k.startswith("rl-test:limits:")]
            assert len(limit_keys) == 2, keys  # one bucket for alice's reads, one for bob's
            assert not any("alice" in k or "bob" in k for k in keys)  # a digest, no subject names

            redis_proc.terminate()
            redis_proc.wait(timeout=10)
            # Redis gone: each replica counts alone (fail open, still limited), never an error.
            assert [await bob_b.read() for _ in range(3)] == [None, None, None]
            _assert_refused(await bob_b.read(), bob_b, 3)
            assert await bob_a.read() is None  # A's own count has room
    log_lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert not any(line.get("reason", "").startswith("-32603") for line in log_lines)
