"""JSON-RPC batches: the rules every transport applies before any element of one runs.

Batches exist only in protocol 2025-03-26 (added there, removed in 2025-06-18). Its lifecycle
keeps ``initialize`` out of them: it must be the first message, sent alone. A batch is refused
whole, with one -32600, when it is empty, arrives in a session of another version (or before
any), holds more than :data:`MAX_BATCH_ITEMS` messages, or holds an ``initialize`` request. The
HTTP and stdio transports both ask :func:`refusal`, so a batch is refused the same way, in the
same words, whichever way it came.

Source: MCP 2025-03-26, Base Protocol "JSON-RPC batching" and Lifecycle "Initialization".
"""

from __future__ import annotations

from typing import Any, Final

BATCH_VERSION: Final = "2025-03-26"
"""The only protocol version with JSON-RPC batches."""
MAX_BATCH_ITEMS: Final = 100
"""The most messages one batch may hold: the elements run one after another, so this bounds one
request's work (the specification sets no number; clients of 2025-03-26 send a few at most)."""


def refusal(items: list[Any], version: str | None) -> str | None:
    """The -32600 message refusing the batch ``items`` (parsed JSON values) in a session of
    ``version`` (``None``: not initialized), or ``None`` when its elements may run one by one."""
    if not items:
        return "Invalid request: an empty JSON-RPC batch (a batch holds at least one message)"
    if version != BATCH_VERSION:
        return (
            f"Invalid request: JSON-RPC batches are only accepted at protocol version {BATCH_VERSION} "
            f"(this session: {version or 'not initialized'}); send one message at a time"
        )
    if len(items) > MAX_BATCH_ITEMS:
        return (
            f"Invalid request: a JSON-RPC batch holds at most {MAX_BATCH_ITEMS} messages here, this one "
            f"{len(items)}; send the rest in further batches"
        )
    if any(opens_a_session(item) for item in items):
        return "Invalid request: initialize must not be part of a JSON-RPC batch; send it alone"
    return None


def opens_a_session(value: Any) -> bool:
    """Whether ``value`` (a parsed JSON-RPC message) is an ``initialize`` request."""
    return isinstance(value, dict) and value.get("method") == "initialize" and "id" in value
