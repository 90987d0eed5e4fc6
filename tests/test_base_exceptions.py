"""A ``BaseException`` from plugin code is contained (issue 24, item 11).

``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``, a custom ``BaseException`` subclass and a
``CancelledError`` the provider raises itself, in a read, a tool call, a prompt render, a
completion and ``authorize``: each answers that one request with an error (-32603 naming the
provider; a denial for ``authorize``), and the next request, on the same session or a new one, is
answered as if nothing happened. In memory, over stdio (SDK client, subprocess) and over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import boom_plugin
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from prefork import python

from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

KINDS = list(boom_plugin.RAISES)
TEMPLATE = types.ResourceTemplateReference(type="ref/resource", uri="boom://read/{kind}")


async def _read(client: Client, kind: str) -> str:
    result = await client.read_resource(f"boom://read/{kind}")
    return result.contents[0].text  # type: ignore[union-attr]


async def _call(client: Client, kind: str) -> str:
    result = await client.call_tool("boom", {"kind": kind})
    if result.is_error:
        raise AssertionError(f"tool error: {result.content}")
    return str(result.structured_content["kind"])  # type: ignore[index]


async def _prompt(client: Client, kind: str) -> str:
    result = await client.get_prompt("boom", {"kind": kind})
    return result.messages[0].content.text  # type: ignore[union-attr]


async def _complete(client: Client, kind: str) -> str:
    result = await client.complete(TEMPLATE, {"name": "kind", "value": kind})
    return ",".join(result.completion.values)


METHODS: dict[str, tuple[Callable[[Client, str], Awaitable[str]], str]] = {
    "read": (_read, "read ok"),
    "tool call": (_call, "ok"),
    "prompt": (_prompt, "rendered ok"),
    "completion": (_complete, "ok"),
}


async def _fails_then_recovers(client: Client, method: str, kind: str) -> types.ErrorData:
    act, healthy = METHODS[method]
    with pytest.raises(MCPError) as raised:
        await act(client, kind)
    assert await act(client, "ok") == healthy  # the next request on the same session
    assert await _read(client, "ok") == "read ok"
    return raised.value.error


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", [*METHODS])
async def test_in_memory_a_base_exception_fails_only_its_request(method: str, kind: str) -> None:
    composition = compose({"boom": boom_plugin})
    async with connect(composition) as client:
        error = await _fails_then_recovers(client, method, kind)
    assert error.code == types.INTERNAL_ERROR
    assert "(plugin 'boom') failed" in error.message and "the server log has the details" in error.message


@pytest.mark.parametrize("kind", KINDS)
async def test_in_memory_a_base_exception_in_authorize_denies(kind: str) -> None:
    composition = compose({"boom": boom_plugin})
    async with connect(composition) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(f"boom://guarded/{kind}")
        assert "the authorize hook of plugin 'boom' failed" in raised.value.error.message
        assert (await client.read_resource("boom://guarded/ok")).contents[0].text == "read ok"  # type: ignore[union-attr]


async def test_the_requests_own_cancellation_still_cancels_it() -> None:
    # Containment must not swallow a real cancellation: a read cut off by its deadline is -32005.
    import anyio

    from mcp_providers import ServerSettings

    class Slow(boom_plugin.Boom):
        async def read(self, request: Any) -> Any:
            await anyio.sleep(30)

    plugin = type("P", (), {"register_resource_providers": staticmethod(boom_plugin.hookimpl(lambda: [Slow()]))})
    composition = compose({"slow": plugin()}, server=ServerSettings(read_timeout=0.2))
    async with connect(composition) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("boom://read/x")
    assert raised.value.error.code == -32005


# -- subprocesses: stdio and HTTP ---------------------------------------------------------------


@pytest.fixture(scope="module")
def boom_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for ``python -m mcp_providers`` with the boom plugin installed (alone)."""
    site = tmp_path_factory.mktemp("boom-site")
    info = site / "boom_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: boom_plugin\nVersion: 0.1\n")
    # boom has an authorize hook: a policy plugin (round 4 item 22)
    (info / "entry_points.txt").write_text("[mcp_providers.policy]\nboom = boom_plugin\n")
    shutil.copy(Path(boom_plugin.__file__), site / "boom_plugin.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    env["MCP_PROVIDERS_PLUGINS"] = "boom"
    return env


@pytest.mark.slow
async def test_stdio_survives_every_base_exception_in_every_method(boom_env: dict[str, str], tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[*python()[1:], "-m", "mcp_providers", "serve"], env=boom_env
    )
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            for method in METHODS:
                for kind in KINDS:
                    error = await _fails_then_recovers(client, method, kind)
                    assert error.code == types.INTERNAL_ERROR, (method, kind)
            for kind in KINDS:
                with pytest.raises(MCPError):
                    await client.read_resource(f"boom://guarded/{kind}")
            assert await _read(client, "ok") == "read ok"
    log = (tmp_path / "stderr.txt").read_text()
    assert "SystemExit" in log and "KeyboardInterrupt" in log  # the operator sees what happened


@pytest.mark.slow
async def test_stdio_survives_a_base_exception_in_a_task_a_read_started(
    boom_env: dict[str, str], tmp_path: Path
) -> None:
    import anyio

    params = StdioServerParameters(
        command=sys.executable, args=[*python()[1:], "-m", "mcp_providers", "serve"], env=boom_env
    )
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            for kind in ("system-exit", "keyboard-interrupt"):
                assert await _read(client, f"task-{kind}") == "spawned"
                await anyio.sleep(0.3)  # the task has raised by now
                assert await _read(client, "ok") == "read ok"
    log = (tmp_path / "stderr.txt").read_text()
    assert "a task provider 'boom-resources' started raised SystemExit" in log, log[-2000:]
    assert "a task provider 'boom-resources' started raised KeyboardInterrupt" in log, log[-2000:]


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _http_server(env: dict[str, str], *extra: str) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [*python(), "-m", "mcp_providers", "serve", "--http", f"127.0.0.1:{port}", *extra],
        env=env,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.closing(socket.socket()) as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, "server exited"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), ("--stateless", "--json-response")], ids=["sessions", "stateless"])
async def test_http_survives_base_exceptions_and_new_clients_are_answered(
    boom_env: dict[str, str], extra: tuple[str, ...]
) -> None:
    with _http_server(boom_env, *extra) as base:
        for method in METHODS:
            for kind in ("keyboard-interrupt", "system-exit", "custom"):
                async with Client(f"{base}/mcp", cache=None) as client:  # type: ignore[arg-type]
                    error = await _fails_then_recovers(client, method, kind)
                    assert error.code == types.INTERNAL_ERROR
                async with Client(f"{base}/mcp", cache=None) as fresh:  # type: ignore[arg-type]
                    assert await _read(fresh, "ok") == "read ok"
        async with Client(f"{base}/mcp", cache=None) as client:  # type: ignore[arg-type]
            for kind in KINDS:  # authorize raising: a denial with a body, never an empty 200
                with pytest.raises(MCPError) as raised:
                    await client.read_resource(f"boom://guarded/{kind}")
                assert "the authorize hook of plugin 'boom' failed" in raised.value.error.message
            assert await _read(client, "ok") == "read ok"
        async with httpx2.AsyncClient() as http:
            health = await http.get(f"{base}/healthz")
        assert health.status_code == 200


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("kind", KINDS)
async def test_a_base_exception_in_check_watch_fails_only_that_subscribe(kind: str) -> None:
    # check_watch is provider code the pipeline calls outside the invoker: the wire maps it.
    composition = compose({"boom": boom_plugin})
    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        with pytest.raises(MCPError) as raised:
            await legacy.subscribe_resource(f"boom://live/{kind}")
        assert raised.value.error.code == types.INTERNAL_ERROR
        await legacy.subscribe_resource("boom://live/ok")
        assert await _read(legacy, "ok") == "read ok"


class _Lifespans(boom_plugin.Boom):
    """A provider whose lifespan raises ``enter`` when it starts or ``leave`` when it stops."""

    stopped: ClassVar[list[str]] = []

    def __init__(self, name: str, prefix: str, enter: str = "ok", leave: str = "ok") -> None:
        self.name, self.prefixes, self._enter, self._leave = name, (prefix,), enter, leave

    def templates(self) -> Any:
        return [types_template(self.prefixes[0])]

    @contextlib.asynccontextmanager
    async def lifespan(self) -> Any:
        boom_plugin._maybe_raise(self._enter)
        yield
        _Lifespans.stopped.append(self.name)
        boom_plugin._maybe_raise(self._leave)


def types_template(prefix: str) -> Any:
    from mcp_providers import ResourceTemplate

    return ResourceTemplate(uri_template=prefix + "read/{kind}", name=prefix.strip(":/"), mime_type="text/plain")


def _plugin_of(*providers: Any) -> Any:
    return type("P", (), {"register_resource_providers": staticmethod(boom_plugin.hookimpl(lambda: list(providers)))})()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_lifespan_that_raises_a_base_exception_on_start_fails_only_its_provider(kind: str) -> None:
    composition = compose({"p": _plugin_of(_Lifespans("bad", "bad://", enter=kind), _Lifespans("fine", "fine://"))})
    async with connect(composition) as client:
        assert "bad" in composition.startup_failures
        with pytest.raises(MCPError) as raised:
            await client.read_resource("bad://read/ok")
        assert "failed to start" in raised.value.error.message
        assert (await client.read_resource("fine://read/ok")).contents[0].text == "read ok"  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_lifespan_that_raises_a_base_exception_on_stop_lets_the_others_stop(kind: str) -> None:
    _Lifespans.stopped = []
    first, second = _Lifespans("first", "first://"), _Lifespans("second", "second://", leave=kind)
    composition = compose({"p": _plugin_of(first, second)})
    async with composition.running():
        assert composition.startup_failures == {}
    assert _Lifespans.stopped == ["second", "first"]  # second stopped (and raised), first still stopped


@pytest.mark.parametrize("kind", ["system-exit", "generator-exit", "custom", "cancelled"])
def test_a_base_exception_from_a_hook_or_a_declaration_rejects_only_its_plugin(kind: str) -> None:
    def raising() -> Any:
        boom_plugin._maybe_raise(kind)

    class Declares(boom_plugin.Boom):
        def templates(self) -> Any:
            boom_plugin._maybe_raise(kind)

    hooks = type("H", (), {"register_tool_providers": staticmethod(boom_plugin.hookimpl(raising))})()
    composition = compose({"hooks": hooks, "declares": _plugin_of(Declares()), "boom": boom_plugin}, strict=False)
    status = {r.name: (r.status, r.reason) for r in composition.records}
    assert status["hooks"][0] == "rejected" and "hook register_tool_providers raised" in str(status["hooks"][1])
    assert status["declares"][0] == "rejected"
    assert any(p.rule == "declaration-failed" for p in composition.problems)
    assert status["boom"] == ("loaded", None)


async def test_healthz_says_failing_once_the_session_manager_has_stopped() -> None:
    import anyio
    import uvicorn

    from mcp_providers._serve.transport.http_app import http_app
    from mcp_providers._serve.transport.http_policy import transport_policy
    from mcp_providers._serve.transport.ops import ops_routes

    composition = compose({"boom": boom_plugin})
    app = http_app(composition.server, security=transport_policy("127.0.0.1", None), routes=ops_routes(composition))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.02)
        try:
            async with httpx2.AsyncClient() as http:
                assert (await http.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200
                # The manager's task group ends (as a BaseException escaping a request once made it):
                composition.server.session_manager._task_group.cancel_scope.cancel()
                with anyio.fail_after(5):
                    while composition.server.session_manager._task_group is not None:
                        await anyio.sleep(0.02)
                health = await http.get(f"http://127.0.0.1:{port}/healthz")
                assert health.status_code == 503, health.text
                assert "session manager has stopped" in health.json()["problems"][0]
        finally:
            server.should_exit = True


@pytest.mark.parametrize("where", ["hook", "enter"])
@pytest.mark.parametrize("kind", ["system-exit", "custom", "generator-exit"])
def test_a_demo_backend_that_raises_a_base_exception_leaves_the_others_prepared(kind: str, where: str) -> None:
    import io

    from rich.console import Console

    from mcp_providers._cli.demo import prepare_backends
    from mcp_providers._host.discovery import discover
    from mcp_providers.config import Config

    @contextlib.contextmanager
    def backend(table: dict[str, str]) -> Iterator[dict[str, str]]:
        boom_plugin._maybe_raise(kind if where == "enter" and table["name"] == "bad" else "ok")
        yield table

    def demo(name: str) -> Any:
        def settings() -> Any:
            boom_plugin._maybe_raise(kind if where == "hook" and name == "bad" else "ok")
            return backend({"name": name})

        return type(name, (), {"demo_settings": staticmethod(boom_plugin.hookimpl(settings))})()

    _pm, records = discover(Config(), load_entrypoints=False, plugins={"bad": demo("bad"), "good": demo("good")})
    out = io.StringIO()
    with contextlib.ExitStack() as stack:
        tables = prepare_backends(stack, records, Console(file=out, width=200))
    assert tables == {"good": {"name": "good"}}
    assert f"demo: plugin bad could not prepare its demo backend ({type(boom_plugin.RAISES[kind]()).__name__})" in (
        out.getvalue()
    )


class _Polling(boom_plugin.Boom):
    """A provider whose lifespan runs a poller task that raises ``kind`` once serving has begun."""

    def __init__(self, name: str, prefix: str, kind: str) -> None:
        self.name, self.prefixes, self._kind = name, (prefix,), kind
        self.failed = asyncio_event()

    def templates(self) -> Any:
        return [types_template(self.prefixes[0])]

    async def _poll(self) -> None:
        import anyio

        await anyio.sleep(0.05)
        self.failed.set()
        if self._kind == "runtime-error":
            raise RuntimeError("the poller's upstream went away")
        boom_plugin._maybe_raise(self._kind)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> Any:
        import anyio

        async with anyio.create_task_group() as pollers:
            pollers.start_soon(self._poll)
            try:
                yield
            finally:
                pollers.cancel_scope.cancel()


def asyncio_event() -> Any:
    import anyio

    return anyio.Event()


# Not a CancelledError, which the provider's own task group takes for a cancellation. SystemExit and
# KeyboardInterrupt, which asyncio re-raises out of the event loop (Task.__step), are contained by
# the task factory the runtime installs. docs/security.md says so.
@pytest.mark.parametrize("kind", ["system-exit", "keyboard-interrupt", "custom", "generator-exit", "runtime-error"])
async def test_a_poller_that_fails_while_serving_ends_only_its_provider(kind: str) -> None:
    import anyio

    polling = _Polling("polling", "polling://", kind)
    composition = compose({"p": _plugin_of(polling, _Lifespans("steady", "steady://"))})
    async with connect(composition) as client:
        with anyio.fail_after(5):
            await polling.failed.wait()
            while "polling" not in composition.startup_failures:
                await anyio.sleep(0.01)
        for _ in range(3):  # the server and the other provider go on
            assert (await client.read_resource("steady://read/ok")).contents[0].text == "read ok"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as raised:
            await client.read_resource("polling://read/ok")
        assert "provider 'polling'" in raised.value.error.message


class _Spawning(boom_plugin.Boom):
    """A provider whose read starts a task of its own (fire and forget) that raises ``kind``."""

    def __init__(self, name: str, prefix: str, kind: str) -> None:
        self.name, self.prefixes, self._kind = name, (prefix,), kind
        self.spawned: list[asyncio.Task[None]] = []

    def templates(self) -> Any:
        return [types_template(self.prefixes[0])]

    async def read(self, request: Any) -> Any:
        async def later() -> None:
            await asyncio.sleep(0.01)
            boom_plugin._maybe_raise(self._kind)

        self.spawned.append(asyncio.get_running_loop().create_task(later()))
        return boom_plugin.Content(text="spawned")


@pytest.mark.parametrize("kind", ["system-exit", "keyboard-interrupt"])
async def test_a_task_a_read_started_that_exits_is_contained(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    """``loop.create_task`` from provider code: its ``SystemExit`` would leave the event loop
    (ending a stdio server); contained, the task fails with :class:`Escaped`, the failure is logged
    with the provider's name, and the server goes on."""
    import anyio

    from mcp_providers._host.contain import Escaped

    spawning = _Spawning("spawning", "spawning://", kind)
    async with connect(compose({"p": _plugin_of(spawning)})) as client:
        assert (await client.read_resource("spawning://read/ok")).contents[0].text == "spawned"  # type: ignore[union-attr]
        with anyio.fail_after(5):
            while not spawning.spawned[0].done():
                await anyio.sleep(0.01)
        assert isinstance(spawning.spawned[0].exception(), Escaped)
        assert (await client.read_resource("spawning://read/ok")).contents[0].text == "spawned"  # type: ignore[union-attr]
    assert any("spawning" in r.getMessage() and type(boom_plugin.RAISES[kind]()).__name__ in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]  # fmt: skip
