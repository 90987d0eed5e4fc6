"""Helpers shared by the documentation plugin tests (imported as ``documcp_support``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from real_parts import require_tool

from mcp_providers.plugins.documcp import config_templates, prompts, ssg_catalog, workflows

DOCUMCP_PLUGINS: dict[str, object] = {
    "ssg_catalog": ssg_catalog,
    "config_templates": config_templates,
    "workflows": workflows,
    "documcp_prompts": prompts,
}
"""The documentation plugins under their entry-point names (pyproject.toml)."""


async def read_text(client: Client, uri: str) -> types.TextResourceContents:
    """The single text item of ``resources/read`` for ``uri``."""
    result = await client.read_resource(uri)
    assert len(result.contents) == 1
    (item,) = result.contents
    assert isinstance(item, types.TextResourceContents)
    assert item.uri == uri
    return item


async def read_json(client: Client, uri: str) -> Any:
    item = await read_text(client, uri)
    assert item.mime_type == "application/json"
    return json.loads(item.text)


def node_check(source: str, tmp_path: Path, module: bool) -> subprocess.CompletedProcess[str]:
    """Run ``node --check`` on ``source`` saved as .mjs (ES module) or .cjs (CommonJS)."""
    node = require_tool("node", "apt-get install -y nodejs")
    path = tmp_path / ("config.mjs" if module else "config.cjs")
    path.write_text(source, encoding="utf-8")
    return subprocess.run([node, "--check", str(path)], capture_output=True, text=True, timeout=60)
