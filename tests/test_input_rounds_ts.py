"""The confirming tool of :mod:`input_support` through the TypeScript SDK v2 client
(``@modelcontextprotocol/client@2``, ``tests/clients/ts2_client.mjs``), issue 27 must-show 1: over
stdio and streamable HTTP (sessions, and stateless for 2026), in both eras.

The client picks its era with ``versionNegotiation: {mode}``: ``"auto"`` probes with
``server/discover`` and ends on 2026-07-28, where the question comes back as an
``input_required`` result that the client fulfils through its ``elicitation/create`` handler and
retries (``inputRequired.autoFulfill``, on by default); ``"legacy"`` (its default) is the
``initialize`` handshake of 2025-11-25, where the same handler answers the server's
``elicitation/create`` request. On a modern connection the client drops every server-to-client
request (``Client._shouldDropInbound``), so a confirmed result in the 2026 era came through input
rounds; over HTTP the server runs in this process and :data:`input_support.RUNS` shows the re-run.

The npm folder is made once per test session; without npm or the network the tests skip, and
under ``CI=true`` they fail (``real_parts``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from input_support import RUNS, AskerPlugin
from prefork import python
from real_parts import require_tool
from serve_support import served
from test_client_matrix import _report, _run, npm_client

from mcp_providers.testing import compose

pytestmark = pytest.mark.slow

SPEC = "@modelcontextprotocol/client@2"
SUPPORT = Path(__file__).with_name("input_support.py")
VERSIONS = {"auto": ("2026-07-28", "modern"), "legacy": ("2025-11-25", "legacy")}
NOT_ASKED = (
    "confirm failed: elicitation needs a connection that carries server-to-client requests (stdio, or streamable "
    "HTTP with sessions and SSE responses); this one has none (the server runs with --stateless or "
    "--json-response), so this tool cannot ask the client"
)


@pytest.fixture(scope="session")
def ts2_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client script in an npm folder with ``@modelcontextprotocol/client@2`` installed."""
    return npm_client(tmp_path_factory.mktemp("ts2-client"), (SPEC,), "ts2_client.mjs")


def _tour(script: Path, tmp_path: Path, mode: str, target: list[str]) -> dict[str, Any]:
    """Run the client in ``mode`` against ``target``: it calls ``confirm`` and ``twice``, accepting."""
    plan = {
        "mode": mode,
        "calls": [{"name": "confirm", "arguments": {"note": "n1"}}, {"name": "twice", "arguments": {"note": "n2"}}],
        "answer": {"action": "accept", "content": {"confirm": True}},
        "model": {"text": "farewell", "model": "stand-in"},
    }
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    node = require_tool("node", "apt-get install -y nodejs")
    return _report(_run([node, str(script), str(plan_file), *target], SPEC, cwd=script.parent))


def _confirmed(report: dict[str, Any], mode: str) -> None:
    assert report["errors"] == [], report["errors"]
    assert (report["protocol"], report["era"]) == VERSIONS[mode]
    assert report["calls"] == {
        "confirm": {"isError": False, "text": "deleted n1"},
        "twice": {"isError": False, "text": "deleted n2; the model said 'farewell' (stand-in)"},
    }
    assert report["asked"] == ["Delete n1?", "Delete n2?", "Say goodbye to n2"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_ts_v2_client_confirms_over_stdio_in_both_eras(ts2_client: Path, tmp_path: Path, mode: str) -> None:
    report = _tour(ts2_client, tmp_path, mode, ["--", *python(), str(SUPPORT)])
    _confirmed(report, mode)


@pytest.mark.parametrize(
    ("stateless", "mode", "runs"),
    [(False, "auto", 2), (False, "legacy", 1), (True, "auto", 2)],
    ids=["sessions-2026", "sessions-2025", "stateless-2026"],
)
def test_the_ts_v2_client_confirms_over_http(
    ts2_client: Path, tmp_path: Path, stateless: bool, mode: str, runs: int
) -> None:
    RUNS.clear()
    with served(compose({"asker": AskerPlugin()}), stateless=stateless, json_response=stateless) as port:
        report = _tour(ts2_client, tmp_path, mode, ["--url", f"http://127.0.0.1:{port}/mcp"])
    _confirmed(report, mode)
    assert RUNS["confirm"] == runs  # 2026: asked in round one, run again with the answer


def test_the_ts_v2_client_on_stateless_http_in_the_2025_era_is_told_it_cannot_be_asked(
    ts2_client: Path, tmp_path: Path
) -> None:
    # each stateless 2025 request is a session of its own, which never saw the client's capabilities
    with served(compose({"asker": AskerPlugin()}), stateless=True, json_response=True) as port:
        report = _tour(ts2_client, tmp_path, "legacy", ["--url", f"http://127.0.0.1:{port}/mcp"])
    assert report["errors"] == [] and report["protocol"] == "2025-11-25"
    assert report["calls"]["confirm"] == {"isError": True, "text": NOT_ASKED}
    assert report["asked"] == []
