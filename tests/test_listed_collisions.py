"""A collision with a declaration made from a source's listing (``meta[ORIGIN_KEY]``: an upstream
MCP server's component, an OpenAPI operation) leaves out that listed declaration alone (issue 40).

The listing is not the operator's to write, and it may change while serving: it must never cost a
plugin's own declaration, nor either plugin. Two plugins' own declarations still collide as before
(both plugins refused: ``test_checks.py::test_collisions_name_both_sides_and_neither_wins``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel

from mcp_providers import (
    Content,
    Message,
    Prompt,
    PromptProvider,
    ReadRequest,
    Resource,
    ResourceProvider,
    ResourceTemplate,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers.models import ORIGIN_KEY
from mcp_providers.testing import compose

LISTED = {ORIGIN_KEY: {"server": "up", "name": "x"}}


class _In(BaseModel):
    pass


def _tool(name: str, listed: bool) -> Tool:
    return Tool(name=name, description="d", input_model=_In, meta=LISTED if listed else None)


def _prompt(name: str, listed: bool) -> Prompt:
    return Prompt(name=name, description="d", meta=LISTED if listed else None)


class Tools(ToolProvider):
    def __init__(self, name: str, tools: Sequence[Tool]) -> None:
        self.name, self._tools = name, tools

    def tools(self) -> Sequence[Tool]:
        return self._tools

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(content=())


class Prompts(PromptProvider):
    def __init__(self, name: str, prompts: Sequence[Prompt]) -> None:
        self.name, self._prompts = name, prompts

    def prompts(self) -> Sequence[Prompt]:
        return self._prompts

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        return [Message("user", "hi")]


class Resources(ResourceProvider):
    def __init__(
        self, name: str, prefix: str, resources: Sequence[Resource] = (), templates: Sequence[ResourceTemplate] = ()
    ) -> None:
        self.name, self.prefixes, self._r, self._t = name, (prefix,), resources, templates

    def resources(self) -> Sequence[Resource]:
        return self._r

    def templates(self) -> Sequence[ResourceTemplate]:
        return self._t

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="x")


def plugin(*providers: Any) -> SimpleNamespace:
    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [p for p in providers if isinstance(p, ToolProvider)]

    @hookimpl
    def register_prompt_providers() -> list[PromptProvider]:
        return [p for p in providers if isinstance(p, PromptProvider)]

    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [p for p in providers if isinstance(p, ResourceProvider)]

    return SimpleNamespace(
        register_tool_providers=register_tool_providers,
        register_prompt_providers=register_prompt_providers,
        register_resource_providers=register_resource_providers,
    )


def _status(composition: Any) -> dict[str, str]:
    return {r.name: r.status for r in composition.records}


def test_a_listed_tool_named_like_a_plugins_own_is_left_out_alone() -> None:
    native = plugin(Tools("native-tools", [_tool("taken", False), _tool("mine", False)]))
    source = plugin(Tools("up-a-tools", [_tool("taken", True), _tool("free", True)]))
    composition = compose({"native": native, "source": source}, strict=False)
    assert _status(composition) == {"native": "loaded", "source": "loaded"}
    assert not composition.failures  # nothing refused: check passes, a reload is not blocked
    served = {(e.provider.name, e.declaration.name) for e in composition.catalog.tools}
    assert served == {("native-tools", "taken"), ("native-tools", "mine"), ("up-a-tools", "free")}
    [line] = [str(p) for p in composition.assembly.left_out]
    assert line.startswith("native + source: left-out: 'taken': duplicate-tool: ")
    assert "provider 'up-a-tools' (plugin source) lists it" in line
    assert "provider 'native-tools' (plugin native) declares it" in line
    assert "only the listed one is left out" in line


def test_the_plugin_listed_first_or_last_never_matters() -> None:
    source = plugin(Tools("up-a-tools", [_tool("taken", True)]))
    native = plugin(Tools("native-tools", [_tool("taken", False)]))
    composition = compose({"a_source": source, "z_native": native}, strict=False)
    assert [e.provider.name for e in composition.catalog.tools] == ["native-tools"]
    assert not composition.failures


def test_a_listed_prompt_named_like_a_plugins_own_is_left_out_alone() -> None:
    native = plugin(Prompts("native-prompts", [_prompt("setup", False)]))
    source = plugin(Prompts("up-a-prompts", [_prompt("setup", True), _prompt("other", True)]))
    composition = compose({"native": native, "source": source}, strict=False)
    assert _status(composition) == {"native": "loaded", "source": "loaded"}
    served = {(e.provider.name, e.declaration.name) for e in composition.catalog.prompts}
    assert served == {("native-prompts", "setup"), ("up-a-prompts", "other")}
    [left] = composition.assembly.left_out
    assert left.rule == "left-out" and left.value == "setup" and "duplicate-prompt" in left.message


def test_two_listings_naming_one_tool_serve_neither_and_keep_both_plugins() -> None:
    a = plugin(Tools("up-a-tools", [_tool("same", True), _tool("a_only", True)]))
    b = plugin(Tools("openapi-b", [_tool("same", True)]))
    composition = compose({"a": a, "b": b}, strict=False)
    assert _status(composition) == {"a": "loaded", "b": "loaded"}
    assert [e.declaration.name for e in composition.catalog.tools] == ["a_only"]
    assert {p.plugins for p in composition.assembly.left_out} == {("a", "b")}
    assert len(composition.assembly.left_out) == 2  # each side said, each naming the other
    assert all("the server never picks a winner" in p.message for p in composition.assembly.left_out)


def test_two_plugins_own_tools_still_refuse_both_plugins() -> None:
    composition = compose(
        {"a": plugin(Tools("pa", [_tool("same", False)])), "b": plugin(Tools("pb", [_tool("same", False)]))},
        strict=False,
    )
    assert _status(composition) == {"a": "rejected", "b": "rejected"}
    assert [p.rule for p in composition.problems] == ["duplicate-tool"]
    assert not composition.assembly.left_out


def test_a_listing_repeating_a_uri_or_template_shape_loses_only_those() -> None:
    listed_uri = {ORIGIN_KEY: {"service": "s", "uri": "x://a/1"}}
    resources = [
        Resource(uri="x://a/1", name="one", meta=listed_uri),
        Resource(uri="X://a/1", name="again", meta=listed_uri),
    ]
    resources.append(Resource(uri="x://a/2", name="two", meta=listed_uri))
    templates = [
        ResourceTemplate(uri_template="x://a/t/{id}", name="t", meta=LISTED),
        ResourceTemplate(uri_template="x://a/t/{key}", name="same shape", meta=LISTED),
        ResourceTemplate(uri_template="x://a/u/{id}", name="u", meta=LISTED),
        ResourceTemplate(uri_template="x://a/u/{id}", name="u again", meta=LISTED),
        ResourceTemplate(uri_template="x://a/v/{id}", name="v", meta=LISTED),
    ]
    composition = compose({"s": plugin(Resources("openapi-s", "x://a/", resources, templates))}, strict=False)
    assert _status(composition) == {"s": "loaded"}
    assert not composition.failures
    assert [e.declaration.uri for e in composition.catalog.resources] == ["x://a/2"]
    assert [e.declaration.uri_template for e in composition.catalog.templates] == ["x://a/v/{id}"]
    said = sorted((p.value, p.message.split(";")[0]) for p in composition.assembly.left_out)
    assert said == [  # a repeat is said once; two shapes, one line per template
        ("x://a/1", "duplicate-uri: provider 'openapi-s' (plugin s) lists it twice"),
        ("x://a/t/{id}", "template-unreachable: provider 'openapi-s' (plugin s) lists x://a/t/{id}, and provider "
         "'openapi-s' (plugin s) lists x://a/t/{key}"),
        ("x://a/t/{key}", "template-unreachable: provider 'openapi-s' (plugin s) lists x://a/t/{key}, and provider "
         "'openapi-s' (plugin s) lists x://a/t/{id}"),
        ("x://a/u/{id}", "duplicate-template: provider 'openapi-s' (plugin s) lists it twice"),
    ]  # fmt: skip


def test_a_plugins_own_repeated_template_shape_still_refuses_it() -> None:
    templates = [
        ResourceTemplate(uri_template="x://a/{id}", name="t"),
        ResourceTemplate(uri_template="x://a/{k}", name="k"),
    ]
    composition = compose({"p": plugin(Resources("p", "x://a/", (), templates))}, strict=False)
    assert _status(composition) == {"p": "rejected"}
    assert [p.rule for p in composition.problems] == ["template-unreachable"]


def test_check_warns_about_a_left_out_collision_and_passes() -> None:
    from mcp_providers._cli.report import failures, warnings

    native = plugin(Tools("native-tools", [_tool("taken", False)]))
    source = plugin(Tools("up-a-tools", [_tool("taken", True)]))
    composition = compose({"native": native, "source": source}, strict=False)
    _, said = warnings(composition)
    assert [w for w in said if "left-out: 'taken': duplicate-tool" in w]
    assert not failures(composition)


def test_status_lists_each_left_out_collision_escaped() -> None:
    from mcp_providers._serve.transport.status import facts, render

    native = plugin(Tools("native-tools", [_tool("taken", False)]))
    source = plugin(Tools("up-<b>-tools", [_tool("taken", True)]))
    composition = compose({"native": native, "source": source}, strict=False)
    body = facts(composition, None, None)
    [line] = body["left_out"]
    assert line.startswith("native + source: left-out: 'taken': duplicate-tool: provider 'up-<b>-tools'")
    page = render(body)
    assert "Left out" in page and "provider &#x27;up-&lt;b&gt;-tools&#x27;" in page and "<b>" not in page


def test_serve_says_what_it_left_out(capsys: Any) -> None:
    from mcp_providers._cli.serving import server_of

    native = plugin(Tools("native-tools", [_tool("taken", False)]))
    source = plugin(Tools("up-a-tools", [_tool("taken", True)]))
    server_of(compose({"native": native, "source": source}, strict=False), strict=False)
    said = " ".join(capsys.readouterr().err.split())
    assert "left out: native + source: left-out: 'taken': duplicate-tool: provider 'up-a-tools'" in said


def test_a_listed_declaration_a_rule_refuses_is_left_out_alone_and_a_plugins_own_refuses_it() -> None:
    from mcp_providers.models import Freshness

    live = Freshness.live(subscribable=False)
    resources = [
        Resource(uri="y://outside", name="out", meta=LISTED),  # outside-prefix
        Resource(uri="x://a/{x}", name="braces", meta=LISTED),  # uri-is-template
        Resource(uri="x://a/w", name="writes", meta=LISTED, side_effects="destructive", freshness=live),
        Resource(uri="x://a/fine", name="fine", meta=LISTED),
    ]
    templates = [ResourceTemplate(uri_template="x://a/{a}{b}", name="adjacent", meta=LISTED)]
    composition = compose({"s": plugin(Resources("up-s", "x://a/", resources, templates))}, strict=False)
    assert _status(composition) == {"s": "loaded"} and not composition.failures
    assert [e.declaration.uri for e in composition.catalog.resources] == ["x://a/fine"]
    assert not composition.catalog.templates
    said = {p.value: p.message.split(":")[0] for p in composition.assembly.left_out}
    assert said == {
        "y://outside": "outside-prefix",
        "x://a/{x}": "uri-is-template",
        "x://a/w": "resource-declares-side-effect",
        "x://a/{a}{b}": "template-invalid",
    }
    assert all("provider 'up-s' (plugin s) lists it" in p.message for p in composition.assembly.left_out)
    own = [Resource(uri="y://outside", name="out"), Resource(uri="x://a/fine", name="fine")]
    composition = compose({"s": plugin(Resources("s", "x://a/", own))}, strict=False)
    assert _status(composition) == {"s": "rejected"}
    assert [p.rule for p in composition.problems] == ["outside-prefix"]
