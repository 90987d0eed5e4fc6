"""The HTTP client the core hands providers, and the public face of the side-effect scope.

Resources are read-only. While the core runs a provider's ``read()`` (or a completion, a prompt
render, a tool declared ``effects="none"``), :func:`client` refuses, *before anything is sent*,
any HTTP method but GET, HEAD and OPTIONS and any of those carrying a body (every request it
sends: redirects and auth flows included, through any transport, proxy or mount), and file writes
and process starts are refused, raising :class:`~mcp_providers.errors.SideEffectRefused` (rule
``side-effect-in-resource-read``). Under ``serve`` (or an embedding that opted in), the whole
process refuses such requests whatever client made them (``httpx2``, ``httpx``, ``urllib``,
``requests``, ``aiohttp``). See :mod:`mcp_providers._sideeffects` for exactly what is and is not
covered, and ``docs/embedding.md`` for what an embedded composition installs. Tool calls declared
``additive`` or ``destructive`` are outside the scope, so the same client serves their writes.

::

    async with mcp_providers.http.client(base_url="https://dev.service-now.com") as http:
        ...   # inside a resource read: http.post(...) raises SideEffectRefused

    path = os.path.join(mcp_providers.http.scratch_dir(), "unpacked")   # writable during a read

Environment proxies (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``) are honoured by
:func:`client` and stay guarded: the check is the client's first request hook, whatever transport
then carries the request.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import httpx2

from mcp_providers._sideeffects import SAFE_METHODS as SAFE_METHODS
from mcp_providers._sideeffects import check_http, current_scope, judged_here, read_safe_mcp, side_effect_scope
from mcp_providers._sideeffects import exempt as exempt
from mcp_providers._sideeffects import scratch_dir as scratch_dir
from mcp_providers._sideeffects.judge import READ_SAFE_MCP_METHODS as READ_SAFE_MCP_METHODS

if TYPE_CHECKING:
    import ssl

    from opentelemetry.trace import Tracer

__all__ = [
    "READ_SAFE_MCP_METHODS",
    "SAFE_METHODS",
    "client",
    "exempt",
    "in_read_scope",
    "is_loopback_host",
    "read_scope",
    "scratch_dir",
    "tls_context",
    "upstream_tracer",
]


def is_loopback_host(host: str) -> bool:
    """Whether a URL's host is ``localhost`` or a loopback IP address (127.0.0.0/8, ``::1``, with or
    without brackets): where plain ``http://`` may carry a credential, since it never leaves the
    machine. A name that merely starts with ``127.`` (``127.example.com``) is not.

    :param host: the host part of a URL, e.g. ``urllib.parse.urlsplit(url).hostname``.
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


upstream_tracer: ContextVar[Tracer | None] = ContextVar("mcp_providers_upstream_tracer", default=None)
"""Set by the core around a provider's invocation while traces are on: every request a
:func:`client` sends then gets a ``CLIENT`` span (see :class:`_TracedClient`). ``None``: no span."""


@contextlib.contextmanager
def read_scope(uri: str, *, provider: str = "(unnamed)", plugin: str = "(unnamed)") -> Iterator[None]:
    """Run the body as a resource read of ``uri``, in an enforcing side-effect scope.

    The core wraps every ``read()`` in the same scope; plugin tests use this to see their code
    refused as it would be while serving, so it installs every process-wide guard ``serve``
    installs (a test owns its process; ``docs/embedding.md``). For the scope's records, use
    the core's side-effect scope.
    """
    with side_effect_scope(provider=provider, plugin=plugin, target=uri, kind="read"):
        yield


def in_read_scope() -> str | None:
    """What the current side-effect scope covers (the URI read, or the prompt, template or tool
    name), or ``None`` when the calling context is in none."""
    scope = current_scope()
    return None if scope is None else scope.target


async def _judge_request(request: httpx2.Request, mcp_endpoint: httpx2.URL | None = None) -> None:
    """The first request hook of every :func:`client`: judge the request in a side-effect scope
    (a no-op outside one). Hooks run for each request sent, redirects and auth flows included.
    A POST of read-only MCP methods to the client's ``mcp_endpoint`` passes (:func:`read_safe_mcp`)."""
    if mcp_endpoint is not None and request.method == "POST" and request.url == mcp_endpoint:
        try:
            if read_safe_mcp(request.content):
                return
        except httpx2.RequestNotRead:  # a streamed body: judged as any POST
            pass
    has_body = request.headers.get("content-length", "0").strip() != "0" or "transfer-encoding" in request.headers
    check_http(request.method, str(request.url), has_body=has_body)


def tls_context(*, trust_env: bool = True) -> ssl.SSLContext:
    """httpx2's default TLS context (``httpx2.create_ssl_context()``: the system's CA bundle, or
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when ``trust_env``), made once per process for each value
    of those variables and shared by every client that does not pass ``verify=``.

    Building one reads and parses the CA bundle: 34 ms of CPU per client on the project's 2-CPU
    machine, against 0.13 ms for a client given a made context (50 of each, 2 December 2026). A
    CA bundle changed on disk is read by the next process, as for most servers.
    """
    if not trust_env:
        return _tls_context(False, None, None)
    return _tls_context(True, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=8)
def _tls_context(trust_env: bool, cafile: str | None, capath: str | None) -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=trust_env)  # reads the variables the key holds


def client(
    *, transport: httpx2.AsyncBaseTransport | None = None, mcp_endpoint: str | None = None, **kwargs: Any
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for providers; requests in a side-effect scope are checked.

    :param transport: a transport to use instead of the default (which honours ``proxy=``,
        ``mounts=`` and, with ``trust_env`` (default), the ``*_PROXY`` environment variables).
        Requests are judged before any transport sees them.
    :param mcp_endpoint: the URL of an MCP server's streamable HTTP endpoint this client talks to
        (``https://host/mcp``). In a scope, a POST to exactly that URL whose body is JSON-RPC of
        read-only MCP methods only (``resources/read`` ...: :data:`READ_SAFE_MCP_METHODS`) passes;
        any other POST, there or elsewhere, is refused as before.
    :param kwargs: passed to ``httpx2.AsyncClient`` (``base_url``, ``timeout``, ``auth``, ``proxy``,
        ``mounts``, ``verify``, ``event_hooks`` ...). Without ``verify`` the client uses
        :func:`tls_context`. The side-effect judge stays the first request hook, even when
        ``event_hooks`` is given or later replaced.
    :returns: an open client; close it (``async with`` or ``aclose()``) when the provider stops.
    """
    if "verify" not in kwargs:
        kwargs["verify"] = tls_context(trust_env=kwargs.get("trust_env", True))
    endpoint = None if mcp_endpoint is None else httpx2.URL(mcp_endpoint)
    return _TracedClient(transport=transport, judge=functools.partial(_judge_request, mcp_endpoint=endpoint), **kwargs)


class _TracedClient(httpx2.AsyncClient):
    """An ``httpx2.AsyncClient`` whose requests are judged in a side-effect scope (its first request
    hook, :func:`_judge_request`) and, inside a traced invocation (:data:`upstream_tracer`),
    each get a ``CLIENT`` span after the OpenTelemetry HTTP client conventions: named by the method,
    with ``http.request.method``, ``server.address``, ``server.port``, ``url.scheme``,
    ``http.response.status_code`` and ``error.type`` (the status code from 400, else the exception's
    class). Never the path, the query string, headers or bodies: they carry record ids and credentials."""

    def __init__(self, *, judge: Any = _judge_request, **kwargs: Any) -> None:
        self._judge = judge  # before the base class sets event_hooks through the setter below
        super().__init__(**kwargs)
        self.event_hooks = self.event_hooks  # through the setter below: the judge goes first

    @property
    def event_hooks(self) -> dict[str, list[Any]]:
        return httpx2.AsyncClient.event_hooks.fget(self)  # type: ignore[attr-defined,no-any-return]

    @event_hooks.setter
    def event_hooks(self, hooks: dict[str, list[Any]]) -> None:
        requests = [h for h in hooks.get("request", []) if h is not self._judge]
        both = {"request": [self._judge, *requests], "response": list(hooks.get("response", []))}
        httpx2.AsyncClient.event_hooks.fset(self, both)  # type: ignore[attr-defined]

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        with judged_here():  # judged by the first request hook: the process-wide guards below need not
            tracer = upstream_tracer.get()
            if tracer is None:
                return await super().send(request, **kwargs)
            return await _traced_send(tracer, super().send, request, kwargs)


async def _traced_send(tracer: Tracer, send: Any, request: httpx2.Request, kwargs: dict[str, Any]) -> httpx2.Response:
    from opentelemetry.trace import SpanKind, StatusCode

    url = request.url
    attributes: dict[str, Any] = {"http.request.method": request.method, "server.address": url.host,
                                  "url.scheme": url.scheme}  # fmt: skip
    if url.port is not None:
        attributes["server.port"] = url.port
    with tracer.start_as_current_span(
        request.method, kind=SpanKind.CLIENT, attributes=attributes, record_exception=False,
        set_status_on_exception=False,
    ) as span:  # fmt: skip
        try:
            response: httpx2.Response = await send(request, **kwargs)
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(StatusCode.ERROR)
            raise
        span.set_attribute("http.response.status_code", response.status_code)
        if response.status_code >= 400:
            span.set_attribute("error.type", str(response.status_code))
            span.set_status(StatusCode.ERROR)
        return response
