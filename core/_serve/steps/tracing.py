"""Traces: one OpenTelemetry span per MCP request, and a child span per pipeline stage.

Off unless a tracer provider is in place: :func:`configure_from_env` installs one (the OTLP/HTTP
exporter) when the standard ``OTEL_*`` variables ask for it, and an embedder may set its own
(``opentelemetry.trace.set_tracer_provider``) before the server is built. Off, the pipeline takes
one branch per request and this module's SDK parts are never imported.

The request span follows the OpenTelemetry semantic conventions for MCP (``gen-ai/mcp.md`` of
``open-telemetry/semantic-conventions-genai``, status Development): kind ``SERVER``, named
``{mcp.method.name} {target}`` for tools and prompts (``{mcp.method.name}`` otherwise; a URI is
too many names), attributes ``mcp.method.name``, ``mcp.protocol.version``, ``jsonrpc.request.id``,
``mcp.session.id`` (a SHA-256 digest of it: the id itself lets its holder use the session),
``mcp.resource.uri``, ``gen_ai.tool.name`` / ``gen_ai.operation.name`` / ``gen_ai.prompt.name``,
``error.type`` and ``rpc.response.status_code`` on failure; the project adds ``mcp_providers.subject``,
``mcp_providers.issuer`` and ``mcp_providers.decision``. Its parent is the caller's W3C trace
context (``traceparent``, ``tracestate``): from the request's ``_meta`` (SEP-414), else from the
HTTP request's headers; a malformed value is ignored. No attribute, status or event carries content,
arguments, error messages or secrets.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, StatusCode

from mcp_providers._serve.state.replica import replica_name
from mcp_providers.http import upstream_tracer

if TYPE_CHECKING:
    from mcp_providers._serve.steps.exchange import Ctx, Exchange

log = logging.getLogger("mcp_providers.telemetry")

INSTRUMENTATION = "mcp_providers"
"""The instrumentation scope name of every span this project makes."""

UNKNOWN_METHOD = "other"
"""The span name and ``mcp.method.name`` of a request for a method the server does not serve (as
the ``method`` label of ``/metrics``)."""
_NAMED = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}


def tracing_configured() -> bool:
    """Whether an OpenTelemetry tracer provider has been set (``trace.set_tracer_provider``, which
    :func:`configure_from_env` calls, or ``OTEL_PYTHON_TRACER_PROVIDER``)."""
    if os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"):
        return True
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def server_tracer() -> trace.Tracer | None:
    """The tracer for request spans when a provider is set, else ``None`` (tracing off)."""
    return trace.get_tracer(INSTRUMENTATION) if tracing_configured() else None


def wanted_from_env(env: Mapping[str, str]) -> bool:
    """Whether the standard variables ask for OTLP traces: ``OTEL_TRACES_EXPORTER`` names ``otlp``,
    or it is unset and ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is
    set; never with ``OTEL_SDK_DISABLED=true``. (Source: the OpenTelemetry SDK environment variable
    specification.)"""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER")
    if exporters is not None:
        return "otlp" in {e.strip().lower() for e in exporters.split(",")}
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def configure_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Install a tracer provider exporting over OTLP/HTTP (protobuf) when :func:`wanted_from_env`;
    the exporter reads its endpoint, headers and timeout from the same ``OTEL_EXPORTER_OTLP_*``
    variables, the resource its ``service.name`` from ``OTEL_SERVICE_NAME`` (default
    ``mcp-providers``) and its ``service.instance.id`` from the replica's name
    (:func:`~mcp_providers._serve.state.replica.replica_name`: ``MCP_PROVIDERS_REPLICA``, else
    ``HOSTNAME``; ``OTEL_RESOURCE_ATTRIBUTES`` may set it instead). Leaves a provider already set alone.

    :returns: whether traces are on afterwards.
    :raises RuntimeError: traces are asked for but the ``telemetry`` extra is not installed.
    """
    env = os.environ if env is None else env
    if tracing_configured():
        return True
    if not wanted_from_env(env):
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise RuntimeError(
            f"OTEL_* variables ask for OTLP traces, but {exc.name} is not installed: "
            "install mcp-providers[telemetry], or unset OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_ENDPOINT"
        ) from None
    attributes = {"service.name": env.get("OTEL_SERVICE_NAME") or "mcp-providers"}
    if "service.instance.id" not in env.get("OTEL_RESOURCE_ATTRIBUTES", ""):  # which replica traced
        attributes["service.instance.id"] = replica_name(env)
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return True


def shutdown() -> None:
    """Flush and stop the installed SDK tracer provider, if any (at the end of ``serve``)."""
    provider = trace.get_tracer_provider()
    stop = getattr(provider, "shutdown", None)
    if callable(stop):
        stop()


def parent_context(ctx: Ctx) -> Context | None:
    """The caller's trace context: from ``_meta`` (SEP-414), else the HTTP headers; ``None`` when
    neither carries a valid ``traceparent`` (a malformed one is ignored, never an error)."""
    found = _extract(ctx.meta if isinstance(ctx.meta, Mapping) else None)
    if found is None and ctx.request is not None:
        headers = getattr(ctx.request, "headers", None)
        found = _extract(headers if isinstance(headers, Mapping) else None)
    return found


def _extract(carrier: Mapping[str, Any] | None) -> Context | None:
    if not carrier or "traceparent" not in carrier:
        return None
    try:
        found = propagate.extract(carrier)
    except Exception:  # a value of the wrong type, say: ignored like a malformed one
        return None
    return found if trace.get_current_span(found).get_span_context().is_valid else None


@contextlib.contextmanager
def request_span(tracer: trace.Tracer, ctx: Ctx, served: Callable[[str], bool] | None = None) -> Iterator[trace.Span]:
    """The request's ``SERVER`` span, current for the request's work; failures set ``error.type``
    (the JSON-RPC code, else the exception's class), never a message.

    :param served: whether the server serves a method; one it does not is named and labelled
        :data:`UNKNOWN_METHOD` (client-chosen names would make span names unbounded).
    """
    method = str(ctx.method) if served is None or served(str(ctx.method)) else UNKNOWN_METHOD
    params = ctx.params if isinstance(ctx.params, Mapping) else {}
    attributes: dict[str, Any] = {"mcp.method.name": method, "mcp.protocol.version": str(ctx.protocol_version or "")}
    if ctx.request_id is not None:
        attributes["jsonrpc.request.id"] = str(ctx.request_id)
    session = _session_id(ctx)
    if session:
        attributes["mcp.session.id"] = hashlib.sha256(session.encode()).hexdigest()[:32]
    name = method
    named = _NAMED.get(method)
    if named and isinstance(params.get("name"), str):
        attributes[named] = params["name"]
        name = f"{method} {params['name']}"
    if method == "tools/call":
        attributes["gen_ai.operation.name"] = "execute_tool"
    with tracer.start_as_current_span(
        name, context=parent_context(ctx), kind=SpanKind.SERVER, attributes=attributes,
        record_exception=False, set_status_on_exception=False,
    ) as span:  # fmt: skip
        try:
            yield span
        except BaseException as exc:
            failed(span, exc)
            raise


def _session_id(ctx: Ctx) -> str | None:
    headers = getattr(ctx.request, "headers", None) if ctx.request is not None else None
    value = headers.get("mcp-session-id") if isinstance(headers, Mapping) else None
    return value if isinstance(value, str) else None


def tool_failed(span: trace.Span) -> None:
    """Mark ``span`` failed by its tool: the call was answered ``isError: true`` (``error.type``
    ``tool_error``, status ERROR; the tool's text stays out of the span)."""
    span.set_attribute("error.type", "tool_error")
    span.set_status(StatusCode.ERROR)


def ids() -> dict[str, str]:
    """The current span's ``trace_id`` (32 hex digits) and ``span_id`` (16), the W3C forms, for an
    audit line to be joined to its trace; empty when no span is recording a valid context."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}


def failed(span: trace.Span, exc: BaseException) -> None:
    """Mark ``span`` failed by ``exc``: ``error.type`` (and ``rpc.response.status_code`` for a
    JSON-RPC error), status ERROR without a description (messages may quote arguments)."""
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    if code is None and isinstance(getattr(exc, "code", None), int):
        code = exc.code  # type: ignore[attr-defined]
    if isinstance(code, int):
        span.set_attributes({"error.type": str(code), "rpc.response.status_code": str(code)})
    else:
        span.set_attribute("error.type", type(exc).__qualname__)
    span.set_status(StatusCode.ERROR)


def describe(exchange: Exchange) -> None:
    """Put what the pipeline learned (target, caller, decision) on the current request span."""
    span = trace.get_current_span()
    principal = exchange.principal
    attributes: dict[str, Any] = {"mcp_providers.subject": principal.subject}
    attributes["mcp_providers.decision"] = exchange.decision
    if principal.issuer:
        attributes["mcp_providers.issuer"] = principal.issuer
    if exchange.method == "resources/read" and exchange.target:
        attributes["mcp.resource.uri"] = exchange.target[:2048]
    span.set_attributes(attributes)


def stage(tracer: trace.Tracer | None, name: str) -> contextlib.AbstractContextManager[object]:
    """A child span ``mcp_providers.{name}`` (``gate``, ``invoke``, ``evidence``) of the current one,
    failures marked by :func:`failed`; with traces off (``tracer`` is ``None``) a no-op."""
    return _OFF if tracer is None else _stage(tracer, name)


def upstream_calls(tracer: trace.Tracer | None) -> contextlib.AbstractContextManager[object]:
    """While entered, upstream HTTP requests made through :func:`mcp_providers.http.client` get a
    ``CLIENT`` span each (:data:`mcp_providers.http.upstream_tracer`); with traces off a no-op."""
    return _OFF if tracer is None else _upstream(tracer)


_OFF = contextlib.nullcontext()


@contextlib.contextmanager
def _stage(tracer: trace.Tracer, name: str) -> Iterator[trace.Span]:
    with tracer.start_as_current_span(
        f"mcp_providers.{name}", kind=SpanKind.INTERNAL, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            failed(span, exc)
            raise


@contextlib.contextmanager
def _upstream(tracer: trace.Tracer) -> Iterator[None]:
    token = upstream_tracer.set(tracer)
    try:
        yield
    finally:
        upstream_tracer.reset(token)
