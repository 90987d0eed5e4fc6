"""The runtime starts and stops its providers' lifespans side by side (round 12, brief U): one
after another, N providers whose sources each take T seconds to answer (or never do, each bounded)
held the server's start up for N * T, and its stop for N stop bounds. At start, at a reload that
adds providers, and at stop; a lifespan that fails still fails its own provider alone.

The bounds are about concurrency, not speed: each lifespan takes :data:`SLOW` seconds, one after
another they take ``len(NAMES) * SLOW``; the margins are generous."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import mcp_types as types
import pytest
from pydantic import BaseModel

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve.composition import compose
from mcp_providers._serve.reload import Reloader
from mcp_providers.config import Config
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

SLOW = 1.0
NAMES = ("one", "two", "three", "four")
BOUND = SLOW * 2.2  # one after another: len(NAMES) * SLOW = 4 s
stopped: list[str] = []


class SlowSettings(BaseModel):
    failing: str = ""  # the provider whose lifespan raises once it has taken its time


class Named(ResourceProvider):
    """Serves ``<name>://x``, whose text is its name."""

    def __init__(self, name: str) -> None:
        self.name, self.prefixes = name, (f"{name}://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=f"{self.name}://x", name="x", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=self.name)


class Slow(Named):
    """Takes :data:`SLOW` seconds to start (then raises, when it is the failing one) and to stop."""

    def __init__(self, name: str, fails: bool) -> None:
        super().__init__(name)
        self.fails = fails

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        await anyio.sleep(SLOW)  # a source that answers late
        if self.fails:
            raise RuntimeError(f"{self.name}'s source refused")
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(SLOW)  # a process given its grace to leave
            stopped.append(self.name)


class SlowPlugin:
    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        return SlowSettings

    @hookimpl
    def register_resource_providers(self, settings: SlowSettings) -> list[ResourceProvider]:
        return [Slow(name, name == settings.failing) for name in NAMES]


def _text(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


async def _served(composition: Any, client: Any, failing: str) -> None:
    """Every provider but ``failing`` serves; ``failing`` alone is recorded as failed to start."""
    assert set(composition.runtime.startup_failures) == {failing}
    assert "refused" in composition.runtime.startup_failures[failing]
    for name in NAMES:
        if name != failing:
            assert _text(await client.read_resource(f"{name}://x")) == name


async def test_providers_start_and_stop_side_by_side_each_failure_its_own() -> None:
    stopped.clear()
    composition = compose(Config(plugins={"slow": {"failing": "two"}}), load_entrypoints=False,
                          plugins={"slow": SlowPlugin()})  # fmt: skip
    began = time.monotonic()
    async with composition.running():
        started = time.monotonic() - began
        async with connect(composition) as client:
            await _served(composition, client, "two")
        leaving = time.monotonic()
    stopping = time.monotonic() - leaving
    assert started < BOUND, f"start took {started:.1f} s: the lifespans were entered one after another"
    assert stopping < BOUND, f"stop took {stopping:.1f} s: the lifespans were left one after another"
    assert sorted(stopped) == sorted(n for n in NAMES if n != "two")


async def test_a_reload_starts_the_providers_it_adds_side_by_side() -> None:
    stopped.clear()
    plugins = {"slow": SlowPlugin()}
    config = Config(deny=("slow",))
    composition = compose(config, load_entrypoints=False, plugins=plugins)
    reloader = Reloader(composition, lambda: config, load_entrypoints=False, plugins=plugins)
    async with connect(composition) as client:
        config = Config(plugins={"slow": {"failing": "three"}})
        began = time.monotonic()
        attempt = await reloader.reload()
        took = time.monotonic() - began
        assert attempt.outcome == "applied", attempt.as_dict()
        assert took < BOUND, f"the reload took {took:.1f} s: the lifespans were entered one after another"
        await _served(composition, client, "three")


live: Counter[str] = Counter()
"""The lifespans running, by provider name (a reload makes new provider objects of the same names)."""


class Held(Named):
    """Named ``never-*``: its lifespan never comes up; ``failing``: it fails to; else it comes up at
    once. Counted in :data:`live`."""

    def __init__(self, name: str, failing: bool = False) -> None:
        super().__init__(name)
        self.failing = failing

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        live[self.name] += 1
        try:
            if self.name.startswith("never"):
                await anyio.sleep_forever()
            if self.failing:
                raise RuntimeError(f"{self.name} cannot reach its backend")
            yield
        finally:
            live[self.name] -= 1


class HeldSettings(BaseModel):
    names: list[str] = []
    failing: list[str] = []


class HeldPlugin:
    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        return HeldSettings

    @hookimpl
    def register_resource_providers(self, settings: HeldSettings) -> list[ResourceProvider]:
        return [Held(n, n in settings.failing) for n in settings.names]


async def test_a_reload_cancelled_while_its_providers_start_leaves_none_of_them_running() -> None:
    """Tester eleven: a reload cancelled (its caller gone) while the providers it adds start left
    every one hosted and running, the one that never came up included, though nothing served them;
    the next reload said "unchanged" and the stop waited out the never-started one."""
    plugins = {"held": HeldPlugin()}
    config = Config(plugins={"held": {"names": ["first"]}})
    composition = compose(config, load_entrypoints=False, plugins=plugins)
    reloader = Reloader(composition, lambda: config, load_entrypoints=False, plugins=plugins)
    async with composition.running():
        assert +live == {"first": 1}
        config = Config(plugins={"held": {"names": ["first", "never-a", "second"]}})
        with anyio.move_on_after(1.0) as waited:
            await reloader.reload()
        assert waited.cancelled_caught
        with anyio.fail_after(5):
            while +live != {"first": 1}:  # the old "first" serves on; the added ones are gone
                await anyio.sleep(0.05)
        config = Config(plugins={"held": {"names": ["first", "second"]}})
        attempt = await reloader.reload("again")  # "second" is added again, not taken as running
        assert attempt.outcome == "applied", attempt
        with anyio.fail_after(5):
            while +live != {"first": 1, "second": 1}:  # the old generation's "first" retires once idle
                await anyio.sleep(0.05)
    assert +live == {}


async def test_a_cancelled_reload_leaves_no_failure_of_its_own_on_the_providers_still_serving() -> None:
    """Tester twelve: the reload's new ``first`` (same name) failed to start, the reload was
    cancelled, and its failure stayed recorded under the name: the old ``first``, still the one
    served, then refused every read as "failed to start" until a restart."""
    plugins = {"held": HeldPlugin()}
    config = Config(plugins={"held": {"names": ["first"]}})
    composition = compose(config, load_entrypoints=False, plugins=plugins)
    reloader = Reloader(composition, lambda: config, load_entrypoints=False, plugins=plugins)
    async with composition.running(), connect(composition) as client:
        config = Config(plugins={"held": {"names": ["first", "never-a"], "failing": ["first"]}})
        with anyio.move_on_after(1.0) as waited:
            await reloader.reload()
        assert waited.cancelled_caught
        assert dict(composition.runtime.startup_failures) == {}
        read = await client.read_resource("first://x")
        assert read.contents[0].text == "first"  # type: ignore[union-attr]


class _Plain(Named):
    """A provider whose ``lifespan`` is the base class's own: it opens nothing."""


class _Opening(Named):
    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        live[self.name] += 1
        try:
            yield
        finally:
            live[self.name] -= 1


class _Refusing(Named):
    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        raise RuntimeError(f"{self.name}'s source refused")
        yield


class _MixedSettings(BaseModel):
    refusing: bool = False  # "plain" is a provider whose lifespan fails


class _MixedPlugin:
    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        return _MixedSettings

    @hookimpl
    def register_resource_providers(self, settings: _MixedSettings) -> list[ResourceProvider]:
        return [(_Refusing if settings.refusing else _Plain)("plain"), _Opening("opening")]


async def test_a_provider_whose_lifespan_opens_nothing_is_served_without_a_task_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two tasks per provider were a tenth of ``serve``'s first answer with 100 plugins installed:
    a provider with the base class's ``lifespan`` is hosted as :data:`~mcp_providers._serve.lifespans.IDLE`,
    and serves at once, clearing a failure recorded under its name as a lifespan entered would."""
    from mcp_providers._serve import lifespans

    launched: list[str] = []
    launch = lifespans.Hosted.launch
    monkeypatch.setattr(
        lifespans.Hosted, "launch", lambda self, tasks: launched.append(self._provider) or launch(self, tasks)
    )
    plugins = {"mixed": _MixedPlugin()}
    config = Config(plugins={"mixed": {"refusing": True}})
    composition = compose(config, load_entrypoints=False, plugins=plugins)
    reloader = Reloader(composition, lambda: config, load_entrypoints=False, plugins=plugins)
    async with composition.running():
        assert set(composition.runtime.startup_failures) == {"plain"}
        config = Config(plugins={"mixed": {"refusing": False}})  # a plain "plain" replaces the failed one
        assert (await reloader.reload()).outcome == "applied"
        async with connect(composition) as client:
            assert [_text(await client.read_resource(f"{n}://x")) for n in ("plain", "opening")] == ["plain", "opening"]
        assert composition.runtime.startup_failures == {}
        assert launched == ["plain", "opening", "opening"]  # each "opening", the refusing "plain"; never the plain one
    assert live["opening"] == 0  # the opening one's lifespan was left at the stop; the plain one had none


class Hung(Named):
    """A source that never answers and has no timeout of its own."""

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        await anyio.Event().wait()
        yield


class HungPlugin:
    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [Hung("hung"), Named("fine")]


async def test_a_lifespan_that_never_starts_is_bounded_at_start_up_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tester seventeen: at start-up (not only at a reload) one lifespan that never returned held the
    server's start for ever: ``serve`` never answered, ``mount()``'s host app never started. It is
    cancelled after ``runtime.START_SECONDS`` and recorded as failed to start; the rest is served."""
    from mcp_providers._serve import runtime

    monkeypatch.setattr(runtime, "START_SECONDS", 0.5)
    composition = compose(Config(), load_entrypoints=False, plugins={"hung": HungPlugin()})
    with anyio.fail_after(10):
        async with connect(composition) as client:
            fine = await client.read_resource("fine://x")
            assert isinstance(fine.contents[0], types.TextResourceContents) and fine.contents[0].text == "fine"
            assert composition.runtime.startup_failures == {"hung": "did not start within 0.5 s"}
