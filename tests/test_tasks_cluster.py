"""Tasks across replicas (issue 27 must-show 2): two real ``serve --http`` replicas on one real
``redis-server``, each with the task-capable tools installed as an entry point, callers told apart
by bearer token. A task started through replica A is polled to its result through B; another is
cancelled through B while A runs it; a replica killed while running a task leaves it failed once
its lease runs out; and another subject sees neither (the same "not found" as an unknown id).
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import signal
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from real_parts import redis_server
from reload_support import install
from serve_support import serve_process
from tasks_support import Created, TasksClient, start, tasks_cancel, tasks_get, until

pytestmark = pytest.mark.anyio

ALICE, BOB = "alice-task-token-51c2d9e7a0", "bob-task-token-0e8b44a6c3"
LEASE = 1.5
TESTS = Path(__file__).parent


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    install(site, "tasks-demo", {"tasks": "tasks_support:PLUGIN"})
    out = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    out["PYTHONPATH"] = os.pathsep.join([str(site), str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])])
    out |= {"TASKS_TEST_ALICE": ALICE, "TASKS_TEST_BOB": BOB}
    # task records in Redis are sealed with the deployment key (round 4 item 14), the same on every replica
    out["MCP_PROVIDERS_CREDENTIALS_KEY"] = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
    return out


def _config(tmp_path: Path, redis_url: str) -> Path:
    config = tmp_path / "mcp-providers.toml"
    config.write_text(
        'allow = ["tasks"]\n'
        "[server.auth]\n"
        'tokens = [{subject = "alice", token_env = "TASKS_TEST_ALICE"},\n'
        '          {subject = "bob", token_env = "TASKS_TEST_BOB"}]\n'
        "[server.tasks]\npoll_interval_ms = 200\n"
        f'[cluster]\nredis_url = "{redis_url}"\nkey_prefix = "tasks-test"\nlease_seconds = {LEASE}\n'
    )
    return config


@contextlib.asynccontextmanager
async def _as(base: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http), cache=None, extensions=[TasksClient()]) as c,
    ):
        assert c.protocol_version == "2026-07-28"
        yield c


@contextlib.contextmanager
def _replicas(env: dict[str, str], config: Path) -> Iterator[tuple[tuple[str, Any], tuple[str, Any]]]:
    with (
        serve_process(env, config.with_name("a.log"), "-c", str(config)) as a,
        serve_process(env, config.with_name("b.log"), "-c", str(config)) as b,
    ):
        yield a, b


def _running(base: str) -> float:
    """``mcp_providers_tasks_running`` from the replica's ``/metrics``."""
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as page:
        for line in page.read().decode().splitlines():
            if line.startswith("mcp_providers_tasks_running "):
                return float(line.split()[1])
    raise AssertionError("no mcp_providers_tasks_running in /metrics")


async def _not_found(client: Client, task_id: str) -> str:
    with pytest.raises(MCPError) as refused:
        await tasks_get(client.session, task_id)
    assert refused.value.code == -32602
    return refused.value.message


async def test_a_task_started_on_one_replica_is_polled_and_cancelled_through_the_other(
    env: dict[str, str], tmp_path: Path
) -> None:
    with redis_server() as (redis_url, _), _replicas(env, _config(tmp_path, redis_url)) as ((a, _), (b, _)):
        async with _as(a, ALICE) as alice_a, _as(b, ALICE) as alice_b, _as(b, BOB) as bob_b:
            counted = await start(alice_a.session, "count", {"n": 3, "pause": 0.3})
            held = await start(alice_a.session, "hold", {"seconds": 60})
            assert isinstance(counted, Created) and isinstance(held, Created)
            done = await until(alice_b.session, counted.task_id, {"completed", "failed"}, seconds=30)
            assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "counted to 3 for alice"
            assert (await tasks_get(alice_b.session, held.task_id))["status"] == "working"
            assert (_running(a), _running(b)) == (1.0, 0.0)  # the run is A's alone
            await tasks_cancel(alice_b.session, held.task_id)  # A runs it; B only writes the cancel
            cancelled = await until(alice_a.session, held.task_id, {"cancelled", "failed", "completed"}, seconds=10)
            assert cancelled["status"] == "cancelled"
            assert _running(a) == 0.0
            unknown = await _not_found(bob_b, "no-such-task")
            assert await _not_found(bob_b, counted.task_id) == unknown
            assert await _not_found(bob_b, held.task_id) == unknown
            transparent = await alice_b.call_tool("count", {"n": 2})  # a client hiding tasks, on B
            assert transparent.content[0].text == "counted to 2 for alice"  # type: ignore[union-attr]


async def test_a_killed_replicas_task_ends_failed_within_its_lease(env: dict[str, str], tmp_path: Path) -> None:
    with redis_server() as (redis_url, _), _replicas(env, _config(tmp_path, redis_url)) as ((a, proc_a), (b, _)):
        async with _as(b, ALICE) as alice_b, _as(b, BOB) as bob_b:
            async with _as(a, ALICE) as alice_a:  # the client leaves; the task runs on without it
                held = await start(alice_a.session, "hold", {"seconds": 60})
                assert isinstance(held, Created)
            assert (await tasks_get(alice_b.session, held.task_id))["status"] == "working"
            os.kill(proc_a.pid, signal.SIGKILL)  # no clean shutdown: nothing marks the task
            killed = time.monotonic()
            proc_a.wait(timeout=10)
            failed = await until(alice_b.session, held.task_id, {"failed", "completed", "cancelled"}, seconds=10)
            took = time.monotonic() - killed
            assert failed["status"] == "failed" and "lease" in failed["statusMessage"]
            assert failed["error"]["code"] == -32603
            assert took <= LEASE + 1.5, took  # its lease, and the poll that noticed
            await _not_found(bob_b, held.task_id)


async def test_a_replica_shut_down_cleanly_fails_its_running_tasks_at_once(env: dict[str, str], tmp_path: Path) -> None:
    with redis_server() as (redis_url, _), _replicas(env, _config(tmp_path, redis_url)) as ((a, proc_a), (b, _)):
        async with _as(b, ALICE) as alice_b:
            async with _as(a, ALICE) as alice_a:
                held = await start(alice_a.session, "hold", {"seconds": 60})
                assert isinstance(held, Created)
            proc_a.terminate()
            proc_a.wait(timeout=20)
            ended = await tasks_get(alice_b.session, held.task_id)  # at once: no lease to wait out
            assert (
                ended["status"] == "failed" and ended["statusMessage"] == "the server stopped before the task finished"
            )
