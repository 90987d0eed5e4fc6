"""OpenAPI built-in plugin: each configured OpenAPI 3.0 or 3.1 service is one provider.

``GET`` operations become resources and resource templates under the prefix the service owns
(``openapi://<name>/`` by default), the other operations tools, through the same declarations,
rules, gate, side-effect scope, budgets and receipts as any plugin (see
:mod:`~mcp_providers.plugins.openapi.providers` for the mapping, :mod:`.settings` for the config).

Parser and validator: ``openapi-spec-validator`` (python-openapi, maintained, releases through
2026) validates a document against the official OpenAPI 3.0 and 3.1 meta-schemas and is built on
``jsonschema`` (its bookkeeping made linear in :mod:`.validation`); the plugin then reads the
validated document as plain dicts, following its internal ``$ref``s itself (:mod:`.document`).
The alternatives: ``openapi-pydantic`` gives typed models but neither validates nor resolves
references; ``prance`` resolves but validates 3.1 only through optional back-ends; ``openapi-core``
validates requests and responses at run time, more than a provider needs, and is built on the same
two packages.

A document that cannot be read or is invalid fails that service alone: it declares nothing, its
providers' ``lifespan`` raises the reason (recorded as a start-up failure, named in ``/readyz`` and
``/status``), the log says why, and every other service and plugin serves. Such a service, and one
whose every operation is left out, is reported ``unavailable`` in its providers' ``left_out``:
``check`` fails on it and ``serve --strict`` refuses (``source-unavailable``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from mcp_providers.hookspecs import hookimpl
from mcp_providers.plugins.openapi.settings import OpenAPISettings
from mcp_providers.providers import ResourceProvider, ToolProvider

if TYPE_CHECKING:
    from mcp_providers.plugins.openapi.client import Service
    from mcp_providers.plugins.openapi.document import Operation

__all__ = [
    "OpenAPISettings",
    "Unavailable",
    "Unconfigured",
    "register_resource_providers",
    "register_tool_providers",
    "settings_model",
    "unavailable",
]


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A service that serves nothing, as its providers report it in ``left_out`` (``check`` fails
    on it, ``serve --strict`` refuses: rule ``source-unavailable``)."""

    value: str
    message: str
    fix: str
    unavailable: bool = True


def unavailable(service: Service, operations: Sequence[Operation]) -> list[Unavailable]:
    """``[why service serves nothing]``, or ``[]`` when it serves some operation."""
    if service.error is not None:
        fix = "correct the document's path or URL (or its content), then reload or restart; the other services serve"
        return [Unavailable(service.name, f"serves nothing: {service.error}", fix)]
    if not operations:
        why = "every operation of its document is left out (the log names each and why)"
        fix = "widen include_operations or include_tags, or narrow exclude_operations or exclude_tags"
        return [Unavailable(service.name, f"service {service.name!r} serves nothing: {why}", fix)]
    return []


P = TypeVar("P")


def _reporting(provider: P, service: Service, operations: Sequence[Operation]) -> P:
    """``provider``, its ``left_out`` (duck-typed, read by ``check``) naming the service if it serves nothing."""
    reported: Any = provider
    reported.left_out = [*getattr(provider, "left_out", ()), *unavailable(service, operations)]
    return provider


@hookimpl
def settings_model() -> type[BaseModel]:
    """The plugin's settings: :class:`OpenAPISettings` (a list of services)."""
    return OpenAPISettings


def _loaded(settings: OpenAPISettings | None) -> list[tuple[Service, list[Operation]]]:
    if settings is None or not settings.services:
        return []
    # Imported once a service is configured: the parser, the validator and their meta-schemas take
    # about 0.3 s to import, which every start of `check`, `plugins` and `serve` would pay otherwise.
    from mcp_providers.plugins.openapi.loading import services

    return services(settings)


@hookimpl
def register_resource_providers(settings: OpenAPISettings | None) -> Sequence[ResourceProvider]:
    """One :class:`OpenAPIResources` per service (its GET operations), owning the service's prefix."""
    loaded = _loaded(settings)
    if not loaded:
        return []
    from mcp_providers.plugins.openapi.providers import OpenAPIResources  # as in _loaded: only when configured

    return [_reporting(OpenAPIResources(service, operations), service, operations) for service, operations in loaded]


class Unconfigured(ToolProvider):
    """Stands for the plugin while no service is configured, with no tools: an installed built-in
    left unconfigured is not a mistake, so a fresh ``check`` has nothing to warn about."""

    name = "openapi"


@hookimpl
def register_tool_providers(settings: OpenAPISettings | None) -> Sequence[ToolProvider]:
    """One :class:`OpenAPITools` per service (its other operations); :class:`Unconfigured` for none."""
    loaded = _loaded(settings)
    if not loaded:
        return [Unconfigured()]
    from mcp_providers.plugins.openapi.providers import OpenAPITools  # as in _loaded: only when configured

    return [_reporting(OpenAPITools(service, operations), service, operations) for service, operations in loaded]
