"""A decorated prompt links an argument to the resource its value names (tester 31 F11).

``@plugin.prompt(argument_resources={"color": "shades://colors/{color}"})`` sets
``PromptArgument.resource``, as ``@plugin.tool(argument_resources=...)`` links a tool's: ``prompts/get``
refuses a value whose resource the caller may not read. ``arguments=`` (the function's parameters
are the arguments) is refused naming ``argument_resources``, not with a raw ``TypeError``.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from mcp import MCPError

from mcp_providers.plugin import Plugin
from mcp_providers.plugins import policy
from mcp_providers.testing import check, compose, connect

pytestmark = pytest.mark.anyio


def _shades() -> Plugin:
    shades = Plugin("shades", prefixes=["shades://"])

    @shades.template("shades://colors/{name}", completions={"name": ("red", "blue")})
    def color(name: str) -> str:
        """A color."""
        return f"color {name}"

    return shades


async def test_a_decorated_prompt_links_its_argument_to_a_resource() -> None:
    shades = _shades()

    @shades.prompt(argument_resources={"color": "shades://colors/{color}"})
    def suggest(color: str) -> str:
        """Suggest a use of a color."""
        return f"Use {color}."

    rules: list[dict[str, Any]] = [{"effect": "deny", "actions": ["read"], "targets": ["shades://colors/red"]}]
    assert not await check(compose({"shades": shades}, strict=False))
    async with connect(compose({"shades": shades, "policy": policy}, {"policy": {"rules": rules}})) as client:
        with pytest.raises(MCPError) as denied:
            await client.get_prompt("suggest", {"color": "red"})
        assert denied.value.code == -32003
        shown = await client.get_prompt("suggest", {"color": "blue"})
        assert "Use blue." in shown.messages[0].content.text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"arguments": ()}, "argument_resources"),
        ({"argument_resources": {"colour": "shades://colors/{colour}"}}, "'colour' is not an argument"),
    ],
)
async def test_a_wrong_prompt_link_is_refused_saying_how(fields: dict[str, Any], said: str) -> None:
    shades = _shades()

    @shades.prompt(**fields)
    def suggest(color: str) -> str:
        """Suggest a use of a color."""
        return f"Use {color}."

    lines = await check(compose({"shades": shades}, strict=False))
    assert any(said in line for line in lines) and not any("TypeError" in line for line in lines), lines


async def test_check_warns_of_a_literal_prompt_argument_holding_a_templates_values_unlinked() -> None:
    """The prompt twin of ``tool-enum-unlinked``: every caller may pass every value, whatever it may read."""
    unlinked, linked = _shades(), _shades()

    @unlinked.prompt()
    def suggest(color: Literal["red", "blue"], mood: Literal["calm", "loud"] = "calm") -> str:
        """Suggest a use of a color."""
        return f"Use {color}."

    @linked.prompt(argument_resources={"color": "shades://colors/{color}"})
    def suggest_linked(color: Literal["red", "blue"]) -> str:
        """Suggest a use of a color."""
        return f"Use {color}."

    lines = [
        line for line in await check(compose({"shades": unlinked}, strict=False)) if "prompt-enum-unlinked" in line
    ]
    assert len(lines) == 1 and "'suggest.color'" in lines[0], lines
    assert 'argument_resources={"color": "shades://colors/{color}"}' in lines[0], lines
    assert not [line for line in await check(compose({"shades": linked}, strict=False)) if "enum-unlinked" in line]
