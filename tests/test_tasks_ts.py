"""The tasks extension (SEP-2663) through a requester made by others: the npm package
``@modelcontextprotocol/ext-tasks`` (its ``client`` entry point) on the TypeScript SDK v2
``Client`` (``@modelcontextprotocol/client@2``) in the 2026-07-28 era, ``tests/clients/tasks_client.mjs``,
against ``mcp-providers serve`` with the tools of :mod:`tasks_support` installed as an entry point:
over streamable HTTP (the server in its default mode, ``--stateless``, and ``--stateless
--json-response``, the fast path; a 2026-07-28 client holds no session in any) and over stdio.

The package leaves the 2026-07-28 task wire to its host (``rawDispatch``: the SDK ``Client``'s own
request path does not take a ``resultType: "task"`` result); the script's is chained onto the SDK
transport, so the SDK still writes the standard headers (``Mcp-Method``, and ``Mcp-Name`` from
``params.taskId``, which the server checks).

The client follows ``count`` to its result, cancels ``hold``, sees ``fail`` fail with its JSON-RPC
error, answers ``ask``'s elicitation (``tasks/update``), gets ``plain`` at once, and is refused
``hold`` with -32021 when it calls it through the SDK's own ``callTool``, which declares no
extension. Over HTTP it also reports the ``Mcp-Method``/``Mcp-Name`` headers of every ``tasks/*``.
In the 2025-11-25 era (``--legacy``) the server offers no tasks, and the package's session runs
``count`` plainly and is refused ``hold``.

The npm folder is made once per test session; without npm or the network the tests skip, and
under ``CI=true`` they fail (``real_parts``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prefork import python
from real_parts import require_tool
from reload_support import install
from serve_support import serve_process
from test_client_matrix import npm_client

pytestmark = pytest.mark.slow

SPECS = ("@modelcontextprotocol/client@2", "@modelcontextprotocol/ext-tasks@0.2")
TASKS = "io.modelcontextprotocol/tasks"
TESTS = Path(__file__).parent
TOUR_SECONDS = 120


@pytest.fixture(scope="session")
def tasks_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client script in an npm folder with both packages installed."""
    return npm_client(tmp_path_factory.mktemp("ext-tasks-client"), SPECS, "tasks_client.mjs")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a server with :data:`tasks_support.PLUGIN` installed as the ``tasks`` entry point."""
    site = tmp_path / "site"
    site.mkdir()
    install(site, "tasks-demo", {"tasks": "tasks_support:PLUGIN"})
    out = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_") and k != "NODE_PATH"}
    out["PYTHONPATH"] = os.pathsep.join([str(site), str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])])
    return out


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp-providers.toml"
    path.write_text('allow = ["tasks"]\n[server.tasks]\npoll_interval_ms = 100\n')
    return path


def _tour(script: Path, env: dict[str, str], target: list[str]) -> dict[str, dict[str, Any]]:
    """Run the client against ``target``; its report lines by step."""
    node = require_tool("node", "apt-get install -y nodejs")
    try:
        done = subprocess.run(
            [node, str(script), *target], capture_output=True, text=True, timeout=TOUR_SECONDS,
            cwd=script.parent, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the client did not finish in {TOUR_SECONDS} s: {exc.stderr!r}") from None
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {line.pop("step"): line for line in lines}


def _followed(report: dict[str, dict[str, Any]], subject: str) -> None:
    """What every transport shows: each tool as the extension's requester sees it (the caller is
    ``subject``: ``anonymous`` over HTTP without auth, ``local`` over stdio)."""
    assert report["done"] == {"errors": []}
    assert report["connected"] == {"protocol": "2026-07-28", "era": "modern", "extension": {}, "execution": True}
    count = report["count"]
    assert (count["kind"], count["outcome"], count["text"]) == ("task", "completed", f"counted to 3 for {subject}")
    assert count["statuses"][-1] == "completed" and set(count["statuses"][:-1]) <= {"working"}
    assert "counting (3/3)" in count["messages"]  # progress reached the requester as statusMessage
    assert report["hold"] == {"kind": "task", "before": "working", "outcome": "cancelled", "final": "cancelled"}
    fail = report["fail"]
    assert (fail["kind"], fail["outcome"], fail["code"]) == ("task", "failed", -32602)
    assert fail["message"] == "the upstream refused this"
    ask = report["ask"]
    assert (ask["kind"], ask["asked"], ask["outcome"]) == ("task", ["Go ahead?"], "completed")
    assert ask["text"] == "accept {'ok': True}"
    assert report["plain"] == {"kind": "immediate", "outcome": "completed", "text": "plain"}
    refused = report["refused"]
    assert refused["code"] == -32021 and TASKS in refused["message"]
    assert refused["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


@pytest.mark.parametrize(
    "flags", [(), ("--stateless",), ("--stateless", "--json-response")], ids=["sessions", "stateless", "stateless-json"]
)
def test_the_ext_tasks_requester_follows_cancels_and_answers_tasks_over_http(
    tasks_client: Path, env: dict[str, str], config: Path, flags: tuple[str, ...]
) -> None:
    with serve_process(env, config.with_name("serve.log"), "-c", str(config), *flags) as (base, _):
        report = _tour(tasks_client, env, ["--url", f"{base}/mcp"])
    _followed(report, "anonymous")
    seen = report["headers"]["seen"]
    assert {s["method"] for s in seen} == {"tasks/get", "tasks/cancel", "tasks/update"}
    assert all(s["mcpMethod"] == s["method"] and s["mcpName"] == s["taskId"] for s in seen), seen


def test_the_ext_tasks_requester_follows_cancels_and_answers_tasks_over_stdio(
    tasks_client: Path, env: dict[str, str], config: Path
) -> None:
    server = [*python(), "-m", "mcp_providers", "serve", "-c", str(config)]
    report = _tour(tasks_client, env, ["--", *server])
    _followed(report, "local")
    assert "headers" not in report


def test_in_the_2025_era_the_requester_is_offered_no_tasks_and_runs_calls_plainly(
    tasks_client: Path, env: dict[str, str], config: Path
) -> None:
    with serve_process(env, config.with_name("serve.log"), "-c", str(config)) as (base, _):
        report = _tour(tasks_client, env, ["--legacy", "--url", f"{base}/mcp"])
    assert report["done"] == {"errors": []}
    assert report["connected"] == {"protocol": "2025-11-25", "era": "legacy", "extension": None, "execution": False}
    counted, held = report["legacy"]["count"], report["legacy"]["hold"]
    assert counted == {"kind": "immediate", "outcome": "completed", "text": "counted to 2 for anonymous"}
    assert held["code"] == -32021  # a task-only tool, and no task to run it in
