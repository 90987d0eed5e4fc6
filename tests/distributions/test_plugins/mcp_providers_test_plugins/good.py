"""A well-behaved plugin: one fixed resource, one template, one tool, one prompt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from mcp_providers import (
    Content,
    Message,
    NotFound,
    Prompt,
    PromptArgument,
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

COLOURS = ("red", "green", "blue")


class Colours(ResourceProvider):
    name = "good-colours"
    prefixes = ("good://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="good://colours", name="colours", mime_type="text/plain")]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(
                uri_template="good://colours/{colour}",
                name="colour",
                mime_type="text/plain",
                completions={"colour": COLOURS},
            )
        ]

    async def read(self, request: ReadRequest) -> Content:
        if request.uri == "good://colours":
            return Content(text="\n".join(COLOURS))
        colour = request.params["colour"]
        if colour not in COLOURS:
            raise NotFound(f"no colour {colour!r}; known: {', '.join(COLOURS)}", data={"uri": request.uri})
        return Content(text=f"{colour} is a colour")


class MixIn(BaseModel):
    a: str
    b: str


class MixOut(BaseModel):
    mixed: str


class Mixer(ToolProvider):
    name = "good-mixer"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="mix", description="Mix two colours.", input_model=MixIn, output_model=MixOut)]

    async def call(self, call: ToolCall) -> ToolResult:
        args = call.arguments
        assert isinstance(args, MixIn)
        return ToolResult(output=MixOut(mixed=f"{args.a}-{args.b}"))


class Greeting(PromptProvider):
    name = "good-greeting"

    def prompts(self) -> Sequence[Prompt]:
        return [
            Prompt(
                name="greet",
                description="Greet in a colour.",
                arguments=(PromptArgument(name="colour", required=True, completions=COLOURS),),
            )
        ]

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        return [Message(role="user", text=f"Say hello in {arguments['colour']}.")]


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    return [Colours()]


@hookimpl
def register_tool_providers() -> list[ToolProvider]:
    return [Mixer()]


@hookimpl
def register_prompt_providers() -> list[PromptProvider]:
    return [Greeting()]
