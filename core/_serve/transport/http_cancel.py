"""Cancellation on the HTTP paths: a request the client cancelled is never answered (as the SDK's
dispatcher does), in a single exchange, a stream or a 2025-03-26 batch."""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types
from starlette.types import Send

from mcp_providers._serve.transport.posted import (
    error_body,
    is_cancel_notification,
)

REQUEST_CANCELLED = -32800
"""What the SDK's 2025-era transport writes for a request its client cancelled
(``mcp.server.streamable_http.REQUEST_CANCELLED``); only for those."""


def answers_a_cancel(message: Any) -> bool:
    error = message.get("error") if isinstance(message, dict) else None
    return isinstance(error, dict) and error.get("code") == REQUEST_CANCELLED and "id" in message


def unanswered_when_cancelled(send: Send) -> Send:
    """``send``, leaving out the answer the SDK writes for a request its client cancelled.

    JSON-RPC and MCP (2025-11-25, "Cancellation"): the receiver of a cancellation SHOULD NOT
    answer the request; clients drop it as an "unknown message ID". On an SSE stream the event is
    left out and the stream ends; a JSON response becomes ``202 Accepted`` with no body (nothing
    to answer). Anything else passes unchanged.
    """
    held: list[Any] = []

    async def filtered(message: Any) -> None:
        if message["type"] == "http.response.start":
            content_type = dict(message.get("headers", [])).get(b"content-type", b"")
            if content_type.startswith(b"application/json"):
                held.append(message)  # the body decides
                return
        elif message["type"] == "http.response.body" and held:
            start = held.pop()
            if message.get("more_body") or not _is_cancel_answer(message.get("body", b"")):
                await send(start)
            else:
                await send({"type": "http.response.start", "status": 202, "headers": _kept(start)})
                message = {"type": "http.response.body", "body": b""}
        elif message["type"] == "http.response.body" and b"-32800" in message.get("body", b""):
            message = {**message, "body": _without_cancel_events(message["body"])}
        await send(message)

    return filtered


def _kept(start: Any) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-type", b"content-length")]


def _is_cancel_answer(body: bytes) -> bool:
    # A byte test that cannot be escaped past: the body is the SDK's own JSON output, never the
    # client's, and a JSON number has no escape (RFC 8259 §6); pydantic writes the code as -32800.
    if b"-32800" not in body:
        return False
    try:
        return answers_a_cancel(json.loads(body))
    except (ValueError, RecursionError):
        return False


def _without_cancel_events(chunk: bytes) -> bytes:
    """An SSE chunk without the events whose data answers a cancelled request."""
    events = re.findall(rb".*?(?:\r\n\r\n|\n\n)|.+", chunk, re.DOTALL)
    kept = []
    for event in events:
        data = b"".join(line[5:] for line in event.splitlines() if line.startswith(b"data:"))
        if not (data and _is_cancel_answer(data.strip())):
            kept.append(event)
    return b"".join(kept)


STATELESS_CANCEL = (
    "notifications/cancelled cannot be honoured on stateless HTTP: the request it names ran in "
    "another exchange, with no session to find it in; serve with sessions to cancel requests"
)


def stateless_cancel_in_batch(items: list[Any]) -> bytes | None:
    """The 400 for a stateless batch holding a cancel: refused whole, before any element runs,
    since answering the rest would accept and ignore the cancel again."""
    for index, item in enumerate(items):
        if is_cancel_notification(item):
            return error_body(types.INVALID_REQUEST, f"{STATELESS_CANCEL} (batch element {index})")
    return None
