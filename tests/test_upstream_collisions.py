"""An upstream whose listing collides with a plugin's own tool or prompt costs only the colliding
component (issue 40): at start-up, after its ``list_changed``, and while the operator reloads a new
deny rule. Before, the whole upstream plugin and the other plugin were refused at start-up, and
every later reload failed on the "new" collision, so the operator's new deny never applied.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError
from pydantic import BaseModel
from waiting import await_until

from mcp_providers import (
    Content,
    Message,
    Prompt,
    PromptProvider,
    ReadRequest,
    Resource,
    ResourceProvider,
    Text,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers._serve.reload import Reloader
from mcp_providers.config import Config
from mcp_providers.errors import DENIED
from mcp_providers.plugins import policy, upstream
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

COLLIDING = str(Path(__file__).with_name("colliding_stdio_upstream.py"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime hosts providers in an asyncio task of its own


class _In(BaseModel):
    pass


class NativeTools(ToolProvider):
    name = "native-tools"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="taken", description="the plugin's own", input_model=_In)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(content=(Text("native taken"),))


class NativePrompts(PromptProvider):
    name = "native-prompts"

    def prompts(self) -> Sequence[Prompt]:
        return [Prompt(name="taken-prompt", description="the plugin's own")]

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        return [Message("user", "native prompt")]


class NativeResources(ResourceProvider):
    name = "native-resources"
    prefixes = ("native://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="native://x", name="x", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="native x")


class native:  # a plugin object, named as its entry point would be
    @hookimpl
    def register_tool_providers(self) -> list[ToolProvider]:
        return [NativeTools()]

    @hookimpl
    def register_prompt_providers(self) -> list[PromptProvider]:
        return [NativePrompts()]

    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [NativeResources()]


PLUGINS = {"native": native(), "upstream": upstream, "policy": policy}


def _settings(here: Path, *deny: str) -> dict[str, Any]:
    server = {"name": "col", "command": sys.executable, "args": [COLLIDING, str(here)], "prefixes": ["col://"]}
    rules = [{"effect": "deny", "targets": list(deny), "reason": "new rule"}] if deny else []
    return {"upstream": {"servers": [server]}, "policy": {"rules": rules}}


def _status(composed: Any) -> dict[str, str]:
    return {r.name: r.status for r in composed.records}


async def _served_by(client: Any) -> tuple[str, str, str]:
    """What ``taken`` and ``taken-prompt`` answer, and the upstream's own ``hello``."""
    taken = await client.call_tool("taken", {})
    prompt = await client.get_prompt("taken-prompt", {})
    hello = await client.call_tool("hello", {})
    return taken.content[0].text, prompt.messages[0].content.text, hello.content[0].text


async def test_a_collision_at_start_up_leaves_out_only_the_upstreams_components(tmp_path: Path) -> None:
    (tmp_path / "collide").touch()
    composed = compose(PLUGINS, _settings(tmp_path), strict=False)
    assert _status(composed) == {"native": "loaded", "upstream": "loaded", "policy": "loaded"}
    assert not composed.failures, composed.failures
    left = {(p.value, p.plugins) for p in composed.assembly.left_out}
    assert left == {("taken", ("native", "upstream")), ("taken-prompt", ("native", "upstream"))}
    async with composed.running(), connect(composed) as client:
        assert await _served_by(client) == ("native taken", "native prompt", "upstream hello")
        assert (await client.call_tool("fresh", {})).content[0].text == "upstream fresh"  # the rest of its list
        assert (await client.read_resource("col://public/a")).contents[0].text == "content of col://public/a"
        assert (await client.read_resource("native://x")).contents[0].text == "native x"


async def test_a_list_changed_that_brings_a_collision_leaves_out_only_that(tmp_path: Path) -> None:
    composed = compose(PLUGINS, _settings(tmp_path), strict=False)
    reloader = Reloader(composed, lambda: composed.config, load_entrypoints=False, plugins=PLUGINS)
    async with composed.running(), connect(composed) as client:
        with pytest.raises(MCPError):
            await client.call_tool("fresh", {})  # not listed yet
        assert (await client.call_tool("collide", {})).content[0].text == "upstream collide"
        await await_until(lambda: reloader.last is not None, "the reload the upstream's list_changed asked for")
        attempt = reloader.last
        assert attempt is not None and attempt.outcome == "applied", attempt
        assert "list_changed" in attempt.trigger
        assert [w for w in attempt.warnings if "left-out: 'taken': duplicate-tool" in w]
        assert [w for w in attempt.warnings if "left-out: 'taken-prompt': duplicate-prompt" in w]
        assert _status(composed) == {"native": "loaded", "upstream": "loaded", "policy": "loaded"}
        assert await _served_by(client) == ("native taken", "native prompt", "upstream hello")
        assert (await client.call_tool("fresh", {})).content[0].text == "upstream fresh"  # what else it listed
        assert (await client.read_resource("col://public/a")).contents[0].text == "content of col://public/a"


async def test_an_operators_new_deny_applies_while_an_upstream_collides(tmp_path: Path) -> None:
    """The tester's steps: the upstream comes to collide while serving, then the operator adds a deny."""
    config = {"now": Config(plugins=_settings(tmp_path))}
    composed = compose(PLUGINS, _settings(tmp_path), strict=False)
    reloader = Reloader(composed, lambda: config["now"], load_entrypoints=False, plugins=PLUGINS)
    async with composed.running(), connect(composed) as client:
        assert (await client.read_resource("col://public/a")).contents[0].text == "content of col://public/a"
        await client.call_tool("collide", {})
        await await_until(lambda: reloader.last is not None, "the reload the upstream's list_changed asked for")
        config["now"] = Config(plugins=_settings(tmp_path, "col://public/*"))
        attempt = await reloader.reload("SIGHUP")
        assert attempt.outcome == "applied", attempt
        assert [w for w in attempt.warnings if "left-out: 'taken': duplicate-tool" in w]  # still said
        with pytest.raises(MCPError) as denied:
            await client.read_resource("col://public/a")
        assert denied.value.code == DENIED
        assert (await client.read_resource("col://private/b")).contents[0].text == "content of col://private/b"
        assert await _served_by(client) == ("native taken", "native prompt", "upstream hello")
