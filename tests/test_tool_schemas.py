"""Output schemas are served with an object root, and ``check`` warns about names clients refuse.

A recursive output model (``Node.children: list[Node]``) or a ``RootModel[list[Item]]`` has a
JSON Schema whose root is a ``$ref`` or an array; MCP requires ``outputSchema`` to be an object.
Such a schema is wrapped at composition as ``{"type": "object", "properties": {"result": ...}}``
and ``structuredContent`` the same way, so one tool never takes tools/list down.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsonschema  # validates structuredContent here (a dependency of mcp)
import pytest
from cli_support import run_cli
from pydantic import BaseModel
from wire_support import Badly, Echo, Shapes, plugin, raw_session

from mcp_providers import Tool, ToolCall, ToolProvider, ToolResult
from mcp_providers._host.advisories import advisories
from mcp_providers._host.output_schemas import output_schema
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_recursive_and_array_outputs_keep_tools_list_alive(mode: str) -> None:
    composition = compose({"shapes": plugin(Shapes())})
    async with connect(composition, mode) as client:  # type: ignore[arg-type]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"tree", "items", "everything", "echo"}
        for name in ("tree", "items"):
            schema = tools[name].output_schema
            assert schema is not None and schema["type"] == "object", schema
            assert schema["required"] == ["result"]
            result = await client.call_tool(name, {})
            assert not result.is_error, result
            jsonschema.validate(result.structured_content, schema)
        assert "wrapped" in (tools["items"].description or "")


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_wrapped_schemas_serve_to_every_structured_version(version: str) -> None:
    composition = compose({"shapes": plugin(Shapes())})
    async with raw_session(composition, version) as (session, _):
        listed = await session.request("tools/list")
        assert "result" in listed, listed
        tree = await session.request("tools/call", {"name": "tree", "arguments": {}})
        schema = next(t for t in listed["result"]["tools"] if t["name"] == "tree")["outputSchema"]
        jsonschema.validate(tree["result"]["structuredContent"], schema)
        assert tree["result"]["structuredContent"]["result"]["children"][0]["name"] == "leaf"


def test_object_roots_are_served_as_declared() -> None:
    class Plain(BaseModel):
        a: int

    served = output_schema(Plain)
    assert not served.wrapped and served.schema == Plain.model_json_schema(by_alias=True)


class Unservable(BaseModel):
    model_config = {"arbitrary_types_allowed": True}
    handle: object.__class__  # a type object: pydantic cannot describe it in JSON Schema


class Mixed(ToolProvider):
    name = "mixed"

    def tools(self) -> Sequence[Tool]:
        return [
            Tool(name="fine", description="Fine.", input_model=Echo),
            Tool(name="broken_schema", description="No JSON Schema.", input_model=Echo, output_model=Unservable),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text="fine")


async def test_a_tool_whose_schema_cannot_be_served_is_rejected_alone() -> None:
    composition = compose({"mixed": plugin(Mixed())}, strict=False)
    assert any("output-schema-unservable" in line and "broken_schema" in line for line in composition.failures)
    async with connect(composition) as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert names == ["fine"]


def _warnings(*providers: Any) -> list[str]:
    composition = compose({"p": plugin(*providers)}, strict=False)
    return [str(w) for w in advisories(composition.assembly.declared)]


def test_check_flags_wrapped_output_schemas() -> None:
    warnings = _warnings(Shapes())
    wrapped = [w for w in warnings if "output-schema-wrapped" in w]
    assert {w.split(": ")[2] for w in wrapped} == {"'tree'", "'items'"}, wrapped


def test_check_warns_about_tool_names_clients_refuse() -> None:
    warnings = [w for w in _warnings(Badly()) if "tool-name-client-incompatible" in w]
    assert len(warnings) == 2, warnings
    for line in warnings:
        assert "^[a-zA-Z0-9_-]{1,64}$" in line
        assert "Claude Desktop" in line and "Copilot" in line and "OpenAI" in line
    assert any("docs_search" in line for line in warnings)  # the fix names a usable spelling


def test_cli_check_prints_the_warnings_without_failing(tmp_path: Any) -> None:
    done = run_cli("check")  # in process (cli_support): the same command, a tenth of the CPU
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tool-name-client-incompatible" not in done.stdout  # the built-in tools are all usable
