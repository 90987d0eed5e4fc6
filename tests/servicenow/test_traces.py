"""Traces in process: a read's request span, its stage spans and the upstream HTTP call, parented to
the caller's ``traceparent`` from ``_meta`` (SEP-414); a malformed one is ignored; no span attribute
carries content, an argument value or a secret (issue 28 must-show 1, issue 27 must-show 4)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import MCPError
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from servicenow_support import DEV_PASSWORD, DEV_USER, SECRETS

from mcp_providers._serve.composition import Composition
from mcp_providers.identity import LOCAL
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
URI = "servicenow://dev/incidents/INC0010001"


@pytest.fixture
def spans(composition: Composition) -> Iterator[InMemorySpanExporter]:
    """The composition's pipeline traced into memory (its own provider: nothing global is set)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    composition.pipeline.tracer = provider.get_tracer("test")
    yield exporter
    provider.shutdown()


def request_spans(finished: tuple[ReadableSpan, ...], method: str) -> list[ReadableSpan]:
    return [s for s in finished if s.kind is SpanKind.SERVER and s.attributes["mcp.method.name"] == method]


def children(finished: tuple[ReadableSpan, ...], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in finished if s.parent is not None and s.parent.span_id == parent.context.span_id]


async def test_a_read_makes_the_request_span_with_stage_and_upstream_children_under_meta_traceparent(
    composition, spans, dev_emulator
):
    async with connect(composition) as client:
        await client.read_resource(URI, meta={"traceparent": TRACEPARENT, "tracestate": "vendor=a"})
    finished = spans.get_finished_spans()
    [read] = request_spans(finished, "resources/read")  # one request span, not the SDK's besides ours
    assert read.parent is not None and read.parent.is_remote
    assert (format(read.context.trace_id, "032x"), format(read.parent.span_id, "016x")) == (TRACE_ID, PARENT_ID)
    assert read.context.trace_state.get("vendor") == "a"
    assert read.name == "resources/read"  # a URI is too many span names (the conventions)
    attributes = dict(read.attributes or {})
    assert attributes["mcp.resource.uri"] == URI
    assert attributes["mcp_providers.subject"] == LOCAL.subject
    assert attributes["mcp_providers.issuer"] == LOCAL.issuer
    assert attributes["mcp_providers.decision"] == "allowed"
    assert attributes["mcp.protocol.version"] and attributes["jsonrpc.request.id"]
    assert "error.type" not in attributes
    stages = {s.name: s for s in children(finished, read)}
    assert set(stages) == {"mcp_providers.gate", "mcp_providers.invoke", "mcp_providers.evidence"}
    assert stages["mcp_providers.gate"].end_time <= stages["mcp_providers.invoke"].start_time  # type: ignore[operator]
    [upstream] = children(finished, stages["mcp_providers.invoke"])
    assert upstream.kind is SpanKind.CLIENT and upstream.name == "GET"
    assert upstream.context.trace_id == read.context.trace_id
    port = int(dev_emulator.base_url.rsplit(":", 1)[1].split("/")[0])
    assert dict(upstream.attributes or {}) == {
        "http.request.method": "GET", "server.address": "127.0.0.1", "server.port": port,
        "url.scheme": "http", "http.response.status_code": 200,
    }  # fmt: skip


@pytest.mark.parametrize(
    "meta",
    [
        {"traceparent": "00-not-a-trace-01"},
        {"traceparent": f"00-{'0' * 32}-{PARENT_ID}-01"},  # the all-zero trace id is invalid
        {"traceparent": 12345},
        {"traceparent": ["a", "b"], "tracestate": {"x": 1}},
    ],
)
async def test_an_invalid_traceparent_is_ignored_and_the_read_still_answers(composition, spans, dev_emulator, meta):
    async with connect(composition) as client:
        result = await client.read_resource(URI, meta=meta)
    assert json.loads(result.contents[0].text)["data"]["number"] == "INC0010001"  # type: ignore[union-attr]
    [read] = request_spans(spans.get_finished_spans(), "resources/read")
    assert read.parent is None  # a root span of its own trace, not an error
    assert format(read.context.trace_id, "032x") != TRACE_ID


async def test_a_denied_or_failed_request_says_its_error_type_and_no_message(composition, spans, dev_emulator):
    async with connect(composition) as client:
        with pytest.raises(MCPError):  # not found
            await client.read_resource("servicenow://dev/incidents/INC0099999")
    [read] = request_spans(spans.get_finished_spans(), "resources/read")
    assert read.attributes["mcp_providers.decision"] == "error"
    assert read.attributes["error.type"] == read.attributes["rpc.response.status_code"]
    assert int(read.attributes["error.type"])  # the JSON-RPC code, a number
    assert read.status.description is None  # messages may quote what was asked


def _every_value(span: ReadableSpan) -> Iterator[str]:
    for value in (span.attributes or {}).values():
        yield json.dumps(value) if not isinstance(value, str) else value
    for event in span.events:
        yield event.name
        yield from (str(v) for v in (event.attributes or {}).values())
    yield span.name
    yield span.status.description or ""


async def test_no_span_attribute_holds_content_an_argument_value_or_a_secret(composition, spans, dev_emulator):
    record = dev_emulator.records("incident")[0]
    caret = "INC0010001^ORactive=true"
    async with connect(composition) as client:
        read = await client.read_resource(URI, meta={"traceparent": TRACEPARENT})
        found = await client.call_tool(
            "servicenow_get_record", {"instance": "dev", "table": "incident", "sys_id": record["sys_id"]}
        )
        refused = await client.call_tool("servicenow_query_table", {
            "instance": "dev", "table": "incident", "filters": [{"field": "number", "value": caret}]})  # fmt: skip
    assert not found.is_error and refused.is_error
    finished = spans.get_finished_spans()
    [call, _] = request_spans(finished, "tools/call")
    assert call.attributes["gen_ai.tool.name"] == "servicenow_get_record"
    assert call.name == "tools/call servicenow_get_record"
    content: dict[str, Any] = json.loads(read.contents[0].text)["data"]  # type: ignore[union-attr]
    basic = base64.b64encode(f"{DEV_USER}:{DEV_PASSWORD}".encode()).decode()
    forbidden = [*SECRETS, basic, record["sys_id"], caret, "active=true", content["short_description"],
                 "Basic ", "Bearer ", "/api/now"]  # fmt: skip
    assert content["short_description"] and len(finished) >= 10
    for span in finished:
        for value in _every_value(span):
            for bad in forbidden:
                assert bad not in value, (span.name, value)


async def test_a_failed_tool_call_marks_its_span_and_an_unknown_method_gets_one_span_name(
    composition, spans, dev_emulator
):
    """Issue 42 (build 9): an ``isError`` answer is an error on the span; made-up method names do not
    become span names (one name, ``other``, as on ``/metrics``)."""
    from wire_support import raw_session

    async with connect(composition) as client:
        result = await client.call_tool("servicenow_update_record", {"instance": "dev"})  # arguments missing
        assert result.is_error
    [call] = request_spans(spans.get_finished_spans(), "tools/call")
    assert call.status.status_code is StatusCode.ERROR and call.attributes["error.type"] == "tool_error"
    assert call.status.description is None
    async with raw_session(composition, "2025-11-25") as (session, _):
        for n in range(3):
            await session.request(f"x/made-up-{n}", {})
    others = request_spans(spans.get_finished_spans(), "other")
    assert len(others) == 3 and {s.name for s in others} == {"other"}
    assert not [s for s in spans.get_finished_spans() if "made-up" in s.name]


async def test_every_audit_line_names_its_request_span_and_otlp_records_carry_the_ids(
    composition, spans, dev_emulator, tmp_path
):
    """Issue 42 (build 9): with traces on, an audit line (a method's, and one the SDK answers itself)
    carries ``trace_id`` and ``span_id`` of its request span; the OTLP sink's record gets them as
    ``traceId``/``spanId``. Traces off, no line has them."""
    from wire_support import raw_session

    from mcp_providers._serve.steps.audit import AuditLog
    from mcp_providers._serve.steps.sinks import OtlpLogsSink, Outbox
    from mcp_providers.config import FileSinkSettings, OtlpLogsSinkSettings

    path = tmp_path / "audit.jsonl"
    composition.pipeline.audit = audit = AuditLog([FileSinkSettings(type="file", path=path)])
    audit.open()
    try:
        async with connect(composition) as client:
            await client.read_resource(URI, meta={"traceparent": TRACEPARENT})
        async with raw_session(composition, "2025-11-25") as (session, _):
            await session.request("x/made-up", {})
        composition.pipeline.tracer = None
        async with connect(composition) as client:
            await client.read_resource(URI)
    finally:
        audit.close()
    texts = path.read_text().splitlines()
    lines = [json.loads(text) for text in texts]
    finished = spans.get_finished_spans()
    [read] = request_spans(finished, "resources/read")
    [other] = request_spans(finished, "other")
    by_operation = {line["operation"]: line for line in lines if "trace_id" in line}
    for line, span in ((by_operation["resources/read"], read), (by_operation["x/made-up"], other)):
        assert (line["trace_id"], line["span_id"]) == (
            format(span.context.trace_id, "032x"),
            format(span.context.span_id, "016x"),
        )
    assert by_operation["resources/read"]["trace_id"] == TRACE_ID  # the caller's trace, joined
    untraced = [line for line in lines if "trace_id" not in line]
    assert [line["operation"] for line in untraced if line["operation"] == "resources/read"] == ["resources/read"]
    settings = OtlpLogsSinkSettings(type="otlp", url="http://127.0.0.1:4318/v1/logs")
    body = json.loads(
        OtlpLogsSink(settings, Outbox("otlp", 10, 30.0)).body(
            [(x["time"], x["decision"], t) for x, t in zip(lines, texts, strict=True)]
        )
    )
    records = body["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert [(r.get("traceId"), r.get("spanId")) for r in records] == [
        (x.get("trace_id"), x.get("span_id")) for x in lines
    ]
