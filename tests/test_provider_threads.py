"""Threads for plugins' plain functions are bounded (tester thirteen): a thread abandoned at its
request's deadline counts against ``[server.limits] provider_threads`` until its function returns;
a request finding every thread busy waits within its deadline and is then answered -32005 naming
the bound and who holds it (never -32603, never a new thread); the server's own threads are not
counted, so a reload applies while providers hold them all."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers import _threads
from mcp_providers._serve.composition import Composition, compose
from mcp_providers._serve.reload import Reloader
from mcp_providers._threads import ProviderThreads, run_sync, seated
from mcp_providers.config import Config, LimitsSettings, ServerSettings, load_config
from mcp_providers.errors import ConfigError, ReadTimeout
from mcp_providers.plugin import Plugin, SkillProvider, SkillSource
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

DEADLINE = 0.3


class Gate:
    """What the slow plain function sleeps on: the test sets ``release`` when it is done."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = 0
        self.returned = 0

    def sleepy(self, n: str) -> str:
        self.entered += 1
        self.release.wait(30)
        self.returned += 1
        return f"slept {n}"


class Other(BaseModel):
    text: str = "other"


def _plugins(gate: Gate) -> dict[str, object]:
    slow = Plugin("slow", prefixes=["slow://"])
    slow.template("slow://sleepy/{n}")(gate.sleepy)

    @slow.resource("slow://instant")
    async def instant() -> str:
        return "at once"

    @slow.resource("slow://quick")
    def quick() -> str:  # plain: it needs a thread
        return "quick"

    other = Plugin("other", prefixes=["other://"], settings=Other)

    @other.resource("other://one")
    async def one(settings: Other) -> str:
        return settings.text

    return {"slow": slow, "other": other}


def _config(bound: int | None, text: str = "other") -> Config:
    limits = None if bound is None else LimitsSettings(provider_threads=bound)
    server = ServerSettings(read_timeout=DEADLINE, limits=limits)
    return Config(server=server, plugins={"other": {"text": text}})


@pytest.fixture
async def gate() -> AsyncIterator[Gate]:
    gate = Gate()
    yield gate
    gate.release.set()  # no thread of a failed test is left waiting


async def _saturate(client: Any, gate: Gate, count: int) -> None:
    """``count`` reads of the slow function, each answered at its deadline, its thread left running."""
    for n in range(count):
        with pytest.raises(MCPError) as late:
            await client.read_resource(f"slow://sleepy/{n}")
        assert late.value.error.code == -32005 and "did not finish" in late.value.error.message
    assert gate.entered == count and gate.returned == 0


async def _until(condition: Any, seconds: float = 5.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.01)


async def test_threads_past_their_deadline_hold_their_slots_and_the_next_plain_call_is_told_why(gate: Gate) -> None:
    composition: Composition = compose(_config(2), load_entrypoints=False, plugins=_plugins(gate))
    async with connect(composition) as client:
        await _saturate(client, gate, 2)
        threads_before = threading.active_count()
        for uri in ("slow://sleepy/late", "slow://quick"):
            started = time.monotonic()
            with pytest.raises(MCPError) as busy:
                await client.read_resource(uri)
            assert time.monotonic() - started >= DEADLINE * 0.9  # it waited within its deadline first
            error = busy.value.error
            assert error.code == -32005, error  # never -32603
            assert error.message.startswith("all 2 provider threads are busy (2 still running past their deadline: ")
            assert "2 in plugin 'slow', function " in error.message and "sleepy" in error.message
            assert "[server.limits] provider_threads (now 2)" in error.message and "try again later" in error.message
            assert error.data["limit"] == "provider_threads" and error.data["allowed"] == 2
            assert error.data["pastDeadline"] == 2
        assert gate.entered == 2  # the waiting calls never ran
        assert threading.active_count() <= threads_before  # and no thread was started for them
        assert (await client.read_resource("slow://instant")).contents[0].text == "at once"  # type: ignore[union-attr]
        gate.release.set()
        await _until(lambda: gate.returned == 2)
        await _until(lambda: composition.runtime.invoker.threads.busy == 0)
        assert (await client.read_resource("slow://quick")).contents[0].text == "quick"  # type: ignore[union-attr]


async def test_a_reload_applies_while_providers_hold_every_thread_and_slots_come_back(gate: Gate) -> None:
    plugins = _plugins(gate)
    config = _config(2, text="first")
    composition = compose(config, load_entrypoints=False, plugins=plugins)
    reloader = Reloader(composition, lambda: config, load_entrypoints=False, plugins=plugins)
    async with connect(composition) as client:
        await _saturate(client, gate, 2)
        assert composition.runtime.invoker.threads.busy == 2
        config = _config(2, text="second")
        with anyio.fail_after(30):
            attempt = await reloader.reload()
        assert attempt.outcome == "applied", attempt.problems
        assert (await client.read_resource("other://one")).contents[0].text == "second"  # type: ignore[union-attr]
        assert (await client.read_resource("slow://instant")).contents[0].text == "at once"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as busy:
            await client.read_resource("slow://quick")
        assert "all 2 provider threads are busy" in busy.value.error.message
        gate.release.set()
        await _until(lambda: composition.runtime.invoker.threads.busy == 0)
        assert (await client.read_resource("slow://quick")).contents[0].text == "quick"  # type: ignore[union-attr]


async def test_a_waiting_call_runs_once_a_thread_returns_within_its_deadline(gate: Gate) -> None:
    composition = compose(_config(1), load_entrypoints=False, plugins=_plugins(gate))
    async with connect(composition) as client:
        await _saturate(client, gate, 1)

        async def free_soon() -> None:
            await anyio.sleep(DEADLINE / 3)
            gate.release.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(free_soon)
            assert (await client.read_resource("slow://quick")).contents[0].text == "quick"  # type: ignore[union-attr]


async def test_without_the_limits_table_the_bound_is_anyios_forty(gate: Gate) -> None:
    composition = compose(_config(None), load_entrypoints=False, plugins=_plugins(gate))
    assert composition.runtime.invoker.threads.bound == 40 == LimitsSettings().provider_threads


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", "config.server.limits.provider_threads: Input should be greater than or equal to 1"),
        ("2.5", "config.server.limits.provider_threads: Input should be a valid integer"),
        ('"8"', "config.server.limits.provider_threads: Input should be a valid integer"),
    ],
)
def test_a_bad_provider_threads_bound_is_refused_naming_it(tmp_path: Path, value: str, expected: str) -> None:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(f"[server.limits]\nprovider_threads = {value}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert expected in str(refused.value)


def test_the_pool_itself_refuses_a_bound_below_one() -> None:
    with pytest.raises(ValueError, match=r"bound 0 is less than 1; allow at least one \(\[server.limits\]"):
        ProviderThreads(0)


SKILL_MD = b"---\nname: slowbook\ndescription: A runbook read from a slow disk. Use to test threads.\n---\n\n# Slow\n"


class SlowSkills(SkillProvider):
    """A skill whose file reads block on ``gate`` once the server serves (composing reads it twice)."""

    name = "slow-skills"
    prefixes = ("skill://slow/",)

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.serving = False

    def skills(self) -> Sequence[SkillSource]:
        return [SkillSource("skill://slow/slowbook", ("SKILL.md",))]

    def read(self, skill: SkillSource, path: str) -> bytes:
        if self.serving:
            self.gate.sleepy(path)
        return SKILL_MD


async def test_a_skill_file_read_in_a_thread_counts_against_the_same_bound(gate: Gate) -> None:
    plugins = _plugins(gate)
    slow = plugins["slow"]
    assert isinstance(slow, Plugin)
    skills = SlowSkills(gate)
    slow.skill_provider(lambda: skills)
    composition = compose(_config(1), load_entrypoints=False, plugins=plugins)
    skills.serving = True
    async with connect(composition) as client:
        with pytest.raises(MCPError) as late:
            await client.read_resource("skill://slow/slowbook/SKILL.md")
        assert late.value.error.code == -32005 and "did not finish" in late.value.error.message
        with pytest.raises(MCPError) as busy:
            await client.read_resource("slow://quick")
        assert busy.value.error.code == -32005
        assert "all 1 provider threads are busy (1 still running past their deadline: 1 in plugin 'slow', " in (
            busy.value.error.message
        )
        assert "skill provider 'slow-skills' reading skill://slow/slowbook/SKILL.md" in busy.value.error.message
        gate.release.set()
        await _until(lambda: composition.runtime.invoker.threads.busy == 0)
        assert (await client.read_resource("slow://quick")).contents[0].text == "quick"  # type: ignore[union-attr]


# -- the pool on its own, on both event loops -----------------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_bound_holds_on_both_event_loops(backend: str) -> None:
    release = threading.Event()
    ran: list[str] = []

    async def main() -> None:
        threads = ProviderThreads(1)
        with seated(threads, "p") as seat:
            with anyio.move_on_after(0.1):
                await run_sync(lambda: release.wait(10), "function p.hang")
            assert threads.busy == 1 and threads.past_deadline == 1  # abandoned, still counted
            with anyio.move_on_after(0.1):
                await run_sync(lambda: ran.append("late"), "function p.quick")
            assert seat.starved is not None and "1 in plugin 'p', function p.hang" in seat.starved
            assert ran == []
            release.set()
            with anyio.fail_after(5):
                assert await run_sync(lambda: ran.append("now") or "ok", "function p.quick") == "ok"
        assert ran == ["now"] and threads.busy == 0

    try:
        anyio.run(main, backend=backend)
    finally:
        release.set()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_waiters_get_freed_slots_first_come_first_served(backend: str) -> None:
    order: list[int] = []

    async def main() -> None:
        threads = ProviderThreads(1)
        release = threading.Event()
        with seated(threads, "p"):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run_sync, lambda: release.wait(10), "function p.hold")
                await _until(lambda: threads.busy == 1)
                for n in range(3):
                    tasks.start_soon(run_sync, lambda n=n: order.append(n), "function p.next")
                    await anyio.wait_all_tasks_blocked()
                release.set()
        assert order == [0, 1, 2] and threads.busy == 0

    anyio.run(main, backend=backend)


async def test_a_waiter_that_left_is_passed_over() -> None:
    threads = ProviderThreads(1)
    release = threading.Event()
    done: list[str] = []
    with seated(threads, "p"):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_sync, lambda: release.wait(10), "function p.hold")
            await _until(lambda: threads.busy == 1)
            with anyio.CancelScope() as leaving:
                leaving.cancel()
                await run_sync(lambda: done.append("never"), "function p.left")
            tasks.start_soon(run_sync, lambda: done.append("next"), "function p.next")
            await anyio.wait_all_tasks_blocked()
            release.set()
    assert done == ["next"] and threads.busy == 0


async def test_a_thread_that_cannot_start_is_a_clear_error_and_frees_its_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_thread(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(_threads.anyio.to_thread, "run_sync", no_thread)
    threads = ProviderThreads(3)
    with seated(threads, "p"), pytest.raises(ReadTimeout) as refused:
        await run_sync(lambda: "never", "function p.f")
    assert refused.value.code == -32005
    assert "could not start a thread for plugin 'p', function p.f (can't start new thread" in refused.value.message
    assert "lower [server.limits] provider_threads" in refused.value.message
    assert threads.busy == 0


async def test_a_functions_own_runtime_error_is_its_own() -> None:
    def fails() -> None:
        raise RuntimeError("mine")

    threads = ProviderThreads(1)
    with seated(threads, "p"), pytest.raises(RuntimeError, match=r"^mine$"):
        await run_sync(fails, "function p.fails")
    assert threads.busy == 0


async def test_metrics_show_busy_and_past_deadline_provider_threads(gate: Gate) -> None:
    """``/metrics`` tells an operator the bound is saturated, and by threads past their deadline."""
    from starlette.requests import Request

    from mcp_providers._serve.transport.ops import ops_routes

    composition: Composition = compose(_config(2), load_entrypoints=False, plugins=_plugins(gate))
    page = next(r for r in ops_routes(composition) if getattr(r, "path", "") == "/metrics")

    async def scrape() -> dict[str, float]:
        answer = await page.endpoint(Request({"type": "http", "method": "GET", "path": "/metrics", "headers": []}))
        lines = bytes(answer.body).decode().splitlines()
        pairs = (line.rsplit(" ", 1) for line in lines if line.startswith("mcp_providers_provider_threads{"))
        return {key.split('"')[1]: float(value) for key, value in pairs}

    assert await scrape() == {"busy": 0, "past_deadline": 0, "limit": 2}
    async with connect(composition) as client:
        await _saturate(client, gate, 2)
        assert await scrape() == {"busy": 2, "past_deadline": 2, "limit": 2}
        gate.release.set()
        await _until(lambda: composition.runtime.invoker.threads.busy == 0)
        assert await scrape() == {"busy": 0, "past_deadline": 0, "limit": 2}


async def test_take_seat_counts_against_its_threads_until_leave_seat() -> None:
    # The invoker's per-call form of seated(): between the two calls run_sync takes slots from
    # the given threads for the plugin; after leave_seat, from the default pool again.
    threads = ProviderThreads(2)
    seen: list[int] = []
    seat, token = _threads.take_seat(threads, "p")
    try:
        assert seat.threads is threads and seat.plugin == "p"
        await run_sync(lambda: seen.append(threads.busy), "function p.count")
    finally:
        _threads.leave_seat(token)
    await run_sync(lambda: seen.append(threads.busy), "function p.outside")
    assert seen == [1, 0]
