"""Traces over real HTTP: ``serve --http`` as a subprocess, told by the standard ``OTEL_*`` variables to
export OTLP/HTTP to a receiver on loopback that decodes ``ExportTraceServiceRequest`` protobufs; a read
sent with a ``traceparent`` header produces the request span, its stage spans and the upstream call,
in the client's trace (issue 28 must-show 1)."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cluster_support import free_port, replicas, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from servicenow_support import DEV_PASSWORD, SECRETS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
URI = "servicenow://dev/incidents/INC0010001"


class Receiver:
    """An OTLP/HTTP trace receiver on a free loopback port: every span it was sent, as dicts."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.take(self.path, body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self, path: str, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        self.paths.append(path)
        for batch in request.resource_spans:
            self.resources.append({a.key: _value(a.value) for a in batch.resource.attributes})
            for scoped in batch.scope_spans:
                for span in scoped.spans:
                    self.spans.append({
                        "name": span.name, "kind": span.kind, "scope": scoped.scope.name,
                        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(), "status": span.status.message,
                        "attributes": {a.key: _value(a.value) for a in span.attributes},
                        "events": [e.name for e in span.events],
                    })  # fmt: skip

    @contextlib.contextmanager
    def running(self) -> Iterator[Receiver]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


def _value(value: Any) -> Any:
    return getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["2026-07-28", "2025-11-25 session"])
async def test_a_read_over_http_exports_its_trace_parented_to_the_clients_traceparent(
    tmp_path: Path, dev_emulator, secrets_env, monkeypatch, mode
):
    config = write_config(tmp_path, dev_emulator.base_url, None, poll_seconds=3600)
    with Receiver().running() as receiver:
        for name, value in {
            "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_BSP_SCHEDULE_DELAY": "50",
            "OTEL_SERVICE_NAME": "mcp-under-test",
        }.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        with replicas(config, 1) as [replica]:
            headers = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
            sessions: set[str] = set()

            async def note_session(response: httpx2.Response) -> None:
                sessions.update(v for k, v in response.headers.items() if k == "mcp-session-id")

            async with (
                httpx2.AsyncClient(headers=headers, event_hooks={"response": [note_session]}) as http,
                Client(streamable_http_client(replica.url, http_client=http), mode=mode, cache=None) as client,
            ):
                result = await client.read_resource(URI)
            assert '"INC0010001"' in result.contents[0].text  # type: ignore[union-attr]
            spans = _await_read(receiver)
    [read] = [s for s in spans if s["attributes"].get("mcp.method.name") == "resources/read"]
    assert (read["trace_id"], read["parent"]) == (TRACE_ID, PARENT_ID)
    assert read["kind"] == 2 and read["scope"] == "mcp_providers"  # SPAN_KIND_SERVER, our span, not the SDK's
    assert read["attributes"]["mcp.resource.uri"] == URI
    assert read["attributes"]["mcp_providers.subject"]  # the HTTP caller (anonymous without [server.auth])
    if mode == "legacy":  # 2026-07-28 has no sessions
        [session] = sessions
        assert len(read["attributes"]["mcp.session.id"]) == 32  # a digest, not the session id itself
        assert read["attributes"]["mcp.session.id"] != session
        assert all(session not in repr(span) for span in spans)
    else:
        assert "mcp.session.id" not in read["attributes"]
    stages = {s["name"]: s for s in spans if s["parent"] == read["span_id"]}
    assert set(stages) == {"mcp_providers.gate", "mcp_providers.invoke", "mcp_providers.evidence"}
    [upstream] = [s for s in spans if s["parent"] == stages["mcp_providers.invoke"]["span_id"]]
    assert upstream["name"] == "GET" and upstream["kind"] == 3  # SPAN_KIND_CLIENT
    assert upstream["attributes"]["http.response.status_code"] == 200
    assert upstream["attributes"]["server.address"] == "127.0.0.1"
    assert {"service.name": "mcp-under-test"}.items() <= receiver.resources[0].items()
    assert receiver.resources[0]["service.instance.id"] == "replica1"  # MCP_PROVIDERS_REPLICA (issue 42)
    assert set(receiver.paths) == {"/v1/traces"}
    for span in spans:
        text = repr(span)
        for bad in (*SECRETS, DEV_PASSWORD, "Basic ", "/api/now"):
            assert bad not in text, span


def _await_read(receiver: Receiver, seconds: float = 20) -> list[dict[str, Any]]:
    """The spans received once the read's request span and its upstream call have arrived."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        spans = list(receiver.spans)
        names = {s["name"] for s in spans}
        if "resources/read" in names and "GET" in names and "mcp_providers.evidence" in names:
            return spans
        time.sleep(0.05)
    raise AssertionError(f"no trace of the read after {seconds} s: {receiver.spans}")
