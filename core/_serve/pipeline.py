"""The pipeline: the one chain every MCP method the server answers walks through.

::

    subject -> route -> authorize -> invoke -> evidence -> wire -> audit

A method is a :class:`Method`: four stages (``route``, ``authorize``, ``invoke``, ``evidence``)
that the services (:mod:`~mcp_providers._serve.methods.resources`, ``tools``, ``prompts``,
``completion``, ``subscriptions``) implement with the shared parts: the request's
:class:`~mcp_providers._serve.steps.gate.Gate` (the only place policy is asked), the
:class:`~mcp_providers._serve.steps.invoker.Invoker` (deadline, start-up failures, side-effect scope,
coalescing) and :mod:`~mcp_providers._serve.steps.evidence` (budgets, links and embeds, receipts).
:class:`Pipeline` runs the stages in that order for every method, and around them does what no
method may do differently: resolve the caller's :class:`~mcp_providers.identity.Principal` once,
expose the gate to provider code (:func:`mcp_providers.policy.require`) and the runtime's credential
broker (``request.credential(upstream)``, recording the upstream identities used), shape the result for the
session's protocol version, map any error to the wire in one place
(:func:`~mcp_providers._serve.steps.wire.error`) and write exactly one audit line.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server import Server

from mcp_providers._serve.state.tasks import RunningTask
from mcp_providers._serve.steps import tracing, uri_length, wire
from mcp_providers._serve.steps.audit import AuditLog
from mcp_providers._serve.steps.custody import upstream_fields
from mcp_providers._serve.steps.exchange import Ctx, Exchange, Method, principal_of, version_of
from mcp_providers._serve.steps.gate import Authorizer, Gate
from mcp_providers._serve.steps.ratelimit import RateLimiter
from mcp_providers.credentials import CredentialBroker, CredentialScope, current_scope
from mcp_providers.errors import Denied, RequestError
from mcp_providers.policy import current_gate

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

Handler = Callable[[Ctx, Any], Awaitable[Any]]
"""An SDK request handler, ``(ctx, params) -> result``."""
Middleware = Callable[[Ctx, Callable[[Ctx], Awaitable[Any]]], Coroutine[Any, Any, Any]]
"""An SDK server middleware, ``(ctx, call_next) -> result``."""

R = TypeVar("R")

_through_pipeline: ContextVar[list[bool] | None] = ContextVar("mcp_providers_through_pipeline", default=None)
"""Set by :meth:`Pipeline.audit_middleware` per request; the pipeline marks it when it writes the line."""

_SDK_OWN = frozenset({"initialize", "notifications/initialized"})
"""Methods the SDK answers itself, with no registered handler (a span still names them)."""
_in_request_span: ContextVar[object] = ContextVar("mcp_providers_in_request_span", default=None)
"""The request (its context) :meth:`Pipeline.middleware` is answering inside its span
(:meth:`Pipeline._traced`); a request nested in it (another server in process) gets its own span."""


_HANDSHAKES = frozenset({"initialize", "server/discover"})
"""Results carrying the server's capabilities (2025 eras; 2026-07-28)."""


def _unchanged(ctx: Ctx, result: dict[str, Any]) -> dict[str, Any]:
    return result


def _requested(params: Any) -> str:
    """What a request names as the client sent it (its ``uri``, else its ``name``), or ``""``."""
    for name in ("uri", "name"):
        value = getattr(params, name, None) or (params.get(name) if isinstance(params, dict) else None)
        if value:
            return str(value)
    return ""


def _served_by(exchange: Exchange) -> None:
    """Between ``invoke`` and ``evidence``: the upstream identities that served go into the custody
    fields, before the receipt is made (it says which upstream identity served)."""
    if exchange.upstreams:
        exchange.custody.update(upstream_fields(exchange.upstreams))


async def _traced_stages(tracer: Tracer, method: Method[Any, Any, R], exchange: Exchange, target: Any) -> R:
    """:meth:`Pipeline.run`'s stages with traces on, as it runs them without: each in its span."""
    with tracing.stage(tracer, "gate"):
        method.authorize(exchange, target)
    with tracing.stage(tracer, "invoke"), tracing.upstream_calls(tracer):
        produced = await method.invoke(exchange, target)
    _served_by(exchange)
    with tracing.stage(tracer, "evidence"):
        return method.evidence(exchange, target, produced)


class Pipeline:
    """Runs every method's stages in one order, with one error mapping and one audit line."""

    def __init__(
        self,
        audit: AuditLog,
        limiter: RateLimiter | None = None,
        credentials: CredentialBroker | None = None,
        tracer: Tracer | None = None,
        max_uri_length: int = 2048,
    ) -> None:
        self.audit = audit
        self.max_uri_length = max_uri_length
        """``[server] max_uri_length``: a request naming a longer URI is refused before it is routed."""
        self.limiter = limiter or RateLimiter(None)
        """``[server.limits]`` (:mod:`~mcp_providers._serve.steps.ratelimit`); none: nothing limited."""
        self._limited = self.limiter.enabled  # its settings are fixed when it is made: decided once
        self.credentials = credentials or CredentialBroker()
        """The runtime's broker of upstream credentials, reached by ``request.credential(upstream)``."""
        self.tracer = tracer
        """Makes the request and stage spans (:mod:`~mcp_providers._serve.steps.tracing`); none: traces off."""
        self._server: Server[Any] | None = None
        self._outer: Middleware | None = None
        self.handshake: Callable[[Ctx, dict[str, Any]], dict[str, Any]] = _unchanged
        """Shapes each ``initialize`` and ``server/discover`` result (wire form) further: the
        capabilities of what is served now (:func:`~mcp_providers._serve.binding.handshake`)."""

    def serve(self, server: Server[Any]) -> None:
        """Be the request handler of ``server``'s methods (``binding.build_server``): its span names
        (:meth:`_traced`) tell the methods it serves from unknown ones."""
        self._server = server

    async def run(
        self,
        method: Method[Any, Any, R],
        ctx: Ctx,
        params: Any,
        authorizer: Authorizer,
        task: RunningTask | None = None,
    ) -> R:
        """Answer one request: ``method``'s stages in order, policy asked through ``authorizer``
        (both of the generation the request started on); ``task``: the request is that task's body."""
        mark = _through_pipeline.get()
        if mark is not None:
            mark[0] = True  # this request's audit line is written here, not by the middleware
        principal = principal_of(ctx)
        exchange = Exchange(
            method.name,
            method.actor,
            Gate(authorizer, principal, max_uri_length=self.max_uri_length),
            ctx,
            principal,
            task=task,
        )
        token = current_gate.set(exchange.gate)
        scope = current_scope.set(CredentialScope(self.credentials, exchange.upstreams))
        try:
            if task is None and self._limited:  # a task's body was counted as the call that started it
                await self.limiter.admit(exchange.principal, method.name)  # per subject, before the gate
            if (too_long := uri_length.refusal(params, self.max_uri_length)) is not None:
                raise too_long  # before any per-character work on it (tester 27 F8)
            target = method.route(exchange, params)
            if self.tracer is None:  # traces off: the stages without their (no-op) span managers
                method.authorize(exchange, target)
                produced = await method.invoke(exchange, target)
                if exchange.upstreams:
                    _served_by(exchange)
                result = method.evidence(exchange, target, produced)
            else:
                result = await _traced_stages(self.tracer, method, exchange, target)
            return wire.shape(result, version_of(ctx))
        except BaseException as exc:
            if not exchange.target:  # refused before routing (rate limited, say): name what was asked
                exchange.target = _requested(params)
            self._outcome(exchange, exc)
            raise wire.error(exc) from None
        finally:
            current_scope.reset(scope)
            current_gate.reset(token)
            if self.tracer is not None:
                tracing.describe(exchange)
            self._write(exchange)

    def around(self, outer: Middleware) -> None:
        """Run ``outer`` (a transport's server middleware, ``(ctx, call_next) -> result``) around
        this pipeline's own layer, in the same SDK middleware: a request passes one middleware, not
        two (the HTTP app records each exchange's outcome this way). Setting it again replaces it."""
        self._outer = outer

    async def middleware(self, ctx: Ctx, call_next: Callable[[Ctx], Awaitable[Any]]) -> Any:
        """The one SDK server middleware: :meth:`around`'s, if any, around :meth:`_layer`. A coroutine
        of its own: handing back the layer's awaitable instead saved a frame but made the SDK call
        two of ours (``tests/test_crossings.py``: one crossing more per read). Without an outer
        middleware or traces, it is :meth:`_layer` itself (the same steps, one frame fewer)."""
        if self._outer is not None:
            return await self._outer(ctx, functools.partial(self._layer, call_next=call_next))
        if self.tracer is not None:
            return await self._layer(ctx, call_next)
        if self._audited(ctx):  # _layer's steps, in this frame
            return self._shaped(ctx, await self.audit_middleware(ctx, call_next))
        return self._shaped(ctx, await call_next(ctx))

    async def _layer(self, ctx: Ctx, call_next: Callable[[Ctx], Awaitable[Any]]) -> Any:
        """This pipeline's own layer: :meth:`audit_middleware` inside
        :func:`~mcp_providers._serve.steps.wire.initialize_middleware` (``initialize`` results shaped for
        their protocol version), in one layer per request rather than two; with traces on, inside the
        request's span (:func:`~mcp_providers._serve.steps.tracing.request_span`). It answers nothing
        itself: every method reaches the pipeline through its SDK handler (:meth:`run`)."""
        if self.tracer is not None and _in_request_span.get() is not ctx:
            return await self._traced(self.tracer, ctx, call_next)
        if self._audited(ctx):
            return self._shaped(ctx, await self.audit_middleware(ctx, call_next))
        return self._shaped(ctx, await call_next(ctx))

    def _audited(self, ctx: Ctx) -> bool:
        """Whether the audit layer has anything to do for ``ctx`` (a request, with audit on)."""
        return ctx.request_id is not None and self.audit.enabled

    def _shaped(self, ctx: Ctx, result: Any) -> Any:
        """``result``, an ``initialize`` result shaped for its protocol version."""
        if ctx.method in _HANDSHAKES and isinstance(result, dict):
            return self.handshake(ctx, wire.shape_initialize(result))
        return result

    async def _traced(self, tracer: Tracer, ctx: Ctx, call_next: Callable[[Ctx], Awaitable[Any]]) -> Any:
        """:meth:`_layer` inside the request's span (the only place request spans are made)."""
        server = self._server
        served = None if server is None else (lambda m: m in _SDK_OWN or server.get_request_handler(m) is not None
                                               or server.get_notification_handler(m) is not None)  # fmt: skip
        with tracing.request_span(tracer, ctx, served) as span:
            token = _in_request_span.set(ctx)
            try:
                result = await self._layer(ctx, call_next)
            finally:
                _in_request_span.reset(token)
            if ctx.method == "tools/call" and isinstance(result, dict) and result.get("isError") is True:
                tracing.tool_failed(span)
            return result

    async def audit_middleware(self, ctx: Ctx, call_next: Callable[[Ctx], Awaitable[Any]]) -> Any:
        """SDK server middleware: one audit line for a request that never reaches a method's stages
        (``initialize``, ``ping``, an unknown method, params the SDK refused before the handler)."""
        if ctx.request_id is None or not self.audit.enabled:  # notifications are not answered
            return await call_next(ctx)
        mark = [False]
        token = _through_pipeline.set(mark)
        outcome: BaseException | None = None
        try:
            return await call_next(ctx)
        except BaseException as exc:
            outcome = exc
            raise
        finally:
            _through_pipeline.reset(token)
            if not mark[0]:
                self._write_plain(ctx, outcome)

    def _write_plain(self, ctx: Ctx, exc: BaseException | None) -> None:
        line: dict[str, Any] = {"actor": "application", **principal_of(ctx).custody()}
        line.update(operation=str(ctx.method)[:200], target="", decision="allowed" if exc is None else "error")
        if exc is not None:
            line["reason"] = f"{getattr(exc, 'code', -32603)}: {type(exc).__name__}"
        if self.tracer is not None:  # inside the request span (_traced): the line names its trace
            line.update(tracing.ids())
        self.audit.write(line)

    def _outcome(self, exchange: Exchange, exc: BaseException) -> None:
        if isinstance(exc, Denied) or exchange.gate.denials:
            exchange.decision = "denied"
        elif isinstance(exc, Exception):
            exchange.decision = "error"
        else:  # cancelled: the client closed a stream (listen) or went away; nothing was refused
            exchange.reason = "cancelled: the client ended the request"
            return
        if not exchange.gate.denials:
            # The code, the kind and the rule, never the message: messages may quote argument values.
            rule = (exc.data or {}).get("rule") if isinstance(exc, RequestError) else None
            kind = f"{type(exc).__name__} ({rule})" if isinstance(rule, str) else type(exc).__name__
            exchange.reason = f"{getattr(exc, 'code', -32603)}: {kind}"

    def _write(self, exchange: Exchange) -> None:
        if not self.audit.enabled and exchange.decision != "denied":  # denials are kept for /status
            return
        line: dict[str, Any] = {
            "actor": exchange.actor,
            **exchange.principal.custody(),
            "operation": exchange.method,
            "target": exchange.target[:2048],
            "decision": exchange.decision,
        }
        denials = exchange.gate.denials
        if denials and exchange.decision == "denied":
            line.update(action=denials[0].action, target=denials[0].target[:2048], reason=denials[0].reason)
        elif denials:  # refused inside the request (e.g. ToolCall.require), and the provider went on
            line["denied"] = [{"action": d.action, "target": d.target[:2048], "reason": d.reason} for d in denials]
        if exchange.reason and "reason" not in line:
            line["reason"] = exchange.reason
        if exchange.upstreams:  # which upstream identities served it, whether or not a receipt was made
            line.update(upstream_fields(exchange.upstreams))
        if exchange.count is not None:
            line["count"] = exchange.count
        if exchange.receipt is not None:
            line["receipt"] = exchange.receipt
        if self.tracer is not None:  # inside the request span (_traced): the line names its trace
            line.update(tracing.ids())
        self.audit.write(line)
