"""Real MCP clients of several generations against ``mcp-providers serve``, over stdio and over
streamable HTTP (``serve --http 127.0.0.1:PORT``, the same config, on a free loopback port).

Each client lists everything, reads fixed and templated resources, completes a template
argument, calls every built-in tool (the documentation tools and the ServiceNow tools against an
emulated instance) and gets a prompt, and must meet no error at all: a client that refuses a
result (an unknown content block, a field it validates, an output schema it cannot compile)
records the step under ``errors``.

==========================  ======================  ==========================================
client                      protocol it ends on     how the test gets it
==========================  ======================  ==========================================
Python SDK 1.9.4            2025-03-26              ``uv venv`` + ``uv pip install mcp==1.9.4``
Python SDK 1.x current      2025-11-25              ``uv pip install 'mcp>=1.20,<2'``
TypeScript SDK 1.11.5       2025-03-26              ``npm install @modelcontextprotocol/sdk@1.11.5``
TypeScript SDK 1.x current  2025-11-25              ``npm install @modelcontextprotocol/sdk@1``
Python SDK v2 (ours)        2026-07-28 / 2025-11-25 the project's own ``mcp`` (auto, legacy)
==========================  ======================  ==========================================

Over HTTP the clients use their streamable HTTP transport (Python 1.x ``streamablehttp_client``,
TypeScript ``StreamableHTTPClientTransport``, SDK v2 ``Client(URL)``) against the default
``serve --http`` (sessions, SSE responses).

The venvs and npm folders are made once per machine, in the tests' user cache; a client that
cannot be installed (no network to PyPI or npm, no npm) is skipped with the reason, and fails the
run under ``CI=true`` (``real_parts``).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import prefork
import pytest
from mcp import Client, StdioServerParameters
from prefork import python
from real_parts import installed_once, missing, require_tool

from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.plugins.servicenow.seed import sys_id_for

pytestmark = pytest.mark.slow

CLIENTS = Path(__file__).parent / "clients"
USER, PASSWORD = "matrix.user", "matrix-Pa55-77a1"
INSTALL_SECONDS = 600
START_SECONDS = 60
"""Upper bound on ``serve --http`` starting to answer."""
"""Upper bound on one install or one client tour (a bound on the test, not an assertion about speed)."""
BUILT_IN_TOOLS = {
    "recommend_ssg",
    "generate_config",
    "servicenow_query_table",
    "servicenow_get_record",
    "servicenow_create_incident",
    "servicenow_update_record",
    "servicenow_add_comment",
    "servicenow_resolve_incident",
}


def _calls() -> list[dict[str, Any]]:
    incident = "incident"
    return [
        {"name": "recommend_ssg", "arguments": {"team_language": "python", "purposes": ["documentation"]}},
        {
            "name": "generate_config",
            "arguments": {"ssg": "hugo", "site_name": "Acme Docs", "repository_url": "https://github.com/acme/widgets"},
        },
        {"name": "servicenow_query_table", "arguments": {"instance": "dev", "table": incident, "limit": 3}},
        {
            "name": "servicenow_get_record",
            "arguments": {"instance": "dev", "table": incident, "sys_id": sys_id_for("dev", incident, 0)},
        },
        {"name": "servicenow_create_incident", "arguments": {"instance": "dev", "short_description": "client matrix"}},
        {
            "name": "servicenow_update_record",
            "arguments": {
                "instance": "dev",
                "table": incident,
                "sys_id": sys_id_for("dev", incident, 1),
                "values": {"urgency": "2"},
            },
        },
        {"name": "servicenow_add_comment", "arguments": {"instance": "dev", "number": "INC0010003", "text": "checked"}},
        {
            "name": "servicenow_resolve_incident",
            "arguments": {
                "instance": "dev",
                "number": "INC0010004",
                "close_notes": "done",
                "close_code": "Solved (Permanently)",
            },
        },
    ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[str], Path, dict[str, Any]]]:
    """(server command, plan file, plan) for a server with the built-ins and an emulated instance."""
    folder = tmp_path_factory.mktemp("matrix")
    with Emulator("dev", users={USER: PASSWORD}) as emulator:
        config = folder / "mcp-providers.toml"
        config.write_text(
            f"""
[[plugins.servicenow.instances]]
name = "dev"
url = "{emulator.base_url}"
auth = {{ type = "basic", username = "{USER}", password_env = "MATRIX_SN_PASSWORD" }}
""",
            encoding="utf-8",
        )
        env = {k: os.environ[k] for k in ("PATH", "HOME", "SYSTEMROOT", "PYTHONPATH") if k in os.environ}
        env |= prefork.start_up_settings()  # the locale too: else each server starts a fresh interpreter
        env |= {"MATRIX_SN_PASSWORD": PASSWORD, "MCP_PROVIDERS_AUDIT_KEY": "matrix-audit-key"}
        plan = {
            "env": env,
            "reads": ["documcp://ssgs/available", "documcp://ssgs/hugo", "servicenow://dev/info"],
            "complete": {"template": "documcp://ssgs/{ssg}", "argument": {"name": "ssg", "value": "h"}},
            "prompt": {"name": "setup-documentation", "arguments": {"project_path": "/srv/acme"}},
            "calls": _calls(),
        }
        plan_file = folder / "plan.json"
        plan_file.write_text(json.dumps(plan), encoding="utf-8")
        yield [*python(), "-m", "mcp_providers", "serve", "--config", str(config)], plan_file, plan


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served_http(served: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The MCP URL of ``serve --http 127.0.0.1:PORT`` with the stdio leg's config, once it answers."""
    command, _plan_file, plan = served
    port = _free_port()
    log = tmp_path_factory.mktemp("matrix-http") / "stderr.txt"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [*command, "--http", f"127.0.0.1:{port}"], env=plan["env"], stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, (
                "serve --http did not answer: " + log.read_text(errors="replace")[-3000:]
            )
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, served: Any) -> list[str]:
    """How a client script reaches the server: ``["--", COMMAND...]`` (stdio) or ``["--url", URL]``."""
    if request.param == "http":
        return ["--url", request.getfixturevalue("served_http")]
    return ["--", *served[0]]


def _run(command: list[str], what: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_SECONDS, **kwargs)
    except (OSError, subprocess.TimeoutExpired) as exc:
        missing(f"{what}: {exc}")


@pytest.fixture(scope="session")
def python_client() -> Any:
    """``make(spec) -> python``: a venv with the Python SDK ``spec`` installed, made once per
    machine (:func:`real_parts.installed_once`, as the npm clients are) for this interpreter; a
    range (``>=1.20,<2``: the current release) is resolved again each day, as a fresh install would."""
    made: dict[str, Path] = {}

    def install(spec: str, folder: Path) -> None:
        uv = require_tool("uv", "pip install uv; the client venv is made with it")
        venv = folder / "venv"
        shutil.rmtree(venv, ignore_errors=True)
        created = _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], "uv venv")
        assert created.returncode == 0, created.stderr
        python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
        # mcp 1.9.x imports a pydantic internal that pydantic 2.12 removed: pin what it was released with.
        extra = ["pydantic<2.12"] if spec.startswith("mcp==1.9") else []
        installed = _run([uv, "pip", "install", "--quiet", "--python", str(python), spec, *extra], f"installing {spec}")
        if installed.returncode != 0:
            missing(f"cannot install {spec} from PyPI (offline?): {installed.stderr.strip()[-300:]}")

    def make(spec: str) -> Path:
        if spec in made:
            return made[spec]
        interpreter = f"{os.path.realpath(sys.executable)} {sys.version}"
        exact = re.fullmatch(r"[\w-]+==[\w.]+", spec) is not None
        key = f"{spec} for {interpreter}" + ("" if exact else f" (resolved on {datetime.date.today()})")
        digest = hashlib.sha256(f"{spec} for {interpreter}".encode()).hexdigest()[:16]
        folder = installed_once(f"pypi-client-{digest}", key, lambda folder: install(spec, folder))
        made[spec] = folder / "venv" / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
        return made[spec]

    return make


PACKAGE_JSON = '{"name": "mcp-providers-test-client", "private": true, "type": "module"}'


def npm_client(folder: Path, specs: Sequence[str], script: str) -> Path:
    """``folder`` made an npm package whose ``node_modules`` holds ``specs`` and the client
    ``script`` (from ``tests/clients/``) copied in; the script's path there. The packages are
    installed once into the tests' user cache (:func:`real_parts.installed_once`) and
    ``node_modules`` links there, so later runs and other clones install nothing.

    :raises pytest.skip.Exception: npm or node is missing, or the install failed (under
        ``CI=true`` the test fails instead).
    """
    npm = require_tool("npm", "apt-get install -y nodejs npm")
    require_tool("node", "apt-get install -y nodejs")
    wanted = " ".join(specs)

    def install(cached: Path) -> None:
        (cached / "package.json").write_text(PACKAGE_JSON)
        installed = _run(
            [npm, "install", "--silent", "--no-audit", "--no-fund", *specs], f"npm install {wanted}", cwd=cached
        )
        if installed.returncode != 0:
            missing(f"cannot install {wanted} from npm (offline?): {installed.stderr.strip()[-300:]}")

    digest = hashlib.sha256(wanted.encode()).hexdigest()[:16]
    # A range ("@1", "@2": the current release) is resolved again each day, as a fresh install would.
    exact = all(re.search(r"@\d+\.\d+\.\d+$", spec) for spec in specs)
    key = wanted if exact else f"{wanted} (resolved on {datetime.date.today()})"
    cached = installed_once(f"npm-client-{digest}", key, install)
    (folder / "package.json").write_text(PACKAGE_JSON)
    (folder / "node_modules").symlink_to(cached / "node_modules", target_is_directory=True)
    shutil.copy(CLIENTS / script, folder / script)
    return folder / script


@pytest.fixture(scope="session")
def ts_client(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``make(spec) -> script``: an npm folder with ``spec`` installed and the client script in it."""
    made: dict[str, Path] = {}

    def make(spec: str) -> Path:
        if spec in made:
            return made[spec]
        script = npm_client(tmp_path_factory.mktemp("ts-client"), (spec,), "ts_client.mjs")
        made[spec] = script
        return script

    return make


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check(report: dict[str, Any], plan: dict[str, Any], *, structured: bool) -> None:
    assert report["errors"] == [], report["errors"]
    assert set(report["tools"]) >= BUILT_IN_TOOLS
    assert report["resources"] > 0 and report["templates"] > 0 and report["prompts"] > 0
    assert all(count >= 1 for count in report["reads"].values()), report["reads"]
    assert "hugo" in report["completions"]
    assert report["promptMessages"] >= 1
    assert set(report["calls"]) == {c["name"] for c in plan["calls"]}
    for name, call in report["calls"].items():
        assert not call["isError"], (name, call)
        if not structured:  # a 2025-03-26 session: no blocks or fields from later versions
            assert "resource_link" not in call["types"], (name, call)
            assert not call["structured"], (name, call)


@pytest.mark.parametrize(
    ("spec", "protocol"), [("mcp==1.9.4", "2025-03-26"), ("mcp>=1.20,<2", "2025-11-25")], ids=["py-1.9.4", "py-1.x"]
)
def test_python_sdk_1x_clients(served: Any, target: list[str], python_client: Any, spec: str, protocol: str) -> None:
    _command, plan_file, plan = served
    python = python_client(spec)
    report = _report(_run([str(python), str(CLIENTS / "py1_client.py"), str(plan_file), *target], spec))
    assert report["protocol"] == protocol
    _check(report, plan, structured=protocol >= "2025-06-18")


@pytest.mark.parametrize(
    ("spec", "structured"),
    [("@modelcontextprotocol/sdk@1.11.5", False), ("@modelcontextprotocol/sdk@1", True)],
    ids=["ts-1.11.5", "ts-1.x"],
)
def test_typescript_sdk_1x_clients(served: Any, target: list[str], ts_client: Any, spec: str, structured: bool) -> None:
    _command, plan_file, plan = served
    script = ts_client(spec)
    node = require_tool("node", "apt-get install -y nodejs")
    report = _report(_run([node, str(script), str(plan_file), *target], spec, cwd=script.parent))
    _check(report, plan, structured=structured)


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "protocol"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_python_sdk_v2_client_in_both_eras(served: Any, target: list[str], mode: str, protocol: str) -> None:
    command, _plan_file, plan = served
    server: Any = (
        target[1]
        if target[0] == "--url"
        else StdioServerParameters(command=command[0], args=command[1:], env=plan["env"])
    )
    report: dict[str, Any] = {"errors": [], "calls": {}, "reads": {}}
    async with Client(server, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        assert client.protocol_version == protocol
        report["tools"] = [t.name for t in (await client.list_tools()).tools]
        report["resources"] = len((await client.list_resources()).resources)
        report["templates"] = len((await client.list_resource_templates()).resource_templates)
        report["prompts"] = len((await client.list_prompts()).prompts)
        for uri in plan["reads"]:
            report["reads"][uri] = len((await client.read_resource(uri)).contents)
        done = await client.complete(
            {"type": "ref/resource", "uri": plan["complete"]["template"]}, plan["complete"]["argument"]
        )
        report["completions"] = done.completion.values
        for call in plan["calls"]:
            result = await client.call_tool(call["name"], call["arguments"])
            report["calls"][call["name"]] = {
                "isError": bool(result.is_error),
                "types": [b.type for b in result.content],
                "structured": result.structured_content is not None,
            }
        prompt = plan["prompt"]
        report["promptMessages"] = len((await client.get_prompt(prompt["name"], prompt["arguments"])).messages)
    _check(report, plan, structured=True)
