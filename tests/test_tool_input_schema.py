"""A 2026-07-28 ``tools/call`` over HTTP: the SDK checks ``Mcp-Param`` headers against the tool's
input schema, which it takes from the server's ``get_tool_input_schema`` (the current generation's
tool) instead of running a ``tools/list`` of its own per call: that hidden list was one more audit
line the client never asked for, and after a reload that removed every tool, an ERROR with a
traceback in the log on every call."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from mcp import Client, MCPError
from serve_support import NotesPlugin, served

from mcp_providers._serve.reload import Reloader
from mcp_providers.config import Config, ServerSettings
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio


async def test_a_call_writes_one_audit_line_and_a_reload_without_tools_logs_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    audit = tmp_path / "audit.jsonl"
    plugins = {"notes": NotesPlugin()}
    server = ServerSettings(audit_log=audit)
    composition = compose(plugins, server=server)
    with served(composition) as port:
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:  # type: ignore[arg-type]
            await client.call_tool("echo", {"value": [1, [2]]})
            operations = [json.loads(line)["operation"] for line in audit.read_text().splitlines()]
            # what the client sent, in order (it lists the tools itself after a call): no list of the server's own
            assert operations[:2] == ["server/discover", "tools/call"], operations
            reloader = Reloader(composition, lambda: Config(deny=("notes",), server=server),
                                load_entrypoints=False, plugins=plugins)  # fmt: skip
            assert (await reloader.reload()).outcome == "applied"
            with caplog.at_level(logging.ERROR), pytest.raises(MCPError) as gone:
                await client.call_tool("echo", {"value": 1})
            assert gone.value.error.code == -32601
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
