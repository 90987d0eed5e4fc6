"""Tester 26 F8 and F5: what the side-effect scope reaches besides the invoker's own call.

F8: a provider's ``check_watch``, run for every ``resources/subscribe`` and ``subscriptions/listen``,
is read-like code on behalf of a request: it runs in the scope a read of that URI gets.
F5: a ``threading.Thread`` a read starts, and work it hands to a ``ThreadPoolExecutor`` or
``loop.run_in_executor``, run in the read's scope (process-wide level); work that outlives the
read stays judged by the read's rules, and its late attempts are refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from mcp_providers import Content, Freshness, ReadRequest, ResourceProvider, ResourceTemplate, ServerSettings, hookimpl
from mcp_providers._sideeffects import Scope, wire
from mcp_providers.http import side_effect_scope
from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

REFUSED = -32008


class _Watched(ResourceProvider):
    """A live template whose ``check_watch`` does what its ``{k}`` says: write a file, start a process."""

    name = "watched"
    prefixes = ("watched://",)

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(uri_template="watched://{k}", name="k", mime_type="text/plain", freshness=Freshness.live())
        ]

    def check_watch(self, declaration: object, params: Mapping[str, str]) -> None:
        if params["k"] == "write":
            (self.folder / "written-by-check_watch").write_text("x")
        elif params["k"] == "process":
            subprocess.run(["touch", str(self.folder / "made-by-a-process")], check=True)
        elif params["k"] == "swallowed":  # a library that catches the refusal and fails its own way
            try:
                (self.folder / "written-by-check_watch").write_text("x")
            except Exception:
                raise ValueError("could not write") from None

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="v")


class _WatchedPlugin:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @hookimpl
    def register_resource_providers(self, settings: object) -> list[ResourceProvider]:
        return [_Watched(self.folder)]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("k", ["write", "process", "swallowed"])
async def test_check_watch_runs_in_the_scope_a_read_gets(tmp_path: Path, k: str) -> None:
    composition = compose({"watched": _WatchedPlugin(tmp_path)})
    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        with pytest.raises(MCPError) as raised:
            await legacy.subscribe_resource(f"watched://{k}")
        assert raised.value.error.code == REFUSED
        assert raised.value.error.data["provider"] == "watched"
        assert raised.value.error.data["uri"] == f"watched://{k}"
        await legacy.subscribe_resource("watched://quiet")  # a check without side effects still passes
    async with Client(composition.server, cache=None) as client:  # subscriptions/listen asks it too
        with pytest.raises(MCPError) as raised:
            async with client.listen(resource_subscriptions=[f"watched://{k}"]):
                pass
        assert raised.value.error.code == REFUSED
    assert os.listdir(tmp_path) == []


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_check_watch_in_warn_mode_subscribes_and_logs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    composition = compose(
        {"watched": _WatchedPlugin(tmp_path)}, server=ServerSettings(side_effects={"watched": "warn"})
    )
    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        await legacy.subscribe_resource("watched://write")
    assert os.listdir(tmp_path) == ["written-by-check_watch"]
    assert any("warn mode" in r.getMessage() and "watched://write" in r.getMessage() for r in caplog.records)


# F5: threads a read starts ------------------------------------------------------------------


def _write(path: Path) -> str:
    """Write ``path``; ``"written"``, or the name of what refused it."""
    try:
        path.write_text("x")
    except Exception as exc:
        return type(exc).__name__
    return "written"


class _Started(threading.Thread):
    """A thread subclass with a ``run`` of its own (no ``target``)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path, self.outcome = path, ""

    def run(self) -> None:
        self.outcome = _write(self.path)


def _in_a_thread(path: Path) -> str:
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(_write(path)))
    thread.start()
    thread.join()
    return outcome[0]


def _in_a_subclass(path: Path) -> str:
    thread = _Started(path)
    thread.start()
    thread.join()
    return thread.outcome


def _in_a_pool(path: Path) -> str:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_write, path).result()


async def _in_the_loops_executor(path: Path) -> str:
    return await asyncio.get_running_loop().run_in_executor(None, _write, path)


STARTS: dict[str, Callable[[Path], Any]] = {
    "thread": _in_a_thread,
    "subclass": _in_a_subclass,
    "pool": _in_a_pool,
    "run_in_executor": _in_the_loops_executor,
}


@pytest.mark.parametrize("how", sorted(STARTS))
async def test_work_a_read_starts_in_a_thread_runs_in_the_reads_scope(tmp_path: Path, how: str) -> None:
    path = tmp_path / "written-from-a-read"
    with side_effect_scope(provider="p", plugin="p", target="x://a"):
        outcome = STARTS[how](path)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    assert outcome == "SideEffectRefused"
    assert not path.exists()


async def test_a_read_whose_thread_was_refused_is_answered_with_the_refusal(tmp_path: Path) -> None:
    p = Plugin("fx", prefixes=["fx://"])

    @p.resource("fx://thread")
    def in_a_thread() -> str:
        outcome = _in_a_thread(tmp_path / "written")
        if outcome != "written":
            raise RuntimeError(f"refused in the thread: {outcome}")  # the provider fails its own way
        return outcome

    async with connect(compose({"fx": p})) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("fx://thread")
    assert raised.value.error.code == REFUSED
    assert os.listdir(tmp_path) == []


async def test_a_pools_workers_started_in_a_read_serve_others_outside_it(tmp_path: Path) -> None:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    with side_effect_scope(provider="p", plugin="p", target="x://a"):  # each starts its pool's first worker
        assert pool.submit(_write, tmp_path / "pool-in").result() == "SideEffectRefused"
        assert await loop.run_in_executor(None, _write, tmp_path / "loop-in") == "SideEffectRefused"
    try:
        assert pool.submit(_write, tmp_path / "pool-out").result() == "written"
        assert await loop.run_in_executor(None, _write, tmp_path / "loop-out") == "written"
        assert await anyio.to_thread.run_sync(_write, tmp_path / "anyio-out") == "written"
    finally:
        pool.shutdown()
    assert sorted(os.listdir(tmp_path)) == ["anyio-out", "loop-out", "pool-out"]


async def test_a_thread_that_outlives_the_read_stays_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    go, outcome = threading.Event(), []

    def later(path: Path) -> None:
        go.wait(10)
        outcome.append(_write(path))

    with side_effect_scope(provider="p", plugin="p", target="x://late") as scope:
        scratch = Path(scope.scratch_dir())
        late = threading.Thread(target=later, args=(tmp_path / "late",))
        late.start()
        in_scratch = threading.Thread(target=later, args=(scratch / "late",))
        in_scratch.start()
    go.set()
    late.join(10)
    in_scratch.join(10)
    assert outcome == ["SideEffectRefused", "SideEffectRefused"]  # the scratch directory went with the read
    assert not (tmp_path / "late").exists() and not scratch.exists()
    assert any("after" in r.getMessage() and "ended" in r.getMessage() for r in caplog.records)
    with pytest.raises(RuntimeError, match="ended"):
        scope.scratch_dir()


async def test_anyios_workers_started_in_a_read_carry_no_scope_of_their_own(tmp_path: Path) -> None:
    # anyio runs each job in its caller's context already; a worker started for a read's job
    # serves later jobs from anywhere, so its own loop (which wakes the event loop through a
    # socket after each job) must not be judged as the read
    views = wire.kept_views()
    with side_effect_scope(provider="p", plugin="p", target="x://a"):
        assert await anyio.to_thread.run_sync(_write, tmp_path / "in") == "SideEffectRefused"
    assert [t.name for t in threading.enumerate() if "run" in vars(t) and t.name.startswith("AnyIO")] == []
    assert await anyio.to_thread.run_sync(_write, tmp_path / "out") == "written"
    assert wire.kept_views() == views


async def test_the_runtimes_background_work_asked_for_in_a_read_is_not_the_reads(tmp_path: Path) -> None:
    # a provider asking for a reload from its read (Publisher.declarations_changed) has the
    # runtime start it: the runtime's own work, which copies the context it is started in
    p, box, outcome = Plugin("fx", prefixes=["fx://"]), {}, []

    async def background() -> None:
        outcome.append(_write(tmp_path / "by-the-runtime"))

    @p.resource("fx://soon")
    async def soon() -> str:
        return str(box["composition"].runtime.start_soon(background))

    box["composition"] = composition = compose({"fx": p})
    async with connect(composition) as client:
        assert (await client.read_resource("fx://soon")).contents[0].text == "True"  # type: ignore[union-attr]
        with anyio.fail_after(10):
            while not outcome:
                await anyio.sleep(0.01)
    assert outcome == ["written"]


def test_a_scratch_directory_made_as_the_call_ends_goes_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    scope, made = Scope("p", "p", "x://a", "read", "enforce"), []
    mkdtemp = tempfile.mkdtemp

    def racing(*args: Any, **kwargs: Any) -> str:  # the call ends while its folder is being made
        made.append(mkdtemp(*args, **kwargs))
        scope.close()  # sees no folder yet
        return made[0]

    monkeypatch.setattr(tempfile, "mkdtemp", racing)
    with pytest.raises(RuntimeError, match="ended"):
        scope.scratch_dir()
    assert not os.path.exists(made[0])
