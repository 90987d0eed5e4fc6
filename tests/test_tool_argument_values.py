"""A tool argument whose values name resources (``Tool.argument_resources``) tells a caller nothing
of a resource the caller may not read (testers 26 and 27).

``tools/list`` offers in such an argument's ``enum`` only the values whose resource the caller may
read, as completion does, and ``tools/call`` refuses a value whose resource the caller may not read
with the gate's refusal (``-32003``, audited), before the tool runs. DocuMCP's ``generate_config``
links its ``ssg`` to ``documcp://ssgs/{ssg}``; the other tools here are hand-written and decorated.
Each test also lists without the rule, so it cannot pass by showing nothing.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers import (
    Content,
    ReadRequest,
    ResourceProvider,
    ResourceTemplate,
    ServerSettings,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers.plugin import Plugin
from mcp_providers.plugins import policy
from mcp_providers.plugins.documcp import prompts, ssg_catalog, workflows
from mcp_providers.plugins.documcp.registry import SSG_IDS
from mcp_providers.testing import check, compose, connect

pytestmark = pytest.mark.anyio

DENIED = -32003


def _deny(*targets: str, actions: tuple[str, ...] = ("read",)) -> dict[str, Any]:
    return {"policy": {"rules": [{"effect": "deny", "actions": list(actions), "targets": list(targets)}]}}


def _documcp(settings: dict[str, Any] | None = None, **server: Any) -> Any:
    plugins = {"ssg_catalog": ssg_catalog, "workflows": workflows, "policy": policy}
    return compose(plugins, settings, server=ServerSettings(**server)) if server else compose(plugins, settings)


async def _schemas(composition: Any, mode: str = "auto") -> dict[str, dict[str, Any]]:
    async with connect(composition, mode=mode) as client:  # type: ignore[arg-type]
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}


# -- DocuMCP ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_generate_config_offers_only_the_ssgs_the_caller_may_read(mode: str) -> None:
    every = await _schemas(_documcp({"policy": {"rules": []}}), mode)
    assert every["generate_config"]["properties"]["ssg"]["enum"] == list(SSG_IDS)
    shown = await _schemas(_documcp(_deny("documcp://ssgs/hugo")), mode)
    assert shown["generate_config"]["properties"]["ssg"]["enum"] == [i for i in SSG_IDS if i != "hugo"]
    assert "hugo" not in json.dumps(shown["generate_config"]).lower()
    assert shown["recommend_ssg"] == every["recommend_ssg"]  # nothing of it is linked


async def test_a_denied_template_leaves_no_value_and_the_schema_still_valid() -> None:
    shown = await _schemas(_documcp(_deny("documcp://ssgs/{ssg}", actions=("expand",))))
    assert shown["generate_config"]["properties"]["ssg"]["enum"] == []


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_calling_with_a_value_the_caller_may_not_read_is_the_gates_refusal(mode: str, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    composition = _documcp(_deny("documcp://ssgs/hugo"), audit_log=audit)
    async with connect(composition, mode=mode) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as refused:
            await client.call_tool("generate_config", {"ssg": "hugo", "site_name": "Docs"})
        assert refused.value.code == DENIED and "documcp://ssgs/hugo" in refused.value.message
        allowed = await client.call_tool("generate_config", {"ssg": "mkdocs", "site_name": "Docs"})
        assert not allowed.is_error
    calls = [json.loads(line) for line in audit.read_text().splitlines()]
    calls = [line for line in calls if line["operation"] == "tools/call"]
    assert [c["decision"] for c in calls] == ["denied", "allowed"]
    assert calls[0]["action"] == "read" and calls[0]["target"] == "documcp://ssgs/hugo"


# -- hand-written and decorated declarations -------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class PaintIn(BaseModel):
    color: Color
    accent: Literal["red", "blue"] | None = None
    palette: tuple[Literal["red", "blue"], ...] = ()
    also: Color = Color.RED  # the same $defs entry as color, not linked: it keeps every value


class Paint(ToolProvider):
    name = "paint"

    def tools(self) -> list[Tool]:
        links = {name: f"paint://colors/{{{name}}}" for name in ("color", "accent", "palette")}
        return [Tool(name="paint", description="Paint.", input_model=PaintIn, argument_resources=links)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text="painted")


class _PaintPlugin:
    @hookimpl
    def register_tool_providers(self) -> list[ToolProvider]:
        return [Paint()]


def _enums(schema: dict[str, Any]) -> dict[str, list[str]]:
    """Property -> its values, wherever the schema keeps them (inline, a ``$ref``, ``anyOf``, ``items``)."""
    defs = schema.get("$defs", {})

    def values(node: dict[str, Any]) -> list[str]:
        if "$ref" in node:
            return values(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "enum" in node:
            return list(node["enum"])
        if "items" in node:
            return values(node["items"])
        return [v for member in node.get("anyOf", []) for v in values(member)]

    return {name: values(node) for name, node in schema["properties"].items()}


async def test_an_enum_a_literal_an_optional_and_an_array_are_each_narrowed() -> None:
    plugins = {"paint": _PaintPlugin(), "policy": policy}
    every = _enums((await _schemas(compose(plugins, {"policy": {"rules": []}})))["paint"])
    assert every == {
        "color": ["red", "blue"],
        "accent": ["red", "blue"],
        "palette": ["red", "blue"],
        "also": ["red", "blue"],
    }
    shown = _enums((await _schemas(compose(plugins, _deny("paint://colors/red"))))["paint"])
    assert shown == {"color": ["blue"], "accent": ["blue"], "palette": ["blue"], "also": ["red", "blue"]}


class WashIn(BaseModel):
    color: Color
    tint: Literal["red", "blue"] = "red"
    only: Literal["red"] | None = None


class Wash(Paint):
    name = "wash"

    def tools(self) -> list[Tool]:
        links = {name: f"paint://colors/{{{name}}}" for name in ("color", "tint", "only")}
        return [Tool(name="wash", description="Wash.", input_model=WashIn, argument_resources=links)]


async def test_a_dropped_value_is_named_nowhere_in_the_schema_nor_taken_as_a_default() -> None:
    """Not in a ``$defs`` entry only linked arguments use, not as a ``default``, not as a ``const``;
    and an argument left out whose default names a dropped value is refused as if it were sent."""

    class plugin:
        @hookimpl
        def register_tool_providers(self) -> list[ToolProvider]:
            return [Wash()]

    every = (await _schemas(compose({"wash": plugin(), "policy": policy}, {"policy": {"rules": []}})))["wash"]
    assert every["properties"]["tint"]["default"] == "red" and "$defs" in every
    composition = compose({"wash": plugin(), "policy": policy}, _deny("paint://colors/red"))
    shown = (await _schemas(composition))["wash"]
    assert _enums(shown) == {"color": ["blue"], "tint": ["blue"], "only": []}
    assert '"red"' not in json.dumps(shown), shown
    async with connect(composition) as client:
        with pytest.raises(MCPError) as denied:
            await client.call_tool("wash", {"color": "blue"})  # tint left out: its default is red
        # refused without naming the value (tester 31 F8): the caller never saw it
        assert denied.value.code == DENIED and "red" not in denied.value.message
        assert "default of argument tint" in denied.value.message
        assert not (await client.call_tool("wash", {"color": "blue", "tint": "blue"})).is_error


@pytest.mark.parametrize(
    ("arguments", "refused"),
    [
        ({"color": "red"}, True),
        ({"color": "blue", "accent": "red"}, True),
        ({"color": "blue", "palette": ["blue", "red"]}, True),
        ({"color": "blue", "accent": None, "palette": ["blue"], "also": "red"}, False),
    ],
)
async def test_a_call_naming_a_value_the_caller_may_not_read_is_refused(
    arguments: dict[str, Any], refused: bool
) -> None:
    async with connect(compose({"paint": _PaintPlugin(), "policy": policy}, _deny("paint://colors/red"))) as client:
        if refused:
            with pytest.raises(MCPError) as denied:
                await client.call_tool("paint", arguments)
            assert denied.value.code == DENIED and "paint://colors/red" in denied.value.message
        else:
            assert not (await client.call_tool("paint", arguments)).is_error


brush = Plugin("brush")


@brush.tool(argument_resources={"color": "paint://colors/{color}"})
def stroke(color: Literal["red", "blue"], width: int = 1) -> str:
    """One stroke."""
    return f"{color} {width}"


async def test_a_decorated_tool_links_its_literal_argument() -> None:
    every = _enums((await _schemas(compose({"brush": brush, "policy": policy}, {"policy": {"rules": []}})))["stroke"])
    assert every["color"] == ["red", "blue"]
    composition = compose({"brush": brush, "policy": policy}, _deny("paint://colors/blue"))
    assert _enums((await _schemas(composition))["stroke"])["color"] == ["red"]
    async with connect(composition) as client:
        with pytest.raises(MCPError) as denied:
            await client.call_tool("stroke", {"color": "blue"})
        assert denied.value.code == DENIED


# -- check -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("links", "said"),
    [
        ({"nothing": "paint://colors/{nothing}"}, "is not an argument of the tool"),
        ({"color": "paint://colors/{other}"}, "has variables other"),
        ({"color": "paint://{kind}/{color}"}, "has variables kind, color"),
        ({"color": "paint://colors/{"}, ""),
    ],
)
async def test_a_wrong_link_is_a_check_problem(links: dict[str, str], said: str) -> None:
    class Wrong(Paint):
        def tools(self) -> list[Tool]:
            return [Tool(name="paint", description="Paint.", input_model=PaintIn, argument_resources=links)]

    class plugin:
        @hookimpl
        def register_tool_providers(self) -> list[ToolProvider]:
            return [Wrong()]

    lines = await check(compose({"paint": plugin()}, strict=False))
    assert any("tool-argument-resource" in line and said in line for line in lines), lines


class Colors(ResourceProvider):
    name = "colors"
    prefixes = ("paint://",)

    def templates(self) -> list[ResourceTemplate]:
        return [
            ResourceTemplate(uri_template="paint://colors/{name}", name="color", completions={"name": ("blue", "red")})
        ]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=request.uri)


def _painting(links: bool) -> Any:
    class Unlinked(Paint):
        def tools(self) -> list[Tool]:
            return [Tool(name="paint", description="Paint.", input_model=PaintIn)]

    class plugin:
        @hookimpl
        def register_resource_providers(self) -> list[ResourceProvider]:
            return [Colors()]

        @hookimpl
        def register_tool_providers(self) -> list[ToolProvider]:
            return [Paint() if links else Unlinked()]

    return compose({"paint": plugin()})


async def test_check_warns_of_an_enum_holding_a_templates_values_unlinked() -> None:
    lines = [line for line in await check(_painting(links=False)) if "tool-enum-unlinked" in line]
    assert len(lines) == 4 and all("{name} in paint://colors/{name}" in line for line in lines), lines
    assert any('argument_resources={"color": "paint://colors/{color}"}' in line for line in lines), lines
    linked = [line for line in await check(_painting(links=True)) if "tool-enum-unlinked" in line]
    assert len(linked) == 1 and "'paint.also'" in linked[0]  # the one argument left unlinked
    assert not [line for line in await check(_documcp()) if "tool-enum-unlinked" in line]


@pytest.mark.parametrize(
    ("tool", "arguments", "denied", "hidden"),
    [
        ("generate_config", {"ssg": "nope", "site_name": "Docs"}, "documcp://ssgs/hugo", "hugo"),
        ("stroke", {"color": "green"}, "paint://colors/blue", "'blue'"),
    ],
)
async def test_a_refused_value_is_answered_without_naming_the_values(
    tool: str, arguments: dict[str, Any], denied: str, hidden: str
) -> None:
    """A value no schema offers is a validation refusal (``isError``) that, under a policy, says to
    look at tools/list instead of naming the values (a denied one among them); without one, the
    model's message stands."""
    plugins: dict[str, Any] = {"ssg_catalog": ssg_catalog, "workflows": workflows, "brush": brush}
    async with connect(compose(plugins)) as client:  # no policy: the message as the model gives it
        assert hidden in (await client.call_tool(tool, arguments)).content[0].text  # type: ignore[union-attr]
    async with connect(compose({**plugins, "policy": policy}, _deny(denied))) as client:
        refused = await client.call_tool(tool, arguments)
    text = refused.content[0].text  # type: ignore[union-attr]
    assert refused.is_error and hidden not in text and "tools/list" in text, text


async def test_prompts_list_names_no_ssg_in_prose_to_a_caller_denied_one() -> None:
    """The same rule for ``setup-documentation``'s ``ssg_type``: its description named every SSG id;
    completion offers the ones the caller may read."""
    composition = compose(
        {"ssg_catalog": ssg_catalog, "documcp_prompts": prompts, "policy": policy}, _deny("documcp://ssgs/hugo")
    )
    async with connect(composition) as client:
        listed = (await client.list_prompts()).prompts
    assert "ssg_type" in [a.name for p in listed for a in p.arguments or ()]
    assert "hugo" not in json.dumps([p.model_dump(mode="json") for p in listed]).lower()
