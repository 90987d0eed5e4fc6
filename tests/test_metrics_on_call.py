"""Issue 42 (build 6): what on-call reads on ``/metrics``, validated by Prometheus's own ``promtool``.

Served as ``serve --http`` serves it (the CLI's app on a real uvicorn, loopback), raw HTTP.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel
from real_parts import require_tool
from serve_support import URI, NotesPlugin, post, request, served

from mcp_providers import Tool, ToolCall, ToolFailure, ToolProvider, ToolResult, hookimpl
from mcp_providers.testing import compose

pytestmark = [pytest.mark.slow]


class _Args(BaseModel):
    fail: bool = False


class Flaky(ToolProvider):
    name = "flaky"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="flaky", description="Fails when asked to.", input_model=_Args)]

    async def call(self, call: ToolCall) -> ToolResult:
        if call.arguments.fail:
            raise ToolFailure("asked to fail")
        return ToolResult(text="fine")


class FlakyPlugin:
    @hookimpl
    def register_tool_providers(self, settings: Any) -> list[ToolProvider]:
        return [Flaky()]


def _metrics(port: int) -> str:
    status, _, body = request(port, "GET", path="/metrics")
    assert status == 200
    return body.decode()


def _value(text: str, series: str) -> float | None:
    match = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(match[1]) if match else None


def _call(port: int, n: int, fail: bool) -> None:
    params = {"name": "flaky", "arguments": {"fail": fail}}
    status, _, body = post(port, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
    assert status == 200 and body["result"]["isError"] is fail, body


def test_metrics_start_at_zero_count_failed_tools_time_each_tool_and_pass_promtool() -> None:
    promtool = require_tool("promtool", "apt-get install -y prometheus")
    with served(compose({"notes": NotesPlugin(), "flaky": FlakyPlugin()}), stateless=True, json_response=True) as port:
        before = _metrics(port)
        # every known series exists before its first event: increase() sees the first denial
        for series in (
            'mcp_providers_requests_total{method="resources/read",outcome="-32003"}',
            'mcp_providers_requests_total{method="resources/read",outcome="-32602"}',
            'mcp_providers_requests_total{method="other",outcome="-32601"}',
            'mcp_providers_requests_total{method="tools/call",outcome="tool_error"}',
            'mcp_providers_tool_seconds_count{outcome="tool_error",plugin="flaky",tool="flaky"}',
        ):
            assert _value(before, series) == 0, series
        assert (_value(before, "process_resident_memory_bytes") or 0) > 0  # the process's own metrics
        assert _value(before, "process_start_time_seconds") is not None

        _call(port, 1, fail=False)
        _call(port, 2, fail=True)
        _call(port, 3, fail=True)
        post(port, {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": URI}})
        after = _metrics(port)
    assert _value(after, 'mcp_providers_requests_total{method="tools/call",outcome="ok"}') == 1
    assert _value(after, 'mcp_providers_requests_total{method="tools/call",outcome="tool_error"}') == 2  # not ok
    assert _value(after, 'mcp_providers_tool_seconds_count{outcome="tool_error",plugin="flaky",tool="flaky"}') == 2
    assert _value(after, 'mcp_providers_request_seconds_count{method="resources/read"}') == 1
    checked = subprocess.run([promtool, "check", "metrics"], input=after, capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr
