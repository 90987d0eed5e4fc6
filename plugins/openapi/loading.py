"""Each configured service loaded once per settings object: its document read and validated, its
operations selected (what is left out logged), or the reason it serves nothing."""

from __future__ import annotations

import logging

from mcp_providers.plugins.openapi.client import Service
from mcp_providers.plugins.openapi.document import DocumentError, Operation, Read, load, read_all
from mcp_providers.plugins.openapi.names import advisories, refusals
from mcp_providers.plugins.openapi.providers import selected
from mcp_providers.plugins.openapi.settings import OpenAPISettings, ServiceSettings

__all__ = ["services"]

log = logging.getLogger("mcp_providers.plugins.openapi")


def _service(settings: ServiceSettings, read: Read) -> Service:
    try:
        document = load(settings.document, timeout=settings.timeout_seconds, max_operations=settings.max_operations,
                        read=read)  # fmt: skip
    except DocumentError as exc:
        log.error("openapi: service %r serves nothing: %s", settings.name, exc)
        return Service(settings, None, f"service {settings.name!r}: {exc}")
    except Exception as exc:  # a document the libraries choke on fails its service, never the others
        # Only the kind and the place: a library's message may quote the document (it may hold secrets).
        where = exc.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        place = f" in {where.tb_frame.f_code.co_name}" if where is not None else ""
        log.error("openapi: service %r serves nothing: its document could not be read (%s%s)",
                  settings.name, type(exc).__name__, place)  # fmt: skip
        return Service(settings, None, f"service {settings.name!r}: its document could not be read "
                       f"({type(exc).__name__})")  # fmt: skip
    refused = refusals(settings, document)
    if refused:  # a name that matches nothing may be a typo that exposes what was meant hidden: fail closed
        reason = f"service {settings.name!r} serves nothing: {'; '.join(refused)}"
        log.error("openapi: %s", reason)
        return Service(settings, None, reason)
    service = Service(settings, document, None)
    service.left_out = advisories(settings, document)
    return service


def services(settings: OpenAPISettings | None) -> list[tuple[Service, list[Operation]]]:
    """Each configured service with the operations it serves, loaded once per settings object.

    Operations left out are logged (``check`` and ``serve`` show the lines).
    """
    if settings is None:
        return []
    if settings._services is None:
        loaded = []
        reads = read_all([(c.document, c.timeout_seconds) for c in settings.services])  # side by side
        for configured, read in zip(settings.services, reads, strict=True):
            service = _service(configured, read)
            operations, left = selected(service)
            for line in [*left, *(f"openapi: {item.message}" for item in service.left_out)]:
                log.warning("%s", line)
            loaded.append((service, operations))
        settings._services = loaded
    return settings._services
