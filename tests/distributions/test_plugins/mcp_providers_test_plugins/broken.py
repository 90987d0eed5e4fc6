"""One plugin object per failed check; each entry point names one of them."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

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


class Static(ResourceProvider):
    def __init__(
        self,
        name: str,
        prefixes: tuple[str, ...],
        resources: Sequence[Resource] = (),
        templates: Sequence[ResourceTemplate] = (),
    ) -> None:
        self.name, self.prefixes = name, prefixes
        self._resources, self._templates = list(resources), list(templates)

    def resources(self) -> Sequence[Resource]:
        return self._resources

    def templates(self) -> Sequence[ResourceTemplate]:
        return self._templates

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=request.uri)


class NoArgs(BaseModel):
    pass


class OneTool(ToolProvider):
    def __init__(self, name: str) -> None:
        self.name = name

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="duplicate_tool", description="Declared twice.", input_model=NoArgs)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text="ok")


class OnePrompt(PromptProvider):
    def __init__(self, name: str) -> None:
        self.name = name

    def prompts(self) -> Sequence[Prompt]:
        return [Prompt(name="duplicate_prompt", description="Declared twice.")]

    async def render(self, prompt: Prompt, arguments: object) -> Sequence[Message]:
        return [Message(role="user", text="hi")]


def _resources(*providers: ResourceProvider) -> SimpleNamespace:
    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return list(providers)

    return SimpleNamespace(register_resource_providers=register_resource_providers)


relative_uri = _resources(Static("relative-uri", ("rel://",), [Resource(uri="relative/path", name="r")]))
uri_is_template = _resources(Static("uri-is-template", ("tpl://",), [Resource(uri="tpl://items/{id}", name="r")]))
adjacent_variables = _resources(
    Static("adjacent-variables", ("adj://",), templates=[ResourceTemplate(uri_template="adj://{a}{b}", name="t")])
)
no_prefix = _resources(Static("no-prefix", (), [Resource(uri="noprefix://x", name="r")]))
outside_prefix = _resources(Static("outside-prefix", ("mine://",), [Resource(uri="theirs://x", name="r")]))
overlap_outer = _resources(Static("overlap-outer", ("ovl://",), [Resource(uri="ovl://a", name="r")]))
overlap_inner = _resources(Static("overlap-inner", ("ovl://inner/",), [Resource(uri="ovl://inner/b", name="r")]))
duplicate_uri_a = _resources(Static("duplicate-uri-a", ("dup://",), [Resource(uri="dup://same", name="r")]))
duplicate_uri_b = _resources(Static("duplicate-uri-b", ("dup://",), [Resource(uri="dup://same", name="r")]))
shadow_template = _resources(
    Static("shadow-template", ("shd://",), templates=[ResourceTemplate(uri_template="shd://{+rest}", name="t")])
)
shadow_fixed = _resources(Static("shadow-fixed", ("shd://fixed/",), [Resource(uri="shd://fixed/x", name="r")]))
side_effect = _resources(
    Static("side-effect", ("fx://",), [Resource(uri="fx://counter", name="r", side_effects="additive")])
)


def _tools(provider: ToolProvider) -> SimpleNamespace:
    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [provider]

    return SimpleNamespace(register_tool_providers=register_tool_providers)


def _prompts(provider: PromptProvider) -> SimpleNamespace:
    @hookimpl
    def register_prompt_providers() -> list[PromptProvider]:
        return [provider]

    return SimpleNamespace(register_prompt_providers=register_prompt_providers)


duplicate_tool_a = _tools(OneTool("duplicate-tool-a"))
duplicate_tool_b = _tools(OneTool("duplicate-tool-b"))
duplicate_prompt_a = _prompts(OnePrompt("duplicate-prompt-a"))
duplicate_prompt_b = _prompts(OnePrompt("duplicate-prompt-b"))
