"""Plugins for the reload tests, usable directly (``plugins=``) and as installed entry points
(:func:`site`): ``notes`` (a resource whose text is its ``text`` setting, a lifespan that counts
its entries and exits, and a read that can be held open), ``extra`` (a resource and a tool) and
``policy`` (denies reads of URIs under its ``deny`` prefixes)."""

from __future__ import annotations

import textwrap
from pathlib import Path

NOTES_URI = "notes://board/today"
EXTRA_URI = "extra://box/one"
LIVE_URI = "extra://box/live"

PLUGINS = """
from __future__ import annotations

import contextlib
import os
import pathlib

import anyio
from pydantic import BaseModel

from mcp_providers import (
    Content, Decision, Freshness, ReadRequest, Resource, ResourceProvider, Tool, ToolCall, ToolProvider,
    ToolResult, hookimpl,
)

STATS = {"entered": 0, "exited": 0}
HOLD: dict[str, anyio.Event] = {}  # "held" is set while a read waits for "release"


class NotesSettings(BaseModel):
    text: str = "first"


class Notes(ResourceProvider):
    name = "notes"
    prefixes = ("notes://board/",)

    def __init__(self, settings: NotesSettings) -> None:
        self.text = settings.text

    def resources(self):
        return [Resource(uri="notes://board/today", name="today", mime_type="text/plain")]

    @contextlib.asynccontextmanager
    async def lifespan(self):
        STATS["entered"] += 1
        try:
            yield
        finally:
            STATS["exited"] += 1

    async def read(self, request: ReadRequest) -> Content:
        if "release" in HOLD:
            HOLD["held"].set()
            await HOLD["release"].wait()
        await _held_by_files()
        return Content(text=self.text)


async def _held_by_files() -> None:
    # In a served process: the first read with $RELOAD_TEST_HOLD set writes held there and
    # waits until the test writes release.
    folder = os.environ.get("RELOAD_TEST_HOLD")
    if not folder or (pathlib.Path(folder) / "held").exists():
        return
    (pathlib.Path(folder) / "held").write_text("")
    while not (pathlib.Path(folder) / "release").exists():
        await anyio.sleep(0.02)


class notes:
    @hookimpl
    def settings_model(self):
        return NotesSettings

    @hookimpl
    def register_resource_providers(self, settings):
        return [Notes(settings)]


class Box(ResourceProvider):
    name = "box"
    prefixes = ("extra://box/",)

    def resources(self):
        return [Resource(uri="extra://box/one", name="one", mime_type="text/plain"),
                Resource(uri="extra://box/live", name="live", freshness=Freshness.live())]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="in the box")


class Args(BaseModel):
    value: str = ""


class Echo(ToolProvider):
    name = "echo"

    def tools(self):
        return [Tool(name="echo", description="Says it back.", input_model=Args)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text=call.arguments.value)


class extra:
    @hookimpl
    def register_resource_providers(self):
        return [Box()]

    @hookimpl
    def register_tool_providers(self):
        return [Echo()]


class PolicySettings(BaseModel):
    deny: list[str] = []


class policy:
    @hookimpl
    def settings_model(self):
        return PolicySettings

    @hookimpl
    def authorize(self, principal, action, target, settings):
        if action == "read" and any(target.startswith(p) for p in settings.deny):
            return Decision(False, "denied by the reload test policy")
        return None


notes = notes()
extra = extra()
policy = policy()
"""


def site(root: Path, names: tuple[str, ...] = ("notes", "extra", "policy"), *, dist: str = "reloadable",
         version: str = "0.1") -> Path:  # fmt: skip
    """A site folder holding one installed distribution whose entry points are ``names``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "reload_plugins.py").write_text(textwrap.dedent(PLUGINS))
    install(root, dist, {n: f"reload_plugins:{n}" for n in names}, version)
    return root


def install(root: Path, dist: str, entry_points: dict[str, str], version: str = "0.1") -> Path:
    """Write ``dist``'s ``.dist-info`` (METADATA, entry_points.txt) into ``root``; returns it.

    An entry point naming ``reload_plugins:policy`` (the test policy, an ``authorize`` hook) is
    declared in the ``mcp_providers.policy`` group, as policy plugins are (round 4 item 22); the
    others in ``mcp_providers``."""
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"  # the wheel format escapes "-" in names
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    groups: dict[str, list[str]] = {}
    for name, value in entry_points.items():
        group = "mcp_providers.policy" if value == "reload_plugins:policy" else "mcp_providers"
        groups.setdefault(group, []).append(f"{name} = {value}\n")
    (info / "entry_points.txt").write_text("".join(f"[{g}]\n{''.join(lines)}" for g, lines in groups.items()))
    return info


def plugin_module() -> object:
    """The plugins as a module object, for ``compose(plugins=...)`` in process."""
    import types

    module = types.ModuleType("reload_plugins_inprocess")
    exec(compile(textwrap.dedent(PLUGINS), "reload_plugins_inprocess", "exec"), module.__dict__)
    return module
