"""Skills (issue 44) through a client nobody here wrote: the MCP Inspector CLI 2.12.0, which speaks
the ``io.modelcontextprotocol/skills`` extension and checks it (``--verify``: the extension's
conformance rules, each file's size and digest, and each ``SKILL.md``'s frontmatter against the
entry), over stdio against ``tests/skills_server.py`` (the two-skill plugin of
``tests/skills_fixture``) and ``mcp-providers serve`` (the built-in workflow skills).

Skips only when node is absent (fails under ``CI=true``); the Inspector is installed once into the
tests' user cache, shared with ``tests/test_inspector.py``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prefork import env_options, python
from real_parts import inspector_cli

from mcp_providers.plugins.documcp.workflows import WORKFLOW_IDS

SERVER = [*python(), str(Path(__file__).with_name("skills_server.py"))]
SERVER_ENV = env_options()
"""The servers' own ``HOME`` and locale (the Inspector's ``HOME`` is the test's folder): forked, not started afresh."""
DAILY = "skill://notes/daily-review/SKILL.md"
RUNBOOK = "skill://notes-ops/runbook/SKILL.md"

pytestmark = pytest.mark.slow
WAIT = ("--connect-timeout", "110000")


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    return inspector_cli()


def _run(
    inspector: list[str], target: list[str], home: Path, *args: str
) -> tuple[int, list[dict[str, Any]], dict[str, Any] | None]:
    """Exit code, the JSON lines on stdout, and the error object on stderr (if any)."""
    done = subprocess.run(
        # the server's start is waited for, not timed (the Inspector's 15 s default is outrun on a loaded machine)
        [*inspector, *SERVER_ENV, *target, "--protocol-era", "modern", "-q", "--format", "json", *WAIT, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    errors = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    return done.returncode, lines, errors[0]["error"] if errors else None


def test_the_inspector_verifies_both_skills_and_reads_their_directories(inspector: list[str], tmp_path: Path) -> None:
    code, reports, _ = _run(inspector, SERVER, tmp_path, "--method", "skills/list", "--verify")
    assert code == 0
    assert [(r["uri"], r["outcome"], r["conformance"], r["frontmatter"]) for r in reports] == [
        (DAILY, "verified", [], []),
        (RUNBOOK, "verified", [], []),
    ]
    assert all(f["status"] == "verified" for r in reports for f in r["files"])
    code, (listed,), _ = _run(
        inspector, SERVER, tmp_path, "--method", "resources/directory/read", "--uri", "skill://notes/daily-review"
    )
    assert code == 0
    assert [(r["uri"], r["mimeType"]) for r in listed["result"]["resources"]] == [
        (DAILY, "text/markdown"),
        ("skill://notes/daily-review/templates", "inode/directory"),
    ]


def test_the_inspector_sees_a_denied_skill_nowhere(inspector: list[str], tmp_path: Path) -> None:
    denied = [*SERVER, "--deny"]
    code, reports, _ = _run(inspector, denied, tmp_path, "--method", "skills/list", "--verify")
    assert code == 0 and [r["uri"] for r in reports] == [RUNBOOK]
    code, _, error = _run(inspector, denied, tmp_path, "--method", "skills/get", "--uri", DAILY, "--verify")
    assert code == 1 and error is not None and "permission-denied" in error["message"]


def test_the_inspector_verifies_the_five_workflow_skills_of_serve(inspector: list[str], tmp_path: Path) -> None:
    serve = [*python(), "-m", "mcp_providers", "serve"]
    code, reports, _ = _run(inspector, serve, tmp_path, "--method", "skills/list", "--verify")
    assert code == 0
    assert [r["name"] for r in reports] == list(WORKFLOW_IDS)
    assert all(r["ok"] and r["outcome"] == "verified" for r in reports)
