"""Opening the null device for writing is no side effect: what is written there is discarded. The
usual idiom for silencing a library, ``open(os.devnull, "w")`` with ``redirect_stdout``, was refused
in every read (tester seventeen) with -32008 "opening /dev/null for writing", in both modes. Only
opening it is allowed (any other file event on it is still judged), and only the real device: a
regular file named ``null`` in a folder named ``dev`` is a file like any other.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from mcp import MCPError

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

FAKE = "fake-dev-null"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _silenced() -> None:
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        print("a library's chatter")


def _os_open() -> None:
    os.close(os.open(os.devnull, os.O_WRONLY | os.O_TRUNC))


def _fake(folder: Path) -> None:
    with open(folder / "dev" / "null", "w") as sink:
        sink.write("written")


class Quiet(ResourceProvider):
    name = "quiet"
    prefixes = ("quiet://",)

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=f"quiet://{k}", name=k, mime_type="text/plain") for k in ("silenced", "os-open", FAKE)]

    async def read(self, request: ReadRequest) -> Content:
        kind = request.uri.removeprefix("quiet://")
        if kind == "silenced":
            _silenced()
        elif kind == "os-open":
            _os_open()
        else:
            _fake(self.folder)
        return Content(text=f"read {kind}")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("guards", ["serve", "embedded"])
async def test_a_read_may_open_the_null_device_for_writing_but_not_a_file_named_like_it(
    tmp_path: Path, mode: str, guards: str
) -> None:
    (tmp_path / "dev").mkdir()
    plugin = type("P", (), {"register_resource_providers": hookimpl(lambda self: [Quiet(tmp_path)])})()
    composition = compose({"quiet": plugin})
    composition.runtime.process_guards = guards == "serve"
    async with connect(composition, mode=mode) as client:
        for kind in ("silenced", "os-open"):
            result = await client.read_resource(f"quiet://{kind}")
            assert result.contents[0].text == f"read {kind}"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"quiet://{FAKE}")
    assert refused.value.code == -32008 and str(tmp_path / "dev" / "null") in refused.value.message
    assert not (tmp_path / "dev" / "null").exists()
