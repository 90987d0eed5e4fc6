"""The body of one HTTP POST to the MCP path, parsed once; every guard of ``http_app`` reads it.

A guard that looks for bytes in the raw body (``b'"tasks/'``, ``b'"id"'``,
``b"notifications/cancelled"``) before deciding whether to run is skipped by a JSON escape:
``"tasks\\/get"``, ``"\\u0069d"`` and ``"notifications\\u002fcancelled"`` are the same strings to
the JSON parser that serves the request (RFC 8259 §7), but not the same bytes. So the body is
parsed once, here, with the parser the SDK's 2026-07-28 entry uses (``json.loads``: the same
values, the same encodings), and every guard judges the parsed values (:class:`Posted`).

A body this parser refuses is refused here, before any guard or handler (:func:`parse_error`),
saying so: no guard is ever skipped because it could not read a body that a parser further on
might accept (the SDK's 2025-era transport parses with ``pydantic_core``, another parser; today it
refuses all that ``json.loads`` refuses, and that must not be what the guards rely on).

Refused here too, as ``pydantic_core`` refuses them, so every HTTP path answers them alike (-32700):
a body that is not UTF-8 (``json.loads`` of bytes would read UTF-16, UTF-32 and a UTF-8 BOM; RFC
8259 section 8.1 says UTF-8), and a string holding a lone surrogate escape (``"\\ud800"``), which no
UTF-8 text can carry: such a method or id failed the answer's serialization (500, round 18).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_providers._serve.steps.surrogates import encodable
from mcp_providers._serve.transport.nesting import long_integer

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A ``\\u`` escape of a surrogate (U+D800 to U+DFFF); a valid pair decodes to one character."""
LONE_SURROGATE = "a string holds a lone surrogate escape (U+D800 to U+DFFF unpaired), which UTF-8 cannot carry"


@dataclass(frozen=True, slots=True)
class Posted:
    """One parsed POST body.

    :ivar raw: the bytes as received.
    :ivar value: the JSON value they hold (``None`` when :attr:`error` is set).
    :ivar error: why they are not JSON (the parser's message), else ``None``.
    """

    raw: bytes
    value: Any = None
    error: str | None = None
    refusal: dict[str, Any] | None = None
    """The JSON-RPC error answering a body that is JSON but holds an integer Python will not
    convert (``nesting.long_integer``), else ``None``."""

    @property
    def batch(self) -> list[Any] | None:
        """The elements when the body is a JSON array (a JSON-RPC batch), else ``None``."""
        return self.value if isinstance(self.value, list) else None

    @property
    def message(self) -> Mapping[str, Any] | None:
        """The body when it is one JSON object (one JSON-RPC message), else ``None``."""
        return self.value if isinstance(self.value, dict) else None

    @property
    def method(self) -> str | None:
        """The message's ``method`` when it is a string, else ``None``."""
        message = self.message
        method = message.get("method") if message is not None else None
        return method if isinstance(method, str) else None


def parse(raw: bytes) -> Posted:
    """``raw`` parsed once (see the module docstring); never raises.

    The nesting guard (``transport.nesting``) has already refused anything deep enough to exhaust
    the recursion limit; ``RecursionError`` is caught anyway, as a parse error.
    """
    try:
        text = raw.decode("utf-8")  # strictly: no BOM, UTF-16 or UTF-32 (json.loads of bytes reads them)
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError covers UnicodeDecodeError, long integers
        return Posted(raw, error=str(exc)[:200] or type(exc).__name__, refusal=long_integer(raw, exc))
    if _SURROGATE_ESCAPE.search(text) is not None and not encodable(json.dumps(value, ensure_ascii=False)):
        return Posted(raw, error=LONE_SURROGATE)  # an escaped backslash or a valid pair matches too: judged
    return Posted(raw, value)


def error_body(code: int, message: str, request_id: Any = None) -> bytes:
    """A JSON-RPC error response as bytes."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}).encode()


def parse_error(posted: Posted) -> bytes | None:
    """The -32700 body (``id: null``) answering a body that is not JSON, else ``None``; for one
    that is JSON holding an integer too long to convert, its -32602 (:attr:`Posted.refusal`)."""
    if posted.error is None:
        return None
    if posted.refusal is not None:
        return json.dumps(posted.refusal).encode()
    return error_body(types.PARSE_ERROR, f"Parse error: the request body is not JSON ({posted.error})")


INVALID_ID = "Invalid request: a request id must be a string or an integer"
NOT_A_MESSAGE = "Invalid request: not a JSON-RPC message"


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def has_invalid_id(value: Any) -> bool:
    """Whether ``value`` (parsed) is a request whose id is not a string or an integer.

    The message model reads such an id as a notification's extra field; answered 202, the client
    would wait for ever.
    """
    return isinstance(value, dict) and "method" in value and "id" in value and not _is_id(value["id"])


def invalid_id(posted: Posted) -> bytes | None:
    """-32600 (``id: null``) for a request whose id is not a string or an integer (:func:`has_invalid_id`),
    else ``None``."""
    return error_body(types.INVALID_REQUEST, INVALID_ID) if has_invalid_id(posted.value) else None


def request_id(value: Any) -> str | int | None:
    """The id of ``value`` (parsed) when it is a request with a string or integer id, else ``None``."""
    if isinstance(value, dict) and "method" in value and _is_id(value.get("id")):
        found: str | int = value["id"]
        return found
    return None


def is_cancel_notification(message: Any) -> bool:
    """Whether ``message`` (a parsed JSON value) is a ``notifications/cancelled`` notification."""
    return isinstance(message, dict) and message.get("method") == "notifications/cancelled" and "id" not in message


def is_message(value: Any) -> bool:
    """Whether a parsed value is one JSON-RPC message (validated as a value: it is not parsed again)."""
    try:
        types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValueError:
        return False
    return True
