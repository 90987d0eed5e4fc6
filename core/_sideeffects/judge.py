"""Judging one HTTP request against the scope: safe methods without a body pass; anything else is
refused (enforce), recorded (warn), or let through by :func:`~.scope.exempt`. Every HTTP guard,
from the framework's client down to the socket, ends here."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextvars import ContextVar

from mcp_providers._sideeffects.scope import DOING, SAFE_METHODS, exempt_reason, log, scope_var
from mcp_providers.errors import SideEffectRefused

# Set while a guard that judged a whole request runs the real call: what it sends below (the
# connection under a pool, the socket under a connection) was judged already and is not again.
judged_above: ContextVar[bool] = ContextVar("mcp_providers_side_effect_judged_above", default=False)


@contextlib.contextmanager
def judged_here() -> Iterator[None]:
    """Within the block, the process-wide guards below a client (pools, connections, sockets)
    judge nothing: the caller judges each request itself (:func:`mcp_providers.http.client`)."""
    token = judged_above.set(True)
    try:
        yield
    finally:
        judged_above.reset(token)


class RefusedOnTheWire(SideEffectRefused, ConnectionError):
    """The socket guard's refusal. Also a ``ConnectionError``, so a library that takes a failed send
    for a lost connection (asyncio's transports) closes it quietly; the read fails with the refusal
    all the same (the invoker raises :attr:`Scope.refused` whatever the provider then raised)."""


def check_http(method: str, url: str, *, has_body: bool) -> bool:
    """Judge one HTTP request about to be sent; a no-op outside a scope.

    :param method: the request method, any case.
    :param url: the absolute URL (its query is left out of messages and records).
    :param has_body: whether the request carries a body (Content-Length > 0 or chunked).
    :returns: ``True`` when a non-safe request (or a body on a safe one) was let through, by
        :func:`exempt` or in ``mode="warn"``, and recorded; ``False`` when nothing needed judging.
    :raises SideEffectRefused: a non-safe method, or a body on a safe one, in enforce mode.
    """
    return judge_http(method, url, has_body, SideEffectRefused)


def judge_http(method: str, url: str, has_body: bool, error: type[SideEffectRefused]) -> bool:
    scope = scope_var.get()
    if scope is None:
        return False
    verb = method.upper()
    if verb in SAFE_METHODS and not has_body:
        return False
    shown = url.split("?", 1)[0]
    host = shown.split("://", 1)[-1].split("/", 1)[0]
    reason = exempt_reason.get()
    if reason is not None:
        scope.exemptions.append({"reason": reason, "method": verb, "host": host})
        log.info(
            "provider %r %s %s: %s to %s exempted: %s",
            scope.provider,
            DOING[scope.kind],
            scope.target,
            verb,
            host,
            reason,
        )
        return True
    attempted = f"a {verb} with a body to {shown}" if verb in SAFE_METHODS else f"a {verb} to {shown}"
    if error is RefusedOnTheWire:  # below every client: say so, it is where the client's guard was missed
        scope.attempt(attempted, "http", error=error, method=verb, host=host, layer="wire")
    else:
        scope.attempt(attempted, "http", error=error, method=verb, host=host)
    return True


READ_SAFE_MCP_METHODS = frozenset(
    {
        "resources/read", "resources/list", "resources/templates/list", "tools/list", "prompts/list",
        "prompts/get", "completion/complete", "ping", "notifications/cancelled", "notifications/progress",
    }
)  # fmt: skip
"""MCP methods that only read (MCP 2025-11-25 and 2026-07-28: ``resources/read`` returns a resource's
contents, the ``*/list`` methods and ``prompts/get`` return declarations, ``completion/complete``
suggestions, ``ping`` nothing; the two notifications change no server state). MCP over streamable
HTTP is a POST whatever the method, so forwarding a read to an upstream MCP server is a POST that
changes no more than the GET an HTTP provider would send: :func:`read_safe_mcp` lets it through a
scope, to the endpoint the client was made for only (:func:`mcp_providers.http.client`'s
``mcp_endpoint``: a POST elsewhere is judged as any POST, since a server that is not an MCP
server may act on any body)."""

MAX_MCP_BODY = 1 << 20
"""Largest body :func:`read_safe_mcp` parses (bytes); a larger one is judged as any POST."""


def read_safe_mcp(body: bytes) -> bool:
    """Whether ``body`` is one JSON-RPC 2.0 message, or a batch, of :data:`READ_SAFE_MCP_METHODS`
    only (a ``tools/call`` or anything else anywhere in it: ``False``; so is malformed JSON)."""
    if len(body) > MAX_MCP_BODY:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    messages = message if isinstance(message, list) else [message]
    return bool(messages) and all(
        isinstance(m, dict) and m.get("jsonrpc") == "2.0" and m.get("method") in READ_SAFE_MCP_METHODS for m in messages
    )


def path_of(url: str) -> str:
    rest = url.split("://", 1)[1] if "://" in url else url
    return "/" + rest.split("/", 1)[1] if "/" in rest else "/"
