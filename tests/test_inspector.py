"""A client nobody here wrote: the MCP Inspector CLI against `mcp-providers serve`, stdio and HTTP.

Every test runs the same checks over both transports against the built-in plugins: list
resources, list templates, read a fixed resource, read a template expansion, list tools and call
``recommend_ssg``, list prompts, set the log level, and read an unknown URI (an error, exit 1).

Skips only when node is absent. The Inspector is installed from the npm registry the first time,
into the tests' user cache (:func:`real_parts.installed_once`), which later runs and other clones
reuse; the HTTP server is a ``serve --http 127.0.0.1:PORT``
subprocess stopped at the end of the module.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefork import env_options, python
from real_parts import inspector_cli

SERVE = [*python(), "-m", "mcp_providers", "serve"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    """The Inspector CLI's command (node and npm are needed: skipped without them, failed under CI=true)."""
    return inspector_cli()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mcp-providers serve --http`` on a free loopback port, for the whole module."""
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen([*SERVE, "--http", f"127.0.0.1:{port}"], stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60  # a start-up bound, not a timed assertion
        while True:
            if server.poll() is not None:
                pytest.fail(f"serve --http exited with {server.returncode}:\n{log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"serve --http did not listen on {port}:\n{log.read_text()}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> list[str]:
    """What the Inspector connects to: a stdio command, or the running HTTP server's URL."""
    if request.param == "stdio":
        return [*env_options(), *SERVE]  # the server's own HOME and locale: forked, not started afresh
    return [request.getfixturevalue("http_url")]


def _inspect(inspector: list[str], target: list[str], home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOME=str(home))  # the Inspector writes state under $HOME
    # The server's start is waited for, not timed: the Inspector's own 15 s default is outrun on a
    # loaded 2-CPU machine (a stdio serve imports the SDK first), so the bound is the 120 s below.
    wait = ("--connect-timeout", "110000")
    return subprocess.run([*inspector, *target, *args, *wait], env=env, capture_output=True, text=True, timeout=120)


def _ok(inspector: list[str], target: list[str], home: Path, *args: str) -> dict[str, Any]:
    run = _inspect(inspector, target, home, *args)
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def test_inspector_lists_resources(inspector: list[str], target: list[str], tmp_path: Path) -> None:
    listed = _ok(inspector, target, tmp_path, "--method", "resources/list")
    uris = {r["uri"] for r in listed["resources"]}
    assert {"documcp://ssgs/available", "documcp://workflows/all"} <= uris
    assert all(r["name"] for r in listed["resources"])


def test_inspector_lists_templates(inspector: list[str], target: list[str], tmp_path: Path) -> None:
    listed = _ok(inspector, target, tmp_path, "--method", "resources/templates/list")
    templates = {t["uriTemplate"]: t for t in listed["resourceTemplates"]}
    assert "documcp://ssgs/{ssg}" in templates
    assert templates["documcp://ssgs/{ssg}"]["mimeType"] == "application/json"


def test_inspector_reads_a_fixed_resource(inspector: list[str], target: list[str], tmp_path: Path) -> None:
    read = _ok(inspector, target, tmp_path, "--method", "resources/read", "--uri", "documcp://ssgs/available")
    (item,) = read["contents"]
    assert item["uri"] == "documcp://ssgs/available"
    assert item["mimeType"] == "application/json"
    assert {"jekyll", "hugo", "docusaurus", "mkdocs", "eleventy"} <= {s["id"] for s in json.loads(item["text"])["ssgs"]}


def test_inspector_reads_a_template_expansion(inspector: list[str], target: list[str], tmp_path: Path) -> None:
    read = _ok(inspector, target, tmp_path, "--method", "resources/read", "--uri", "documcp://ssgs/hugo")
    (item,) = read["contents"]
    entry = json.loads(item["text"])
    assert entry["id"] == "hugo"
    assert entry["templateUri"].startswith("documcp://templates/")


def test_inspector_reports_an_unknown_resource(inspector: list[str], target: list[str], tmp_path: Path) -> None:
    run = _inspect(inspector, target, tmp_path, "--method", "resources/read", "--uri", "documcp://ssgs/nope")
    assert run.returncode == 1
    assert "nope" in run.stderr


def test_inspector_calls_recommend_ssg(inspector: list[str], target: list[str], tmp_path: Path) -> None:
    tools = _ok(inspector, target, tmp_path, "--method", "tools/list")
    by_name = {t["name"]: t for t in tools["tools"]}
    assert by_name["recommend_ssg"]["annotations"]["readOnlyHint"] is True
    args = json.dumps({"team_language": "python", "purposes": ["documentation"]})
    called = _ok(
        inspector, target, tmp_path, "--method", "tools/call", "--tool-name", "recommend_ssg", "--tool-args-json", args
    )
    assert called["isError"] is False
    structured = called["structuredContent"]
    assert structured["recommended"] == structured["recommendations"][0]["ssg"]
    assert len(structured["recommendations"]) >= 5
    assert json.loads(called["content"][0]["text"]) == structured


def test_inspector_lists_prompts_and_sets_the_log_level(
    inspector: list[str], target: list[str], tmp_path: Path
) -> None:
    prompts = _ok(inspector, target, tmp_path, "--method", "prompts/list")
    assert prompts["prompts"] and all(p["description"] for p in prompts["prompts"])
    assert _ok(inspector, target, tmp_path, "--method", "logging/setLevel", "--log-level", "debug") == {}
