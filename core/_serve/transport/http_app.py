"""Streamable HTTP: the SDK's transport, fronted by a fast path for exchanges that need no stream.

:func:`http_app` returns one ASGI app for every way of serving HTTP (``serve --http``,
``embedding.mount``). At the MCP path it does, before anything else:

- the Host/Origin (DNS-rebinding) policy of
  :func:`~mcp_providers._serve.transport.http_policy.transport_policy`, for every bind address (and
  on every other route too: ``ops.rebinding_refusal``);
- in stateless mode, ``405`` with ``Allow: POST`` for ``GET`` and ``DELETE`` (there is no session
  to hold a stream for, nor one to delete); in either mode ``405`` with ``Allow`` and no
  ``Mcp-Session-Id`` for any method but ``GET``, ``POST`` and ``DELETE`` (``PUT``, ``PATCH``...);
- a body over the size cap (413, counted while it is read, chunked or not), nested deeper than
  :data:`~mcp_providers._serve.transport.nesting.MAX_NESTING` (400 with -32600 and the request's
  id, as stdio answers it) or naming an ``MCP-Protocol-Version`` not served (400 with -32022);
- a body that is not JSON (400 with -32700): the body is parsed once
  (:mod:`~mcp_providers._serve.transport.posted`) and every guard below judges the parsed values,
  never its bytes, so a JSON escape (``"tasks\\/get"``) cannot step past one;
- a 2026-07-28 ``tasks/get``, ``tasks/update`` or ``tasks/cancel`` whose ``Mcp-Name`` is not its
  ``params.taskId`` (400 with -32020, as the SDK answers a ``tools/call`` naming another tool);
- JSON-RPC batches: answered as a batch, element by element, for 2025-03-26 (the only revision
  that has them), each element's answer taken from its handler chain
  (:mod:`~mcp_providers._serve.transport.http_outcome`), never parsed back out of the SDK's SSE or
  JSON output; one ``-32600`` with ``id: null`` otherwise;
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

A request refused by ``[server.limits]`` (``steps/ratelimit.py``) or the session quota is
answered with its JSON-RPC error as always, plus a ``Retry-After`` header, on every path: the
seconds travel on the error (-32009, ``data.retryAfter``), the exchange's
:class:`~mcp_providers._serve.transport.http_outcome.Outcome` records it, and
:func:`~mcp_providers._serve.transport.http_outcome.with_retry_after` adds the header when the
response starts. An SSE response has started before any handler runs, so there the JSON-RPC
error's ``data.retryAfter`` alone says it. The ops routes (``/healthz``, ``/readyz``,
``/metrics``) never reach the pipeline, so no limit applies to them.

The body is parsed once on our side (``transport.posted``; the fast path hands the parsed value
to the SDK's kernel, ``transport.fast_path``). Where the SDK's own HTTP entry answers, it is given
the bytes and parses them again, since it has no public entry taking a parsed message: the
2026-07-28 single exchange (``json.loads``) and the 2025-era transports, session or stateless
(``pydantic_core.from_json``), once per batch element there. ``tests/test_http_parses.py`` counts
them.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.server.streamable_http import EventStore
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_providers._serve.binding import around_pipeline
from mcp_providers._serve.identity import ResourceServer
from mcp_providers._serve.seams import lifespan_state, modern_request_handler
from mcp_providers._serve.steps.audit import AuditLog
from mcp_providers._serve.transport import batches
from mcp_providers._serve.transport.auth import BearerGate, metadata_endpoints
from mcp_providers._serve.transport.fast_path import OneExchange, fresh_connection, message_of, pushed, respond
from mcp_providers._serve.transport.http_cancel import (
    STATELESS_CANCEL,
    stateless_cancel_in_batch,
    unanswered_when_cancelled,
)
from mcp_providers._serve.transport.http_inbound import (
    Held,
    headers_of,
    host_and_origin,
    inbound_headers,
    post_refusal,
    progress_token_of,
    read_body,
    replaying,
    route_path,
    send_json,
    task_name_mismatch,
    unsupported_version,
)
from mcp_providers._serve.transport.http_outcome import (
    Answer,
    Outcome,
    Reply,
    audit_failure,
    current_outcome,
    dumped,
    exchange_middleware,
    parts,
    refusal,
    serving,
    with_retry_after,
)
from mcp_providers._serve.transport.http_policy import explained
from mcp_providers._serve.transport.manager import holds
from mcp_providers._serve.transport.manager import watch as watch_manager
from mcp_providers._serve.transport.nesting import MAX_MEMBERS, MAX_NESTING, request_id_of, too_deep, too_many
from mcp_providers._serve.transport.ops import rebinding_refusal
from mcp_providers._serve.transport.posted import (
    INVALID_ID,
    NOT_A_MESSAGE,
    Posted,
    error_body,
    has_invalid_id,
    invalid_id,
    is_cancel_notification,
    is_message,
    parse,
    parse_error,
    request_id,
)
from mcp_providers._serve.transport.sessions import SessionQuota
from mcp_providers.config import LimitsSettings

log = logging.getLogger("mcp_providers.http")

_JSON = [(b"content-type", b"application/json")]
_Headers = dict[bytes, bytes]
_EMPTY = (b"content-length", b"0")
_SERVED_METHODS = ("GET", "POST", "DELETE")  # any other is answered 405 here: the SDK's names a made-up session


ACCEPTED_PAIRS = 256
"""Most ``(Host, Origin)`` pairs an app keeps as accepted by its DNS-rebinding policy; any pair
past them is judged on every request (a client cannot grow the set without bound)."""

SUPPORTED_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
"""Every ``MCP-Protocol-Version`` header value served; any other is answered 400 naming them."""


@dataclass
class HttpApp:
    """The ASGI app :func:`http_app` returns (see the module docstring)."""

    server: Server[Any]
    sdk_app: ASGIApp
    """The SDK's Starlette app: lifespan, other routes, and every request the fast path leaves."""
    sdk_endpoint: ASGIApp
    """The SDK's endpoint at the MCP path (the session manager's ASGI app, without auth)."""
    manager: Any
    """The server's session manager (kept: ``Server.session_manager`` is a property of the SDK's)."""
    path: str
    stateless: bool
    json_response: bool
    security: TransportSecuritySettings
    max_body: int
    auth: ResourceServer | None = None
    metadata: dict[str, ASGIApp] = field(default_factory=dict)
    """RFC 9728 metadata endpoints by path (``{}`` without auth); see ``transport.auth``."""
    sessions: SessionQuota | None = None
    """Each caller's 2025-era session quota (``transport.sessions``); ``None`` when stateless."""
    audit: AuditLog | None = None
    """Where an exchange that fails before its response is audited (the composition's)."""
    _guard: TransportSecurityMiddleware = field(init=False)
    _accepted: set[tuple[bytes | None, bytes | None]] = field(init=False, default_factory=set)
    """``(Host, Origin)`` pairs the DNS-rebinding policy accepted (:meth:`rebinding_refusal`)."""
    _endpoint: ASGIApp = field(init=False)

    def __post_init__(self) -> None:
        self._guard = TransportSecurityMiddleware(self.security)
        self._endpoint = BearerGate(self._serve, self.auth, self.path) if self.auth is not None else self._serve

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.sdk_app(scope, receive, send)
            return
        scope, refused_headers = inbound_headers(scope)  # before any layer reads one of their copies
        if refused_headers is not None:
            await send_json(send, 400, refused_headers)
            return
        path = route_path(scope)
        if path != self.path:
            if (refused := await rebinding_refusal(self.security, Request(scope))) is not None:
                await refused(scope, receive, send)  # every route has the MCP path's Host/Origin policy
                return
            published = self.metadata.get(path)
            await (published or self.sdk_app)(scope, receive, send)
            return
        refused = await self.rebinding_refusal(scope)
        if refused is not None:
            await refused(scope, receive, send)
            return
        if (self.stateless and scope["method"] in ("GET", "DELETE")) or scope["method"] not in _SERVED_METHODS:
            allowed = "POST" if self.stateless else ", ".join(_SERVED_METHODS)
            await Response(status_code=405, headers={"Allow": allowed})(scope, receive, send)
            return
        await self._endpoint(scope, receive, send)

    async def rebinding_refusal(self, scope: Scope) -> Response | None:
        """The 421 (Host) or 403 (Origin) refusing an HTTP request to the MCP path under this app's
        DNS-rebinding policy (:func:`~.http_policy.explained`), else ``None``; the first check of
        such a request, before anything reads who is asking (``transport.mounted``).

        The SDK's check is a function of the ``Host`` and ``Origin`` values alone (``security`` is
        not changed once the app is made), so a pair it accepted is kept and not judged again
        (at most :data:`ACCEPTED_PAIRS`); a refused pair is judged, and refused, every time.
        """
        pair = host_and_origin(scope)
        if pair in self._accepted:
            return None
        request = Request(scope)
        refused = await self._guard.validate_request(request, is_post=False)
        if refused is not None:
            return explained(refused, request)
        if len(self._accepted) < ACCEPTED_PAIRS:
            self._accepted.add(pair)
        return None

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        # What the handler chain makes of it (transport.http_outcome); the answer itself is written
        # by the path that made it, so only a refusal is recorded (its Retry-After).
        outcome = Outcome(stateless=self.stateless, keeps_result=False)
        with serving(outcome):
            try:
                await self._exchange(scope, receive, with_retry_after(outcome, send), outcome)
            except Exception as exc:
                if outcome.started:  # nothing more can be said on this response: the server closes it
                    raise
                # As stdio answers a line whose reading fails: -32603, no internals, the traceback logged.
                log.exception("an HTTP exchange failed before its response started")
                audit_failure(self.audit, Request(scope), outcome.method, exc)
                await send_json(send, 500, _FAILED if outcome.request_id is None else _failed(outcome.request_id))

    async def _exchange(self, scope: Scope, receive: Receive, send: Send, outcome: Outcome) -> None:
        headers = headers_of(scope)
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1") or None
        if scope["method"] != "POST":
            if version is not None and version not in SUPPORTED_VERSIONS:
                await send_json(send, 400, unsupported_version(version, None))
                return
            await self.sdk_endpoint(self._without_replay(scope), receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            await Response("Request body too large", status_code=413)(scope, receive, send)
            return
        body = await read_body(receive, self.max_body)
        if body is None:
            await Response("Request body too large", status_code=413, headers={"Connection": "close"})(
                scope, receive, send
            )
            return
        if version is not None and version not in SUPPORTED_VERSIONS:
            await send_json(send, 400, unsupported_version(version, request_id_of(body)))
            return
        if body.count(b"{") + body.count(b"[") > MAX_NESTING and (deep := too_deep(body)) is not None:
            await send_json(send, 400, json.dumps(deep).encode())  # as stdio answers it
            return
        if body.count(b",") >= MAX_MEMBERS and (many := too_many(body)) is not None:
            await send_json(send, 400, json.dumps(many).encode())  # before it is parsed, as stdio
            return
        posted = parse(body)  # once: every guard below judges the parsed values (transport.posted)
        if (refused := parse_error(posted)) is not None:
            wrong = post_refusal(headers)  # a wrong Content-Type or Accept is answered first, as the SDK does
            if wrong is not None:
                await wrong(scope, replaying(body, None), send)
            else:
                await send_json(send, 400, refused)
            return
        outcome.request_id, outcome.method = request_id(posted.value), posted.method
        await self._posted(scope, replaying(body, receive), send, posted, version, headers)

    async def _posted(
        self, scope: Scope, replay: Receive, send: Send, posted: Posted, version: str | None, headers: _Headers
    ) -> None:
        """A POST whose body is JSON (``posted``), to the path that answers it (``headers``: the
        scope's, as :func:`~.http_inbound.headers_of` reads them)."""
        session = b"mcp-session-id" in headers
        if posted.batch is not None:  # any version: ours is the one answer (-32600 but at 2025-03-26)
            await self._batch(scope, send, posted.batch, version)
        elif version in MODERN_PROTOCOL_VERSIONS and (refused := task_name_mismatch(posted, headers)) is not None:
            await send_json(send, 400, refused)
        elif version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            if self.json_response and not session:  # the SDK's own single-exchange entry, minus its wrapping
                state = lifespan_state(self.manager)
                handle = modern_request_handler()
                await handle(self.server, self.security, True, state, scope, replay, send)
            else:
                await self.sdk_endpoint(scope, replay, send)
        elif self.stateless and is_cancel_notification(posted.value):
            await send_json(send, 400, error_body(types.INVALID_REQUEST, STATELESS_CANCEL))
        elif self.stateless and self.json_response and not session:
            await self._legacy(scope, send, posted, version, headers)
        elif (refused := invalid_id(posted)) is not None:
            await send_json(send, 400, refused)
        else:
            await self._to_sdk(scope, replay, send if self.stateless else unanswered_when_cancelled(send), posted.value)

    async def _to_sdk(self, scope: Scope, receive: Receive, send: Send, value: Any) -> None:
        """The SDK's endpoint for the parsed message ``value``; a 2025-era POST without
        ``Mcp-Session-Id`` is answered 400 unless it is an ``initialize`` request (as the SDK
        answers it, but without opening a session first), and an ``initialize`` first passes its
        caller's session quota (429 and ``Retry-After`` when it does not: the refusal is the
        exchange's :class:`Outcome` error)."""
        quota = self.sessions
        if quota is None or any(k == b"mcp-session-id" for k, _ in scope["headers"]):
            await self.sdk_endpoint(scope, receive, send)
            return
        if not batches.opens_a_session(value):  # the SDK would open a session only to refuse it (and keep it)
            await send_json(send, 400, _MISSING_SESSION)
            return
        if (refused := quota.refusal(scope)) is not None:
            outcome = current_outcome()
            if outcome is not None:
                outcome.error = refused
            reply = types.JSONRPCError(jsonrpc="2.0", id=None, error=refused)
            await send_json(send, 429, dumped(reply))
            return
        with quota.opening(scope, send) as counted:
            await self.sdk_endpoint(scope, receive, counted)

    def _without_replay(self, scope: Scope) -> Scope:
        """``scope`` without ``Last-Event-ID`` when no event store can replay (the SDK fails with
        500 on it): resuming is optional (streamable HTTP, "Resumability and Redelivery"), so the
        client gets a fresh stream, as it would without the header."""
        if self.manager.event_store is not None:
            return scope
        if not any(k == b"last-event-id" for k, _ in scope["headers"]):
            return scope
        return {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"last-event-id"]}

    async def _legacy(self, scope: Scope, send: Send, posted: Posted, version: str | None, headers: _Headers) -> None:
        """A 2025-era POST in stateless JSON mode, answered exactly as the SDK transport would."""
        refused = post_refusal(headers)  # Host and Origin were checked in __call__
        if refused is not None:
            await refused(scope, replaying(posted.raw, None), send)
            return
        status, answer = await self._answer(Request(scope), posted.value, version)
        if answer is None:
            await send({"type": "http.response.start", "status": status, "headers": _JSON})
            await send({"type": "http.response.body", "body": b""})
            return
        await send_json(send, status, dumped(answer))

    async def _answer(self, request: Request, value: Any, version: str | None) -> tuple[int, Answer | None]:
        """``(status, answer)`` for one parsed 2025-era message; ``None`` answer for a notification (202)."""
        try:
            message = message_of(value)  # the parsed value
        except ValueError:
            return 400, refusal(types.INVALID_REQUEST, NOT_A_MESSAGE)
        connection = fresh_connection(version or DEFAULT_NEGOTIATED_VERSION)
        runner = ServerRunner(self.server, connection, lifespan_state(self.manager))
        metadata = ServerMessageMetadata(request_context=request)
        transport = _STATELESS_JSON
        try:
            if not isinstance(message, types.JSONRPCRequest):
                if isinstance(message, types.JSONRPCNotification) and has_invalid_id(value):
                    return 400, refusal(types.INVALID_REQUEST, INVALID_ID)
                if isinstance(message, types.JSONRPCNotification):
                    await runner.on_notify(OneExchange(transport, None, metadata), message.method, message.params)
                return 202, None
            exchange = OneExchange(transport, message.id, metadata, progress_token_of(message.params))
            return 200, await respond(runner, exchange, message)
        finally:
            if pushed(connection.exit_stack):  # nothing pushed (usual): no shielded scope
                await aclose_shielded(connection)

    async def _batch(self, scope: Scope, send: Send, items: list[Any], version: str | None) -> None:
        """A JSON-RPC batch (parsed): each element answered in turn for 2025-03-26, one -32600 otherwise.

        Each element's answer is the message its handler chain made (:class:`Outcome`), never read
        back from the bytes the SDK's transport wrote. An element the transport refuses before any
        handler runs (an unknown session, say) refuses the batch with that response, unchanged.
        """
        if (message := batches.refusal(items, version or DEFAULT_NEGOTIATED_VERSION)) is not None:
            await send_json(send, 400, error_body(types.INVALID_REQUEST, message))
            return
        if self.stateless and (refused := stateless_cancel_in_batch(items)) is not None:
            await send_json(send, 400, refused)
            return
        answers: list[Reply] = []
        kept: list[tuple[bytes, bytes]] = []  # the last Mcp-Session-Id an element was handed
        waits: list[int] = []
        for item in items:
            outcome, held = await self._one_of_batch(scope, item, version)
            if held is not None and held.status >= 400 and not outcome.answered:
                await held.replay(send)
                return
            if (answer := outcome.answer()) is not None:
                answers.append(answer)
            if held is not None and (handed := held.session_header()):
                kept = handed
            waits += [outcome.retry_after] if outcome.retry_after is not None else []
        kept += [(b"retry-after", str(max(waits)).encode())] if waits else []
        if not answers:
            await send({"type": "http.response.start", "status": 202, "headers": [*kept, _EMPTY]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send_json(send, 200, b"[" + b",".join(dumped(a) for a in answers) + b"]", kept)

    async def _one_of_batch(self, scope: Scope, item: Any, version: str | None) -> tuple[Outcome, Held | None]:
        """One batch element through the same serving path as a single POST: its :class:`Outcome`, and
        the SDK transport's response (status and headers; the body only when it refused the element)."""
        outcome = Outcome(stateless=self.stateless, request_id=request_id(item))
        fast = self.stateless and self.json_response
        if has_invalid_id(item) or (not fast and not is_message(item)):  # refused as a single POST would be
            why = INVALID_ID if has_invalid_id(item) else NOT_A_MESSAGE
            outcome.request_id, outcome.error = None, types.ErrorData(code=types.INVALID_REQUEST, message=why)
            return outcome, None
        with serving(outcome):
            if fast:
                _, answer = await self._answer(Request(scope), item, version)
                outcome.result, outcome.error = parts(answer)  # the chain's record, or this path's catch-all
                return outcome, None
            held = Held()
            sub = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"content-length"]}
            await self._to_sdk(sub, replaying(json.dumps(item).encode(), None), held, item)
        return outcome, held


_STATELESS_JSON = TransportContext(kind="streamable-http", can_send_request=False)
"""The transport of every fast-path exchange (the SDK's dataclass is frozen: one serves them all)."""

_FAILED_MESSAGE = "Internal error: the request could not be answered; the server log has the details"
_FAILED = error_body(types.INTERNAL_ERROR, _FAILED_MESSAGE)
"""What a POST whose exchange failed before its response started is answered (500), ``id: null``."""


def _failed(request_id: str | int) -> bytes:
    """:data:`_FAILED` under the request's id (the client's call resolves)."""
    return error_body(types.INTERNAL_ERROR, _FAILED_MESSAGE, request_id)


_MISSING_SESSION = error_body(types.INVALID_REQUEST, "Bad Request: Missing session ID")
"""What the SDK's transport answers a 2025-era POST without a session that is no ``initialize``."""


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
    limits: LimitsSettings | None = None,
    audit: AuditLog | None = None,
) -> HttpApp:
    """The ASGI app serving ``server`` at ``path`` (see the module docstring).

    :param security: from :func:`~mcp_providers._serve.transport.http_policy.transport_policy` (the
        SDK applies it on its path too).
    :param auth: from :func:`~mcp_providers._serve.transport.auth.http_auth`; ``None`` serves
        without authentication.
    :param routes: extra Starlette routes served beside ``path`` (``/healthz``, ``/readyz``, ``/metrics``).
    :param event_store: makes session streams resumable (``_serve.events``; ignored when stateless).
    :param limits: ``[server.limits]``: the session quota per caller (``transport.sessions``) reads it.
    :param audit: the composition's audit log (``runtime.audit``), for an exchange that fails.
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
    watch_manager(manager)  # its run and its sessions, for /healthz, the session quota and shutdown
    if not around_pipeline(server, exchange_middleware) and exchange_middleware not in server.middleware:
        server.middleware.insert(0, exchange_middleware)  # a server of someone else's: outside its middleware
    return HttpApp(
        server=server,
        sdk_app=sdk,
        sdk_endpoint=manager.handle_request,
        manager=manager,
        path=path,
        stateless=stateless,
        json_response=json_response,
        security=security,
        max_body=manager.max_request_body_size,
        auth=auth,
        metadata=metadata_endpoints(auth, path) if auth is not None else {},
        sessions=None if stateless else SessionQuota(functools.partial(holds, manager), limits),
        audit=audit,
    )
