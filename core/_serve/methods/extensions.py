"""Extension methods (SEP-2133): request methods a plugin's :class:`~mcp_providers.providers.ExtensionProvider`
serves beside the spec's, each through the pipeline like a tool call.

A request routes by its method name, the gate asks ``call`` on that name (the provider asks about
the data it touches with :meth:`ExtensionRequest.require
<mcp_providers.providers.ExtensionRequest.require>`), the params (``_meta`` aside) are validated
against the method's model, the invoker runs the provider (in the side-effect scope when the
method's ``effects`` is ``"none"``) and the result must be a JSON object. The extensions
themselves are advertised under ``capabilities.extensions`` (:func:`advertised`).
"""

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from pydantic import ConfigDict, ValidationError

from mcp_providers._host.catalog import Catalog, Entry
from mcp_providers._serve.steps.asking import provider_asks
from mcp_providers._serve.steps.exchange import Actor, Exchange
from mcp_providers._serve.steps.invoker import Invoker, Work
from mcp_providers.errors import InvalidParams, ProviderFailed
from mcp_providers.models import Extension, ExtensionMethod
from mcp_providers.providers import ExtensionProvider, ExtensionRequest


class ExtensionParams(types.RequestParams):
    """What the SDK validates an extension request's params against: ``_meta`` and anything
    else, kept for the method's own model (:meth:`ExtensionCall.route`)."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built at the first extension request


Target = tuple[Entry[Extension, ExtensionProvider], ExtensionMethod, Any]
"""The extension's entry, the method declaration, its validated params."""


def advertised(catalog: Catalog) -> dict[str, dict[str, Any]]:
    """``capabilities.extensions``: identifier -> settings, for every served extension."""
    return {e.declaration.identifier: dict(e.declaration.settings) for e in catalog.extensions}


class ExtensionCall:
    """One extension method (its ``name`` is the method's)."""

    actor: Actor = "model"

    def __init__(self, name: str, catalog: Catalog, invoker: Invoker) -> None:
        self.name = name
        self._catalog = catalog
        self._invoker = invoker

    def route(self, exchange: Exchange, params: ExtensionParams) -> Target:
        exchange.target = self.name
        entry, method = self._catalog.extension_methods[self.name]
        raw = dict(params.model_extra or {})  # everything but _meta
        try:
            return entry, method, method.params_model.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in exc.errors())
            raise InvalidParams(f"Invalid params for {self.name}: {problems}", data={"method": self.name}) from None

    def authorize(self, exchange: Exchange, target: Target) -> None:
        exchange.gate.require("call", self.name)

    async def invoke(self, exchange: Exchange, target: Target) -> object:
        entry, method, params = target
        request = ExtensionRequest(method=method, params=params, principal=exchange.principal)
        what = f"answering {self.name}"
        work = Work(entry.plugin, entry.provider.name, what, self.name, "tool", method.effects == "none")
        with provider_asks(exchange.gate, self._catalog):
            return await self._invoker.run(work, lambda: entry.provider.handle(request), custody=exchange.custody)

    def evidence(self, exchange: Exchange, target: Target, produced: object) -> dict[str, Any]:
        entry = target[0]
        if not isinstance(produced, Mapping):
            raise ProviderFailed(
                f"provider {entry.provider.name!r} (plugin {entry.plugin!r}) answered {self.name} with "
                f"{type(produced).__name__}; an extension method returns a JSON object"
            )
        try:
            result: dict[str, Any] = json.loads(json.dumps(dict(produced)))  # JSON only; a copy the provider lacks
            return result
        except (TypeError, ValueError) as exc:
            raise ProviderFailed(
                f"provider {entry.provider.name!r} (plugin {entry.plugin!r}) answered {self.name} with "
                f"something that is not JSON ({exc})"
            ) from None
