"""A plugin's own code at composition: its import runs in the plugin thread, bounded
(``isolation.in_plugin_thread``, tested with imports in ``test_plugin_groups.py``); its hooks and
its providers' declarations run in the caller's thread, where what they make is used.

This session first ran hooks and declarations in the plugin thread too, bounded; tester eighteen
found that it broke plugins that worked: an ``sqlite3`` connection made in a hook failed at every
read ("SQLite objects created in a thread can only be used in that same thread"), a
``threading.local`` set there read back empty, and ``asyncio.get_event_loop()`` in a provider's
``__init__`` was refused. So they run where they ran, and a call that runs long is named in the
log once (``isolation.watched``), where before a start-up that waited on one said nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import pytest

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._host import isolation
from mcp_providers.testing import compose, connect

RELEASE = threading.Event()
"""Set after each test: the threads a hung call left behind end."""


@pytest.fixture(autouse=True)
def bound(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(isolation, "PLUGIN_SECONDS", 0.3)
    monkeypatch.setattr(isolation, "_WATCH_SECONDS", 0.05)
    RELEASE.clear()
    yield
    RELEASE.set()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _hang() -> None:
    RELEASE.wait(5)  # released by the log line (or the test's end); bounded so a missing line fails, not hangs


class Notes(ResourceProvider):
    def __init__(self, name: str, text: Callable[[], str] = lambda: "a", declare: Callable[[], None] | None = None):
        self.name, self.prefixes, self.text, self.declare = name, (f"{name}://",), text, declare

    def resources(self) -> Sequence[Resource]:
        if self.declare is not None:
            self.declare()
        return [Resource(uri=f"{self.name}://a", name="a", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=self.text())


class Made:
    """A plugin whose hook makes what its reads use: an sqlite3 connection and a thread-local value."""

    local = threading.local()

    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        db = sqlite3.connect(":memory:")
        db.execute("create table t (v text)")
        db.execute("insert into t values ('from the hook')")
        self.local.value = "set in the hook"
        return [
            Notes("db", lambda: db.execute("select v from t").fetchone()[0]),
            Notes("local", lambda: getattr(self.local, "value", "MISSING")),
        ]


pytestmark = pytest.mark.anyio


async def test_what_a_hook_makes_for_its_thread_serves_reads() -> None:
    async with connect(compose({"made": Made()})) as client:
        for uri, text in (("db://a", "from the hook"), ("local://a", "set in the hook")):
            result = await client.read_resource(uri)
            assert result.contents[0].text == text  # type: ignore[union-attr]


class Slow:
    """A hook, or a declaration, that returns only once the log has named it."""

    def __init__(self, where: str) -> None:
        self.where = where

    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        if self.where == "hook":
            _hang()
        return [Notes("slow", declare=_hang if self.where == "declaration" else None)]


class _Releasing(logging.Handler):
    """Keeps what the plugins' logger says (on the logger itself: a handler another test left above
    it, or a propagation cut there, cannot hide it) and releases the hang once it is named."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "has not returned after" in record.getMessage():
            self.said.append(record.getMessage())
            RELEASE.set()


@pytest.mark.parametrize(("where", "what"), [("hook", "hook register_resource_providers"),
                                             ("declaration", "declaring provider 'slow'")],
                         ids=["hook", "declaration"])  # fmt: skip
def test_a_hook_or_declaration_that_runs_long_is_named_once_then_served(
    where: str, what: str, caplog: pytest.LogCaptureFixture
) -> None:
    releasing = _Releasing()
    logging.getLogger("mcp_providers.plugins").addHandler(releasing)
    try:
        with caplog.at_level(logging.ERROR, logger="mcp_providers.plugins"):
            composed = compose({"slow": Slow(where)}, strict=False)
    finally:
        logging.getLogger("mcp_providers.plugins").removeHandler(releasing)
    assert releasing.said == [
        f"plugin slow: {what} has not returned after 0.3 s; composition waits for it (it runs in the caller's "
        "thread and cannot be cut short): fix it, or leave the plugin out with deny = ['slow']"
    ]
    assert {d.provider.name for d in composed.assembly.declared} == {"slow"}  # it returned: served


def test_a_hook_that_returns_in_time_is_not_named(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="mcp_providers.plugins"):
        compose({"made": Made()})
        time.sleep(0.2)
    assert not [r for r in caplog.records if "has not returned" in r.getMessage()]


def test_the_operators_interrupt_still_stops_composition(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C reaching the main thread while a plugin's hook runs there stops composition."""
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))  # to the process, as a terminal sends it
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            compose({"slow": Slow("hook")}, strict=False)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20


def test_plugin_code_called_one_call_after_another_runs_in_one_thread() -> None:
    """Imports: not a thread per call; start-up with many plugins pays one hand-off per import."""
    threads = {isolation.in_plugin_thread(threading.get_ident, "p", "its import") for _ in range(200)}
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_a_call_made_while_another_hangs_gets_a_thread_of_its_own() -> None:
    """A reload's imports never wait behind an import left hanging by an earlier composition."""

    def left_hanging() -> None:
        with contextlib.suppress(isolation.PluginCodeFailed):  # past the bound
            isolation.in_plugin_thread(_hang, "sloth", "its import")

    hung = threading.Thread(target=left_hanging, daemon=True)
    hung.start()
    time.sleep(0.1)
    started = time.monotonic()
    assert isolation.in_plugin_thread(lambda: "ran", "p", "its import") == "ran"
    assert time.monotonic() - started < 0.25  # not after the hung call's bound


def test_the_watch_thread_ends_once_composition_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedding host keeps no thread of ours once its composition is made."""
    monkeypatch.setattr(isolation, "_IDLE_SECONDS", 0.1)
    before = set(threading.enumerate())  # an earlier test's abandoned hung plugin thread is not this one's

    def ours() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("mcp-providers plugin") and t not in before]

    compose({"made": Made()})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and ours():
        time.sleep(0.05)
    assert not ours()


async def test_no_plugin_thread_is_left_once_an_embedded_app_stops() -> None:
    """Round 18 item 5: the plugin threads (``plugin code``, ``plugin watch``) ended only after
    ``_IDLE_SECONDS`` with nothing to run, so an app stopped sooner after its composition was made
    left both behind (``threading.enumerate()``); composition now ends them as it finishes."""
    from starlette.applications import Starlette

    from mcp_providers.embedding import mount

    before = set(threading.enumerate())  # an earlier test's abandoned hung plugin thread is not this one's

    def ours() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("mcp-providers plugin") and t not in before]

    assert isolation.in_plugin_thread(lambda: "imported", "p", "its import") == "imported"
    assert "mcp-providers plugin code" in ours()
    app = Starlette()
    mount(app, compose({"made": Made()}))
    async with app.router.lifespan_context(app):
        pass
    assert not ours()
    assert isolation.in_plugin_thread(lambda: "again", "p", "its import") == "again"  # a new thread, as needed


def test_a_busy_plugin_thread_is_never_ended_by_another_composition() -> None:
    """A composition finishing while another one's plugin call runs leaves that thread alone, and
    does not wait for it."""
    release = threading.Event()
    done: list[str] = []
    other = threading.Thread(
        target=lambda: done.append(isolation.in_plugin_thread(lambda: release.wait(5) and "slow", "p", "its import"))
    )
    other.start()
    time.sleep(0.1)
    started = time.monotonic()
    compose({"made": Made()})
    waited = time.monotonic() - started
    release.set()
    other.join(5)
    assert done == ["slow"]
    assert waited < 1.5, waited  # never joined: a busy thread ends after its call (_IDLE_SECONDS 2)


def test_a_call_still_watched_keeps_its_watch_when_another_composition_ends(caplog: pytest.LogCaptureFixture) -> None:
    """The watch thread is not ended under a call it watches: a hook of another composition that
    runs past the bound is still named."""
    slow = threading.Thread(target=lambda: _watched_for(0.8))
    with caplog.at_level(logging.ERROR, logger="mcp_providers.plugins"):
        slow.start()
        time.sleep(0.1)
        compose({"made": Made()})
        slow.join(5)
    assert [r for r in caplog.records if "plugin slow: hook late has not returned" in r.getMessage()]


def _watched_for(seconds: float) -> None:
    with isolation.watched("slow", "hook late"):
        time.sleep(seconds)
