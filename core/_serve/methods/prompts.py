"""Prompt methods: ``prompts/list`` (a :class:`~mcp_providers._serve.methods.resources.ListMethod`) and ``prompts/get``.

``prompts/get`` asks the gate for ``prompt`` on the name and, for each argument declaring the
resource its value names (:attr:`PromptArgument.resource <mcp_providers.models.PromptArgument.resource>`),
what a read of that resource asks (``expand`` on its template, ``read`` on the URI); the render
runs through the invoker inside the side-effect scope (and may ask the gate itself through
:func:`mcp_providers.policy.allowed`, answered as reads are); its messages go through the same
evidence rules as tool results (links and embeds checked, embed budget, a receipt over every
block).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import mcp_types as types
from mcp.shared.uri_template import UriTemplate

from mcp_providers._host.assembly import Assembly
from mcp_providers._host.catalog import Entry
from mcp_providers._serve.steps import wire
from mcp_providers._serve.steps.asking import provider_asks, require_uri
from mcp_providers._serve.steps.evidence import Block, Blocks, result_receipt, served_blocks
from mcp_providers._serve.steps.exchange import Actor, Exchange
from mcp_providers._serve.steps.invoker import Invoker, Work
from mcp_providers.errors import InvalidParams, ProviderFailed
from mcp_providers.models import RECEIPT_KEY, Prompt
from mcp_providers.providers import Embed, Link, Message, PromptProvider

Target = tuple[Entry[Prompt, PromptProvider], Mapping[str, str]]


def argument_uri(resource: str, name: str, value: str) -> str:
    """The URI a prompt argument's value names (``resource`` expanded with ``{name: value}``)."""
    return UriTemplate.parse(resource).expand({name: value})


class GetPrompt:
    """``prompts/get``."""

    name = "prompts/get"
    actor: Actor = "user"

    def __init__(self, assembly: Assembly, invoker: Invoker) -> None:
        self._assembly = assembly
        self._invoker = invoker

    def route(self, exchange: Exchange, params: types.GetPromptRequestParams) -> Target:
        exchange.target = params.name
        entry = self._assembly.catalog.prompt(params.name)
        if entry is None:
            raise InvalidParams(f"Unknown prompt {params.name[:200]!r}; see prompts/list")
        return entry, dict(params.arguments or {})

    def authorize(self, exchange: Exchange, target: Target) -> None:
        """``prompt`` on the name first: the arguments are judged only for a caller who may get the
        prompt, so no one else hears which arguments it takes."""
        entry, arguments = target
        exchange.gate.require("prompt", entry.declaration.name)
        _check_arguments(entry.declaration, arguments)
        for arg in entry.declaration.arguments:
            value = arguments.get(arg.name)
            if arg.resource is not None and value:
                require_uri(exchange.gate, self._assembly.catalog, "read", argument_uri(arg.resource, arg.name, value))

    async def invoke(self, exchange: Exchange, target: Target) -> object:
        entry, arguments = target
        name = entry.declaration.name
        work = Work(entry.plugin, entry.provider.name, f"rendering prompt {name}", name, "prompt")
        render = lambda: entry.provider.render(entry.declaration, arguments)  # noqa: E731
        with provider_asks(exchange.gate, self._assembly.catalog):
            return await self._invoker.run(work, render, custody=exchange.custody)

    def evidence(self, exchange: Exchange, target: Target, produced: object) -> types.GetPromptResult:
        entry = target[0]
        name = entry.declaration.name
        settings = self._assembly.config.server
        blocks = Blocks(self._assembly.catalog, exchange.gate, settings.max_embed_bytes, f"prompt {name}")
        roles = []
        for message in _messages(entry, produced):
            block = _block(blocks, name, message)
            if block is not None:
                blocks.add(block)
                roles.append(message.role)
        content, _, covered_ = served_blocks(list(blocks.content), None, blocks.transforms)
        messages = [types.PromptMessage(role=role, content=block) for role, block in zip(roles, content, strict=True)]
        origins = self._assembly.origins
        extra = {"prompt": entry.declaration.name}
        exchange.receipt = result_receipt(exchange, origins, entry, covered_, blocks.transforms, extra=extra)
        return types.GetPromptResult(
            description=entry.declaration.description, messages=messages, _meta={RECEIPT_KEY: exchange.receipt}
        )


def _check_arguments(prompt: Prompt, arguments: Mapping[str, str]) -> None:
    """:raises InvalidParams: a required argument is missing, or one the prompt does not take is given."""
    declared = prompt.arguments
    missing = [a.name for a in declared if a.required and not arguments.get(a.name)]
    if missing:
        raise InvalidParams(f"Prompt {prompt.name} needs argument(s): {', '.join(missing)}")
    known = {a.name for a in declared}
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise InvalidParams(
            f"Prompt {prompt.name} has no argument(s) {', '.join(unknown)[:300]}; it takes: {', '.join(sorted(known))}"
        )


def _messages(entry: Entry[Prompt, PromptProvider], produced: object) -> Sequence[Message]:
    if not isinstance(produced, Sequence) or not all(isinstance(m, Message) for m in produced):
        raise ProviderFailed(
            f"prompt {entry.declaration.name} (plugin {entry.plugin!r}) returned {type(produced).__name__}; "
            "expected a list of Message"
        )
    return produced


def _block(blocks: Blocks, prompt: str, m: Message) -> Block | None:
    """The wire content of one message (``None`` when a link or embed was dropped)."""
    content = m.content
    if content is None:
        return types.TextContent(type="text", text=m.text or "")
    if isinstance(content, Link):
        return blocks.link(content)
    if isinstance(content, Embed):
        return blocks.embed(content)
    try:
        return wire.media_wire(content)
    except TypeError as exc:
        raise ProviderFailed(f"prompt {prompt} returned a message with bad content: {exc}") from None
