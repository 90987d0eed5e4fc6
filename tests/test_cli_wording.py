"""What operators read: a refused tool call names each location once (a model-wide validator names
its own), ``serverInfo.name`` is sent as written and a name with a space at an end is refused,
and a fix is addressed to whoever can make it (an operator cannot rename what a plugin or a
configured source names)."""

from __future__ import annotations

from collections.abc import Sequence

import mcp_types as types
import pytest
from pydantic import BaseModel

from mcp_providers import Tool, ToolCall, ToolProvider, ToolResult, hookimpl
from mcp_providers._host.advisories import advisories
from mcp_providers._host.declarations import Declared
from mcp_providers.config import ServerSettings
from mcp_providers.errors import ConfigError
from mcp_providers.models import ORIGIN_KEY
from mcp_providers.plugins.openapi.schema import arguments_model
from mcp_providers.plugins.upstream.mapping import schema_model
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

NEEDS_A = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


class Typed(BaseModel):
    n: int


class Tools(ToolProvider):
    name = "wording-tools"

    def __init__(self, tools: Sequence[Tool] = ()) -> None:
        self._tools = list(tools) or [
            Tool(name="from_openapi", description="d", input_model=arguments_model("FromOpenAPI", NEEDS_A)),
            Tool(name="from_upstream", description="d", input_model=schema_model("FromUpstream", NEEDS_A)),
            Tool(name="typed", description="d", input_model=Typed),
        ]

    def tools(self) -> Sequence[Tool]:
        return self._tools

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text="ran")


class Wording:
    def __init__(self, *providers: ToolProvider) -> None:
        self.providers = list(providers) or [Tools()]

    @hookimpl
    def register_tool_providers(self) -> list[ToolProvider]:
        return self.providers


def _text(result: types.CallToolResult) -> str:
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_a_refused_call_names_each_location_once() -> None:
    composed = compose({"wording": Wording()}, server=ServerSettings(name="acme"))
    async with composed.running(), connect(composed) as client:
        assert client.server_info.name == "acme"  # as written: nothing added, nothing trimmed
        openapi = _text(await client.call_tool("from_openapi", {}))
        upstream = _text(await client.call_tool("from_upstream", {}))
        typed = _text(await client.call_tool("typed", {"n": "x"}))
    assert openapi == "Invalid arguments for from_openapi: 'a' is a required property"  # the root: no location
    assert upstream == "Invalid arguments for from_upstream: (root): 'a' is a required property"
    assert typed.startswith("Invalid arguments for typed: n: Input should be a valid integer")  # a field: named


@pytest.mark.parametrize("name", ["acme ", " acme", "ac\tme", "acme\n", ""])
def test_a_server_name_that_clients_would_show_with_stray_spaces_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"\[server\] name|at least 1 character") as refused:
        ServerSettings(name=name)
    if name.strip():
        assert "write 'acme'" in str(refused.value) or "write 'ac me'" in str(refused.value)


def test_the_config_file_says_so_too(tmp_path: object) -> None:
    from pathlib import Path

    from mcp_providers.config import load_config

    path = Path(str(tmp_path)) / "c.toml"
    path.write_text('[server]\nname = "acme "\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[server\] name 'acme ' has a space at an end.*write 'acme'"):
        load_config(path)


def _bad_name_fix(meta: dict[str, object] | None) -> str:
    tool = Tool(name="get.pet", description="d", input_model=Typed, meta=meta)
    [problem] = [p for p in advisories([Declared("wording", Tools([tool]), tools=[tool])]) if p.value == "get.pet"]
    assert problem.rule == "tool-name-client-incompatible"
    return problem.fix


def test_a_client_refused_tool_name_fix_is_the_operators_for_a_configured_source() -> None:
    sourced = _bad_name_fix({ORIGIN_KEY: {"server": "pets", "name": "get.pet"}})
    assert sourced.startswith('hide it with a policy rule denying "list" and "call" on \'get.pet\'')
    assert "rename" not in sourced.replace("only that source can change", "")
    own = _bad_name_fix(None)
    assert "hide it with a policy rule" in own and "turn its plugin off" in own
    assert "its author can rename it, e.g. 'get_pet'" in own


def test_a_clash_inside_one_plugin_tells_the_operator_how_to_keep_its_sources_apart() -> None:
    echo = Tool(name="echo", description="d", input_model=Typed)
    first, second = Tools([echo]), Tools([echo])
    second.name = "wording-tools-2"
    composed = compose({"wording": Wording(first, second)}, strict=False)
    [line] = [f for f in composed.failures if "duplicate-tool" in f]
    assert "rename one; the server never picks a winner (its author)" in line
    assert "give one of them a prefix or namespace of its own in its settings, or remove one" in line
