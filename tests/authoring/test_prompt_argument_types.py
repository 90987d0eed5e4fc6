"""A prompt argument (or template variable) annotated with a type no text converts to (``list``,
``dict``, a model) could never be rendered: MCP prompt arguments are strings (the spec's
``PromptArgument``), template variables too. It is refused at composition, naming the parameter;
the types text converts to (``int``, ``Literal``, an ``Enum`` ...) keep being converted."""

from __future__ import annotations

import enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose, connect


class Point(BaseModel):
    x: int = 0


class Color(enum.Enum):
    RED = "red"


def _with_prompt(annotation: Any) -> Plugin:
    plugin = Plugin("prompting")

    def summary(topic: str, items: Any = None) -> str:
        """A summary."""
        return f"{topic}: {items!r}"

    summary.__annotations__ = {"topic": str, "items": annotation, "return": str}
    plugin.prompt()(summary)
    return plugin


def _failures(plugin: Plugin) -> list[str]:
    return compose({plugin.name: plugin}, strict=False).failures


@pytest.mark.parametrize(
    "annotation", [list[str], dict[str, int], list[str] | None, tuple[int, ...], Point, set[str], list[Point]]
)
def test_a_prompt_argument_no_text_converts_to_is_refused_naming_it(annotation: Any) -> None:
    failures = _failures(_with_prompt(annotation))
    assert any(
        "prompt 'summary'" in f and "argument 'items'" in f and "MCP prompt arguments are strings" in f
        for f in failures
    ), failures


@pytest.mark.parametrize(
    ("annotation", "text", "shown"),
    [
        (int, "3", "3"),
        (float | None, "2.5", "2.5"),
        (Literal["a", "b"], "b", "'b'"),
        (Color, "red", "<Color.RED: 'red'>"),
        (int | list[int], "4", "4"),
        (Any, "as given", "'as given'"),
    ],
)
@pytest.mark.anyio
async def test_types_text_converts_to_are_still_converted(annotation: Any, text: str, shown: str) -> None:
    plugin = _with_prompt(annotation)
    assert _failures(plugin) == []
    async with connect(compose({plugin.name: plugin})) as client:
        result = await client.get_prompt("summary", {"topic": "t", "items": text})
    assert result.messages[0].content.text == f"t: {shown}"  # type: ignore[union-attr]


def test_a_template_variable_no_text_converts_to_is_refused_naming_it() -> None:
    plugin = Plugin("templating", prefixes=["t://"])

    @plugin.template("t://{ids}")
    def by_ids(ids: list[int]) -> str:
        return str(ids)

    failures = _failures(plugin)
    assert any("template 't://{ids}'" in f and "variable 'ids'" in f and "are strings" in f for f in failures), failures
