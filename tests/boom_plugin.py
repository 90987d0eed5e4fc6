"""A plugin whose provider code raises ``BaseException`` subclasses on request (issue 24, item 11).

The last URI segment, tool argument, prompt argument or typed completion text names what to raise
(see ``RAISES``); ``ok`` answers normally. ``authorize`` raises the same way for a target under
``boom://guarded/``. Installed into a temporary site for subprocess servers, imported directly
for in-memory ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel

from mcp_providers import (
    CompletionRequest,
    Content,
    Freshness,
    Message,
    Prompt,
    PromptArgument,
    PromptProvider,
    ReadRequest,
    ResourceProvider,
    ResourceTemplate,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)


class Custom(BaseException):
    """Neither an Exception nor anything the standard library knows."""


RAISES: dict[str, Callable[[], BaseException]] = {
    "system-exit": lambda: SystemExit(3),
    "keyboard-interrupt": KeyboardInterrupt,
    "generator-exit": GeneratorExit,
    "custom": lambda: Custom("custom base exception"),
    "cancelled": asyncio.CancelledError,  # raised by the provider, not a cancellation of the request
}


def _maybe_raise(kind: str) -> None:
    if kind in RAISES:
        raise RAISES[kind]()


_SPAWNED: set[asyncio.Task[None]] = set()


async def _raise_later(kind: str) -> None:
    await asyncio.sleep(0.05)
    _maybe_raise(kind)


class Boom(ResourceProvider):
    name = "boom-resources"
    prefixes = ("boom://",)

    def templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(uri_template="boom://read/{kind}", name="read", mime_type="text/plain"),
            ResourceTemplate(uri_template="boom://guarded/{kind}", name="guarded", mime_type="text/plain"),
            ResourceTemplate(
                uri_template="boom://live/{kind}", name="live", mime_type="text/plain", freshness=Freshness.live()
            ),
        ]

    def check_watch(self, declaration: object, params: Mapping[str, str]) -> None:
        _maybe_raise(params.get("kind", "ok"))

    async def read(self, request: ReadRequest) -> Content:
        await asyncio.sleep(0)  # raise after a suspension too, not only on the first step
        if request.params["kind"].startswith("task-"):  # raised in a task of its own, after the answer
            _SPAWNED.add(asyncio.get_running_loop().create_task(_raise_later(request.params["kind"][5:])))
            return Content(text="spawned")
        _maybe_raise(request.params["kind"])
        return Content(text=f"read {request.params['kind']}")

    async def complete(self, template: ResourceTemplate, request: CompletionRequest) -> Sequence[str]:
        _maybe_raise(request.value)
        return ["ok"]


class KindIn(BaseModel):
    kind: str


class KindOut(BaseModel):
    kind: str


class BoomTool(ToolProvider):
    name = "boom-tools"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="boom", description="Raise what kind names.", input_model=KindIn, output_model=KindOut)]

    async def call(self, call: ToolCall) -> ToolResult:
        args = call.arguments
        assert isinstance(args, KindIn)
        _maybe_raise(args.kind)
        return ToolResult(output=KindOut(kind=args.kind))


class BoomPrompt(PromptProvider):
    name = "boom-prompts"

    def prompts(self) -> Sequence[Prompt]:
        return [Prompt(name="boom", description="Raise what kind names.", arguments=(PromptArgument(name="kind"),))]

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        _maybe_raise(arguments.get("kind", "ok"))
        return [Message(role="user", text=f"rendered {arguments.get('kind')}")]


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    return [Boom()]


@hookimpl
def register_tool_providers() -> list[ToolProvider]:
    return [BoomTool()]


@hookimpl
def register_prompt_providers() -> list[PromptProvider]:
    return [BoomPrompt()]


@hookimpl
def authorize(subject: str, action: str, target: str) -> None:
    if target.startswith("boom://guarded/"):
        _maybe_raise(target.rsplit("/", 1)[-1])
    return None
