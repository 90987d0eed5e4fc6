"""The small steps of the HTTP fast path around one POST: reading the body under its cap, the
refusals made before the SDK sees it (a task's ``Mcp-Name``, an unserved protocol version, a POST
without the right ``Accept`` or ``Content-Type``), JSON answers, replaying a body already read to
the SDK's app, and holding the status and headers of its response to a batch element."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.inbound import decode_header_value
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mcp_providers._serve.methods.tasks import TASK_METHODS
from mcp_providers._serve.transport.posted import (
    Posted,
    error_body,
)

_JSON = [(b"content-type", b"application/json")]


def headers_of(scope: Scope) -> dict[bytes, bytes]:
    return dict(scope["headers"])


def host_and_origin(scope: Scope) -> tuple[bytes | None, bytes | None]:
    """The first ``Host`` and ``Origin`` values of ``scope`` (``None`` when absent): what the SDK's
    DNS-rebinding check reads (starlette's ``Headers.get``)."""
    host = origin = None
    for name, value in scope["headers"]:
        if name == b"host":
            host = value if host is None else host
        elif name == b"origin":
            origin = value if origin is None else origin
    return host, origin


SINGLE_HEADERS = frozenset(
    {
        b"host",
        b"authorization",
        b"content-type",
        b"content-length",
        b"origin",
        b"mcp-protocol-version",
        b"mcp-session-id",
        b"last-event-id",
        b"mcp-method",
        b"mcp-name",
    }
)
"""Headers a request may carry once (RFC 9110 section 5.3: a field that is not a list; RFC 9112
section 3.2 for ``Host``). Layers that read a header differently (the first line, the last, both
joined) would otherwise judge one request as different ones."""


def inbound_headers(scope: Scope) -> tuple[Scope, bytes | None]:
    """``(scope, refusal)``: the request's headers as every layer will read them, or the 400 body
    refusing them.

    Refused: one of :data:`SINGLE_HEADERS` sent more than once, or an empty
    ``MCP-Protocol-Version`` (one layer would read it as absent, another as a version). Any other
    header sent more than once is a list (RFC 9110 section 5.3): its lines become one, joined with
    ", " (``Cookie``: "; "), so no layer reads only its first or last line. ``scope`` is returned
    as it was when nothing repeats.
    """
    headers = scope["headers"]
    once = dict(headers)
    if len(once) == len(headers):  # no name repeats (the usual request): only the version to look at
        version = once.get(b"mcp-protocol-version")
        return scope, None if version is None else _empty_version(version)
    seen: set[bytes] = set()
    repeated = False
    for name, value in headers:
        if name in seen:
            if name in SINGLE_HEADERS:
                shown = name.decode("latin-1")
                return scope, error_body(
                    types.INVALID_REQUEST, f"Bad Request: the {shown} header was sent more than once; send it once"
                )
            repeated = True
        seen.add(name)
        if name == b"mcp-protocol-version" and (refused := _empty_version(value)) is not None:
            return scope, refused
    return ({**scope, "headers": _joined(headers)} if repeated else scope), None


def _empty_version(value: bytes) -> bytes | None:
    """The 400 body refusing an ``MCP-Protocol-Version`` header that is empty or blank, else ``None``."""
    if not value.strip():
        message = "Bad Request: the MCP-Protocol-Version header is empty; send a protocol version or no header"
        return error_body(types.INVALID_REQUEST, message)
    return None


def _joined(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    lines: dict[bytes, list[bytes]] = {}
    for name, value in headers:
        lines.setdefault(name, []).append(value)
    return [(name, (b"; " if name == b"cookie" else b", ").join(values)) for name, values in lines.items()]


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or ``None`` as soon as more than ``limit`` bytes have arrived (a chunked
    body has no Content-Length to refuse it by: it is capped while it is read, never held whole)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def send_json(send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [*_JSON, (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def task_name_mismatch(posted: Posted, headers: Mapping[bytes, bytes]) -> bytes | None:
    """The 400 body (-32020) for a ``tasks/*`` request whose ``Mcp-Name`` is not its ``params.taskId``
    (absent included), else ``None``.

    SEP-2663 ("Streamable HTTP: Routing Headers"): the client MUST set ``Mcp-Name`` to
    ``params.taskId`` on these methods, so that intermediaries route a task's requests to where it
    lives; a header that disagrees with the body is refused as the SDK refuses such a ``tools/call``
    (SEP-2243; its table ``mcp.shared.inbound.NAME_BEARING_METHODS`` has no ``tasks/*`` rows).
    """
    data = posted.message
    if data is None or posted.method not in TASK_METHODS:
        return None
    params = data.get("params")
    task_id = params.get("taskId") if isinstance(params, dict) else None
    if not isinstance(task_id, str):
        return None  # no task id to mirror: the method's own params check answers
    header = headers.get(b"mcp-name")
    if decode_header_value(header.decode("latin-1") if header is not None else None) == task_id:
        return None
    message = (
        f"Mcp-Name header does not match the request body's 'taskId' parameter: {data['method']} over "
        "streamable HTTP carries its params.taskId as Mcp-Name (SEP-2663)"
    )
    return error_body(types.HEADER_MISMATCH, message, data.get("id"))


def unsupported_version(version: str, request_id: Any) -> bytes:
    """The 400 body for an ``MCP-Protocol-Version`` header naming a revision not served: -32022
    with the 2026-07-28 error data (``supported``, ``requested``), which SDK clients retry from.

    ``data.supported`` lists what ``server/discover`` lists (``supportedVersions``): the revisions
    a request may name per request, as the SDK's own -32022 does
    (``mcp.shared.inbound.unsupported_protocol_version_rejection``; conformance
    ``sep-2575-server-unsupported-version-error``). The message names the handshake revisions
    too, reached through ``initialize`` (round 4 item 23)."""
    modern, handshake = ", ".join(MODERN_PROTOCOL_VERSIONS), ", ".join(HANDSHAKE_PROTOCOL_VERSIONS)
    message = (
        f"Unsupported MCP-Protocol-Version header: {version[:64]!r}; this server supports {modern} per request, "
        f"and {handshake} through initialize (send one of them, or no header to be read as 2025-03-26)"
    )
    data = types.UnsupportedProtocolVersionErrorData(supported=list(MODERN_PROTOCOL_VERSIONS), requested=version[:64])
    error = {"code": types.UNSUPPORTED_PROTOCOL_VERSION, "message": message, "data": data.model_dump(mode="json")}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


def progress_token_of(params: Mapping[str, Any] | None) -> Any:
    meta = (params or {}).get("_meta")
    return meta.get("progressToken") if isinstance(meta, Mapping) else None


ACCEPTED_POSTS = 64
"""Most ``(Content-Type, Accept)`` pairs :func:`post_refusal` keeps as accepted; past them, every
pair is judged on each request (a client cannot grow the set without bound)."""
_accepted_posts: set[tuple[bytes | None, bytes | None]] = set()


def post_refusal(headers: dict[bytes, bytes]) -> Response | None:
    """What the SDK transport answers a POST with the wrong Content-Type or Accept, else ``None``.

    A function of the two values alone: a pair accepted once is kept (at most
    :data:`ACCEPTED_POSTS`) and not parsed again; a refused pair is judged every time."""
    pair = headers.get(b"content-type"), headers.get(b"accept")
    if pair in _accepted_posts:
        return None
    refused = _post_refusal(headers)
    if refused is None and len(_accepted_posts) < ACCEPTED_POSTS:
        _accepted_posts.add(pair)
    return refused


def _post_refusal(headers: dict[bytes, bytes]) -> Response | None:
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    if not content_type.lower().startswith("application/json"):
        return Response("Invalid Content-Type header", status_code=400)
    accept = headers.get(b"accept", b"").decode("latin-1")  # opaque octets (RFC 9110 5.5), as Starlette reads
    accepted = [t.strip().split(";")[0].strip().lower() for t in accept.split(",")]
    if not any(t in ("*/*", "application/json", "application/*") for t in accepted):
        return Response(
            error_body(types.INVALID_REQUEST, "Not Acceptable: Client must accept application/json"),
            status_code=406,
            media_type="application/json",
        )
    if not any(part.strip() == "application/json" for part in content_type.split(";")[0].split(",")):
        return Response(
            error_body(types.INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"),
            status_code=415,
            media_type="application/json",
        )
    return None


def replaying(body: bytes, receive: Receive | None) -> Receive:
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


class Held:
    """An ASGI ``send`` keeping the SDK transport's response to one batch element: its status and
    headers, and its body only when it refused the element (status 400 or over), to be sent on
    unchanged; an answer's body is never kept nor read (the answer is the element's ``Outcome``)."""

    def __init__(self) -> None:
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []

    async def __call__(self, message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body" and self.status >= 400:
            self._body.append(message.get("body", b""))

    def session_header(self) -> list[tuple[bytes, bytes]]:
        """The ``Mcp-Session-Id`` header the response handed out, if any (as a header list)."""
        return [(k, v) for k, v in self.headers if k.lower() == b"mcp-session-id"]

    async def replay(self, send: Send) -> None:
        """Send the kept refusal on, as the SDK wrote it."""
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": b"".join(self._body)})


def route_path(scope: Scope) -> str:
    path: str = scope["path"]
    root = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path
