"""A declaration pydantic refuses (a tool name outside the name rule, ``effects="read-only"``, an
empty resource name, a priority above 1 ...) is told as what was wrong and what would be right,
naming the declaration and the field with the value cut short, never as pydantic's raw error."""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, Tool, ToolProvider, hookimpl
from mcp_providers.models import Icon, Prompt, PromptArgument, ResourceTemplate
from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose

RAW = ("[type=", "errors.pydantic.dev", "validation error for", "String should match pattern")


def _failure(plugin: object, name: str) -> str:
    failures = [f for f in compose({name: plugin}, strict=False).failures if f.startswith(f"{name}:")]
    assert failures, f"{name} was not refused"
    text = " ".join(failures)
    assert not any(raw in text for raw in RAW), text
    return text


class In(BaseModel):
    query: str = ""


def _lookup(query: str) -> str:
    """Looks a query up."""
    return query


def test_a_decorated_tool_with_a_bad_name_names_the_function_the_field_and_the_rule() -> None:
    plugin = Plugin("badname")
    plugin.tool("look up!")(_lookup)
    said = _failure(plugin, "badname")
    assert "_lookup" in said and "tool 'look up!'" in said, said
    assert "name 'look up!'" in said and "1 to 128 characters" in said and "A-Z a-z 0-9 _ . -" in said, said


def test_a_decorated_tool_with_an_effects_typo_lists_the_effects() -> None:
    plugin = Plugin("readonly")
    plugin.tool(effects="read-only")(_lookup)  # type: ignore[arg-type]
    said = _failure(plugin, "readonly")
    assert "tool '_lookup'" in said and "effects 'read-only'" in said, said
    assert "'none', 'additive' or 'destructive'" in said and "read-only is 'none'" in said, said


def test_an_unknown_decorator_field_gets_did_you_mean() -> None:
    plugin = Plugin("unknownfield")
    plugin.tool(idempotnt=True)(_lookup)
    said = _failure(plugin, "unknownfield")
    assert "idempotnt" in said and 'did you mean "idempotent"?' in said, said


def test_a_long_value_is_cut_short() -> None:
    plugin = Plugin("longname")
    plugin.tool("x" * 300 + " y")(_lookup)
    said = _failure(plugin, "longname")
    assert "x" * 300 not in said and "..." in said, said


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"name": ""}, ["resource 'r://x'", "name", "must not be empty"]),
        ({"mime_type": 5}, ["resource 'r://x'", "mime_type 5", "should be a valid string"]),
        ({"annotations": {"priority": 3}}, ["annotations.priority", "3", "1"]),
        ({"icons": [{"src": 1}]}, ["icons[0].src 1", "should be a valid string"]),
        ({"side_effects": "writes"}, ["side_effects 'writes'", "'none', 'additive' or 'destructive'"]),
    ],
)
def test_a_decorated_resource_field_is_named_with_what_would_be_right(
    fields: dict[str, Any], expected: list[str]
) -> None:
    plugin = Plugin("resfield", prefixes=["r://"])
    plugin.resource("r://x", **fields)(lambda: "x")
    said = _failure(plugin, "resfield")
    assert all(e in said for e in expected), said


def test_a_decorated_prompt_with_a_bad_name_names_the_rule() -> None:
    plugin = Plugin("badprompt")
    plugin.prompt("write docs")(lambda topic: topic)
    said = _failure(plugin, "badprompt")
    assert "prompt 'write docs'" in said and "1 to 128 characters" in said, said


def _module(name: str, **hooks: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in hooks.items():
        setattr(module, key, value)
    return module


def test_a_class_tool_built_in_a_hook_is_told_the_same() -> None:
    class Tools(ToolProvider):
        name = "hook-tools"

        def __init__(self) -> None:
            self._tools = [Tool(name="look up", description="d", input_model=In, effects="readonly")]  # type: ignore[arg-type]

        def tools(self) -> Sequence[Tool]:
            return self._tools

    @hookimpl
    def register_tool_providers(settings: Any) -> list[ToolProvider]:
        return [Tools()]

    said = _failure(_module("hook_tools_mod", register_tool_providers=register_tool_providers), "hooktools")
    assert "register_tool_providers" in said and "tool 'look up'" in said, said
    assert "effects 'readonly'" in said and "read-only is 'none'" in said, said


def test_a_class_resource_built_in_resources_is_told_the_same() -> None:
    class Lazy(ResourceProvider):
        name = "lazy"
        prefixes = ("lazy://",)

        def resources(self) -> list[Resource]:
            return [Resource(uri="lazy://a", name="a", annotations={"audience": ["model"]})]  # type: ignore[arg-type, list-item]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text="a")

    @hookimpl
    def register_resource_providers(settings: Any) -> list[ResourceProvider]:
        return [Lazy()]

    said = _failure(_module("lazy_res_mod", register_resource_providers=register_resource_providers), "lazyres")
    assert "declaration-failed" in said and "resource 'lazy://a'" in said, said
    assert "annotations.audience[0] 'model'" in said and "'user' or 'assistant'" in said, said


def test_the_explanation_travels_with_the_error_for_authors_running_their_own_code() -> None:
    with pytest.raises(ValidationError) as raised:
        Prompt(name="a b", description="d")
    assert "prompt 'a b'" in "\n".join(getattr(raised.value, "__notes__", [])), raised.value
    with pytest.raises(ValidationError) as raised:
        ResourceTemplate(uri_template="t://{x}", name="t", freshness={"kind": "forever"})  # type: ignore[arg-type]
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "template 't://{x}'" in notes and "freshness.kind 'forever'" in notes and "'static'" in notes, notes
    with pytest.raises(ValidationError) as raised:
        PromptArgument(name="")
    assert "must not be empty" in "\n".join(getattr(raised.value, "__notes__", []))
    with pytest.raises(ValidationError) as raised:
        Icon(src="https://example.com/i.png", theme="blue")  # type: ignore[arg-type]
    assert "theme 'blue'" in "\n".join(getattr(raised.value, "__notes__", []))
