"""Tester 26 F8 and F5: what the side-effect scope reaches besides the invoker's own call.

F8: a provider's ``check_watch``, run for every ``resources/subscribe`` and ``subscriptions/listen``,
is read-like code on behalf of a request: it runs in the scope a read of that URI gets.
F5: a ``threading.Thread`` a read starts, and work it hands to a ``ThreadPoolExecutor`` or
``loop.run_in_executor``, run in the read's scope (process-wide level); work that outlives the
read stays judged by the read's rules, and its late attempts are refused.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from mcp import Client, MCPError

from mcp_providers import Content, Freshness, ReadRequest, ResourceProvider, ResourceTemplate, ServerSettings, hookimpl
from mcp_providers.testing import compose

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
