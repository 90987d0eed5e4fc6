"""The fixtures of the official MCP conformance suite, served as ordinary mcp-providers plugins.

``@modelcontextprotocol/conformance`` 0.1.16 hard-codes the names, URIs and texts below in its
server scenarios. Everything here goes through the public plugin API (providers, declarations,
``ToolCall``'s client channel, content blocks); nothing reaches into the SDK, so what the suite
checks is the framework, not this plugin.

- resources (owner ``test://``): ``test://static-text``, ``test://static-binary`` (PNG),
  ``test://watched-resource`` (live, so it can be subscribed to), the template
  ``test://template/{id}/data``, and the resources the tools and prompts embed;
- tools: ``test_simple_text``, ``test_image_content``, ``test_audio_content``,
  ``test_embedded_resource``, ``test_multiple_content_types``, ``test_tool_with_logging``,
  ``test_tool_with_progress``, ``test_error_handling``, ``test_sampling``, ``test_elicitation``,
  ``test_elicitation_sep1034_defaults``, ``test_elicitation_sep1330_enums``;
- prompts: ``test_simple_prompt``, ``test_prompt_with_arguments`` (``arg1`` completes),
  ``test_prompt_with_embedded_resource``, ``test_prompt_with_image``;
- the tools and the skill 0.2.0-alpha.12's scenarios use (:mod:`.alpha`).
"""

from __future__ import annotations

import io
import json
import struct
import wave
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from mcp_providers import (
    Content,
    Freshness,
    InvalidParams,
    Message,
    NotFound,
    Prompt,
    PromptArgument,
    PromptProvider,
    ReadRequest,
    Resource,
    ResourceProvider,
    ResourceTemplate,
    SkillProvider,
    Tool,
    ToolCall,
    ToolFailure,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers.providers import Audio, Embed, Image, Text
from mcp_providers_conformance.alpha import AlphaTools, Skills


def _png() -> bytes:
    """A 1x1 red PNG, built from its chunks so the bytes are the same on every run."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav() -> bytes:
    """A tenth of a second of silence, 8 kHz mono 16-bit PCM."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 800)
    return out.getvalue()


PNG = _png()
WAV = _wav()

STATIC_TEXT = "This is the content of the static text resource."
WATCHED_TEXT = "This is the watched resource; subscribe to it for updates."
EMBEDDED_TEXT = "This is an embedded resource content."
EXAMPLE_TEXT = "This is the example resource, embedded by test_prompt_with_embedded_resource."
MIXED_JSON = json.dumps({"test": "data", "value": 123})


class Fixtures(ResourceProvider):
    """Every ``test://`` resource the suite reads, subscribes to or finds embedded."""

    name = "conformance-resources"
    prefixes = ("test://",)

    _fixed: Mapping[str, tuple[str, str | bytes]] = {
        "test://static-text": ("text/plain", STATIC_TEXT),
        "test://static-binary": ("image/png", PNG),
        "test://watched-resource": ("text/plain", WATCHED_TEXT),
        "test://embedded-resource": ("text/plain", EMBEDDED_TEXT),
        "test://mixed-content-resource": ("application/json", MIXED_JSON),
        "test://example-resource": ("text/plain", EXAMPLE_TEXT),
    }

    def resources(self) -> Sequence[Resource]:
        return [
            Resource(
                uri=uri,
                name=uri.removeprefix("test://"),
                description=f"Conformance fixture {uri}",
                mime_type=mime,
                size=len(body.encode() if isinstance(body, str) else body),
                freshness=Freshness.live() if uri == "test://watched-resource" else Freshness.static(),
            )
            for uri, (mime, body) in self._fixed.items()
        ]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(
                uri_template="test://template/{id}/data",
                name="template-data",
                description="JSON data for one id",
                mime_type="application/json",
                freshness=Freshness.static(),
            )
        ]

    async def read(self, request: ReadRequest) -> Content:
        fixed = self._fixed.get(request.uri)
        if fixed is not None:
            body = fixed[1]
            return Content(text=body) if isinstance(body, str) else Content(blob=body)
        ident = request.params.get("id")
        if not ident:
            raise NotFound(f"Unknown resource: {request.uri}", data={"uri": request.uri})
        return Content(text=json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}))


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PromptArgs(BaseModel):
    prompt: str


class MessageArgs(BaseModel):
    message: str


def _tool(name: str, description: str, model: type[BaseModel] = NoArguments) -> Tool:
    return Tool(name=name, description=description, input_model=model, effects="none", idempotent=True)


class Tools(ToolProvider):
    """The suite's tools, one behaviour each."""

    name = "conformance-tools"

    def tools(self) -> Sequence[Tool]:
        return [
            _tool("test_simple_text", "Returns one text block."),
            _tool("test_image_content", "Returns one PNG image block."),
            _tool("test_audio_content", "Returns one WAV audio block."),
            _tool("test_embedded_resource", "Returns test://embedded-resource embedded."),
            _tool("test_multiple_content_types", "Returns text, an image and an embedded JSON resource."),
            _tool("test_tool_with_logging", "Sends three info log messages while it runs."),
            _tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100."),
            _tool("test_error_handling", "Always fails, as an isError result."),
            _tool("test_sampling", "Asks the client's model to answer the prompt.", PromptArgs),
            _tool("test_elicitation", "Asks the user for a username and an email.", MessageArgs),
            _tool("test_elicitation_sep1034_defaults", "Elicits a form whose fields all have defaults (SEP-1034)."),
            _tool("test_elicitation_sep1330_enums", "Elicits a form with every enum shape (SEP-1330)."),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        name = call.tool.name
        if name == "test_simple_text":
            return ToolResult(text="This is a simple text response for testing.")
        if name == "test_image_content":
            return ToolResult(content=(Image(PNG, "image/png"),))
        if name == "test_audio_content":
            return ToolResult(content=(Audio(WAV, "audio/wav"),))
        if name == "test_embedded_resource":
            return ToolResult(
                embedded=(Embed(uri="test://embedded-resource", text=EMBEDDED_TEXT, mime_type="text/plain"),)
            )
        if name == "test_multiple_content_types":
            return ToolResult(
                content=(Text("Multiple content types test:"), Image(PNG, "image/png")),
                embedded=(Embed(uri="test://mixed-content-resource", text=MIXED_JSON, mime_type="application/json"),),
            )
        if name == "test_tool_with_logging":
            for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
                await call.log("info", step, logger="conformance")
                await anyio.sleep(0.05)
            return ToolResult(text="Logging test completed.")
        if name == "test_tool_with_progress":
            for done in (0, 50, 100):
                await call.progress(done, 100, f"{done}% done")
                await anyio.sleep(0.05)
            return ToolResult(text="Progress test completed.")
        if name == "test_error_handling":
            raise ToolFailure("This tool intentionally returns an error for testing")
        if name == "test_sampling":
            assert isinstance(call.arguments, PromptArgs)
            answer = await call.sample(call.arguments.prompt, max_tokens=100)
            return ToolResult(text=f"LLM response: {answer.text}")
        if name == "test_elicitation":
            assert isinstance(call.arguments, MessageArgs)
            reply = await call.elicit(call.arguments.message, USER_FORM)
            return ToolResult(text=f"User response: action={reply.action}, content={json.dumps(dict(reply.content))}")
        if name == "test_elicitation_sep1034_defaults":
            reply = await call.elicit("Please review the defaults", DEFAULTS_FORM)
            return ToolResult(
                text=f"Elicitation completed: action={reply.action}, content={json.dumps(dict(reply.content))}"
            )
        if name == "test_elicitation_sep1330_enums":
            reply = await call.elicit("Please pick options", ENUMS_FORM)
            return ToolResult(
                text=f"Elicitation completed: action={reply.action}, content={json.dumps(dict(reply.content))}"
            )
        raise ToolFailure(f"no tool {name!r} in this plugin")


USER_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "Your username"},
        "email": {"type": "string", "description": "Your email address", "format": "email"},
    },
    "required": ["username", "email"],
}

DEFAULTS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}

ENUMS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
            ],
        },
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2"], "enumNames": ["Option One", "Option Two"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                ]
            },
        },
    },
}


class Prompts(PromptProvider):
    """The suite's prompts."""

    name = "conformance-prompts"

    def prompts(self) -> Sequence[Prompt]:
        return [
            Prompt(name="test_simple_prompt", description="A prompt with no arguments."),
            Prompt(
                name="test_prompt_with_arguments",
                description="A prompt quoting its two arguments.",
                arguments=(
                    PromptArgument(
                        name="arg1",
                        description="First argument",
                        required=True,
                        completions=("test", "testValue1", "paris", "park"),
                    ),
                    PromptArgument(name="arg2", description="Second argument", required=True),
                ),
            ),
            Prompt(
                name="test_prompt_with_embedded_resource",
                description="A prompt embedding the resource it is given.",
                arguments=(PromptArgument(name="resourceUri", description="URI of a test:// resource", required=True),),
            ),
            Prompt(name="test_prompt_with_image", description="A prompt with an image."),
        ]

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        if prompt.name == "test_simple_prompt":
            return [Message("user", "This is a simple prompt for testing.")]
        if prompt.name == "test_prompt_with_arguments":
            return [Message("user", f"Prompt with arguments: arg1='{arguments['arg1']}', arg2='{arguments['arg2']}'")]
        if prompt.name == "test_prompt_with_embedded_resource":
            uri = arguments["resourceUri"]
            fixed = Fixtures._fixed.get(uri)
            if fixed is None or not isinstance(fixed[1], str):
                raise InvalidParams(f"resourceUri must name a text fixture: {', '.join(sorted(Fixtures._fixed))}")
            mime, text = fixed
            return [
                Message("user", content=Embed(uri=uri, text=text, mime_type=mime)),
                Message("user", "Please process the embedded resource above."),
            ]
        return [
            Message("user", content=Image(PNG, "image/png")),
            Message("user", "Please analyze the image above."),
        ]


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    """The ``test://`` fixtures."""
    return [Fixtures()]


@hookimpl
def register_tool_providers() -> list[ToolProvider]:
    """The suite's tools, and those of its newest pre-release."""
    return [Tools(), AlphaTools()]


@hookimpl
def register_skill_providers() -> list[SkillProvider]:
    """A skill, for the skills extension's scenarios."""
    return [Skills()]


@hookimpl
def register_prompt_providers() -> list[PromptProvider]:
    """The suite's prompts."""
    return [Prompts()]
