"""A reload judges the config it parses, from one read (round 4 item 8).

The empty-config guard read the file to see that it held something, then ``load_config`` read it
again: a file written in place and truncated between the two reads composed an empty config,
every plugin with its defaults and the policy's rules gone. Now the file is opened once: that
descriptor must be a regular file, its text must hold something, and that text is what is parsed.

An audit hook plays the in-place writer: at the N-th ``open`` of the config file during a reload,
it truncates the file (or swaps in a FIFO) just before that open returns.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import MCPError

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve.composition import compose
from mcp_providers._serve.reload import Reloader, guard_config_file
from mcp_providers.config import load_config
from mcp_providers.errors import ConfigError
from mcp_providers.plugins import policy
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

GUARDED = """
allow = ["notes", "policy"]
[plugins.policy]
default = "allow"
[[plugins.policy.rules]]
effect = "deny"
targets = ["notes://secret"]
reason = "secret"
"""


class Notes(ResourceProvider):
    name = "notes"
    prefixes = ("notes://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="notes://secret", name="secret", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="the secret")


PLUGINS: dict[str, Any] = {
    "notes": SimpleNamespace(register_resource_providers=hookimpl(lambda: [Notes()])),
    "policy": policy,
}

_WRITER: dict[str, Any] = {"path": None, "at": 0, "seen": 0, "do": None}


def _in_place_writer(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or _WRITER["path"] is None or not args or not isinstance(args[0], str | os.PathLike):
        return  # an fd (os.fdopen) or bytes: not the config file by name
    if os.fspath(args[0]) != _WRITER["path"]:
        return
    _WRITER["seen"] += 1
    if _WRITER["seen"] == _WRITER["at"]:
        _WRITER["path"] = None  # once: the writer's own open below must not count
        _WRITER["do"]()


_hooked = False


@contextlib.contextmanager
def writer(path: Path, at: int, do: Any) -> Iterator[None]:
    """While inside, ``do()`` runs when the config file is opened for the ``at``-th time."""
    global _hooked
    if not _hooked:  # an audit hook stays for the process: one, idle unless armed
        sys.addaudithook(_in_place_writer)
        _hooked = True
    _WRITER.update(path=os.fspath(path), at=at, seen=0, do=do)
    try:
        yield
    finally:
        _WRITER["path"] = None


def _truncate(path: Path) -> Any:
    def do() -> None:
        with open(path, "w"):
            pass  # O_TRUNC: an in-place writer's first step; its write() comes later

    return do


async def _denied(client: Any) -> bool:
    try:
        await client.read_resource("notes://secret")
    except MCPError as exc:
        return "secret" in exc.error.message
    return False


@pytest.mark.parametrize("at", [1, 2, 3], ids=["first-open", "second-open", "third-open"])
async def test_a_file_truncated_at_any_open_of_a_reload_never_composes_without_the_policy(
    tmp_path: Path, at: int
) -> None:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(GUARDED)
    composition = compose(load_config(path), load_entrypoints=False, plugins=PLUGINS)
    reloader = Reloader(
        composition,
        guard_config_file(str(path), functools.partial(load_config, path)),
        load_entrypoints=False,
        plugins=PLUGINS,
    )
    async with connect(composition) as client:
        assert await _denied(client)
        with writer(path, at, _truncate(path)):
            attempt = await reloader.reload("file")
        assert attempt.outcome in ("applied", "unchanged", "failed"), attempt
        if attempt.outcome == "failed":  # it read the truncated file: refused, and said so
            assert any("is empty (caught mid-write?)" in p for p in attempt.problems), attempt.problems
        assert await _denied(client), f"the policy lapsed after a reload that {attempt.outcome}"


async def test_a_file_swapped_for_a_fifo_as_it_is_opened_is_refused_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(GUARDED)
    composition = compose(load_config(path), load_entrypoints=False, plugins=PLUGINS)
    reloader = Reloader(
        composition,
        guard_config_file(str(path), functools.partial(load_config, path)),
        load_entrypoints=False,
        plugins=PLUGINS,
    )

    def swap() -> None:
        path.unlink()
        os.mkfifo(path)  # a read of it waits for a writer that never comes

    done = threading.Event()

    def release_a_stuck_reader() -> None:
        # Only a regression reads the FIFO, and would wait for ever: a writer's open and close
        # gives it end-of-file, so the test fails on its assertion instead of hanging.
        if not done.wait(20):
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY))

    threading.Thread(target=release_a_stuck_reader, daemon=True).start()
    try:
        async with connect(composition) as client:
            with writer(path, 1, swap):
                attempt = await reloader.reload("file")
            assert attempt.outcome == "failed"
            assert any("is not a regular file" in p for p in attempt.problems), attempt.problems
            assert await _denied(client)
    finally:
        done.set()


@pytest.mark.parametrize(("text", "suffix"), [("", ".toml"), ("  \n\t\n", ".toml"), ("", ".json")])
def test_a_reload_read_of_an_empty_file_is_refused(tmp_path: Path, text: str, suffix: str) -> None:
    path = tmp_path / f"config{suffix}"
    path.write_text(text)
    with pytest.raises(ConfigError, match="is empty"):
        load_config(path, reloading=True)
    if suffix == ".toml":
        assert load_config(path).allow is None  # at start-up an empty TOML file is the embedded default


def test_a_reload_read_of_a_directory_or_a_missing_file_says_which(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path, reloading=True)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "gone.toml", reloading=True)
