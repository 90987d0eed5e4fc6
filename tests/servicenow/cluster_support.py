"""Real parts for the cluster tests: a ``redis-server`` and ``mcp-providers serve --http`` replicas.

Nothing is mocked: Redis is the Debian ``redis-server`` binary on a free loopback port (the tests
skip, saying so, when it is not installed, and fail under ``CI=true``: ``real_parts``; ``.ci/run``
installs it), and each replica is a
subprocess serving the ServiceNow plugin against the emulator running in the test process.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefork import python
from real_parts import require_tool
from servicenow_support import DEV_USER
from waiting import wait_until


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with contextlib.closing(socket.socket()) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_for_port(port: int, proc: subprocess.Popen[Any]) -> None:
    """Until something listens on 127.0.0.1:``port`` (round 4 item 25: the event, not a deadline;
    ``proc`` exiting first fails it, a hang fails after :data:`waiting.HANG_SECONDS`)."""
    wait_until(lambda: _listening(port), f"something listens on 127.0.0.1:{port}", alive=proc)


@dataclass
class RedisServer:
    """One ``redis-server`` on loopback; :meth:`stop` and :meth:`start` keep its port."""

    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    extra: tuple[str, ...] = ()
    """More arguments, after the defaults (which they override: Redis takes the last of each)."""

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        redis = require_tool("redis-server", "apt-get install -y redis-server")
        self.proc = subprocess.Popen(
            [redis, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for_port(self.port, self.proc)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None


@dataclass
class Replica:
    """One ``mcp-providers serve --http`` subprocess."""

    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def metric(self, name: str) -> float:
        for line in self.get("/metrics")[1].splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        if "{" in name:  # a labelled series appears once counted
            return 0.0
        raise AssertionError(f"no metric {name}")

    def kill(self) -> None:
        """SIGKILL, returning once the server is gone as a real SIGKILL leaves it: its port refuses.
        (``proc`` is the prefork launcher; the fork server kills the forked server a moment after
        the launcher dies, and until then that server still takes connections.)"""
        self.proc.kill()
        self.proc.wait(timeout=10)
        wait_until(lambda: not _listening(self.port), f"nothing listens on 127.0.0.1:{self.port} any more")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def write_config(directory: Path, emulator_url: str, redis_url: str | None, poll_seconds: float,
                 key_prefix: str = "test", lease_seconds: float = 1.0) -> Path:  # fmt: skip
    """A config serving the ServiceNow plugin's ``dev`` instance at ``emulator_url``; with ``redis_url``
    a ``[cluster]`` whose poll lease lasts ``lease_seconds`` (short: the tests kill holders)."""
    instance = {
        "name": "dev", "url": emulator_url, "description": "Development (emulated)", "timeout_seconds": 10,
        "incidents_poll_seconds": poll_seconds,
        "auth": {"type": "basic", "username": DEV_USER, "password_env": "SN_TEST_DEV_PASSWORD"},
    }  # fmt: skip
    lines = ['allow = ["servicenow"]', ""]
    if redis_url is not None:
        lines += ["[cluster]", f"redis_url = {json.dumps(redis_url)}", f"key_prefix = {json.dumps(key_prefix)}",
                  f"lease_seconds = {lease_seconds}", ""]  # fmt: skip
    lines += ["[[plugins.servicenow.instances]]"]
    for key, value in instance.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{{inner}}}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    path = directory / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@contextlib.contextmanager
def replicas(config: Path, count: int) -> Iterator[list[Replica]]:
    """``count`` replicas serving ``config``, each ready (``/readyz`` 200) when yielded; replica
    ``n`` (from 1) runs with ``MCP_PROVIDERS_REPLICA=replica<n>``, as in ``deploy/compose.yaml``."""
    started: list[Replica] = []
    logs = Path(tempfile.mkdtemp(prefix="replicas-"))
    try:
        for n in range(count):
            port = free_port()
            log = logs / f"replica{n}.log"
            with log.open("wb") as sink:
                proc = subprocess.Popen(
                    [*python(), "-m", "mcp_providers", "serve", "--config", str(config),
                     "--http", f"127.0.0.1:{port}"], stdout=sink, stderr=subprocess.STDOUT,
                    env={**os.environ, "MCP_PROVIDERS_REPLICA": f"replica{n + 1}"},
                )  # fmt: skip
            started.append(Replica(port, proc, log))
        for replica in started:
            wait_for_port(replica.port, replica.proc)
            wait_until(
                lambda r=replica: r.get("/readyz")[0] == 200,
                "the replica is ready",
                alive=replica.proc,
                log=replica.log,
            )
        yield started
    finally:
        for replica in started:
            replica.stop()


DEPLOY_NGINX = Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf"


@contextlib.contextmanager
def nginx_in_front(upstreams: list[Replica]) -> Iterator[str]:
    """``deploy/nginx.conf`` served by a real nginx on a free loopback port, its ``replicaN:8000``
    servers pointed at ``upstreams``; yields the MCP URL through it."""
    nginx = require_tool("nginx", "apt-get install -y nginx", also=("/usr/sbin",))
    text = DEPLOY_NGINX.read_text()
    for n, replica in enumerate(upstreams, start=1):
        text = text.replace(f"server replica{n}:8000;", f"server 127.0.0.1:{replica.port};")
    port = free_port()
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    text = text.replace("proxy_set_header Host mcp;", "proxy_set_header Host localhost:8000;")  # loopback replicas
    prefix = Path(tempfile.mkdtemp(prefix="nginx-"))
    (prefix / "nginx.conf").write_text(text)
    globals_ = f"pid {prefix}/nginx.pid; error_log {prefix}/error.log; daemon off;"
    proc = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", globals_],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()
