"""No request is answered with much more than it sent, and no answer is unbounded (item 10).

A tool result over ``server.max_result_bytes`` becomes an ``isError`` result naming the cap, and
its receipt records it (as a read budget's cut is recorded); validation errors quote a bounded
slice of the input; error messages and data are capped; recommend_ssg does not repeat itself
per repeated purpose.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import MCPError
from wire_support import Shapes, plugin

from mcp_providers import Content, InvalidParams, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.config import ServerSettings
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.testing import compose, compose_installed, connect

pytestmark = pytest.mark.anyio


def _size(result: Any) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True))


async def test_repeated_purposes_do_not_amplify_recommend_ssg() -> None:
    composition = compose_installed(["workflows"])
    sent = ["documentation"] * 200_000  # about 3 MB of arguments
    async with connect(composition) as client:
        result = await client.call_tool("recommend_ssg", {"purposes": sent, "needs": ["built-in-search"] * 50_000})
    assert not result.is_error, result.content
    assert _size(result) < 200_000, _size(result)  # each fact counts once
    once = result.structured_content["recommendations"][0]["reasons"]  # type: ignore[index]
    assert len(once) == len(set(once)), once


@pytest.mark.parametrize("field", ["needs", "team_language", "purposes"])
async def test_invalid_enum_values_get_a_bounded_refusal(field: str) -> None:
    composition = compose_installed(["workflows"])
    bad: Any = ["not-a-feature-" + "x" * 50] * 20_000 if field != "team_language" else "y" * 1_000_000
    async with connect(composition) as client:
        result = await client.call_tool("recommend_ssg", {field: bad})
    assert result.is_error
    sent = len(json.dumps(bad))
    assert _size(result) < 4096, (_size(result), sent)


async def test_a_result_over_the_cap_is_refused_and_recorded() -> None:
    composition = compose({"shapes": plugin(Shapes())}, server=ServerSettings(max_result_bytes=10_000))
    async with connect(composition) as client:
        fine = await client.call_tool("echo", {"text": "a", "times": 100})
        assert not fine.is_error
        over = await client.call_tool("echo", {"text": "abcd", "times": 1_000_000})
    assert over.is_error
    text = over.content[0].text  # type: ignore[union-attr]
    assert "max_result_bytes" in text and "10000" in text, text
    assert _size(over) < 4096
    receipt = (over.meta or {})[RECEIPT_KEY]
    assert receipt["truncation"]["limit"] == 10_000 and receipt["truncation"]["resultBytes"] > 4_000_000


class Loud(ResourceProvider):
    name = "loud"
    prefixes = ("loud://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="loud://x", name="x")]

    async def read(self, request: ReadRequest) -> Content:
        raise InvalidParams("m" * 1_000_000, data={"echo": "d" * 1_000_000, "items": list(range(100_000))})


async def test_error_messages_and_data_are_capped() -> None:
    loud = SimpleNamespace(register_resource_providers=hookimpl(lambda settings: [Loud()]))
    composition = compose({"loud": loud})
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("loud://x")
    error = caught.value.error
    assert error.code == -32602
    assert len(error.message) <= 2100
    assert len(json.dumps(error.data)) <= 4200
