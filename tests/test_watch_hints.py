"""A not-found message of the watch methods names only what the caller may list (tester fourteen,
MEDIUM): ``resources/subscribe``, ``resources/unsubscribe`` and ``subscriptions/listen`` looked the
URI up for everyone, so an unknown URI under a live provider's prefix answered with the resources
it serves, one the caller may not list among them. Every caller-facing lookup now takes what the
caller may list (``Catalog.route`` has no default for it), as ``resources/read`` did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from custody_fixture import MutablePolicy
from mcp import Client, MCPError

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.testing import compose

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

SHOWN, HIDDEN, UNKNOWN = "hint://tick", "hint://secret", "hint://zz"


class Ticks(ResourceProvider):
    name = "ticks"
    prefixes = ("hint://",)

    def resources(self) -> Sequence[Resource]:
        live = Freshness.live()
        return [Resource(uri=u, name=u[7:], mime_type="text/plain", freshness=live) for u in (SHOWN, HIDDEN)]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="now")


class Plugin:
    @hookimpl
    def register_resource_providers(self, settings: Any) -> Sequence[ResourceProvider]:
        return [Ticks()]


async def _refused(client: Any, method: str, uri: str) -> MCPError:
    """The error ``method`` (a client method's name, or ``listen``) answers for ``uri``."""
    with pytest.raises(MCPError) as refused:
        if method == "listen":
            async with client.listen(resource_subscriptions=[uri]):
                pass
        else:
            await getattr(client, method)(uri)
    return refused.value


@pytest.mark.parametrize(
    ("mode", "method"),
    [
        ("legacy", "subscribe_resource"),
        ("legacy", "unsubscribe_resource"),
        ("legacy", "read_resource"),
        ("auto", "listen"),
        ("auto", "read_resource"),
    ],
)
async def test_a_watch_of_an_unknown_uri_names_only_what_the_caller_may_list(mode: str, method: str) -> None:
    policy = MutablePolicy()
    policy.denied.add(("list", HIDDEN))
    composition = compose({"ticks": Plugin(), "policy": policy})
    async with Client(composition.server, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        message = (await _refused(client, method, UNKNOWN)).message
    assert HIDDEN not in message, message
    assert SHOWN in message, message  # the hint itself still helps: what the caller may list is named


class Briefs:
    @hookimpl
    def register_prompt_providers(self, settings: Any) -> Sequence[Any]:
        from mcp_providers import Message, Prompt, PromptArgument, PromptProvider

        class Provider(PromptProvider):
            name = "briefs"

            def prompts(self) -> Sequence[Prompt]:
                codename = PromptArgument(name="codename", required=True)
                return [Prompt(name="plan", description="A plan.", arguments=[codename])]

            async def render(self, prompt: Prompt, arguments: Any) -> Sequence[Message]:
                return [Message("user", content="the plan")]

        return [Provider()]


@pytest.mark.parametrize("arguments", [{}, {"nope": "x"}], ids=["missing", "unknown"])
async def test_a_denied_prompts_arguments_are_named_to_no_one(arguments: dict[str, str]) -> None:
    """A prompt's arguments were checked before the gate: a caller denied the prompt learned its
    argument names from "needs argument(s): codename" or "it takes: codename". Now it is denied
    first, and only a caller who may get it hears what it takes."""
    policy = MutablePolicy()
    policy.denied.add(("prompt", "plan"))
    composition = compose({"briefs": Briefs(), "policy": policy})
    async with Client(composition.server, mode="auto", cache=None) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as denied:
            await client.get_prompt("plan", arguments)
        assert denied.value.code == -32003 and "codename" not in denied.value.message
        policy.denied.clear()
        with pytest.raises(MCPError) as invalid:
            await client.get_prompt("plan", arguments)
        assert invalid.value.code == -32602 and "codename" in invalid.value.message


STILL = "hint://still"


class Mixed(Ticks):
    def resources(self) -> Sequence[Resource]:
        return [*super().resources(), Resource(uri=STILL, name="still", mime_type="text/plain")]

    def templates(self) -> Sequence[Any]:
        from mcp_providers import ResourceTemplate

        return [ResourceTemplate(uri_template="hint://books/{name}", name="book", mime_type="text/plain")]


class MixedPlugin:
    @hookimpl
    def register_resource_providers(self, settings: Any) -> Sequence[ResourceProvider]:
        return [Mixed()]


@pytest.mark.parametrize(("mode", "method"), [("legacy", "subscribe_resource"), ("auto", "listen")])
async def test_a_denied_resource_is_denied_before_anything_is_said_of_how_it_is_kept(mode: str, method: str) -> None:
    """Tester fifteen: a watch of a denied resource that is not live answered "cannot be watched:
    provider 'ticks' does not declare it live", naming its provider and how it is kept. The gate
    now decides first; a caller who may read it still hears why it cannot be watched."""
    policy = MutablePolicy()
    policy.denied.add(("read", STILL))
    composition = compose({"ticks": MixedPlugin(), "policy": policy})
    async with Client(composition.server, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        denied = await _refused(client, method, STILL)
        assert denied.code == -32003 and "live" not in denied.message, denied.message
        policy.denied.clear()
        still = await _refused(client, method, STILL)
        assert still.code == -32602 and "cannot be watched" in still.message


async def test_a_completion_of_a_denied_template_names_none_of_its_variables() -> None:
    """Tester fifteen: completion/complete named a denied template's variables ("has no variable
    'zzz'; it has: name") before the gate; now the gate decides first."""
    import mcp_types as types

    policy = MutablePolicy()
    policy.denied.add(("complete", "hint://books/{name}"))
    composition = compose({"ticks": MixedPlugin(), "policy": policy})
    ref = types.ResourceTemplateReference(type="ref/resource", uri="hint://books/{name}")
    async with Client(composition.server, mode="auto", cache=None) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as denied:
            await client.complete(ref, {"name": "zzz", "value": ""})
        assert denied.value.code == -32003 and "it has" not in denied.value.message
        policy.denied.clear()
        with pytest.raises(MCPError) as unknown:
            await client.complete(ref, {"name": "zzz", "value": ""})
        assert unknown.value.code == -32602 and "it has: name" in unknown.value.message
