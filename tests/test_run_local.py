"""``deploy/run-local``: compose's deployment (Redis, N replicas, nginx) on loopback without Docker,
from the same ``deploy/config.toml`` and ``deploy/nginx.conf``; read through nginx by a real MCP
client over streamable HTTP, then stopped with nothing left running."""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import httpx2
import pytest
import redis
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from real_parts import require_tool

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
SCRIPT = DEPLOY / "run-local"


def _script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("run_local", str(SCRIPT))
    spec = importlib.util.spec_from_loader("run_local", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}


def _left(run: Path, pids: list[int]) -> list[str]:
    """Live (not zombie) processes in the sessions of ``pids`` (nginx workers included)."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[0] != "Z" and int(fields[3]) in pids:
            left.append(entry.name)
    return left


def _pids(run: Path) -> list[int]:
    return [int(line.split()[1]) for line in (run / "pids").read_text().splitlines() if line.strip()]


async def _read_through(url: str) -> list[str]:
    async with httpx2.AsyncClient() as http, Client(streamable_http_client(url, http_client=http), cache=None) as c:
        listed = await c.list_resources()
        result = await c.read_resource("documcp://ssgs/available")
    text = result.contents[0].text  # type: ignore[union-attr]
    assert "hugo" in [s["id"] for s in json.loads(text)["ssgs"]]
    return [str(r.uri) for r in listed.resources]


def test_the_nginx_conf_is_templated_from_the_shipped_one() -> None:
    shipped = (DEPLOY / "nginx.conf").read_text()
    made = _script().nginx_text(shipped, [9001, 9002, 9003], 9000)
    # three replicas: the shipped file with only the addresses changed
    expected = re.sub(r"server replica(\d):8000;", lambda m: f"server 127.0.0.1:900{m.group(1)};", shipped)
    assert made == expected.replace("listen 8080;", "listen 127.0.0.1:9000;")
    two = _script().nginx_text(shipped, [9001, 9002], 9000)
    assert "upstream replica3" not in two and two.count("server 127.0.0.1:9002;") == 2
    assert "replica3" not in _script().nginx_text(shipped, [9001], 9000).split("map ")[1].split("server {")[0]


@pytest.mark.parametrize("count", [1, 5])
def test_nginx_accepts_the_templated_conf(tmp_path: Path, count: int) -> None:
    nginx = require_tool("nginx", "apt-get install -y nginx", also=("/usr/sbin",))
    conf = tmp_path / "nginx.conf"
    conf.write_text(_script().nginx_text((DEPLOY / "nginx.conf").read_text(), list(range(9001, 9001 + count)), 9000))
    globals_ = f"pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;"
    checked = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(conf), "-g", globals_], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stderr


def test_the_config_points_at_the_local_redis() -> None:
    made = _script().config_text((DEPLOY / "config.toml").read_text(), 6390)
    assert 'redis_url = "redis://127.0.0.1:6390/0"' in made and "redis://redis:" not in made
    assert (
        made.replace('redis_url = "redis://127.0.0.1:6390/0"', 'redis_url = "redis://redis:6379/0"')
        == (DEPLOY / "config.toml").read_text()
    )


@pytest.mark.slow
@pytest.mark.anyio
async def test_start_two_replicas_read_through_nginx_and_stop(tmp_path: Path) -> None:
    require_tool("nginx", "apt-get install -y nginx", also=("/usr/sbin",))
    require_tool("redis-server", "apt-get install -y redis-server")
    run = tmp_path / "run"
    started = subprocess.run(
        [sys.executable, str(SCRIPT), "start", "-n", "2", "--dir", str(run)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    pids = _pids(run) if (run / "pids").exists() else []
    try:
        assert started.returncode == 0, started.stderr + started.stdout
        found = re.search(r"serving MCP on (http://127\.0\.0\.1:\d+/mcp) \(2 replicas", started.stdout)
        assert found, started.stdout
        names = [line.split()[0] for line in (run / "pids").read_text().splitlines()]
        assert names == ["redis", "replica1", "replica2", "nginx"]
        uris = await _read_through(found.group(1))
        assert "documcp://ssgs/available" in uris
        assert 'redis_url = "redis://127.0.0.1:' in (run / "config.toml").read_text()
        port = int(re.search(r'redis_url = "redis://127\.0\.0\.1:(\d+)/', (run / "config.toml").read_text())[1])
        kept = redis.Redis(port=port, decode_responses=True).config_get("append*")  # as compose's (issue 42)
        assert kept["appendonly"] == "yes" and kept["appendfsync"] == "everysec", kept
        twice = subprocess.run(
            [sys.executable, str(SCRIPT), "start", "--dir", str(run)],
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(),
        )
        assert twice.returncode == 1
        assert twice.stderr == f"run-local: already running from {run}; `run-local stop --dir {run}` first\n"
    finally:
        stopped = subprocess.run(
            [sys.executable, str(SCRIPT), "stop", "--dir", str(run)],
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(),
        )
        left = _left(run, pids)
        for pid in left:  # only if the script failed to: never leave the test's processes running
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    assert left == []
    assert stopped.stdout == "stopped redis, replica1, replica2, nginx\n", stopped.stdout + stopped.stderr
    again = subprocess.run(
        [sys.executable, str(SCRIPT), "stop", "--dir", str(run)], capture_output=True, text=True, timeout=60, env=_env()
    )
    assert again.stdout == f"nothing running from {run}\n"


@pytest.mark.slow
def test_up_stops_everything_on_ctrl_c(tmp_path: Path) -> None:
    require_tool("nginx", "apt-get install -y nginx", also=("/usr/sbin",))
    require_tool("redis-server", "apt-get install -y redis-server")
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "-n", "1", "--dir", str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("serving MCP on http://127.0.0.1:"), first + proc.stderr.read()  # type: ignore[union-attr]
        assert proc.stdout.readline() == "Ctrl-C stops them all\n"
        pids = _pids(run)
        assert len(pids) == 3
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = _left(run, pids)
        for pid in left:  # only if the script failed to: never leave the test's processes running
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    assert out == "stopped redis, replica1, nginx\n"
    assert left == []


def test_stop_never_signals_a_process_it_did_not_start(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "pids").write_text(f"redis {other.pid} 1\n")  # the pid, but not the start time recorded
        stopped = subprocess.run(
            [sys.executable, str(SCRIPT), "stop", "--dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(),
        )
        assert stopped.stdout == f"nothing running from {tmp_path}\n"
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_at_least_one_replica() -> None:
    refused = subprocess.run(
        [sys.executable, str(SCRIPT), "start", "-n", "0", "--dir", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert refused.returncode == 2
    assert refused.stderr.endswith("run-local: error: --replicas needs 1 or more\n")
