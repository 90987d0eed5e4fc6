"""What the handler chain made of one HTTP exchange, handed to the HTTP app as a value.

The HTTP app (:mod:`~mcp_providers._serve.transport.http_app`) opens an :class:`Outcome` for each
request it serves at the MCP path (:func:`serving`); :func:`exchange_middleware`, the outermost
SDK server middleware, reads it and fills it in:

- ``stateless``: the app serves without sessions, so no 2025 ``resources/subscribe`` and no
  ``subscribe``/``listChanged`` claimed in ``initialize`` (the middleware applies it; no step reads
  a flag from the ASGI scope);
- ``answer``: the JSON-RPC answer the chain made for the request with ``request_id``, as a message
  (:meth:`Outcome.answer`): a 2025-03-26 batch element is answered from it, never from the bytes
  the SDK's transport wrote (no SSE re-parsed); a request the client cancelled gets none;
- :attr:`Outcome.retry_after`: the seconds of a refusal's ``data.retryAfter`` (-32009, ``[server.limits]``
  or the session quota), which :func:`with_retry_after` sends as the ``Retry-After`` header.

The record travels by a context variable, the way the SDK carries its own auth context from the
ASGI request to the handler: the SDK's dispatcher runs each handler in the context of the task
that wrote the request into the session (``mcp.shared.jsonrpc_dispatcher``: "ASGI middleware (auth,
OTel) sets contextvars on the task that wrote the message"), which is the HTTP request's task, on
every HTTP path (fast path, 2026-07-28 single exchange, stateless and session transports).
"""

from __future__ import annotations

import contextvars
import logging
import math
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from pydantic import BaseModel
from starlette.types import Message, Send

from mcp_providers._serve.steps.audit import AuditLog
from mcp_providers._serve.steps.exchange import request_principal
from mcp_providers.errors import RATE_LIMITED

log = logging.getLogger("mcp_providers.http")

Reply = types.JSONRPCResponse | types.JSONRPCError
"""One JSON-RPC answer, as the SDK's models."""


@dataclass(frozen=True, slots=True)
class Answered:
    """A request's result under its id, not made a :class:`~mcp_types.JSONRPCResponse`: what the
    fast path writes at once (:func:`dumped` gives the bytes the model would)."""

    id: str | int
    result: dict[str, Any]


Answer = Reply | Answered
"""One JSON-RPC answer as a path that makes it holds it."""


@dataclass(slots=True)
class Outcome:
    """The record of one HTTP exchange (see the module docstring).

    :ivar stateless: the app serves without sessions.
    :ivar request_id: the id of the request whose answer is recorded (``None``: none is).
    :ivar result: its result (the wire dict), once answered.
    :ivar error: its error, once refused; or the transport's own refusal (the session quota).
    """

    stateless: bool = False
    request_id: Any = None
    result: dict[str, Any] | None = None
    error: types.ErrorData | None = None
    claimed: bool = False
    """Whether a request under ``request_id`` reached the middleware (only that one is recorded)."""
    keeps_result: bool = True
    """Whether a result is recorded (a batch element's is its answer); a single POST's answer is
    written by the path that made it, so its outcome records errors only (``Retry-After``)."""
    method: str | None = None
    """The request's ``method``, once its body is parsed (for the audit line of a failure)."""
    started: bool = False
    """Whether the response has started (:func:`with_retry_after` saw its start): until then a
    failure of the exchange can still be answered (``HttpApp._serve``)."""

    @property
    def answered(self) -> bool:
        """Whether a result or an error was recorded."""
        return self.result is not None or self.error is not None

    def answer(self) -> Reply | None:
        """The JSON-RPC answer for ``request_id``, or ``None`` when none was made (a notification,
        a request its client cancelled)."""
        if self.error is not None:
            return types.JSONRPCError(jsonrpc="2.0", id=self.request_id, error=self.error)
        if self.result is not None:
            return types.JSONRPCResponse(jsonrpc="2.0", id=self.request_id, result=self.result)
        return None

    @property
    def retry_after(self) -> int | None:
        """Whole seconds (>= 1) of the recorded error's ``data.retryAfter`` when it is a -32009
        refusal, else ``None``."""
        return retry_after_of(self.error)


def retry_after_of(error: types.ErrorData | None) -> int | None:
    """``data.retryAfter`` of a -32009 (``RATE_LIMITED``) error, at least 1; ``None`` for any other."""
    if error is None or error.code != RATE_LIMITED or not isinstance(error.data, dict):
        return None
    seconds = error.data.get("retryAfter")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    return max(1, math.ceil(seconds))


def dumped(reply: Answer) -> bytes:
    """One JSON-RPC answer as the SDK's transport writes it."""
    if isinstance(reply, Answered):
        # What model_dump_json writes for the response model: its three fields in order, the
        # result (a dict[str, Any]) serialized by type inference, as the model serializes Any.
        return pydantic_core.to_json({"jsonrpc": "2.0", "id": reply.id, "result": reply.result})
    return reply.model_dump_json(by_alias=True, exclude_unset=True).encode()


def refusal(code: int, message: str) -> types.JSONRPCError:
    """A JSON-RPC error answering a message whose id could not be read (``id: null``)."""
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message))


def parts(answer: Answer | None) -> tuple[dict[str, Any] | None, types.ErrorData | None]:
    """``(result, error)`` of an answer (both ``None`` for a notification's)."""
    if isinstance(answer, types.JSONRPCError):
        return None, answer.error
    return (answer.result, None) if answer is not None else (None, None)


_current: contextvars.ContextVar[Outcome | None] = contextvars.ContextVar("mcp_providers.http_outcome", default=None)


class _Serving:
    """The context manager :func:`serving` returns (a class: entered once per HTTP request, where a
    generator-based one costs a few calls more)."""

    __slots__ = ("_outcome", "_token")

    def __init__(self, outcome: Outcome) -> None:
        self._outcome = outcome

    def __enter__(self) -> Outcome:
        self._token = _current.set(self._outcome)
        return self._outcome

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._token)


def serving(outcome: Outcome) -> AbstractContextManager[Outcome]:
    """Make ``outcome`` the record of the exchange served inside the block (and of every handler
    the SDK runs for it)."""
    return _Serving(outcome)


def with_retry_after(outcome: Outcome, send: Send) -> Send:
    """``send``, adding ``Retry-After`` to the response's start when ``outcome`` holds a -32009
    refusal by then (a JSON answer starts after its handler ended; an SSE stream before, so there
    ``data.retryAfter`` alone says it)."""

    async def sending(message: Message) -> None:
        if message["type"] != "http.response.start":
            await send(message)
            return
        outcome.started = True
        if (seconds := outcome.retry_after) is not None:
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"retry-after"]
            message = {**message, "headers": [*headers, (b"retry-after", str(seconds).encode())]}
        await send(message)

    return sending


async def exchange_middleware(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    """Server middleware (outermost): for a request served inside :func:`serving`, the stateless
    rules, then its answer recorded on the :class:`Outcome`; any other request passes unchanged.

    :raises MCPError: -32601 for ``resources/subscribe``/``unsubscribe`` on stateless HTTP (its
        updates need the session's ``GET`` stream, which stateless mode has not).
    """
    outcome = _current.get()
    if outcome is None:
        return await call_next(ctx)
    # The first request under the exchange's id is its own: one nested in its handler (a call to
    # this server in the same context) or a second one under the same id is not.
    recorded = ctx.request_id is not None and ctx.request_id == outcome.request_id and not outcome.claimed
    outcome.claimed = outcome.claimed or recorded
    try:
        result = await _stateless(ctx, call_next) if outcome.stateless else await call_next(ctx)
    except Exception as exc:
        if recorded:
            outcome.error = error_data(exc)
        raise
    if recorded and outcome.keeps_result and anyio.current_effective_deadline() != -math.inf:
        outcome.result = _wire(result)  # not when cancelled: the SDK answers nothing
    return result


async def _stateless(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    if ctx.method in ("resources/subscribe", "resources/unsubscribe"):
        raise MCPError(types.METHOD_NOT_FOUND, "Method not found: stateless HTTP cannot deliver resource updates")
    result = await call_next(ctx)
    if ctx.method == "initialize" and isinstance(result, dict):  # no stream to hear list changes on either
        capabilities = result.get("capabilities", {})
        for kind in ("resources", "tools", "prompts"):
            if isinstance(declared := capabilities.get(kind), dict):
                declared.pop("subscribe", None)
                declared.pop("listChanged", None)
    return result


def error_data(exc: Exception, *, logged_as: str | None = None) -> types.ErrorData:
    """The wire error of a raised exception, mapped as the SDK maps it; an unexpected one is -32603
    without its text (as the SDK's 2026-07-28 entry answers it), and logged with its traceback
    when ``logged_as`` names the method (where nothing else will log it)."""
    error = handler_exception_to_error_data(exc)
    if error is None:
        if logged_as is not None:
            log.error("handler for %r raised", logged_as, exc_info=exc)
        return types.ErrorData(code=types.INTERNAL_ERROR, message="internal error; the server log has the details")
    return error


def _wire(result: Any) -> dict[str, Any]:
    """A middleware result as the SDK's runner puts it on the wire (``None`` is ``{}``, a model dumped)."""
    if result is None:
        return {}
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(result)


def audit_failure(audit: AuditLog | None, request: Any, method: str | None, exc: Exception) -> None:
    """One audit line for an HTTP exchange that failed before its response started (a bug: no
    handler's line may be written), naming the exception's kind, never its message."""
    if audit is None or not audit.enabled:
        return
    try:
        who = request_principal(request).custody()
    except Exception:  # an identity that cannot be read: the caller is not known
        who = {"subject": None}
    reason = f"-32603: {type(exc).__name__} (the exchange failed before its response started)"
    operation = method[:200] if method else "HTTP POST"
    audit.write(
        {"actor": "application", **who, "operation": operation, "target": "", "decision": "error", "reason": reason}
    )


def current_outcome() -> Outcome | None:
    """The :class:`Outcome` of the exchange being served here, if any."""
    return _current.get()
