"""Provider text holding a lone surrogate is served with U+FFFD and the receipt says so (round 4 item 21).

Before the fix ``Content(text="name: caf\\udce9 report")`` (a lone surrogate, as
``bytes.decode(errors="surrogateescape")`` makes) failed the read with -32603 from the receipt
step, since UTF-8 cannot carry it; a tool result, a prompt message and a completion value failed
the same way, and an error message would fail when sent. Each test asserts what is served is UTF-8.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers import (
    Content,
    Embed,
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
from mcp_providers._serve.steps.surrogates import replaced, replaced_json
from mcp_providers.errors import NotFound, ToolFailure
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.providers import Text
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

LONE = "name: caf\udce9 report"
HIGH_ALONE = "a\ud83d b"
PAIR = "smile \ud83d\ude00"  # a high and a low surrogate: the pair's character, not two replacements
NOTE = "lone surrogate(s)"


class Nothing(BaseModel):
    pass


class Out(BaseModel):
    name: str
    tags: list[str]


class Odd(ResourceProvider):
    name = "odd"
    prefixes = ("odd://",)

    def resources(self) -> Sequence[Resource]:
        return [
            Resource(uri="odd://lone", name="lone", mime_type="text/plain"),
            Resource(uri="odd://high", name="high", mime_type="text/plain"),
            Resource(uri="odd://pair", name="pair", mime_type="text/plain"),
            Resource(uri="odd://ok", name="ok", mime_type="text/plain"),
            Resource(uri="odd://missing", name="missing", mime_type="text/plain"),
        ]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="odd://t/{x}", name="t", completions={"x": ["caf\udce9", "cab"]})]

    async def read(self, request: ReadRequest) -> Content:
        name = request.resource.name
        if name == "missing":
            raise NotFound(f"no record {LONE}")
        return Content(text={"lone": LONE, "high": HIGH_ALONE, "pair": PAIR, "ok": "fine"}.get(name, "t"))


class Tools(ToolProvider):
    name = "odd-tools"

    def tools(self) -> Sequence[Tool]:
        names = ("t_text", "t_output", "t_media", "t_links", "t_failure")
        return [
            Tool(name=n, description="d", input_model=Nothing, output_model=Out if n == "t_output" else None)
            for n in names
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        name = call.tool.name
        if name == "t_text":
            return ToolResult(text=LONE)
        if name == "t_output":
            return ToolResult(output=Out(name=LONE, tags=["ok", HIGH_ALONE]))
        if name == "t_media":
            return ToolResult(content=(Text(LONE),))
        if name == "t_links":
            return ToolResult(
                text="see",
                links=(Link(uri="odd://ok", name=LONE, description=HIGH_ALONE),),
                embedded=(Embed(uri="odd://ok", text=LONE),),
            )
        raise ToolFailure(f"upstream said {LONE}")


class Prompts(PromptProvider):
    name = "odd-prompts"

    def prompts(self) -> Sequence[Prompt]:
        return [Prompt(name="p", description="d")]

    async def render(self, prompt: Prompt, arguments: Any) -> Sequence[Message]:
        return [Message("user", content=Text(LONE)), Message("assistant", content=Text("plain"))]


class OddPlugin:
    @hookimpl
    def register_resource_providers(self, settings: object) -> list[ResourceProvider]:
        return [Odd()]

    @hookimpl
    def register_tool_providers(self, settings: object) -> list[ToolProvider]:
        return [Tools()]

    @hookimpl
    def register_prompt_providers(self, settings: object) -> list[PromptProvider]:
        return [Prompts()]


def _utf8(value: Any) -> None:
    """Fails unless ``value``'s JSON encodes as UTF-8 (what every transport sends)."""
    import json

    json.dumps(value, ensure_ascii=False, default=str).encode()


@pytest.mark.parametrize(
    ("uri", "expected", "count"),
    [
        ("odd://lone", "name: caf\ufffd report", 1),
        ("odd://high", "a\ufffd b", 1),
        ("odd://pair", "smile \U0001f600", 0),
    ],
)
async def test_a_read_with_a_lone_surrogate_is_served_replaced_and_the_receipt_says_so(
    uri: str, expected: str, count: int
) -> None:
    async with connect(compose({"odd": OddPlugin()})) as client:
        result = await client.read_resource(uri)
        assert (await client.read_resource("odd://ok")).contents[0].text == "fine"  # type: ignore[union-attr]
    assert result.contents[0].text == expected  # type: ignore[union-attr]
    receipt = (result.meta or {})[RECEIPT_KEY]
    assert receipt["bytes"] == len(expected.encode())
    assert [t for t in receipt["transforms"] if NOTE in t] == (
        [f"replaced {count} {NOTE}, which UTF-8 cannot carry, with U+FFFD"] if count else []
    )


@pytest.mark.parametrize("tool", ["t_text", "t_output", "t_media", "t_links"])
async def test_a_tool_result_with_a_lone_surrogate_is_served_replaced_and_the_receipt_says_so(tool: str) -> None:
    async with connect(compose({"odd": OddPlugin()})) as client:
        result = await client.call_tool(tool, {})
    assert not result.is_error, result
    dumped = result.model_dump(mode="json", by_alias=True)
    _utf8(dumped)
    assert "caf\ufffd" in str(dumped) or "a\ufffd b" in str(dumped)
    receipt = (result.meta or {})[RECEIPT_KEY]
    assert any(NOTE in t for t in receipt["transforms"]), receipt["transforms"]


async def test_a_tool_failure_and_an_error_message_with_a_lone_surrogate_are_sent_replaced() -> None:
    async with connect(compose({"odd": OddPlugin()})) as client:
        failed = await client.call_tool("t_failure", {})
        with pytest.raises(MCPError) as caught:
            await client.read_resource("odd://missing")
    assert failed.is_error and failed.content[0].text.endswith("caf\ufffd report")  # type: ignore[union-attr]
    assert "caf\ufffd report" in caught.value.error.message, caught.value.error


async def test_a_prompt_message_with_a_lone_surrogate_is_served_replaced() -> None:
    async with connect(compose({"odd": OddPlugin()})) as client:
        result = await client.get_prompt("p", {})
    assert [m.content.text for m in result.messages] == ["name: caf\ufffd report", "plain"]  # type: ignore[union-attr]
    assert [m.role for m in result.messages] == ["user", "assistant"]
    assert any(NOTE in t for t in (result.meta or {})[RECEIPT_KEY]["transforms"])


async def test_a_completion_value_with_a_lone_surrogate_is_offered_replaced() -> None:
    ref = types.ResourceTemplateReference(type="ref/resource", uri="odd://t/{x}")
    async with connect(compose({"odd": OddPlugin()})) as client:
        result = await client.complete(ref, {"name": "x", "value": "ca"})
    assert result.completion.values == ["caf\ufffd", "cab"]


def test_the_replacement_counts_lone_surrogates_only() -> None:
    assert replaced("plain") == ("plain", 0)
    assert replaced("\udc80\ud800") == ("\ufffd\ufffd", 2)
    assert replaced("\ufffd already") == ("\ufffd already", 0)
    assert replaced_json({"k\udce9": ["x", {"y": "\ud800"}]}) == ({"k\ufffd": ["x", {"y": "\ufffd"}]}, 2)
