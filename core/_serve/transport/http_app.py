"""Streamable HTTP: the SDK's transport, fronted by a fast path for exchanges that need no stream.

:func:`http_app` returns one ASGI app for every way of serving HTTP (``serve --http``,
``embedding.mount``). At the MCP path it does, before anything else:

- the Host/Origin (DNS-rebinding) policy of :func:`transport_policy`, for every bind address;
- in stateless mode, ``405`` with ``Allow: POST`` for ``GET`` and ``DELETE`` (there is no session
  to hold a stream for, nor one to delete);
- JSON-RPC batches: answered as a batch, element by element, for 2025-03-26 (the only revision
  that has them); one ``-32600`` with ``id: null`` otherwise;
- the **fast path**: a POST without ``Mcp-Session-Id`` that needs no stream is parsed and
  dispatched straight into the SDK's per-request kernel (:class:`mcp.server.runner.ServerRunner`,
  the same handlers, middleware and result shaping the SDK transport reaches) and answered with
  JSON: every 2026-07-28 request in JSON-response mode (through the SDK's own single-exchange
  entry), and 2025-era requests in stateless JSON mode. This skips the SDK's per-request transport,
  its server task, memory streams and dispatcher.

Everything else (SSE responses, ``GET`` listen streams, sessions, ``DELETE``) goes to the SDK
app unchanged. Bearer authentication, when configured, applies to both paths
(:class:`~mcp_providers._serve.transport.auth.BearerGate`, which keeps the SDK's auth context), and
the RFC 9728 metadata it names is served beside the MCP path, without authentication.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server._streamable_http_modern import handle_modern_request
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.server.streamable_http import EventStore
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_providers._serve.identity import ResourceServer
from mcp_providers._serve.transport.auth import BearerGate, metadata_endpoints

log = logging.getLogger("mcp_providers.http")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
BATCH_VERSION = "2025-03-26"
"""The only protocol revision with JSON-RPC batches."""
STATELESS_SCOPE_KEY = "mcp_providers.stateless"
"""Set in the ASGI scope of every request a stateless app serves (read by :func:`stateless_middleware`)."""
_JSON = [(b"content-type", b"application/json")]


def _host_name(host: str) -> str:
    return host.strip().strip("[]").lower()


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``localhost``, ``::1`` and the rest of 127.0.0.0/8."""
    name = _host_name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """Every interface, however spelled: ``0.0.0.0``, ``0``, ``::``, ``[::]``, ``0:0::0``, empty."""
    name = _host_name(host)
    if name in ("", "0", "*"):
        return True
    try:
        return ipaddress.ip_address(name).is_unspecified
    except ValueError:
        return False


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def transport_policy(
    host: str, allow_hosts: list[str] | None = None, explicit: TransportSecuritySettings | None = None
) -> TransportSecuritySettings:
    """The one Host/Origin (DNS-rebinding) policy for serving on ``host``; never ``None``.

    ``explicit`` settings win. A loopback host accepts the loopback names on any port. Any other
    host accepts its own name (a specific address or hostname), the names in ``allow_hosts``
    (``NAME`` or ``NAME:PORT``; a bare name on any port) and, for a wildcard bind (which also
    listens on loopback), the loopback names; every other Host is refused with 421 and every other
    Origin with 403.
    """
    if explicit is not None:
        return explicit
    if is_loopback(host) and not allow_hosts:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=_LOOPBACK_HOSTS, allowed_origins=_LOOPBACK_ORIGINS
        )
    names = [] if is_wildcard(host) else [_bracketed(_host_name(host))]
    names += allow_hosts or []
    hosts = [h for n in names for h in ((n,) if ":" in n.lstrip("[").split("]")[-1] else (n, f"{n}:*"))]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    if is_wildcard(host) or is_loopback(host):
        hosts, origins = hosts + _LOOPBACK_HOSTS, origins + _LOOPBACK_ORIGINS
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


async def stateless_middleware(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    """Server middleware: on a stateless HTTP request, no 2025 ``resources/subscribe`` (its updates
    need the session's ``GET`` stream, which stateless mode has not) and no capability claiming it."""
    request = ctx.request
    if request is None or not getattr(request, "scope", {}).get(STATELESS_SCOPE_KEY):
        return await call_next(ctx)
    if ctx.method in ("resources/subscribe", "resources/unsubscribe"):
        raise MCPError(types.METHOD_NOT_FOUND, "Method not found: stateless HTTP cannot deliver resource updates")
    result = await call_next(ctx)
    if ctx.method == "initialize" and isinstance(result, dict):
        resources = result.get("capabilities", {}).get("resources")
        if isinstance(resources, dict):
            resources.pop("subscribe", None)
    return result


@dataclass(slots=True)
class _Exchange:
    """The dispatch context of one fast-path request (``mcp.shared.dispatcher.DispatchContext``)."""

    transport: TransportContext
    request_id: Any
    message_metadata: ServerMessageMetadata
    progress_token: Any = None
    can_send_request: bool = False
    _cancel: anyio.Event | None = None

    @property
    def cancel_requested(self) -> anyio.Event:
        """Never set (a JSON response has no cancellation channel); made on first use, as most
        requests never look."""
        if self._cancel is None:
            self._cancel = anyio.Event()
        return self._cancel

    async def send_raw_request(self, method: str, params: Any, opts: Any = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Any, opts: Any = None) -> None:
        return None  # JSON-response mode: nothing but the response has a wire

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return dict(scope["headers"])


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _send_json(send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [*_JSON, (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _error_body(code: int, message: str, request_id: Any = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}).encode()


@dataclass
class HttpApp:
    """The ASGI app :func:`http_app` returns (see the module docstring)."""

    server: Server[Any]
    sdk_app: ASGIApp
    """The SDK's Starlette app: lifespan, other routes, and every request the fast path leaves."""
    sdk_endpoint: ASGIApp
    """The SDK's endpoint at the MCP path (the session manager's ASGI app, without auth)."""
    path: str
    stateless: bool
    json_response: bool
    security: TransportSecuritySettings
    max_body: int
    auth: ResourceServer | None = None
    metadata: dict[str, ASGIApp] = field(default_factory=dict)
    """RFC 9728 metadata endpoints by path (``{}`` without auth); see ``transport.auth``."""
    _guard: TransportSecurityMiddleware = field(init=False)
    _endpoint: ASGIApp = field(init=False)

    def __post_init__(self) -> None:
        self._guard = TransportSecurityMiddleware(self.security)
        self._endpoint = BearerGate(self._serve, self.auth, self.path) if self.auth is not None else self._serve

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (published := self.metadata.get(_route_path(scope))) is not None:
            await published(scope, receive, send)
            return
        if scope["type"] != "http" or _route_path(scope) != self.path:
            await self.sdk_app(scope, receive, send)
            return
        if self.stateless:
            scope[STATELESS_SCOPE_KEY] = True
        refused = await self._guard.validate_request(Request(scope), is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        if self.stateless and scope["method"] in ("GET", "DELETE"):
            await Response(status_code=405, headers={"Allow": "POST"})(scope, receive, send)
            return
        await self._endpoint(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await self.sdk_endpoint(scope, receive, send)
            return
        headers = _headers(scope)
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            await Response("Request body too large", status_code=413)(scope, receive, send)
            return
        body = await _read_body(receive)
        if len(body) > self.max_body:
            await Response("Request body too large", status_code=413)(scope, receive, send)
            return
        replay = _replay(body, receive)
        session = b"mcp-session-id" in headers
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1") or None
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            if self.json_response and not session:  # the SDK's own single-exchange entry, minus its wrapping
                state = _lifespan_state(self.server)
                await handle_modern_request(self.server, self.security, True, state, scope, replay, send)
            else:
                await self.sdk_endpoint(scope, replay, send)
        elif body.lstrip()[:1] == b"[":
            await self._batch(scope, send, body, version)
        elif self.stateless and self.json_response and not session:
            await self._legacy(scope, send, body, version)
        elif (refused := _invalid_id(body)) is not None:
            await _send_json(send, 400, refused)
        else:
            await self.sdk_endpoint(scope, replay, send)

    async def _legacy(self, scope: Scope, send: Send, body: bytes, version: str | None) -> None:
        """A 2025-era POST in stateless JSON mode, answered exactly as the SDK transport would."""
        request = Request(scope)
        refused = _post_refusal(_headers(scope))  # Host and Origin were checked in __call__
        if refused is not None:
            await refused(scope, _replay(body, None), send)
            return
        status, answer = await self._answer(request, body, version)
        if answer is None:
            await send({"type": "http.response.start", "status": status, "headers": _JSON})
            await send({"type": "http.response.body", "body": b""})
            return
        await _send_json(send, status, answer)

    async def _answer(self, request: Request, body: bytes, version: str | None) -> tuple[int, bytes | None]:
        """``(status, body)`` for one 2025-era message; ``None`` body for a notification (202)."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(body, by_name=False)
        except ValueError as exc:
            if not _parses(body):
                return 400, _error_body(types.PARSE_ERROR, f"Parse error: {exc}")
            return 400, _error_body(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC message")
        runner = ServerRunner(
            self.server,
            Connection.from_envelope(version or DEFAULT_NEGOTIATED_VERSION, None, None),
            _lifespan_state(self.server),
        )
        metadata = ServerMessageMetadata(request_context=request)
        transport = TransportContext(kind="streamable-http", can_send_request=False)
        try:
            if not isinstance(message, types.JSONRPCRequest):
                if isinstance(message, types.JSONRPCNotification) and (refused := _invalid_id(body)) is not None:
                    return 400, refused
                if isinstance(message, types.JSONRPCNotification):
                    await runner.on_notify(_Exchange(transport, None, metadata), message.method, message.params)
                return 202, None
            exchange = _Exchange(transport, message.id, metadata, _progress_token(message.params))
            return 200, await _respond(runner, exchange, message)
        finally:
            if getattr(runner.connection.exit_stack, "_exit_callbacks", True):  # empty (usual): no shielded scope
                await aclose_shielded(runner.connection)

    async def _batch(self, scope: Scope, send: Send, body: bytes, version: str | None) -> None:
        """A JSON-RPC batch: each element answered in turn for 2025-03-26, one -32600 otherwise."""
        try:
            items = json.loads(body)
        except (ValueError, RecursionError):
            await _send_json(send, 400, _error_body(types.PARSE_ERROR, "Parse error"))
            return
        if (version or DEFAULT_NEGOTIATED_VERSION) != BATCH_VERSION or not isinstance(items, list) or not items:
            message = f"Invalid request: JSON-RPC batches are only accepted at protocol version {BATCH_VERSION}"
            await _send_json(send, 400, _error_body(types.INVALID_REQUEST, message))
            return
        answers: list[Any] = []
        extra: list[tuple[bytes, bytes]] = []
        for item in items:
            status, got, extra = await self._one_of_batch(scope, json.dumps(item).encode(), version)
            if status >= 400 and not got:
                await send({"type": "http.response.start", "status": status, "headers": extra})
                await send({"type": "http.response.body", "body": b""})
                return
            answers += got
        if not answers:
            await send({"type": "http.response.start", "status": 202, "headers": extra})
            await send({"type": "http.response.body", "body": b""})
            return
        keep = [(k, v) for k, v in extra if k.lower() == b"mcp-session-id"]
        await _send_json(send, 200, json.dumps(answers).encode(), keep)

    async def _one_of_batch(
        self, scope: Scope, body: bytes, version: str | None
    ) -> tuple[int, list[Any], list[tuple[bytes, bytes]]]:
        """One batch element through the same serving path as a single POST; its JSON-RPC answers."""
        if self.stateless and self.json_response:
            status, answer = await self._answer(Request(scope), body, version)
            return status, ([] if answer is None else [json.loads(answer)]), []
        if (refused := _invalid_id(body)) is not None:
            return 400, [json.loads(refused)], []
        captured = _Capture()
        sub = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"content-length"]}
        await self.sdk_endpoint(sub, _replay(body, None), captured)
        return captured.status, captured.messages(), captured.headers


async def _respond(runner: ServerRunner[Any], exchange: _Exchange, message: types.JSONRPCRequest) -> bytes:
    """Run one request through the SDK kernel; the JSON-RPC response (legacy dispatcher's mapping)."""
    try:
        result = await runner.on_request(exchange, message.method, message.params)
    except Exception as exc:
        error = handler_exception_to_error_data(exc)
        if error is None:
            log.exception("handler for %r raised", message.method)
            error = types.ErrorData(code=0, message=str(exc))
        reply: Any = types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
    else:
        reply = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
    return reply.model_dump_json(by_alias=True, exclude_unset=True).encode()  # type: ignore[no-any-return]


def _invalid_id(body: bytes) -> bytes | None:
    """-32600 (``id: null``) for a request whose id is not a string or an integer, else ``None``.

    The message model reads such an id as a notification's extra field; answered 202, the client
    would wait for ever. Cheap for a notification: it has no ``"id"`` to look at.
    """
    if b'"id"' not in body:
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or "method" not in data or "id" not in data:
        return None
    request_id = data["id"]
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return None
    return _error_body(types.INVALID_REQUEST, "Invalid request: a request id must be a string or an integer")


def _progress_token(params: Mapping[str, Any] | None) -> Any:
    meta = (params or {}).get("_meta")
    return meta.get("progressToken") if isinstance(meta, Mapping) else None


def _parses(body: bytes) -> bool:
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True


def _post_refusal(headers: dict[bytes, bytes]) -> Response | None:
    """What the SDK transport answers a POST with the wrong Content-Type or Accept, else ``None``."""
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    if not content_type.lower().startswith("application/json"):
        return Response("Invalid Content-Type header", status_code=400)
    accepted = [t.strip().split(";")[0].strip().lower() for t in headers.get(b"accept", b"").decode().split(",")]
    if not any(t in ("*/*", "application/json", "application/*") for t in accepted):
        return Response(
            _error_body(types.INVALID_REQUEST, "Not Acceptable: Client must accept application/json"),
            status_code=406,
            media_type="application/json",
        )
    if not any(part.strip() == "application/json" for part in content_type.split(";")[0].split(",")):
        return Response(
            _error_body(types.INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"),
            status_code=415,
            media_type="application/json",
        )
    return None


def _replay(body: bytes, receive: Receive | None) -> Receive:
    """A ``receive`` that yields ``body`` once, then the real ``receive`` (a disconnect), if any."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if receive is not None:
            return await receive()
        await anyio.sleep_forever()

    return replay


class _Capture:
    """An ASGI ``send`` keeping one response: status, headers, body."""

    def __init__(self) -> None:
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = b""

    async def __call__(self, message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")

    def messages(self) -> list[Any]:
        """The JSON-RPC answers in the body (a JSON body, or the ``data:`` lines of an SSE body)."""
        if not self.body.strip():
            return []
        content_type = dict((k.lower(), v) for k, v in self.headers).get(b"content-type", b"")
        if content_type.startswith(b"text/event-stream"):
            found = []
            for line in self.body.decode().splitlines():
                if line.startswith("data:") and line[5:].strip():
                    data = json.loads(line[5:])
                    if isinstance(data, dict) and "id" in data and ("result" in data or "error" in data):
                        found.append(data)
            return found
        data = json.loads(self.body)
        return data if isinstance(data, list) else [data]


def _route_path(scope: Scope) -> str:
    path: str = scope["path"]
    root = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _lifespan_state(server: Server[Any]) -> Any:
    return server.session_manager._lifespan_state


def http_app(
    server: Server[Any],
    *,
    path: str = "/mcp",
    stateless: bool = False,
    json_response: bool = False,
    security: TransportSecuritySettings,
    auth: ResourceServer | None = None,
    routes: list[Any] | None = None,
    event_store: EventStore | None = None,
) -> HttpApp:
    """The ASGI app serving ``server`` at ``path`` (see the module docstring).

    :param security: from :func:`transport_policy` (the SDK applies it on its path too).
    :param auth: from :func:`~mcp_providers._serve.transport.auth.http_auth`; ``None`` serves
        without authentication.
    :param routes: extra Starlette routes served beside ``path`` (``/healthz``, ``/readyz``, ``/metrics``).
    :param event_store: makes session streams resumable (``_serve.events``; ignored when stateless).
    """
    sdk = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=stateless,
        json_response=json_response,
        transport_security=security,
        custom_starlette_routes=routes or [],
        event_store=None if stateless else event_store,
    )
    manager = server.session_manager
    scope_sessions = None if stateless else getattr(event_store, "scope", None)
    if scope_sessions is not None:  # one view of the store per session (_serve.events)
        scope_sessions(manager)
    if stateless_middleware not in server.middleware:
        # Outside the others: the pipeline's, innermost, answers resources/read itself.
        server.middleware.insert(0, stateless_middleware)
    return HttpApp(
        server=server,
        sdk_app=sdk,
        sdk_endpoint=manager.handle_request,
        path=path,
        stateless=stateless,
        json_response=json_response,
        security=security,
        max_body=manager.max_request_body_size,
        auth=auth,
        metadata=metadata_endpoints(auth, path) if auth is not None else {},
    )
