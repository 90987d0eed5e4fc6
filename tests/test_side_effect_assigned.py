"""Process state a read changes by assignment (helper C8): the process's hooks, the import system's
lists and the locale raise no audit event when set, so they are compared around the read's own code;
a change is undone and the read refused. What the host, or another read, changes while a read
waits is not that read's (see ``core/_sideeffects/assigned.py``)."""

from __future__ import annotations

import asyncio
import importlib
import locale
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client, MCPError
from sink_support import _scope

from mcp_providers import Content, Freshness, ReadRequest, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers.errors import SideEffectRefused
from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose, connect

REFUSED = -32008


class _Finder:
    """Finds nothing: harmless should a broken guard leave it in ``sys.meta_path``."""

    def find_spec(self, *args: Any) -> None:
        return None


def _hook(*args: Any) -> None:
    pass


def _read_hook(*args: Any) -> None:
    pass


ASSIGNED: dict[str, Callable[[], Any]] = {
    "sys.excepthook": lambda: setattr(sys, "excepthook", _hook),
    "sys.unraisablehook": lambda: setattr(sys, "unraisablehook", _hook),
    "sys.displayhook": lambda: setattr(sys, "displayhook", _hook),
    "sys.breakpointhook": lambda: setattr(sys, "breakpointhook", _hook),
    "threading.excepthook": lambda: setattr(threading, "excepthook", _hook),
    "sys.meta_path": lambda: sys.meta_path.insert(0, _Finder()),
    "sys.path_hooks": lambda: sys.path_hooks.insert(0, _hook),
    "sys.path": lambda: sys.path.insert(0, "/nonexistent-c8"),
    "sys.path replaced": lambda: setattr(sys, "path", [*sys.path, "/nonexistent-c8"]),
    "sys.path_importer_cache": lambda: setattr(
        sys, "path_importer_cache", {**sys.path_importer_cache, "/nonexistent-c8": _Finder()}
    ),
}
_NAMES = ("excepthook", "unraisablehook", "displayhook", "breakpointhook", "meta_path", "path_hooks", "path")


def _state() -> list[Any]:
    objects = [getattr(sys, n) for n in (*_NAMES, "path_importer_cache")]
    return [*objects, threading.excepthook, list(sys.meta_path), list(sys.path_hooks), list(sys.path)]


def _same(a: list[Any], b: list[Any]) -> bool:
    return all(x is y or (type(x) is list and x == y) for x, y in zip(a, b, strict=True))


@pytest.fixture
def state() -> Iterator[list[Any]]:
    """The state before the test, put back after it whatever a broken guard left."""
    with _scope():
        pass  # installs every guard first (a finder of its own joins sys.meta_path)
    before = _state()
    yield before
    for name, value in zip((*_NAMES, "path_importer_cache"), before, strict=False):
        setattr(sys, name, value)
    threading.excepthook = before[8]
    sys.meta_path[:], sys.path_hooks[:], sys.path[:] = before[9], before[10], before[11]


@pytest.mark.parametrize("name", ASSIGNED)
def test_each_hook_or_import_list_set_in_a_read_is_refused_and_undone(name: str, state: list[Any]) -> None:
    with pytest.raises(SideEffectRefused, match=r"side-effect-in-resource-read: .*; restored"), _scope():
        ASSIGNED[name]()
    assert _same(_state(), state)


def test_entries_appended_at_the_end_and_a_hook_put_back_pass(state: list[Any]) -> None:
    with _scope() as scope:
        sys.meta_path.append(_Finder())  # searched last: takes no import from another finder
        sys.path.append("/nonexistent-c8")
        sys.excepthook = _hook
        sys.excepthook = state[0]  # put back before the read's code gave the loop back
    assert scope.violations == []


def test_the_locale_set_in_a_read_is_refused_and_undone_and_asking_the_encoding_passes() -> None:
    was = locale.setlocale(locale.LC_ALL)
    other = "C" if locale.setlocale(locale.LC_CTYPE) != "C" else "C.UTF-8"
    with _scope() as scope:
        locale.getpreferredencoding()  # sets LC_CTYPE and sets it back
    assert scope.violations == []
    with pytest.raises(SideEffectRefused, match="setting the locale"), _scope():
        locale.setlocale(locale.LC_ALL, other)
    assert locale.setlocale(locale.LC_ALL) == was


_FIRST_SIX = """
import sys
from mcp_providers import _sideeffects
assert "six" not in sys.modules
with _sideeffects.side_effect_scope(provider="p", plugin="plugin", target="mem://x") as scope:
    import six  # appends its importer to sys.meta_path, the first time only
print(type(sys.meta_path[-1]).__name__, scope.violations)
"""


def test_a_library_that_appends_its_importer_on_first_import_may_be_first_imported_in_a_read() -> None:
    done = subprocess.run([sys.executable, "-c", _FIRST_SIX], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "_SixMetaPathImporter []\n", (done.stdout, done.stderr)


def _plugin(waiting: asyncio.Event, going: asyncio.Event) -> Plugin:
    plugin = Plugin("assigned", prefixes=["assigned://"])

    @plugin.resource("assigned://sets-and-waits")
    async def sets_and_waits() -> str:
        sys.excepthook = _read_hook
        await asyncio.sleep(0)
        return "never"

    @plugin.resource("assigned://waits")
    async def waits() -> str:
        waiting.set()
        await going.wait()  # the host, or another read, changes the hook meanwhile
        return "served"

    @plugin.resource("assigned://in-a-thread")
    def in_a_thread() -> str:  # a plain function: runs in a worker thread
        threading.excepthook = _hook
        return "never"

    return plugin


@pytest.mark.anyio
async def test_a_served_read_that_sets_a_hook_is_refused_on_the_loop_and_in_its_thread(state: list[Any]) -> None:
    async with connect(compose({"assigned": _plugin(asyncio.Event(), asyncio.Event())})) as client:
        for uri in ("assigned://sets-and-waits", "assigned://in-a-thread"):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.error.code == REFUSED, refused.value.error.message
            assert "a hook of" in refused.value.error.message
            assert _same(_state(), state)


@pytest.mark.anyio
async def test_what_the_host_or_another_read_sets_while_a_read_waits_is_not_that_reads(state: list[Any]) -> None:
    waiting, going = asyncio.Event(), asyncio.Event()
    async with connect(compose({"assigned": _plugin(waiting, going)})) as client:
        pending = asyncio.create_task(client.read_resource("assigned://waits"))
        await waiting.wait()
        sys.excepthook = _hook  # the host's own change, while the read waits
        with pytest.raises(MCPError) as refused:  # another read's, on the same loop
            await client.read_resource("assigned://sets-and-waits")
        assert refused.value.error.code == REFUSED
        going.set()
        served = await pending
        assert served.contents[0].text == "served"  # type: ignore[union-attr]
        assert sys.excepthook is _hook  # the host's change stays


class _WatchSetsAHook(ResourceProvider):
    """A live template whose ``check_watch`` (run by the pipeline itself) sets ``sys.excepthook``."""

    name = "watch-sets-a-hook"
    prefixes = ("watched://",)

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="watched://{k}", name="k", freshness=Freshness.live())]

    def check_watch(self, declaration: object, params: Mapping[str, str]) -> None:
        sys.excepthook = _read_hook

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="v")


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_check_watch_that_sets_a_hook_is_refused_and_undone(state: list[Any]) -> None:
    composition = compose(
        {"watched": SimpleNamespace(register_resource_providers=hookimpl(lambda: [_WatchSetsAHook()]))}
    )
    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        with pytest.raises(MCPError) as refused:
            await legacy.subscribe_resource("watched://x")
    assert refused.value.error.code == REFUSED and "sys.excepthook" in refused.value.error.data["attempted"]
    assert _same(_state(), state)


@pytest.mark.parametrize("name", ["socket", "threading", "ssl", "http.client"])
def test_a_guarded_module_imported_afresh_after_its_entry_was_dropped_is_refused_at_the_import(name: str) -> None:
    """Tester 32 F9: a read dropped ``socket`` (and ``http``) from ``sys.modules`` and imported them
    again: the fresh modules held no guard, and the read's POST (and every later read's) was sent.
    Refused at the import, before the read's next line can use the fresh module."""
    module = importlib.import_module(name)
    ran = []
    try:
        with pytest.raises(SideEffectRefused, match=f"{name!r} afresh"), _scope():
            sys.modules.pop(name)
            importlib.import_module(name)
            ran.append("the line after the import")
    finally:
        sys.modules[name] = module
    assert ran == []
