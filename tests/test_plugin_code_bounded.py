"""A plugin's own code at composition (its hooks and its providers' declarations, as its import
before) runs in the plugin thread, bounded: one that never returns is left out by name after
``isolation.PLUGIN_SECONDS``, one raising ``KeyboardInterrupt`` or ``SystemExit`` is that plugin's
failure, and one needing the main thread is told where to do that. The other plugins are served.
Before, a hook that never returned hung ``check`` and ``serve`` with no message, and one raising
``KeyboardInterrupt`` ended them with 130 (last round's note, "plugin hooks at start-up").
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._host import isolation
from mcp_providers.testing import compose

RELEASE = threading.Event()
"""Set after each test: the threads a hung call left behind end."""


@pytest.fixture(autouse=True)
def bound(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(isolation, "PLUGIN_SECONDS", 1.0)
    RELEASE.clear()
    yield
    RELEASE.set()


def _hang() -> None:
    RELEASE.wait()


def _interrupt() -> None:
    raise KeyboardInterrupt


def _exit() -> None:
    raise SystemExit(3)


def _signal() -> None:
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)


BEHAVIOURS: dict[str, tuple[Callable[[], None], str]] = {
    "never returns": (_hang, "did not finish within 1 s"),
    "KeyboardInterrupt": (_interrupt, "raised KeyboardInterrupt"),
    "SystemExit": (_exit, "raised SystemExit: 3"),
    "needs the main thread": (_signal, "needs the main thread"),
}


class Notes(ResourceProvider):
    def __init__(self, name: str, declare: Callable[[], None] | None = None) -> None:
        self.name, self.prefixes, self.declare = name, (f"{name}://",), declare

    def resources(self) -> Sequence[Resource]:
        if self.declare is not None:
            self.declare()
        return [Resource(uri=f"{self.name}://a", name="a", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="a")


class Fine:
    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [Notes("fine")]


class Settings(BaseModel):
    pass


class InHook:
    def __init__(self, hook: str, behave: Callable[[], None]) -> None:
        self.hook, self.behave = hook, behave

    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        if self.hook == "settings_model":
            self.behave()
        return Settings

    @hookimpl
    def register_resource_providers(self, settings: Any) -> list[ResourceProvider]:
        if self.hook == "register_resource_providers":
            self.behave()
        return [Notes("mine")]


@pytest.mark.parametrize("hook", ["settings_model", "register_resource_providers"])
@pytest.mark.parametrize("behaviour", BEHAVIOURS, ids=BEHAVIOURS.keys())
def test_a_hook_that_hangs_interrupts_exits_or_needs_the_main_thread_leaves_out_its_plugin_alone(
    hook: str, behaviour: str
) -> None:
    behave, said = BEHAVIOURS[behaviour]
    composed = compose({"fine": Fine(), "mine": InHook(hook, behave)}, strict=False)
    records = {r.name: r for r in composed.records}
    assert records["fine"].status == "loaded"
    assert records["mine"].status == "rejected"
    assert f"hook {hook}" in (records["mine"].reason or "") and said in (records["mine"].reason or "")
    assert {d.provider.name for d in composed.assembly.declared} == {"fine"}
    if behaviour == "needs the main thread":
        assert "in the provider's lifespan" in (records["mine"].reason or "")


class Declaring:
    def __init__(self, behave: Callable[[], None]) -> None:
        self.behave = behave

    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [Notes("mine", self.behave)]


@pytest.mark.parametrize("behaviour", BEHAVIOURS, ids=BEHAVIOURS.keys())
def test_a_declaration_that_hangs_interrupts_exits_or_needs_the_main_thread_is_its_plugins_problem(
    behaviour: str,
) -> None:
    behave, said = BEHAVIOURS[behaviour]
    composed = compose({"fine": Fine(), "mine": Declaring(behave)}, strict=False)
    [problem] = composed.assembly.problems
    assert (problem.plugins, problem.rule, problem.value) == (("mine",), "declaration-failed", "mine")
    assert said in problem.message, problem.message
    assert {d.provider.name for d in composed.assembly.declared} == {"fine"}


def test_the_operators_interrupt_still_stops_composition(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C reaching the main thread while it waits for a plugin's code is the operator's."""
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))  # to the process, as a terminal sends it
    monkeypatch.setattr(isolation, "PLUGIN_SECONDS", 30.0)
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            compose({"mine": InHook("register_resource_providers", _hang)}, strict=False)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20  # at the interrupt, not at the bound


def test_plugin_code_called_one_call_after_another_runs_in_one_thread() -> None:
    """Not a thread per call: start-up with many plugins pays one hand-off per call, no thread start."""
    threads = {isolation.in_plugin_thread(threading.get_ident, "p", "hook x") for _ in range(200)}
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_a_call_made_while_another_hangs_gets_a_thread_of_its_own() -> None:
    """A reload's hooks never wait behind a hook left hanging by an earlier composition."""

    def left_hanging() -> None:
        with contextlib.suppress(isolation.PluginCodeFailed):  # past the bound on a slow machine
            isolation.in_plugin_thread(_hang, "sloth", "hook x")

    hung = threading.Thread(target=left_hanging, daemon=True)
    hung.start()
    time.sleep(0.2)
    started = time.monotonic()
    assert isolation.in_plugin_thread(lambda: "ran", "p", "hook x") == "ran"
    assert time.monotonic() - started < 0.9  # not after the hung call's bound
