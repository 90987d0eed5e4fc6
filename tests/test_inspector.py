"""A client nobody here wrote: the MCP Inspector CLI, over stdio, against `mcp-providers serve`.

Skips only when node is absent. The Inspector is installed from the npm registry into an ignored
folder (``.cache/npm``) the first time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
ROOT = Path(__file__).resolve().parent.parent
PREFIX = ROOT / ".cache" / "npm"
LAUNCHER = (
    PREFIX / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
)

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="node and npm are needed for the Inspector CLI"
)


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    if not LAUNCHER.exists():
        PREFIX.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(PREFIX), INSPECTOR],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )
    return ["node", str(LAUNCHER), "--cli"]


def _run(inspector: list[str], tmp_path: Path, *args: str) -> dict[str, object]:
    env = dict(os.environ, HOME=str(tmp_path))  # the Inspector writes state under $HOME
    run = subprocess.run(
        [*inspector, sys.executable, "-m", "mcp_providers", "serve", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, object] = json.loads(run.stdout)
    return result


def test_inspector_lists_and_reads_the_catalog_over_stdio(inspector: list[str], tmp_path: Path) -> None:
    listed = _run(inspector, tmp_path, "--method", "resources/list")
    uris = [r["uri"] for r in listed["resources"]]  # type: ignore[attr-defined]
    assert "documcp://ssgs/available" in uris
    templates = _run(inspector, tmp_path, "--method", "resources/templates/list")
    assert "documcp://ssgs/{ssg}" in [t["uriTemplate"] for t in templates["resourceTemplates"]]  # type: ignore[attr-defined]
    read = _run(inspector, tmp_path, "--method", "resources/read", "--uri", "documcp://ssgs/available")
    (item,) = read["contents"]  # type: ignore[misc]
    assert item["mimeType"] == "application/json"
    assert {"jekyll", "hugo", "docusaurus", "mkdocs", "eleventy"} <= {s["id"] for s in json.loads(item["text"])["ssgs"]}
