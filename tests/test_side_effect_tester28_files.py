"""Ways round the side-effect scope's file rules found by tester twenty-eight, at both levels (run
in a process of its own, ``t28files_host.py``, so the scoped level is really unpatched):

- F10 a hash-based cache is written only where the import system would write one, with the flags
  it would write: never an unchecked one where there was none (it would pin the module's code);
- F13 a cache temp a read made and did not replace or remove is removed when the read ends, and
  the read is refused; a temp is named ``<cache>.<digits>``, one per cache at a time;
- F4 a ``logging.FileHandler`` made in a read is judged when made, as if it opened its file then,
  ``delay=True`` or not (process-wide: the scoped level patches nothing and sees no construction).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hosts_support import run_host
from mcp import Client, MCPError

from mcp_providers import (
    Content,
    Freshness,
    ReadRequest,
    Resource,
    ResourceProvider,
    ResourceTemplate,
    hookimpl,
)
from mcp_providers.testing import compose, connect


@pytest.fixture(scope="module", params=["scoped", "enforce"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    seen = run_host("t28files_host.py", request.param, tmp_path_factory.mktemp(f"t28files-{request.param}"))
    seen["level"] = request.param
    return seen


def test_a_hash_based_cache_is_written_only_with_the_flags_the_import_system_would_write(run: dict[str, Any]) -> None:
    assert run["a unchecked cache where there is none"] == "refused"
    assert run["a checked cache where there is none"] == "refused"
    assert run["a timestamp cache where there is none"] == "allowed"
    assert run["a checked_hash cache over a stale checked one"] == "allowed"
    assert run["a unchecked_hash cache over a stale checked one"] == "refused"
    assert run["a timestamp cache over a stale checked one"] == "refused"
    assert run["a unchecked_hash cache over a stale unchecked one"] == "refused"  # the import system keeps it


def test_an_unchecked_cache_written_in_a_read_pins_nothing(run: dict[str, Any]) -> None:
    assert run["the repro's unchecked cache"] == "refused" and run["pinned.V"] == "new"


def test_a_cache_temp_left_by_a_read_is_removed_and_the_read_refused(run: dict[str, Any]) -> None:
    assert run["a temp left behind"] == "refused"
    assert run["two temps of one cache"] == "refused"
    assert run["a temp named by other digits"] == "refused"
    assert run["two temps of one cache at once, both removed"] == "refused"
    assert run["a temp made after the read ended"] == "refused"
    assert run["left in __pycache__"] == []
    assert run["a first import"] == "allowed" and run["first import cached"] is True


def test_a_delayed_log_handler_made_in_a_read_is_judged_when_made(run: dict[str, Any]) -> None:
    assert run["a delayed handler on the scratch folder"] == "allowed"
    if run["level"] == "enforce":
        assert run["a delayed handler made in a read"] == "refused" and run["delayed.log made"] is False


class _LeavesATemp(ResourceProvider):
    """A provider whose read of ``temp://left`` makes a cache temp of ``cache`` and leaves it."""

    name = "leaves-a-temp"
    prefixes = ("temp://",)

    def __init__(self, cache: Path) -> None:
        self.cache = cache

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="temp://left", name="left")]

    async def read(self, request: ReadRequest) -> Content:
        fd = os.open(f"{self.cache}.7", os.O_EXCL | os.O_CREAT | os.O_WRONLY, 0o666)
        os.write(fd, b"stashed")
        os.close(fd)
        return Content(text="served")


@pytest.mark.anyio
async def test_a_served_read_that_leaves_a_cache_temp_is_answered_with_the_refusal(tmp_path: Path) -> None:
    (tmp_path / "stash.py").write_text("V = 1\n")
    (tmp_path / "__pycache__").mkdir()
    cache = tmp_path / "__pycache__" / f"stash.{sys.implementation.cache_tag}.pyc"
    provider = _LeavesATemp(cache)
    plugin = SimpleNamespace(register_resource_providers=hookimpl(lambda: [provider]))
    async with connect(compose({"leaves": plugin})) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("temp://left")
    assert refused.value.code == -32008 and "cache temp" in refused.value.data["attempted"]
    assert list((tmp_path / "__pycache__").iterdir()) == []


class _WatchLeavesATemp(ResourceProvider):
    """A live template whose ``check_watch`` makes a cache temp of ``cache`` and leaves it."""

    name = "watch-leaves-a-temp"
    prefixes = ("watched://",)

    def __init__(self, cache: Path) -> None:
        self.cache = cache

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="watched://{k}", name="k", freshness=Freshness.live())]

    def check_watch(self, declaration: object, params: Mapping[str, str]) -> None:
        os.close(os.open(f"{self.cache}.8", os.O_EXCL | os.O_CREAT | os.O_WRONLY, 0o666))

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="v")


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_check_watch_that_leaves_a_cache_temp_is_refused(tmp_path: Path) -> None:
    (tmp_path / "stash.py").write_text("V = 1\n")
    (tmp_path / "__pycache__").mkdir()
    provider = _WatchLeavesATemp(tmp_path / "__pycache__" / f"stash.{sys.implementation.cache_tag}.pyc")
    composition = compose({"watched": SimpleNamespace(register_resource_providers=hookimpl(lambda: [provider]))})
    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        with pytest.raises(MCPError) as refused:
            await legacy.subscribe_resource("watched://x")
    assert refused.value.error.code == -32008 and "cache temp" in refused.value.error.data["attempted"]
    assert list((tmp_path / "__pycache__").iterdir()) == []
