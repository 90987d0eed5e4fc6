"""Each configured service loaded once per settings object: its document read and validated, its
operations selected (what is left out logged), or the reason it serves nothing."""

from __future__ import annotations

import logging

from mcp_providers.plugins.openapi.client import Service
from mcp_providers.plugins.openapi.document import DocumentError, Operation, load
from mcp_providers.plugins.openapi.providers import selected
from mcp_providers.plugins.openapi.settings import OpenAPISettings, ServiceSettings

__all__ = ["services"]

log = logging.getLogger("mcp_providers.plugins.openapi")


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
