"""Which ``OTEL_*`` settings turn traces on, and off meaning off: no tracer, no SDK tracing middleware."""

from __future__ import annotations

import pytest

from mcp_providers._serve.seams import tracing_middleware
from mcp_providers._serve.steps import tracing
from mcp_providers.testing import compose


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console, OTLP"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "TRUE"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, False),
    ],
)
def test_the_standard_variables_decide_whether_traces_are_exported(env, wanted):
    assert tracing.wanted_from_env(env) is wanted


def test_without_the_variables_nothing_is_installed_and_the_pipeline_does_not_trace(monkeypatch):
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_PYTHON_TRACER_PROVIDER"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    assert not tracing.tracing_configured()  # no test sets a global provider: each passes its own tracer
    assert tracing.configure_from_env({}) is False
    assert not tracing.tracing_configured()
    composition = compose({})
    assert composition.pipeline.tracer is None
    # The SDK's per-request span would be a second request span (and costs even with no tracer).
    assert not any(isinstance(m, tracing_middleware()) for m in composition.server.middleware)


HEADER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
META = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _parent_trace(meta, headers):
    from types import SimpleNamespace

    from opentelemetry import trace

    ctx = SimpleNamespace(meta=meta, request=None if headers is None else SimpleNamespace(headers=headers))
    found = tracing.parent_context(ctx)  # type: ignore[arg-type]
    return None if found is None else format(trace.get_current_span(found).get_span_context().trace_id, "032x")


@pytest.mark.parametrize(
    ("meta", "headers", "trace_id"),
    [
        ({"traceparent": META}, {"traceparent": HEADER}, META[3:35]),  # _meta (SEP-414) first
        ({"traceparent": "00-garbage-01"}, {"traceparent": HEADER}, HEADER[3:35]),  # an invalid one falls through
        (None, {"traceparent": HEADER}, HEADER[3:35]),
        ({"traceparent": 7}, {"traceparent": "nope"}, None),
        ({}, None, None),
    ],
)
def test_the_parent_comes_from_meta_else_from_the_http_headers(meta, headers, trace_id):
    assert _parent_trace(meta, headers) == trace_id
