"""A small plugin for pipeline tests: resources under ``x://a/``, a tool and a prompt that embed
(and optionally link to) a URI given per test."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel

from mcp_providers import (
    Content,
    Embed,
    Freshness,
    Link,
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


class Secrets(ResourceProvider):
    name = "secrets"
    prefixes = ("x://a/",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="x://a/index", name="index", freshness=Freshness.live())]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="x://a/{name}", name="item", freshness=Freshness.live())]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=f"the {request.params.get('name', 'index')}")


class Nothing(BaseModel):
    pass


def secrets_plugin(*, embed: str, text: str = "the secret", link: str | None = None, require: str | None = None) -> Any:
    """A plugin whose tool ``show`` and prompt ``brief`` embed ``embed`` (and link to ``link``);
    the tool first asks ``read`` on ``require`` through ``ToolCall.require``."""
    links = (Link(uri=link, name="elsewhere"),) if link else ()

    class Tools(ToolProvider):
        name = "x-tools"

        def tools(self) -> Sequence[Tool]:
            return [Tool(name="show", description="Embeds the secret.", input_model=Nothing)]

        async def call(self, call: ToolCall) -> ToolResult:
            if require is not None:
                call.require("read", require)
            return ToolResult(text="here it is", embedded=(Embed(uri=embed, text=text),), links=links)

    class Prompts(PromptProvider):
        name = "x-prompts"

        def prompts(self) -> Sequence[Prompt]:
            return [Prompt(name="brief", description="Embeds the secret.")]

        async def render(self, prompt: Prompt, arguments: Any) -> Sequence[Message]:
            return [Message("user", content=Embed(uri=embed, text=text)), *(Message("user", content=k) for k in links)]

    return SimpleNamespace(
        register_resource_providers=hookimpl(lambda: [Secrets()]),
        register_tool_providers=hookimpl(lambda: [Tools()]),
        register_prompt_providers=hookimpl(lambda: [Prompts()]),
    )
