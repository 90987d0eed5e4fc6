"""OpenAPI built-in plugin: each configured OpenAPI 3.0 or 3.1 service is one provider.

``GET`` operations become resources and resource templates under the prefix the service owns
(``openapi://<name>/`` by default), the other operations tools, through the same declarations,
rules, gate, side-effect scope, budgets and receipts as any plugin (see
:mod:`~mcp_providers.plugins.openapi.providers` for the mapping, :mod:`.settings` for the config).

Parser and validator: ``openapi-spec-validator`` (python-openapi, maintained, releases through
2026) validates a document against the official OpenAPI 3.0 and 3.1 meta-schemas and is built on
``jsonschema``; its companion ``jsonschema-path`` walks the validated document following ``$ref``s.
The alternatives: ``openapi-pydantic`` gives typed models but neither validates nor resolves
references; ``prance`` resolves but validates 3.1 only through optional back-ends; ``openapi-core``
validates requests and responses at run time, more than a provider needs, and is built on the same
two packages.

A document that cannot be read or is invalid fails that service alone: it declares nothing, its
providers' ``lifespan`` raises the reason (recorded as a start-up failure, named in ``/readyz`` and
``/status``), the log says why, and every other service and plugin serves.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel

from mcp_providers.hookspecs import hookimpl
from mcp_providers.plugins.openapi.client import Service
from mcp_providers.plugins.openapi.document import DocumentError, Operation, load
from mcp_providers.plugins.openapi.providers import OpenAPIResources, OpenAPITools, selected
from mcp_providers.plugins.openapi.settings import OpenAPISettings, ServiceSettings
from mcp_providers.providers import ResourceProvider, ToolProvider

__all__ = [
    "OpenAPIResources",
    "OpenAPISettings",
    "OpenAPITools",
    "register_resource_providers",
    "register_tool_providers",
    "services",
    "settings_model",
]

log = logging.getLogger(__name__)


@hookimpl
def settings_model() -> type[BaseModel]:
    """The plugin's settings: :class:`OpenAPISettings` (a list of services)."""
    return OpenAPISettings


def _service(settings: ServiceSettings) -> Service:
    try:
        document = load(settings.document, timeout=settings.timeout_seconds)
    except DocumentError as exc:
        log.error("openapi: service %r serves nothing: %s", settings.name, exc)
        return Service(settings, None, f"service {settings.name!r}: {exc}")
    except Exception as exc:  # a document the libraries choke on fails its service, never the others
        log.error("openapi: service %r serves nothing: its document could not be read", settings.name, exc_info=exc)
        return Service(settings, None, f"service {settings.name!r}: its document could not be read "
                       f"({type(exc).__name__}: {str(exc)[:200]})")  # fmt: skip
    return Service(settings, document, None)


def services(settings: OpenAPISettings | None) -> list[tuple[Service, list[Operation]]]:
    """Each configured service with the operations it serves, loaded once per settings object.

    Operations left out are logged (``check`` and ``serve`` show the lines).
    """
    if settings is None:
        return []
    if settings._services is None:
        loaded = []
        for configured in settings.services:
            service = _service(configured)
            operations, left = selected(service)
            for line in left:
                log.warning("%s", line)
            loaded.append((service, operations))
        settings._services = loaded
    return settings._services


@hookimpl
def register_resource_providers(settings: OpenAPISettings | None) -> Sequence[ResourceProvider]:
    """One :class:`OpenAPIResources` per service (its GET operations), owning the service's prefix."""
    return [OpenAPIResources(service, operations) for service, operations in services(settings)]


class Unconfigured(ToolProvider):
    """Stands for the plugin while no service is configured, with no tools: an installed built-in
    left unconfigured is not a mistake, so a fresh ``check`` has nothing to warn about."""

    name = "openapi"


@hookimpl
def register_tool_providers(settings: OpenAPISettings | None) -> Sequence[ToolProvider]:
    """One :class:`OpenAPITools` per service (its other operations); :class:`Unconfigured` for none."""
    loaded = services(settings)
    if not loaded:
        return [Unconfigured()]
    return [OpenAPITools(service, operations) for service, operations in loaded]
