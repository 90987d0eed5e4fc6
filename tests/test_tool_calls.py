"""Tool calls: argument validation, unknown tools, failures the model can correct."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import mcp_types as types
import pytest
from mcp import MCPError
from pydantic import BaseModel, field_validator

from mcp_providers import Tool, ToolCall, ToolFailure, ToolProvider, ToolResult, hookimpl
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


class HalfIn(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError(f"{value} is odd; pass an even number")
        return value


class HalfOut(BaseModel):
    half: int


class Halver(ToolProvider):
    name = "halver"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="half", description="Halve an even number.", input_model=HalfIn, output_model=HalfOut)]

    async def call(self, call: ToolCall) -> ToolResult:
        assert isinstance(call.arguments, HalfIn)
        if call.arguments.n < 0:
            raise ToolFailure("negative numbers are not supported; pass n >= 0")
        return ToolResult(output=HalfOut(half=call.arguments.n // 2))


def plugin() -> SimpleNamespace:
    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [Halver()]

    return SimpleNamespace(register_tool_providers=register_tool_providers)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tool_arguments_are_validated_with_a_message_the_model_can_act_on(mode: str) -> None:
    async with connect(compose({"halver": plugin()}), mode=mode) as client:  # type: ignore[arg-type]
        ok = await client.call_tool("half", {"n": 8})
        assert ok.structured_content == {"half": 4} and not ok.is_error
        odd = await client.call_tool("half", {"n": 7})
        assert odd.is_error
        text = odd.content[0].text  # type: ignore[union-attr]
        assert text == "Invalid arguments for half: n: 7 is odd; pass an even number"
        missing = await client.call_tool("half", {})
        assert missing.is_error and "n: Field required" in missing.content[0].text  # type: ignore[union-attr]
        failed = await client.call_tool("half", {"n": -2})
        assert failed.is_error
        assert failed.content[0].text == "half failed: negative numbers are not supported; pass n >= 0"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("quarter", {"n": 8})
        assert unknown.value.code == types.INVALID_PARAMS and "Unknown tool 'quarter'" in unknown.value.message


async def test_generate_config_without_the_templates_plugin_drops_its_link_and_says_so() -> None:
    from mcp_providers import RECEIPT_KEY
    from mcp_providers.plugins.documcp import workflows

    async with connect(compose({"workflows": workflows})) as client:
        result = await client.call_tool("generate_config", {"ssg": "hugo", "site_name": "X"})
        assert not result.is_error
        assert result.structured_content is not None
        assert not [b for b in result.content if isinstance(b, types.ResourceLink)]
        assert (result.meta or {})[RECEIPT_KEY]["transforms"] == [
            "dropped resource_link documcp://templates/hugo-config: not served by this server"
        ]


async def test_a_completion_or_prompt_that_raises_names_the_provider_not_the_exception() -> None:
    from collections.abc import Mapping

    from mcp_providers import (
        CompletionRequest,
        Content,
        Message,
        Prompt,
        PromptArgument,
        PromptProvider,
        ReadRequest,
        ResourceProvider,
        ResourceTemplate,
    )

    class Broken(ResourceProvider):
        name = "broken-completion"
        prefixes = ("bc://",)

        def templates(self) -> Sequence[ResourceTemplate]:
            return [ResourceTemplate(uri_template="bc://{x}", name="x")]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text="x")

        async def complete(self, template: ResourceTemplate, request: CompletionRequest) -> Sequence[str]:
            raise RuntimeError("password=hunter2 leaked by a bug")

    class BrokenPrompt(PromptProvider):
        name = "broken-prompt"

        def prompts(self) -> Sequence[Prompt]:
            return [Prompt(name="p", description="d", arguments=(PromptArgument(name="a"),))]

        async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
            raise RuntimeError("password=hunter2 leaked by a bug")

    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [Broken()]

    @hookimpl
    def register_prompt_providers() -> list[PromptProvider]:
        return [BrokenPrompt()]

    composition = compose(
        {
            "bc": SimpleNamespace(
                register_resource_providers=register_resource_providers,
                register_prompt_providers=register_prompt_providers,
            )
        }
    )
    async with connect(composition) as client:
        ref = types.ResourceTemplateReference(type="ref/resource", uri="bc://{x}")
        with pytest.raises(MCPError) as completion:
            await client.complete(ref, {"name": "x", "value": ""})
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("p", {})
        for err in (completion, prompt):
            assert err.value.code == types.INTERNAL_ERROR
            assert "hunter2" not in err.value.message and "the server log has the details" in err.value.message
        assert "provider 'broken-completion'" in completion.value.message
        assert "provider 'broken-prompt'" in prompt.value.message


async def test_documentation_tools_honour_a_deny_on_the_resources_they_answer_from() -> None:
    from mcp_providers.plugins import policy
    from mcp_providers.plugins.documcp import config_templates, ssg_catalog, workflows

    rules = {
        "rules": [
            # the catalog, not each SSG's entry: generate_config's ssg names an entry, and a call
            # naming one the caller may not read is refused before it runs (test_tool_argument_values)
            {
                "effect": "deny",
                "actions": ["read"],
                "targets": ["documcp://templates/hugo-*", "documcp://ssgs/available"],
            }
        ]
    }
    composition = compose(
        {"workflows": workflows, "config_templates": config_templates, "ssg_catalog": ssg_catalog, "policy": policy},
        {"policy": rules},
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as hugo:
            await client.call_tool("generate_config", {"ssg": "hugo", "site_name": "X"})
        assert hugo.value.code == -32003 and "documcp://templates/hugo-config" in hugo.value.message
        jekyll = await client.call_tool("generate_config", {"ssg": "jekyll", "site_name": "X"})
        assert not jekyll.is_error
        with pytest.raises(MCPError) as recommend:
            await client.call_tool("recommend_ssg", {})
        assert recommend.value.code == -32003
