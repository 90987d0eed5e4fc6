"""A URI reached any other way is asked what a read of it asks: ``expand`` on its template, then
``read`` (issue 24, item 4).

With ``expand`` denied on a template (the built-in policy plugin), a prompt argument naming one of
its URIs is refused, completion offers none of its values, a tool's ``ToolCall.require`` on one is
refused, a link to one is dropped, and watching one is refused, in both protocol eras. Each test
also shows the same request allowed without the rule, so it cannot pass by refusing everything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError
from pipeline_support import Secrets, secrets_plugin

from mcp_providers import Message, Prompt, PromptArgument, PromptProvider, hookimpl
from mcp_providers.plugins import policy
from mcp_providers.plugins.documcp import config_templates, prompts, ssg_catalog, workflows
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

SSG = "documcp://ssgs/{ssg}"
WORKFLOW = "documcp://workflows/{workflowId}"
ERAS = ["auto", "legacy"]
DOCUMCP_PLUGINS = {
    "ssg_catalog": ssg_catalog,
    "config_templates": config_templates,
    "workflows": workflows,
    "documcp_prompts": prompts,
}


def _deny_expand(*templates: str) -> dict[str, Any]:
    return {"policy": {"rules": [{"effect": "deny", "actions": ["expand"], "targets": list(templates)}]}}


def _documcp(*denied: str) -> Any:
    return compose({**DOCUMCP_PLUGINS, "policy": policy}, _deny_expand(*denied) if denied else None)


# -- prompt arguments naming a resource ----------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("prompt", ["setup-documentation", "tutorial-writer", "reference-writer"])
async def test_a_prompt_argument_naming_a_uri_of_a_denied_template_is_refused(mode: str, prompt: str) -> None:
    arguments = {"project_path": ".", "ssg_type": "hugo"}
    async with connect(_documcp(), mode=mode) as client:  # type: ignore[arg-type]
        rendered = await client.get_prompt(prompt, arguments)
        assert "Hugo" in rendered.messages[0].content.text  # type: ignore[union-attr]
    async with connect(_documcp(SSG), mode=mode) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as caught:
            await client.get_prompt(prompt, arguments)
    assert caught.value.error.code == -32003
    assert f"expand on {SSG}" in caught.value.error.message


# -- completion -----------------------------------------------------------------------------------


async def _values(
    client: Any, ref: Any, name: str, value: str = "", context: Mapping[str, str] | None = None
) -> list[str]:
    result = await client.complete(ref, {"name": name, "value": value}, context_arguments=dict(context or {}))
    return list(result.completion.values)


@pytest.mark.parametrize("mode", ERAS)
async def test_completion_of_a_prompt_argument_offers_no_value_of_a_denied_template(mode: str) -> None:
    ref = types.PromptReference(type="ref/prompt", name="setup-documentation")
    async with connect(_documcp(), mode=mode) as client:  # type: ignore[arg-type]
        assert "hugo" in await _values(client, ref, "ssg_type")
    async with connect(_documcp(SSG), mode=mode) as client:  # type: ignore[arg-type]
        assert await _values(client, ref, "ssg_type") == []
        # an argument naming no resource is completed as before
        assert await _values(client, ref, "include_examples") == ["true", "false"]


@pytest.mark.parametrize("mode", ERAS)
async def test_completion_of_a_template_variable_offers_no_value_when_its_template_is_denied(mode: str) -> None:
    ref = types.ResourceTemplateReference(type="ref/resource", uri=WORKFLOW)
    async with connect(_documcp(SSG), mode=mode) as client:  # type: ignore[arg-type]
        assert "quick-documentation-setup" in await _values(client, ref, "workflowId")  # another template's rule
    async with connect(_documcp(WORKFLOW), mode=mode) as client:  # type: ignore[arg-type]
        assert await _values(client, ref, "workflowId") == []


class UriPrompts(PromptProvider):
    """A prompt whose argument is a whole URI (``{+uri}``: the value is the URI it names)."""

    name = "uri-prompts"

    def prompts(self) -> Sequence[Prompt]:
        argument = PromptArgument(
            name="uri", required=True, resource="{+uri}", completions=("x://a/index", "x://a/secret", "x://a/public")
        )
        return [Prompt(name="summarise", description="Summarise one resource.", arguments=(argument,))]

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        return [Message("user", f"Summarise {arguments['uri']}")]


def _uri_prompts(*denied: str) -> Any:
    plugins = {
        "secrets": SimpleNamespace(register_resource_providers=hookimpl(lambda: [Secrets()])),
        "uri_prompts": SimpleNamespace(register_prompt_providers=hookimpl(lambda: [UriPrompts()])),
        "policy": policy,
    }
    return compose(plugins, _deny_expand(*denied) if denied else None)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_prompt_argument_that_is_a_uri_is_asked_about_its_template(mode: str) -> None:
    ref = types.PromptReference(type="ref/prompt", name="summarise")
    async with connect(_uri_prompts(), mode=mode) as client:  # type: ignore[arg-type]
        assert await _values(client, ref, "uri", "x://") == ["x://a/index", "x://a/secret", "x://a/public"]
        assert (await client.get_prompt("summarise", {"uri": "x://a/secret"})).messages
    async with connect(_uri_prompts("x://a/{name}"), mode=mode) as client:  # type: ignore[arg-type]
        # the fixed x://a/index is no URI of the template: still offered and rendered
        assert await _values(client, ref, "uri", "x://") == ["x://a/index"]
        assert (await client.get_prompt("summarise", {"uri": "x://a/index"})).messages
        for spelled in ("x://a/secret", "X://a/%73ecret"):
            with pytest.raises(MCPError) as caught:
                await client.get_prompt("summarise", {"uri": spelled})
            assert caught.value.error.code == -32003, spelled


# -- provider code, links, subscriptions -----------------------------------------------------------


def _secrets(*denied: str, **kwargs: Any) -> Any:
    return compose({"x": secrets_plugin(**kwargs), "policy": policy}, _deny_expand(*denied) if denied else None)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_tool_asking_to_read_a_uri_of_a_denied_template_is_refused(mode: str) -> None:
    async with connect(_secrets(embed="x://a/index", require="x://a/secret"), mode=mode) as client:  # type: ignore[arg-type]
        assert not (await client.call_tool("show", {})).is_error
    denied = _secrets("x://a/{name}", embed="x://a/index", require="x://a/secret")
    async with connect(denied, mode=mode) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as caught:
            await client.call_tool("show", {})
    assert caught.value.error.code == -32003 and "tool show may not expand x://a/{name}" in caught.value.error.message


@pytest.mark.parametrize("mode", ERAS)
async def test_a_prompt_linking_to_a_uri_of_a_denied_template_loses_the_link(mode: str) -> None:
    async with connect(_secrets(embed="x://a/index", link="x://a/secret"), mode=mode) as client:  # type: ignore[arg-type]
        kinds = [m.content.type for m in (await client.get_prompt("brief", {})).messages]
        assert kinds == ["resource", "resource_link"]
    denied = _secrets("x://a/{name}", embed="x://a/index", link="x://a/secret")
    async with connect(denied, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.get_prompt("brief", {})
    assert [m.content.type for m in result.messages] == ["resource"]
    assert "x://a/secret" not in str(result.meta)  # the receipt does not name the dropped link


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_subscription_to_a_uri_of_a_denied_template_is_refused_in_both_eras() -> None:
    async with connect(_secrets("x://a/{name}", embed="x://a/index"), mode="legacy") as client:
        await client.subscribe_resource("x://a/index")  # a fixed URI: no template to ask about
        with pytest.raises(MCPError) as legacy:
            await client.subscribe_resource("x://a/secret")
    assert legacy.value.error.code == -32003
    async with connect(_secrets("x://a/{name}", embed="x://a/index"), mode="auto") as client:
        with pytest.raises(MCPError) as modern:
            async with client.listen(resource_subscriptions=["X://a/%73ecret"]):
                pass
    assert modern.value.error.code == -32003
