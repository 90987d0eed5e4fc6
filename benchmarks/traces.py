"""What OpenTelemetry traces cost a read (issue 28; target: off costs nothing measurable).

Run alone: ``uv run python -m benchmarks.traces [--quick]``; or in the full table with
``uv run --group bench python -m benchmarks --only traces``.

A whole ``resources/read`` through the SDK's in-memory client (2026-07-28), cases interleaved round
by round in one process, against a hand-written SDK ``MCPServer`` serving the same resource, both as
shipped (its ``OpenTelemetryMiddleware`` on) and with that middleware removed (the like-for-like
anchor of "traces off"):

- traces off (the default: no tracer provider, the pipeline takes its untraced branch);
- traces on, spans made and dropped (an SDK ``TracerProvider`` with no span processor);
- traces on, spans batched and encoded as OTLP protobuf (``BatchSpanProcessor`` into an exporter that
  encodes each batch as the OTLP/HTTP exporter does, then drops it: the cost short of the network).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import anyio

from benchmarks import fixtures
from benchmarks.timing import Emit, ainterleaved, per_read_ms, standalone

SECTION = "traces: read, in-memory"
SDK_ON, SDK_OFF = "MCPServer (SDK default: OTel middleware on)", "MCPServer, OTel middleware off"
OFF = "composed, traces off (default)"
DROPPED, EXPORTED = "composed, traces on, spans dropped", "composed, traces on, batched + OTLP-encoded"


def _encoding_exporter() -> Any:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Encoding(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            encode_spans(spans).SerializePartialToString()
            return SpanExportResult.SUCCESS

    return Encoding()


def _traced(processor: bool) -> tuple[Any, Any]:
    """A composed server whose pipeline traces with its own provider (nothing global is set)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    if processor:
        provider.add_span_processor(BatchSpanProcessor(_encoding_exporter()))
    composition = fixtures.composed(1)
    composition.pipeline.tracer = provider.get_tracer("bench")
    return composition.server, provider


async def measure(rounds: int) -> dict[str, float]:
    from mcp import Client

    uri = fixtures.fixed_uri(0, 3)
    dropped, dropped_provider = _traced(processor=False)
    exported, exported_provider = _traced(processor=True)
    servers = {
        SDK_ON: fixtures.mcpserver(1),
        SDK_OFF: fixtures.mcpserver(1, otel=False),
        OFF: fixtures.composed(1).server,
        DROPPED: dropped,
        EXPORTED: exported,
    }
    try:
        async with contextlib.AsyncExitStack() as stack:
            cases = {}
            for name, server in servers.items():
                client = await stack.enter_async_context(Client(server, cache=None))
                await client.read_resource(uri)
                cases[name] = per_read_ms(client, uri, 50)
            # short samples, many rounds: the machine drifts
            return await ainterleaved(cases, 10 * (rounds + rounds // 2))
    finally:
        dropped_provider.shutdown()
        exported_provider.shutdown()


def report(result: dict[str, float], emit: Emit) -> None:
    """Traces off against ``MCPServer`` without its OTel middleware (the like-for-like pair); the
    traced cases against ``MCPServer`` as shipped (its middleware on, spans from the global no-op
    tracer unless the user sets a provider) and against traces off."""
    off = result[OFF]
    emit(SECTION, SDK_OFF, result[SDK_OFF], "ms", "baseline")
    emit(SECTION, OFF, off, "ms", f"{off / result[SDK_OFF]:.2f}x MCPServer (both off)", "compare: overhead section")
    emit(SECTION, SDK_ON, result[SDK_ON], "ms", "baseline")
    for name in (DROPPED, EXPORTED):
        value = result[name]
        emit(SECTION, name, value, "ms", f"{value / result[SDK_ON]:.2f}x MCPServer as shipped, {value / off:.2f}x off",
             "reported")  # fmt: skip


def run(rounds: int, emit: Emit) -> None:
    report(anyio.run(measure, rounds), emit)


if __name__ == "__main__":
    standalone("python -m benchmarks.traces", __doc__, run)
