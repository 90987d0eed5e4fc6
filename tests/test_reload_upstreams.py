"""Reloads that meet a dead upstream or the server's shutdown: an upstream that serves goes on
serving when a reload finds another one dead, and a reload still composing when the server shuts
down ends as a quiet no-op saying so (it once failed with ``AttributeError: 'NoneType' object has
no attribute 'start_soon'``, the providers' task group being gone)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import prefork
import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._host.advisories import unavailable_sources
from mcp_providers._serve.reload import Reloader
from mcp_providers._serve.runtime import SHUTTING_DOWN
from mcp_providers.config import Config
from mcp_providers.errors import UPSTREAM_ERROR
from mcp_providers.plugins import upstream
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

TINY = str(Path(__file__).with_name("tiny_stdio_upstream.py"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime hosts providers in an asyncio task of its own


async def _until(condition: Any, seconds: float = 10.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.01)


def _servers(flag: Path, *extra: str) -> dict[str, Any]:
    """``alive`` (always up) and ``flaky`` (down while ``flag`` exists; ``extra`` changes its args),
    through the fork server."""
    return {
        "servers": [
            {"name": "alive", **prefork.upstream_script(TINY, "alive"), "prefixes": ["alive://"],
             "tool_prefix": "a_"},
            {"name": "flaky", **prefork.upstream_script(TINY, "flaky", str(flag), *extra),
             "prefixes": ["flaky://"], "tool_prefix": "f_"},
        ]
    }  # fmt: skip


async def test_a_reload_finding_one_upstream_dead_leaves_the_other_serving(tmp_path: Path) -> None:
    flag = tmp_path / "flaky-is-down"
    composed = compose({"upstream": upstream}, {"upstream": _servers(flag)})
    config = {"now": composed.config}
    reloader = Reloader(composed, lambda: config["now"], load_entrypoints=False, plugins={"upstream": upstream})
    async with composed.running():
        async with connect(composed) as client:
            assert (await client.read_resource("flaky://note")).contents[0].text == "note of flaky"
        flag.touch()  # flaky is down from now on; its settings change, so every upstream is listed again
        config["now"] = Config(plugins={"upstream": _servers(flag, "--changed")})
        attempt = await reloader.reload()
        assert attempt.outcome == "applied", attempt
        assert not composed.startup_failures  # flaky declares nothing and keeps trying to connect
        assert "flaky" in {p.value for p in unavailable_sources(composed.assembly.declared)}
        async with connect(composed) as client:
            assert (await client.read_resource("alive://note")).contents[0].text == "note of alive"
            echoed = await client.call_tool("a_echo", {"text": "still here"})
            assert echoed.structured_content == {"result": "still here"}
            with pytest.raises(MCPError) as down:
                await client.call_tool("f_echo", {"text": "x"})
            assert down.value.code in (UPSTREAM_ERROR, -32602)  # not served, or served and failing
        attempt = await reloader.reload()  # again, unchanged: alive is untouched
        assert attempt.outcome == "unchanged"
        async with connect(composed) as client:
            assert (await client.read_resource("alive://note")).contents[0].text == "note of alive"


class _Settings(BaseModel):
    more: bool = False


class _Slow(ResourceProvider):
    """Starts only once the test says so (``release``), telling it when it began (``entered``)."""

    def __init__(self, name: str, events: dict[str, anyio.Event] | None) -> None:
        self.name = name
        self.prefixes = (f"{name}://",)
        self._events = events

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=f"{self.name}://one", name="one", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=self.name)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        if self._events is not None:
            self._events["entered"].set()
            await self._events["release"].wait()
        yield


class _Growing:
    """One provider; with ``more``, two more, the first of which starts slowly."""

    def __init__(self, events: dict[str, anyio.Event]) -> None:
        self.events = events

    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        return _Settings

    @hookimpl
    def register_resource_providers(self, settings: _Settings) -> list[ResourceProvider]:
        if not settings.more:
            return [_Slow("base", None)]
        return [_Slow("base", None), _Slow("slow", self.events), _Slow("next", None)]


async def test_a_reload_that_meets_the_shutdown_is_a_quiet_no_op(caplog: pytest.LogCaptureFixture) -> None:
    events = {"entered": anyio.Event(), "release": anyio.Event()}
    plugin = _Growing(events)
    composed = compose({"growing": plugin}, {"growing": {"more": False}})
    reloader = Reloader(
        composed,
        lambda: Config(plugins={"growing": {"more": True}}),
        load_entrypoints=False,
        plugins={"growing": plugin},
    )
    shutdown = anyio.Event()
    attempts = []

    async def serve() -> None:
        async with composed.running():
            await shutdown.wait()

    async def reload() -> None:
        attempts.append(await reloader.reload("SIGHUP"))

    caplog.set_level(logging.INFO, "mcp_providers")
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(serve)
        await _until(lambda: composed.runtime.serving)
        tasks.start_soon(reload)
        with anyio.fail_after(30):
            await events["entered"].wait()  # the reload is starting "slow"; "next" comes after it
        shutdown.set()
        await _until(lambda: not composed.runtime.serving and composed.runtime._tasks is None)
        events["release"].set()
    [attempt] = attempts
    assert attempt.outcome == "failed"
    assert attempt.problems == (SHUTTING_DOWN,) == ("the server is shutting down: the reload was not applied",)
    assert composed.runtime.generation.number == 1  # nothing swapped in
    assert [d.provider.name for d in composed.declared] == ["base"]
    said = [r for r in caplog.records if r.name == "mcp_providers.reload"]
    assert not [r for r in said if r.levelno >= logging.ERROR], [r.getMessage() for r in said]
    assert any("shutting down" in r.getMessage() for r in said)
    assert not composed.runtime._hosted  # what the reload began hosting was let go


async def test_a_reload_after_the_shutdown_swaps_nothing_in(caplog: pytest.LogCaptureFixture) -> None:
    events = {"entered": anyio.Event(), "release": anyio.Event()}
    events["release"].set()
    plugin = _Growing(events)
    composed = compose({"growing": plugin}, {"growing": {"more": False}})
    reloader = Reloader(
        composed,
        lambda: Config(plugins={"growing": {"more": True}}),
        load_entrypoints=False,
        plugins={"growing": plugin},
    )
    async with composed.running():
        pass
    attempt = await reloader.reload("SIGHUP")  # ends after the server stopped: a reload composed while serving
    assert attempt.outcome == "applied"  # a composition not serving (yet, or any more) may still be swapped
    assert not events["entered"].is_set()  # ...and its providers start when it serves again
    async with composed.running(), connect(composed) as client:
        assert events["entered"].is_set()
        assert (await client.read_resource("next://one")).contents[0].text == "next"


class _Blocking:
    """Its hook, once ``block`` is set, waits in the reload's composing thread for ``go``."""

    def __init__(self) -> None:
        self.block, self.composing, self.go = threading.Event(), threading.Event(), threading.Event()

    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        return _Settings

    @hookimpl
    def register_resource_providers(self, settings: _Settings) -> list[ResourceProvider]:
        if self.block.is_set():
            self.composing.set()
            self.go.wait(30)
        return [_Slow("base", None), *([_Slow("next", None)] if settings.more else [])]


async def test_a_reload_still_composing_at_the_shutdown_swaps_nothing_in(caplog: pytest.LogCaptureFixture) -> None:
    plugin = _Blocking()
    composed = compose({"blocking": plugin}, {"blocking": {"more": False}})
    reloader = Reloader(
        composed, lambda: Config(plugins={"blocking": {"more": True}}), load_entrypoints=False,
        plugins={"blocking": plugin},
    )  # fmt: skip
    shutdown, attempts = anyio.Event(), []

    async def serve() -> None:
        async with composed.running():
            await shutdown.wait()

    async def reload() -> None:
        attempts.append(await reloader.reload("file"))

    caplog.set_level(logging.INFO, "mcp_providers")
    plugin.block.set()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(serve)
        await _until(lambda: composed.runtime.serving)
        tasks.start_soon(reload)
        await _until(plugin.composing.is_set, 30)
        shutdown.set()
        await _until(lambda: not composed.runtime.serving)
        plugin.go.set()
    [attempt] = attempts
    assert (attempt.outcome, attempt.problems) == ("failed", (SHUTTING_DOWN,))
    assert composed.runtime.generation.number == 1
    assert not [r for r in caplog.records if r.name == "mcp_providers.reload" and r.levelno >= logging.ERROR]
