"""``mcp_providers.plugin.Plugin``: what each decorator declares and how its function is called
(issue 39, build 1): parameters by name, annotation and type; Context for every kind; return
values; the same declarations and checks as the class API; a module holding a Plugin object."""

from __future__ import annotations

import types
from typing import Literal

import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers import Principal
from mcp_providers._host.shape import as_plugin, several_plugins
from mcp_providers.plugin import Context, Message, Plugin, ToolFailure, ToolResult
from mcp_providers.testing import compose, connect


class Settings(BaseModel):
    greeting: str = "hello"


def _plugin() -> Plugin:
    plugin = Plugin("shop", prefixes=["shop://"], settings=Settings)

    @plugin.template("shop://items/{item}{?detail}")
    def item(item: int, ctx: Context, settings: Settings, detail: Literal["short", "long"] = "short") -> dict:
        """One item."""
        return {"item": item, "detail": detail, "who": ctx.subject, "greeting": settings.greeting}

    @item.complete("item")
    async def item_ids(item: str, ctx: Context) -> list[str]:
        return [f"{n}" for n in (10, 11, 20) if f"{n}".startswith(item)] + [ctx.subject]

    @plugin.tool(effects="additive", idempotent=True)
    async def add(a: int, b: int = 1) -> int:
        """Add two numbers."""
        return a + b

    @plugin.tool()
    def shout(text: str, ctx: Context) -> str:
        """Say it louder (runs in a thread)."""
        if not text:
            raise ToolFailure("give some text to shout")
        return f"{text.upper()} from {ctx.subject}"

    @plugin.tool()
    def nothing() -> ToolResult:
        """Return a ToolResult as it is."""
        return ToolResult(text="as is")

    @plugin.prompt(title="Greet")
    def greet(name: str, settings: Settings, ctx: Context, style: str = "plain") -> list[str | Message]:
        """Greet someone."""
        return [f"{settings.greeting} {name} ({style}, for {ctx.subject})", Message("assistant", "ok")]

    @greet.complete("name")
    def names(name: str) -> list[str]:
        return [n for n in ("ada", "alan") if n.startswith(name)]

    return plugin


@pytest.mark.anyio
async def test_templates_convert_values_and_take_context_settings_and_query_defaults() -> None:
    composition = compose({"shop": _plugin()}, {"shop": {"greeting": "hi"}})
    alice = Principal("alice", issuer="https://idp.test/")
    async with connect(composition, principal=alice) as client:
        read = await client.read_resource("shop://items/10?detail=long")
        assert read.contents[0].text == '{"item":10,"detail":"long","who":"alice","greeting":"hi"}'  # type: ignore[union-attr]
        short = await client.read_resource("shop://items/11")
        assert '"detail":"short"' in short.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(MCPError) as bad:
            await client.read_resource("shop://items/ten")
        assert bad.value.error.code == -32602 and "item='ten' is not valid" in bad.value.error.message
        with pytest.raises(MCPError) as literal:
            await client.read_resource("shop://items/10?detail=huge")
        assert literal.value.error.code == -32602
        ref = {"type": "ref/resource", "uri": "shop://items/{item}{?detail}"}
        done = await client.complete(ref, {"name": "item", "value": "1"})  # type: ignore[arg-type]
        assert done.completion.values == ["10", "11", "alice"]


@pytest.mark.anyio
async def test_tools_take_their_schema_from_the_signature_and_wrap_plain_outputs() -> None:
    async with connect(compose({"shop": _plugin()}), principal=Principal("bob", issuer="https://idp.test/")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        add = tools["add"]
        assert add.input_schema["properties"]["a"]["type"] == "integer" and add.input_schema["required"] == ["a"]
        assert add.output_schema is not None and add.output_schema["properties"]["result"]["type"] == "integer"
        assert add.annotations is not None and add.annotations.read_only_hint is False
        assert add.annotations.idempotent_hint is True
        assert tools["shout"].output_schema is None
        summed = await client.call_tool("add", {"a": 2, "b": 3})
        assert summed.structured_content == {"result": 5}
        shouted = await client.call_tool("shout", {"text": "hey"})
        assert shouted.content[0].text == "HEY from bob"  # type: ignore[union-attr]
        failed = await client.call_tool("shout", {"text": ""})
        assert failed.is_error and "give some text to shout" in failed.content[0].text  # type: ignore[union-attr]
        assert (await client.call_tool("nothing", {})).content[0].text == "as is"  # type: ignore[union-attr]
        invalid = await client.call_tool("add", {"a": "x"})
        assert invalid.is_error


@pytest.mark.anyio
async def test_prompts_take_arguments_context_and_settings() -> None:
    async with connect(
        compose({"shop": _plugin()}), principal=Principal("carol", issuer="https://idp.test/")
    ) as client:
        listed = (await client.list_prompts()).prompts
        assert [(a.name, a.required) for a in listed[0].arguments or []] == [("name", True), ("style", False)]
        assert listed[0].title == "Greet" and listed[0].description == "Greet someone."
        got = await client.get_prompt("greet", {"name": "ada"})
        assert [m.role for m in got.messages] == ["user", "assistant"]
        assert got.messages[0].content.text == "hello ada (plain, for carol)"  # type: ignore[union-attr]
        ref = {"type": "ref/prompt", "name": "greet"}
        assert (await client.complete(ref, {"name": "name", "value": "a"})).completion.values == ["ada", "alan"]  # type: ignore[arg-type]


def test_a_decorated_function_stays_callable() -> None:
    plugin = Plugin("calls", prefixes=["calls://"])

    @plugin.resource("calls://x")
    def x() -> str:
        return "x"

    assert x() == "x"
    with pytest.raises(ValueError, match="only templates and prompts complete"):
        x.complete("y")


def test_declaring_a_name_twice_is_refused_at_once() -> None:
    plugin = Plugin("twice", prefixes=["t://"])
    plugin.resource("t://a")(lambda: "1")
    with pytest.raises(ValueError, match="declared twice"):
        plugin.resource("t://a")(lambda: "2")


def test_bare_tool_decorator_says_to_add_parentheses() -> None:
    plugin = Plugin("bare")
    with pytest.raises(TypeError, match=r"@bare.tool\(\) with parentheses"):
        plugin.tool(lambda: None)  # type: ignore[arg-type]


def test_a_module_holding_one_plugin_object_is_that_plugin() -> None:
    module = types.ModuleType("notes_mod")
    module.notes = Plugin("notes")  # type: ignore[attr-defined]
    assert as_plugin(module) is module.notes  # type: ignore[attr-defined]
    module.other = Plugin("other")  # type: ignore[attr-defined]
    assert as_plugin(module) is module
    problem = several_plugins(module, "notes")
    assert problem is not None and 'notes = "notes_mod:notes"' in problem


def test_the_same_checks_apply_to_decorated_declarations() -> None:
    first, second = Plugin("one", prefixes=["dup://"]), Plugin("two", prefixes=["dup://b/"])
    first.resource("dup://b/x")(lambda: "1")
    second.resource("dup://b/x")(lambda: "2")
    failures = compose({"one": first, "two": second}, strict=False).failures
    assert any("prefix-overlap" in f for f in failures)
    assert any("outside" in f or "owns" in f or "dup://b/x" in f for f in failures)


@pytest.mark.anyio
@pytest.mark.parametrize("old", ["register_prompts", "register_extensions"])
async def test_the_old_hook_names_still_load_with_a_deprecation(old: str) -> None:
    import warnings

    from mcp_providers import MCPProvidersRemovedIn1Warning, hookimpl
    from mcp_providers.models import Prompt
    from mcp_providers.plugin import Message as Msg
    from mcp_providers.providers import PromptProvider

    class Prompts(PromptProvider):
        name = "old-prompts"

        def prompts(self) -> list[Prompt]:
            return [Prompt(name="hi", description="Say hi.")]

        async def render(self, prompt: Prompt, arguments: object) -> list[Msg]:
            return [Msg("user", "hi")]

    module = types.ModuleType("old_hooks")
    setattr(module, old, hookimpl(lambda: [Prompts()] if old == "register_prompts" else []))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        composition = compose({"old": module}, strict=False)
    assert any(issubclass(w.category, MCPProvidersRemovedIn1Warning) and old in str(w.message) for w in caught)
    record = next(r for r in composition.records if r.name == "old")
    assert record.status == "loaded" and any(f"hook {old} is renamed" in d for d in record.deprecations)
    if old == "register_prompts":
        async with connect(composition) as client:
            assert [p.name for p in (await client.list_prompts()).prompts] == ["hi"]


@pytest.mark.anyio
async def test_not_found_from_a_decorated_read_carries_the_uri() -> None:
    from mcp_providers.plugin import NotFound

    plugin = Plugin("missing", prefixes=["m://"])

    @plugin.template("m://{name}")
    async def item(name: str) -> str:
        raise NotFound(f"no {name}")

    async with connect(compose({"missing": plugin})) as client:
        with pytest.raises(MCPError) as missing:
            await client.read_resource("m://%61bc")
    assert missing.value.error.data == {"uri": "m://%61bc"}
