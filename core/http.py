"""The HTTP client the core hands providers, with a read-only scope enforced during resource reads.

Resources are read-only. While the core runs a provider's ``read()``, every client made by
:func:`client` refuses any method but GET, HEAD and OPTIONS *before* anything is sent, raising
:class:`~mcp_providers.errors.SideEffectRefused` (rule ``side-effect-in-resource-read``). Tool
calls are not in that scope, so the same client serves a tool's POST or PATCH.

::

    async with mcp_providers.http.client(base_url="https://dev.service-now.com") as http:
        ...   # inside a resource read: http.post(...) raises SideEffectRefused

The scope is a :class:`contextvars.ContextVar`, so it follows the read into tasks it starts and
never leaks into concurrent requests.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import httpx2

from mcp_providers.errors import SideEffectRefused

log = logging.getLogger("mcp_providers.http")

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods RFC 9110 (section 9.2.1) defines as safe: allowed inside a resource read."""

_reading: ContextVar[str | None] = ContextVar("mcp_providers_reading", default=None)


@contextlib.contextmanager
def read_scope(uri: str) -> Iterator[None]:
    """Mark the current context as reading ``uri`` (the core wraps every ``read()`` in this)."""
    token = _reading.set(uri)
    try:
        yield
    finally:
        _reading.reset(token)


@contextlib.contextmanager
def exempt(reason: str) -> Iterator[None]:
    """Allow unsafe methods inside a read, for requests that change nothing the read serves.

    The one legitimate use is authentication: an OAuth token request is a POST but writes no
    data. Every use is logged with ``reason``; never wrap data writes in it.
    """
    uri = _reading.get()
    if uri is not None:
        log.debug("read-only scope of %s lifted for: %s", uri, reason)
    token = _reading.set(None)
    try:
        yield
    finally:
        _reading.reset(token)


def in_read_scope() -> str | None:
    """The URI being read in this context, or ``None`` outside a resource read."""
    return _reading.get()


class _ReadOnlyGuard(httpx2.AsyncBaseTransport):
    """Refuses unsafe methods inside a read scope, then delegates to the real transport."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        uri = _reading.get()
        if uri is not None and request.method.upper() not in SAFE_METHODS:
            raise SideEffectRefused(
                f"side-effect-in-resource-read: a {request.method} to {request.url.copy_with(query=None)} was "
                f"refused while reading {uri}; resources are read-only, so do writes in a tool",
                data={"uri": uri, "method": request.method, "rule": "side-effect-in-resource-read"},
            )
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def client(*, transport: httpx2.AsyncBaseTransport | None = None, **kwargs: Any) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` that enforces the read-only scope.

    :param transport: the transport to guard (default: ``httpx2.AsyncHTTPTransport()``).
    :param kwargs: passed to ``httpx2.AsyncClient`` (``base_url``, ``timeout``, ``auth`` ...).
    :returns: an open client; close it (``async with`` or ``aclose()``) when the provider stops.
    """
    return httpx2.AsyncClient(transport=_ReadOnlyGuard(transport or httpx2.AsyncHTTPTransport()), **kwargs)
