"""Real clients through one composed server with an upstream MCP server (issue 40, must-show 2).

``mcp-providers serve`` (stdio, and ``--http`` on a free loopback port, one process for the
module) composes server-everything (npm, over stdio) as an upstream beside the built-in plugins.
Through it each client reads an upstream resource and a template expansion, calls an upstream
tool and, all but the Inspector CLI (it has no subscribe), hears the upstream's
``notifications/resources/updated``:

=====================  ====================================================================
client                 how it watches the resource
=====================  ====================================================================
Python SDK v2, auto    2026-07-28 ``subscriptions/listen``
Python SDK v2, legacy  2025 ``resources/subscribe``
TypeScript SDK 1.x     2025 ``resources/subscribe`` (``tests/clients/ts_upstream_client.mjs``)
Inspector CLI          none: reads and a call (over stdio a template expansion only)
=====================  ====================================================================

server-everything sends an update of each resource its client subscribed to once when its
``toggle-subscriber-updates`` tool starts the updates, then every 5 s; the composed server
subscribes upstream to every fixed resource when it connects, so a downstream call of the tool
(``ev_toggle-subscriber-updates``) makes one arrive at once. The toggle is per upstream session, and
the HTTP server's one session is shared by its clients: each client toggles until they are
``Started``, and again until ``Stopped`` when it has heard one (a running interval keeps
server-everything from exiting when its stdin closes, which costs the SDK's 2 s grace period).
What the composition itself does with an upstream (origins, receipts, denies, restarts) is in
``test_upstream_stdio.py`` and ``test_upstream_http.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from prefork import python
from real_parts import inspector_cli, require_tool, upstream_servers
from serve_support import serve_process
from test_client_matrix import _report, _run, npm_client
from waiting import HANG_SECONDS

pytestmark = pytest.mark.slow

TS_SPEC = "@modelcontextprotocol/sdk@1"
READ = "demo://resource/static/document/architecture.md"
WATCHED = "demo://resource/static/document/features.md"
TEMPLATED = "demo://resource/dynamic/text/7"
TOGGLE = "ev_toggle-subscriber-updates"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, str], Path]:
    """(``serve`` command, its environment, the TS client's plan file) for a config whose upstream
    is server-everything over stdio, beside the built-in plugins."""
    everything = upstream_servers()["everything"]
    folder = tmp_path_factory.mktemp("upstream-clients")
    config = folder / "mcp-providers.toml"
    config.write_text(
        f"""
[[plugins.upstream.servers]]
name = "everything"
command = {json.dumps(everything[0])}
args = [{json.dumps(everything[1])}, "stdio"]
prefixes = ["demo://resource/"]
tool_prefix = "ev_"
""",
        encoding="utf-8",
    )
    env = dict(os.environ)  # as the test process has it: the fork server (prefork) serves such a start
    plan = {
        "env": env,
        "read": READ,
        "templated": TEMPLATED,
        "watched": WATCHED,
        "toggle": TOGGLE,
        "call": {"name": "ev_echo", "arguments": {"message": "hi"}},
        "waitMs": int(HANG_SECONDS * 1000),  # a hang guard, not a timing: the toggle sends an update at once
    }
    plan_file = folder / "plan.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    return [*python(), "-m", "mcp_providers", "serve", "--config", str(config)], env, plan_file


@pytest.fixture(scope="module")
def served_http(served: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The MCP URL of ``serve --http`` with the same config, once ``/readyz`` answers."""
    command, env, _plan = served
    log = tmp_path_factory.mktemp("upstream-clients-http") / "stderr.txt"
    with serve_process(env, log, *command[command.index("--config") :]) as (base, _proc):
        yield f"{base}/mcp"


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, served: Any) -> list[str]:
    """How a client reaches the server: ``["--", COMMAND...]`` (stdio) or ``["--url", URL]``."""
    if request.param == "http":
        return ["--url", request.getfixturevalue("served_http")]
    return ["--", *served[0]]


async def _reads_and_calls(client: Client) -> None:
    read = await client.read_resource(READ)
    assert read.contents[0].text.startswith("# Everything Server")
    templated = await client.read_resource(TEMPLATED)
    assert templated.contents[0].text.startswith("Resource 7: ")
    echoed = await client.call_tool("ev_echo", {"message": "hi"})
    assert not echoed.is_error and echoed.content[0].text == "Echo: hi"


async def _toggle_updates(client: Client, to: str) -> None:
    """Toggle server-everything's updates until they are ``Started`` (it sends one at once) or
    ``Stopped`` (a running interval keeps it from exiting when its stdin closes, for 2 s)."""
    for _ in range(2):
        toggled = await client.call_tool(TOGGLE, {})
        assert not toggled.is_error, toggled
        if toggled.content[0].text.startswith(to):
            return
    raise AssertionError(f"server-everything's updates were not {to}: {toggled.content}")


async def _hears_by_listen(client: Client) -> str:
    async with client.listen(resource_subscriptions=[WATCHED]) as events:
        await _toggle_updates(client, "Started")
        with anyio.fail_after(HANG_SECONDS):
            event = await events.__anext__()
    await _toggle_updates(client, "Stopped")
    return str(event.uri)


async def _hears_by_subscribe(client: Client, heard: list[str], arrived: anyio.Event) -> str:
    with warnings.catch_warnings():  # the SDK warns that 2026-07-28 removed subscribe; this is the 2025 era
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.subscribe_resource(WATCHED)
    await _toggle_updates(client, "Started")
    with anyio.fail_after(HANG_SECONDS):
        await arrived.wait()
    await _toggle_updates(client, "Stopped")
    return heard[0]


@pytest.mark.anyio
async def test_python_sdk_v2_reads_calls_and_hears_upstream_updates_in_both_eras(
    served: Any, target: list[str]
) -> None:
    command, env, _plan = served
    heard: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(str(message.params.uri))
            arrived.set()

    def server() -> Any:
        return (
            target[1] if target[0] == "--url" else StdioServerParameters(command=command[0], args=command[1:], env=env)
        )

    async def auto() -> None:
        async with Client(server(), mode="auto", cache=None) as modern:
            assert modern.protocol_version == "2026-07-28"
            await _reads_and_calls(modern)
            assert await _hears_by_listen(modern) == WATCHED

    async def legacy() -> None:
        async with Client(server(), mode="legacy", cache=None, message_handler=on_message) as legacy:
            assert legacy.protocol_version == "2025-11-25"
            await _reads_and_calls(legacy)
            assert await _hears_by_subscribe(legacy, heard, arrived) == WATCHED

    if target[0] == "--url":  # one upstream session: one client at a time, each starting its updates
        await auto()
        await legacy()
    else:  # a server (and an upstream) each: started side by side
        async with anyio.create_task_group() as both:
            both.start_soon(auto)
            both.start_soon(legacy)


@pytest.fixture(scope="module")
def ts_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TS client script in an npm folder with the current TypeScript SDK 1.x."""
    return npm_client(tmp_path_factory.mktemp("ts-upstream"), (TS_SPEC,), "ts_upstream_client.mjs")


def test_typescript_sdk_1x_reads_calls_and_hears_upstream_updates_by_subscribe(
    served: Any, target: list[str], ts_script: Path
) -> None:
    _command, _env, plan = served
    node = require_tool("node", "apt-get install -y nodejs")
    report = _report(_run([node, str(ts_script), str(plan), *target], TS_SPEC, cwd=ts_script.parent))
    assert report["errors"] == [], report["errors"]
    assert report["read"][0].startswith("# Everything Server")
    assert report["templated"][0].startswith("Resource 7: ")
    assert report["called"] == {"isError": False, "text": ["Echo: hi"]}
    assert report["updated"][0] == WATCHED


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    """The Inspector CLI's command (installed once per machine; node and npm are needed)."""
    return inspector_cli()


def _inspected(inspector: list[str], target: list[str], home: Path, *args: str) -> dict[str, Any]:
    """One Inspector CLI request: its options first, then the server (after ``--``: serve's own
    ``--config`` is not the Inspector's) or the URL; the server's start is waited for, not timed."""
    server = target[1:] if target[0] == "--url" else target
    # The Inspector starts a stdio server with a few variables of its own: hand it those a fork of
    # the test's fork server (prefork) must share, so serve does not import everything afresh.
    shared = [f"{k}={v}" for k, v in os.environ.items() if k in ("HOME", "LANG", "TZ") or k.startswith("LC_")]
    run = subprocess.run(
        [*inspector, *args, "--connect-timeout", "110000", *(f"-e{kv}" for kv in shared), *server],
        env=dict(os.environ, HOME=str(home)),  # the Inspector writes state under $HOME
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def test_inspector_cli_reads_and_calls_through_the_upstream(
    target: list[str], inspector: list[str], tmp_path: Path
) -> None:
    """Over HTTP a read, a template expansion and a call. Over stdio, where every Inspector request
    starts a server and its upstream anew (about 2 s of CPU each), the template expansion alone:
    the Inspector's stdio transport is ``test_inspector.py``'s, and the path through the upstream
    is the same."""
    templated = _inspected(inspector, target, tmp_path, "--method", "resources/read", "--uri", TEMPLATED)
    assert templated["contents"][0]["text"].startswith("Resource 7: ")
    if target[0] != "--url":
        return
    read = _inspected(inspector, target, tmp_path, "--method", "resources/read", "--uri", READ)
    assert read["contents"][0]["text"].startswith("# Everything Server")
    call = ("--method", "tools/call", "--tool-name", "ev_echo", "--tool-args-json", json.dumps({"message": "hi"}))
    called = _inspected(inspector, target, tmp_path, *call)
    assert called["isError"] is False and called["content"][0]["text"] == "Echo: hi"
