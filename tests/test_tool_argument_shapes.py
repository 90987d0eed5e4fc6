"""A linked tool argument (``Tool.argument_resources``) is gated on every value the tool receives,
whatever its shape (tester 31 F1-F6, F8, F13).

``tools/call`` asks the gate about the validated arguments: aliases and field names alike, defaults
and ``default_factory`` values, items at any depth (lists of lists, dict values, tuples, sets,
models), integers and ``IntEnum`` members as their text; each distinct value once, after pydantic's
bounds. ``tools/list`` narrows the same shapes (nested ``items``, ``additionalProperties``,
``prefixItems``, integer enums). A refused default is refused without naming its value.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Literal

import pytest
from mcp import MCPError
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from mcp_providers import (
    Content,
    ReadRequest,
    ResourceProvider,
    ResourceTemplate,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers.plugins import policy
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

DENIED = -32003
RED = "paint://colors/red"


def _composition(model: type[BaseModel], denied: tuple[str, ...] = (RED,), links: dict[str, str] | None = None) -> Any:
    """``paint`` taking ``model``, each of its fields (by alias) linked to ``paint://colors/{...}``."""
    names = [f.alias or n for n, f in model.model_fields.items()]
    linked = links if links is not None else {n: f"paint://colors/{{{n}}}" for n in names}

    class Paint(ToolProvider):
        name = "paint"

        def tools(self) -> list[Tool]:
            return [Tool(name="paint", description="Paint.", input_model=model, argument_resources=linked)]

        async def call(self, call: ToolCall) -> ToolResult:
            return ToolResult(text="ran " + call.arguments.model_dump_json())

    class Colors(ResourceProvider):
        name = "colors"
        prefixes = ("paint://",)

        def templates(self) -> list[ResourceTemplate]:
            return [ResourceTemplate(uri_template="paint://colors/{name}", name="color")]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text=request.uri)

    class plugin:
        @hookimpl
        def register_resource_providers(self) -> list[ResourceProvider]:
            return [Colors()]

        @hookimpl
        def register_tool_providers(self) -> list[ToolProvider]:
            return [Paint()]

    rules = [{"effect": "deny", "actions": ["read"], "targets": list(denied)}]
    return compose({"paint": plugin(), "policy": policy}, {"policy": {"rules": rules}})


async def _call(composition: Any, arguments: dict[str, Any]) -> str:
    """``"denied: <message>"`` on -32003, ``"ran ..."`` or ``"error ..."`` otherwise."""
    async with connect(composition) as client:
        try:
            result = await client.call_tool("paint", arguments)
        except MCPError as exc:
            return f"denied: {exc.message}" if exc.code == DENIED else f"raised {exc.code}"
        return ("error " if result.is_error else "") + result.content[0].text  # type: ignore[union-attr]


async def _schema(composition: Any) -> dict[str, Any]:
    async with connect(composition) as client:
        return (await client.list_tools()).tools[0].input_schema


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


class Grid(BaseModel):
    grid: list[list[Literal["red", "blue"]]] = []


class Layers(BaseModel):
    by_layer: dict[str, Literal["red", "blue"]] = {}


class Pages(BaseModel):
    page: Literal[1, 2] = 2
    level: Level = Level.TWO


class Factory(BaseModel):
    palette: list[Literal["red", "blue"]] = Field(default_factory=lambda: ["red"])


class ByName(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    color: Literal["red", "blue"] = Field("blue", alias="colour")


class Choices(BaseModel):
    color: Literal["red", "blue"] = Field("blue", validation_alias=AliasChoices("colour", "color"))


class Pair(BaseModel):
    pair: tuple[Literal["red", "blue"], Literal["red", "blue"]] = ("blue", "blue")


class Swatch(BaseModel):
    shade: Literal["red", "blue"]


class Nested(BaseModel):
    swatches: dict[str, list[Swatch]] = {}
    kinds: frozenset[Literal["red", "blue"]] = frozenset()


@pytest.mark.parametrize(
    ("model", "arguments", "links"),
    [
        (Grid, {"grid": [["blue"], ["blue", "red"]]}, None),
        (Layers, {"by_layer": {"a": "blue", "b": "red"}}, None),
        (Pair, {"pair": ["blue", "red"]}, None),
        (Nested, {"swatches": {"a": [{"shade": "blue"}, {"shade": "red"}]}}, None),
        (Nested, {"kinds": ["blue", "red"]}, None),
        (ByName, {"color": "red"}, {"colour": "paint://colors/{colour}"}),
        (ByName, {"colour": "red"}, {"colour": "paint://colors/{colour}"}),
        (Choices, {"color": "red"}, {"color": "paint://colors/{color}"}),
        (Choices, {"colour": "red"}, {"color": "paint://colors/{color}"}),
        (Factory, {}, None),
        (Factory, {"palette": ["blue", "red"]}, None),
    ],
)
async def test_a_denied_value_is_refused_in_every_shape_and_spelling(
    model: type[BaseModel], arguments: dict[str, Any], links: dict[str, str] | None
) -> None:
    """Nested lists, dict values, tuples, models in dicts, sets; an alias or the field name;
    a ``default_factory``. The same shapes with only readable values run (so nothing passes by
    refusing everything)."""
    assert (await _call(_composition(model, links=links), arguments)).startswith("denied"), arguments
    readable = json.loads(json.dumps(arguments).replace('"red"', '"blue"'))
    seen = await _call(_composition(model, denied=("paint://colors/green",), links=links), readable)
    assert seen.startswith("ran"), seen


@pytest.mark.parametrize("arguments", [{"page": 1}, {"level": 1}, {"page": 1, "level": 2}])
async def test_an_integer_value_names_its_resource_as_text(arguments: dict[str, Any]) -> None:
    composition = _composition(Pages, denied=("paint://colors/1",))
    assert (await _call(composition, arguments)).startswith("denied")
    assert (await _call(composition, {"page": 2, "level": 2})).startswith("ran")


async def test_tools_list_narrows_integers_nested_items_dict_values_and_tuple_items() -> None:
    shown = await _schema(_composition(Pages, denied=("paint://colors/1",)))
    assert shown["properties"]["page"]["enum"] == [2] and "default" in shown["properties"]["page"]
    assert "1" not in json.dumps(shown.get("$defs", {})), shown
    for model in (Grid, Layers, Pair):
        every = json.dumps(await _schema(_composition(model, denied=("paint://colors/green",))))
        shown_text = json.dumps(await _schema(_composition(model)))
        assert '"red"' in every and '"red"' not in shown_text and '"blue"' in shown_text, (model, shown_text)


async def test_each_distinct_value_is_decided_once_after_the_models_bounds() -> None:
    """100,000 items over a ``max_length`` of 4 are a validation refusal before any decision; an
    unbounded list of 100,000 equal items is one decision (the policy is asked through a counter)."""

    class Bounded(BaseModel):
        palette: list[Literal["red", "blue"]] = Field(default=[], max_length=4)

    class Unbounded(BaseModel):
        palette: list[Literal["red", "blue"]] = []

    asked: list[str] = []
    decide = policy.decide

    def counting(settings: Any, principal: Any, action: Any, target: str) -> Any:
        asked.append(target)
        return decide(settings, principal, action, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(policy, "decide", counting)
        one = await _call(_composition(Unbounded), {"palette": ["blue"]})
        base = len(asked)
        asked.clear()
        seen = await _call(_composition(Bounded), {"palette": ["blue"] * 100_000})
        assert seen.startswith("error") and "paint://colors/blue" not in asked, seen
        asked.clear()
        seen = await _call(_composition(Unbounded), {"palette": ["blue"] * 100_000})
    assert one.startswith("ran") and seen.startswith("ran"), seen[:200]
    assert len(asked) == base, asked  # as many questions as for one item


class Hidden(BaseModel):
    color: Literal["red", "blue"] = "red"


async def test_a_refused_default_is_refused_without_naming_it() -> None:
    composition = _composition(Hidden)
    assert "red" not in json.dumps(await _schema(composition))
    seen = await _call(composition, {})
    assert seen.startswith("denied") and "red" not in seen and "default" in seen, seen
    sent = await _call(composition, {"color": "red"})  # sent: the caller named it already
    assert sent.startswith("denied") and RED in sent, sent
    assert (await _call(composition, {"color": "blue"})).startswith("ran")


async def test_a_default_factory_is_asked_about_and_run_with_one_value() -> None:
    """The call runs on the arguments the gate was asked about: a ``default_factory`` giving
    another value each time is not made again after the question."""
    given = iter(["blue", "red"] * 4)

    class Changing(BaseModel):
        color: Literal["red", "blue"] = Field(default_factory=lambda: next(given))

    seen = await _call(_composition(Changing), {})
    assert seen == 'ran {"color":"blue"}', seen


async def test_a_link_to_a_template_nothing_serves_is_a_check_warning() -> None:
    """A typo (``shade://`` for ``shades://``) gates nothing: the rule on the served URI never sees
    the call (tester 31 F10). A served link is not named."""
    from mcp_providers.plugin import Plugin
    from mcp_providers.testing import check

    shades = Plugin("shades", prefixes=["shades://"])

    @shades.template("shades://colors/{name}", completions={"name": ("red", "blue")})
    def color(name: str) -> str:
        """A color."""
        return f"color {name}"

    @shades.tool(argument_resources={"color": "shade://colors/{color}"})
    def paint(color: Literal["red", "blue"]) -> str:
        """Paint."""
        return f"painted {color}"

    @shades.tool(argument_resources={"color": "shades://colors/{color}"})
    def wash(color: Literal["red", "blue"]) -> str:
        """Wash."""
        return f"washed {color}"

    lines = [line for line in await check(compose({"shades": shades}, strict=False)) if "unserved" in line]
    assert any("paint.color" in line and "shade://colors/{color}" in line for line in lines), lines
    assert not any("wash" in line for line in lines), lines
