"""``completion/complete``: values for a template variable or a prompt argument.

Asks the gate for ``complete`` on the template or prompt; completing inside a scope (a template
with other variables already chosen, e.g. ``instance=prod``) reveals what is in it, so it also
takes ``read`` there. The provider's values are then filtered: only values naming something the
caller may read are offered (the template expanded with the value; a prompt argument's declared
``resource``). Scope and values are asked what a read of their URI asks (``expand`` on the
template that serves it, then ``read``: :mod:`~mcp_providers._serve.steps.asking`). At most 100
values are returned, with the total.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mcp_types as types
from mcp.shared.uri_template import UriTemplate

from mcp_providers._holders import Frozen
from mcp_providers._host.assembly import Assembly
from mcp_providers._host.catalog import Entry
from mcp_providers._serve.methods.prompts import argument_uri
from mcp_providers._serve.steps.asking import provider_asks, require_uri, uri_allowed
from mcp_providers._serve.steps.exchange import Actor, Exchange
from mcp_providers._serve.steps.invoker import Invoker, Work
from mcp_providers._serve.steps.surrogates import replaced
from mcp_providers.errors import InvalidParams, ProviderFailed
from mcp_providers.models import Prompt, ResourceTemplate
from mcp_providers.providers import CompletionRequest, PromptProvider, ResourceProvider

MAX_VALUES = 100
"""The most values one completion returns (MCP's limit)."""


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Completing(Frozen):
    """The routed completion: what is completed, for whom, and how to run it."""

    __slots__ = ("entry", "names", "ref", "request", "scope", "variables")

    ref: str
    """The template or prompt name the gate is asked ``complete`` about."""
    entry: Entry[ResourceTemplate, ResourceProvider] | Entry[Prompt, PromptProvider]
    request: CompletionRequest
    scope: str | None
    """The URI of the chosen scope (template expanded with the chosen values), or ``None``."""
    names: Callable[[str], str | None]
    """Value -> the URI it would name (``None`` when it names none)."""
    variables: frozenset[str] | None
    """A template's variables (those it declares completions for too); ``None`` for a prompt."""

    def __init__(
        self,
        ref: str,
        entry: Entry[ResourceTemplate, ResourceProvider] | Entry[Prompt, PromptProvider],
        request: CompletionRequest,
        scope: str | None,
        names: Callable[[str], str | None],
        variables: frozenset[str] | None = None,
    ) -> None:
        object.__setattr__(self, "ref", ref)
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "request", request)
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "variables", variables)


class Complete:
    """``completion/complete``."""

    name = "completion/complete"
    actor: Actor = "user"

    def __init__(self, assembly: Assembly, invoker: Invoker) -> None:
        self._catalog = assembly.catalog
        self._invoker = invoker

    def route(self, exchange: Exchange, params: types.CompleteRequestParams) -> Completing:
        arg = params.argument
        context = dict((params.context.arguments or {}) if params.context else {})
        request = CompletionRequest(argument=arg.name, value=arg.value, context=context, principal=exchange.principal)
        if isinstance(params.ref, types.ResourceTemplateReference):
            exchange.target = params.ref.uri
            return self._template(params.ref.uri, request)
        exchange.target = params.ref.name
        return self._prompt(params.ref.name, request)

    def _template(self, uri_template: str, request: CompletionRequest) -> Completing:
        entry = self._catalog.template(uri_template)
        if entry is None:
            raise InvalidParams(
                f"No resource template {uri_template[:200]!r}; see resources/templates/list", data={"uri": uri_template}
            )
        template = UriTemplate.parse(uri_template)
        variables = frozenset(entry.declaration.completions.keys() | set(template.variable_names))
        chosen = {k: v for k, v in request.context.items() if k in template.variable_names and k != request.argument}
        scope = template.expand(chosen) if chosen else None
        names = lambda v: template.expand({**chosen, request.argument: v})  # noqa: E731
        return Completing(uri_template, entry, request, scope, names, variables)

    def _prompt(self, name: str, request: CompletionRequest) -> Completing:
        entry = self._catalog.prompt(name)
        if entry is None:
            raise InvalidParams(f"No prompt {name[:200]!r}; see prompts/list")
        resource = next((a.resource for a in entry.declaration.arguments if a.name == request.argument), None)
        return Completing(
            name, entry, request, None, lambda v: argument_uri(resource, request.argument, v) if resource else None
        )

    def authorize(self, exchange: Exchange, target: Completing) -> None:
        """``complete`` on the template or prompt first: only a caller who may complete it hears
        which variables it has."""
        exchange.gate.require("complete", target.ref)
        argument = target.request.argument
        if target.variables is not None and argument not in target.variables:
            raise InvalidParams(
                f"Template {target.ref} has no variable {argument[:100]!r}; "
                f"it has: {', '.join(sorted(target.variables))}"
            )
        if target.scope is not None:
            require_uri(exchange.gate, self._catalog, "read", target.scope)

    async def invoke(self, exchange: Exchange, target: Completing) -> object:
        entry = target.entry
        what = f"completing {target.request.argument} of {target.ref}"
        work = Work(entry.plugin, entry.provider.name, what, target.ref, "completion")
        with provider_asks(exchange.gate, self._catalog):
            return await self._invoker.run(
                work,
                lambda: entry.provider.complete(entry.declaration, target.request),  # type: ignore[arg-type]
            )

    def evidence(self, exchange: Exchange, target: Completing, produced: object) -> types.CompleteResult:
        if not isinstance(produced, Sequence) or isinstance(produced, str):
            raise ProviderFailed(f"{target.entry.provider.name!r} returned {type(produced).__name__} for {target.ref}")
        values = [replaced(str(v))[0] for v in produced]  # a lone surrogate is offered as U+FFFD
        gate = exchange.gate
        if gate.authorizer.active:  # offer only values whose resources the caller may read
            catalog = self._catalog
            values = [v for v in values if (uri := target.names(v)) is None or uri_allowed(gate, catalog, "read", uri)]
        exchange.count = len(values)
        return types.CompleteResult(
            completion=types.Completion(
                values=values[:MAX_VALUES], total=len(values), has_more=len(values) > MAX_VALUES
            )
        )
