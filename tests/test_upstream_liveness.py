"""Upstream connections that stay up and come back (round 6, brief H): a ``list_changed`` reloads
only when what would be served changed (an upstream saying it on every connection once reloaded
166 generations in 25 s); an upstream down at start is served once it comes up; a stray non-JSON
line, or an error answer coded -32000, keeps the connection. Against a raw stdio upstream
(``raw_stdio_upstream.py``), real processes."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError

from mcp_providers._host.advisories import unavailable_sources
from mcp_providers._serve.reload import Reloader
from mcp_providers.errors import UPSTREAM_ERROR
from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream import link
from mcp_providers.plugins.upstream import providers as upstream_providers
from mcp_providers.plugins.upstream.providers import UpstreamResources
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

RAW = str(Path(__file__).with_name("raw_stdio_upstream.py"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime hosts providers in an asyncio task of its own


async def _until(condition: Callable[[], object], what: str, seconds: float = 20.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.02)
    assert condition(), what


def _composed(here: Path, *flags: str) -> tuple[Any, Reloader]:
    server = {"name": "raw", "command": sys.executable, "args": [RAW, str(here), *flags], "prefixes": ["raw://a/"],
              "tool_prefix": "r_", "read_timeout": 10}  # fmt: skip
    composed = compose({"upstream": upstream}, {"upstream": {"servers": [server]}}, strict=False)  # down at first
    reloader = Reloader(composed, lambda: composed.config, load_entrypoints=False, plugins={"upstream": upstream})
    return composed, reloader


def _provider(composed: Any) -> UpstreamResources:
    [found] = [d.provider for d in composed.assembly.declared if isinstance(d.provider, UpstreamResources)]
    return found


def _connects(here: Path) -> int:
    log = here / "connects"
    return len(log.read_text().splitlines()) if log.exists() else 0


async def _tools(composed: Any) -> set[str]:
    """The tool names served (none, when no plugin serves a tool: the method is not served then)."""
    async with connect(composed) as client:
        try:
            return {t.name for t in (await client.list_tools()).tools}
        except MCPError:
            return set()


async def test_list_changed_on_every_connection_reloads_only_when_the_lists_changed(tmp_path: Path) -> None:
    composed, reloader = _composed(tmp_path, "--lc")
    first = composed.runtime.generation.number
    async with composed.running():
        resources = _provider(composed)
        await _until(lambda: resources.relistings >= 1, "listed again after its list_changed burst")
        await anyio.sleep(1.5)  # time enough for a loop to show: a reload, a reconnect, a reload ...
        assert reloader.last is None, reloader.last
        assert composed.runtime.generation.number == first
        assert resources.relistings == 1  # three notices in a burst: one listing
        assert _connects(tmp_path) == 2  # the composition's listing and the lifespan's connection
        assert resources.link.restarts == 0
        async with connect(composed) as client:  # what it lists now differs: one reload, no loop
            assert not (await client.call_tool("r_grow", {})).is_error
        await _until(lambda: reloader.last is not None, "the reload the grown list asked for")
        assert reloader.last is not None and reloader.last.outcome == "applied", reloader.last
        assert "upstream 'raw' (stdio) sent notifications/tools/list_changed" in reloader.last.trigger
        renewed = _provider(composed)
        await _until(lambda: renewed.relistings >= 1, "the new provider's connection listed it again")
        await anyio.sleep(1.5)
        assert reloader.outcomes == {"applied": 1}, reloader.last
        assert composed.runtime.generation.number == first + 1
        assert "r_extra" in await _tools(composed)


async def test_an_upstream_down_at_start_is_served_once_it_comes_up(tmp_path: Path) -> None:
    (tmp_path / "down").touch()
    composed, reloader = _composed(tmp_path)
    assert "could not be listed" in {p.value: p.message for p in unavailable_sources(composed.assembly.declared)}["raw"]
    async with composed.running():
        assert not composed.startup_failures  # it keeps trying: no failure that would end its lifespan
        assert await _tools(composed) == set()
        (tmp_path / "down").unlink()
        await _until(lambda: reloader.last is not None, "the reload its first connection asked for")
        assert reloader.last is not None and reloader.last.outcome == "applied", reloader.last
        assert "connected (it could not be listed at composition)" in reloader.last.trigger
        assert {"r_hello", "r_grow"} <= await _tools(composed)
        assert not unavailable_sources(composed.assembly.declared)
        assert not composed.startup_failures
        async with connect(composed) as client:
            assert (await client.read_resource("raw://a/one")).contents[0].text == "content of raw://a/one"


async def test_a_stray_line_on_stdout_is_warned_about_once_and_the_connection_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    composed, _reloader = _composed(tmp_path, "--banner")
    caplog.set_level(logging.INFO)
    async with composed.running(), connect(composed) as client:
        for _ in range(3):
            read = await client.read_resource("raw://a/one")
            assert read.contents[0].text == "content of raw://a/one"
        await anyio.sleep(0.3)  # the SDK hands the parse error over in a task of its own
        assert _provider(composed).link.restarts == 0
        assert _connects(tmp_path) == 2
    said = [r for r in caplog.records if "could not be parsed" in r.getMessage() and r.levelno >= logging.WARNING]
    assert len(said) == 1 and "upstream 'raw' (stdio)" in said[0].getMessage()
    assert said[0].exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]


async def test_an_error_answer_coded_32000_is_an_upstream_error_and_the_connection_kept(tmp_path: Path) -> None:
    composed, _reloader = _composed(tmp_path)
    async with composed.running(), connect(composed) as client:
        for _ in range(2):
            with pytest.raises(MCPError) as failed:
                await client.read_resource("raw://a/fail")
            assert failed.value.code == UPSTREAM_ERROR
            assert "upstream 'raw' (stdio) answered resources/read raw://a/fail with error -32000" in (
                failed.value.message
            )
            assert (await client.read_resource("raw://a/one")).contents[0].text == "content of raw://a/one"
        assert _provider(composed).link.restarts == 0
        assert _connects(tmp_path) == 2


async def test_an_upstream_that_really_closes_is_lost_and_opened_again(tmp_path: Path) -> None:
    composed, _reloader = _composed(tmp_path)
    async with composed.running(), connect(composed) as client:
        with pytest.raises(MCPError) as lost:
            await client.read_resource("raw://a/bye")  # the process exits: -32000 from the SDK, and no ping answers
        assert lost.value.code == UPSTREAM_ERROR
        assert "upstream 'raw' (stdio) connection lost during resources/read raw://a/bye" in lost.value.message
        link = _provider(composed).link
        await _until(lambda: link.restarts >= 1 and link.connected is not None, "the connection opened again")
        assert (await client.read_resource("raw://a/one")).contents[0].text == "content of raw://a/one"
        assert _connects(tmp_path) == 3


async def test_an_upstream_that_exits_while_idle_is_opened_again_without_a_request(tmp_path: Path) -> None:
    """Tester, round 9: a stdio upstream that exited with no request in flight was noticed only by
    the next request (which failed), so its subscriptions got no updates meanwhile. The end of its
    output now ends the connection, which is opened again after the back-off."""
    composed, _reloader = _composed(tmp_path)
    async with composed.running(), connect(composed) as client:
        before = _connects(tmp_path)  # the listing at compose time, and the running connection
        said = await client.call_tool("r_bye_later", {})
        assert said.content[0].text == "called bye_later"  # type: ignore[union-attr]
        link = _provider(composed).link
        await _until(lambda: _connects(tmp_path) == before + 1 and link.connected is not None, "opened again, unasked")
        assert link.restarts == 1
        assert (await client.read_resource("raw://a/one")).contents[0].text == "content of raw://a/one"


async def test_an_upstream_that_dies_after_each_handshake_is_opened_again_ever_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tester, round 9: an upstream that died 0.1 s after each handshake was started again every
    0.2 s (42 processes in 16 s). A connection lost soon after it opened now waits the next step of
    the back-off before the next one. The steps are the shipped ones divided by ten here (the three
    waits before the fourth loss took 3.5 s)."""
    assert link.BACKOFF[1:5] == (0.5, 1.0, 2.0, 5.0)  # the shipped steps, ever longer
    steps = tuple(seconds / 10 for seconds in link.BACKOFF)
    monkeypatch.setattr(link, "BACKOFF", steps)
    composed, _reloader = _composed(tmp_path)
    async with composed.running(), connect(composed) as client:
        (tmp_path / "brief").touch()
        with caplog.at_level(logging.WARNING, logger="mcp_providers.plugins.upstream.link"):
            await client.call_tool("r_bye_later", {})

            def waits() -> list[float]:
                said = [
                    r.getMessage() for r in caplog.records if "connection lost; opening it again in" in r.getMessage()
                ]
                return [float(m.rsplit(" in ", 1)[1].split()[0]) for m in said]

            await _until(lambda: len(waits()) >= 4, "four connections lost", seconds=30)
        # the first connection too lived less than STABLE_SECONDS: the steps start at the second
        assert waits()[:4] == list(steps[1:5]), waits()


async def test_an_upstream_whose_listing_keeps_changing_is_listed_again_ever_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Tester, round 8: an upstream flipping its tool's annotations on every connection reloaded the
    server every ~3 s, forever. Past ``free`` changes, each relisting first waits (here 60 s)."""
    monkeypatch.setattr(upstream_providers, "FLAPPING", upstream_providers.Flapping(free=1, base=60))
    composed, reloader = _composed(tmp_path, "--lc", "--flip")
    first = composed.runtime.generation.number
    caplog.set_level(logging.WARNING, "mcp_providers.plugins.upstream.providers")
    async with composed.running():
        await _until(lambda: reloader.outcomes.get("applied") == 1, "the first change reloads at once")
        await _until(lambda: "listing it again in 60 s" in caplog.text, "the next change waits", 30)
        await anyio.sleep(2)
        assert reloader.outcomes == {"applied": 1}, reloader.last
        assert composed.runtime.generation.number == first + 1


async def test_an_answer_whose_result_is_not_an_object_fails_the_call_at_once(tmp_path: Path) -> None:
    """Tester, round 8: a tools/call answered with ``"result": 12345`` waited out read_timeout and
    was reported as not answered. Any answer the SDK cannot parse, to any request, fails it now."""
    composed, _ = _composed(tmp_path)  # read_timeout 10 s
    async with composed.running(), connect(composed) as client:
        with anyio.fail_after(5), pytest.raises(MCPError) as failed:
            await client.call_tool("r_numeric", {})
        said = failed.value.error.message
        assert "upstream 'raw'" in said and "tools/call answer is not a JSON-RPC answer: its result is" in said, said
        with anyio.fail_after(5), pytest.raises(MCPError) as failed:
            await client.call_tool("r_empty", {})
        said = failed.value.error.message
        assert "tools/call answer is not a JSON-RPC answer: it has neither a result nor an error" in said, said
        assert not (await client.call_tool("r_hello", {})).is_error  # the connection serves on
