"""Reads/s through nginx with 1 and 2 replicas sharing one Redis (issue 14, must-show 6).

Run alone: ``uv run --group bench python -m benchmarks.cluster [--quick]``; or in the full table
with ``uv run --group bench python -m benchmarks --only cluster``. Needs ``redis-server``, ``nginx``
and ``wrk`` on the PATH (Debian packages); the section is skipped, saying so, without them.

Three replicas start, each a process serving one generated provider (``benchmarks.fixtures``) over
stateless streamable HTTP with JSON responses under the uvicorn settings of ``serve --http``, every
one with the same ``[cluster]`` section (one real ``redis-server``). Two nginx instances run the
shipped ``deploy/nginx.conf`` (adapted as ``tests/servicenow/cluster_support.py`` does: loopback
ports, one or two servers in ``mcp_any``): **A** in front of replica 1, **B** in front of replicas
2 and 3. ``wrk`` (one thread, 32 connections, a Lua POST script of a 2025-11-25 stateless
``resources/read``) loads A and B in turn, round by round; the medians are reported with their
ratio (B / A), target at least 1.5x (issue 29). Where ``taskset`` is on the PATH and there are two
CPUs or more, each round also loads A and B with wrk pinned to the last CPU (and the servers to
the others when there are three or more), so the load generator does not compete with them; with
pinning available that pair is the judged one and the unpinned pair is reported beside it. Then
each replica is loaded until it has answered 100,000 reads (each replica counts them) and its
resident memory (``VmRSS`` in ``/proc/PID/status``) is reported.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEPLOY_NGINX = ROOT / "deploy" / "nginx.conf"
CLIENTS = 32
"""wrk's connections: nginx's two workers then hold at most 64 connections to one replica, the
per-client cap of ``serve --http`` (``_serve/transport/limits.py``; nginx is one client to the replicas)."""
READS = 100_000
TARGET = 1.5
"""Issue 29: 2 replicas behind nginx at least 1.5x the reads/s of 1."""
Emit = Callable[..., None]
WRK_SCRIPT = """wrk.method = "POST"
wrk.body = '%s'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
"""


@dataclass(frozen=True)
class Pinning:
    """Command prefixes keeping wrk and the servers on separate CPUs (``taskset``, util-linux)."""

    wrk: list[str]
    servers: list[str]
    """Empty with two CPUs: the replicas need both, so only wrk is pinned."""
    label: str


def pinning() -> Pinning | None:
    """wrk on the last CPU this process may use and the servers on the others (with 3 CPUs or
    more); ``None`` without ``taskset`` or with one CPU."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if shutil.which("taskset") is None or len(cpus) < 2:
        return None
    last, rest = cpus[-1], cpus[:-1]
    if len(rest) < 2:
        return Pinning(["taskset", "-c", str(last)], [], f"wrk on CPU {last}, servers unpinned ({len(cpus)} CPUs)")
    others = f"{rest[0]}-{rest[-1]}" if rest == list(range(rest[0], rest[-1] + 1)) else ",".join(map(str, rest))
    return Pinning(["taskset", "-c", str(last)], ["taskset", "-c", others], f"wrk on CPU {last}, servers on {others}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, proc: subprocess.Popen[Any], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port} after {seconds} s")


def _stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def _process(args: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(port, proc)
        yield proc
    finally:
        _stop(proc)


def _nginx_conf(ports: list[int], listen: int) -> str:
    """``deploy/nginx.conf`` in front of the replicas on ``ports``: ``mcp_any`` lists them alone;
    the per-replica upstreams (2025 sessions, unused here) of missing replicas point at the first."""
    text = DEPLOY_NGINX.read_text()
    for n in (1, 2, 3):
        line = f"server replica{n}:8000;"
        port = ports[n - 1] if n <= len(ports) else None
        text = text.replace(line, f"server 127.0.0.1:{port};" if port else "", 1)  # in mcp_any
        text = text.replace(line, f"server 127.0.0.1:{port or ports[0]};", 1)  # upstream replicaN
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{listen};")
    # wrk is one client address: the shipped per-client request rate would throttle the measurement.
    text = re.sub(r"\n *limit_req zone=[^\n]*", "", text)
    return text.replace("proxy_set_header Host mcp;", "proxy_set_header Host localhost:8000;")  # loopback replicas


@contextlib.contextmanager
def _nginx(ports: list[int], pinned: Sequence[str] = ()) -> Iterator[str]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    listen, prefix = _free_port(), Path(tempfile.mkdtemp(prefix="bench-nginx-"))
    (prefix / "nginx.conf").write_text(_nginx_conf(ports, listen))
    globals_ = f"pid {prefix}/nginx.pid; error_log {prefix}/error.log; daemon off;"
    with _process([*pinned, nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", globals_], listen):
        yield f"http://127.0.0.1:{listen}/mcp"


def wrk(url: str, seconds: float, prefix: Sequence[str] = ()) -> tuple[float, int]:
    """``(reads/s, reads)`` from one ``wrk`` run of ``seconds`` against ``url``; ``prefix``: the
    command it runs under (``taskset -c N``)."""
    from benchmarks import fixtures

    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": fixtures.fixed_uri(0, 3)}}
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT % body)
    try:
        out = subprocess.run([*prefix, "wrk", "-t1", f"-c{CLIENTS}", f"-d{seconds:.0f}s", "-s", script.name, url],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    finally:
        os.unlink(script.name)
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw errors against {url}: {out}")
    rate = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    count = re.search(r"([0-9]+) requests in", out)
    if rate is None or count is None:
        raise RuntimeError(f"unexpected wrk output: {out}")
    return float(rate.group(1)), int(count.group(1))


def _count(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=5) as response:
        return int(response.read())


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _top_up(url: str, ports: list[int], rate: float) -> None:
    """Load ``url`` until every replica on ``ports`` has answered :data:`READS` reads."""
    while (done := min(_count(p) for p in ports)) < READS:
        missing = (READS - done) * len(ports)
        wrk(url, max(2.0, min(60.0, missing / max(rate, 100.0) + 1)))


def report_pair(rates: dict[str, list[float]], label: str, emit: Emit, *, judged: bool = True) -> tuple[float, float]:
    """The 1- and 2-replica rows of one pairing (``label``: how wrk ran, ``""`` unpinned); returns
    their medians. ``judged``: the pair the :data:`TARGET` verdict is given on."""
    single, double = (statistics.median(rates[k]) for k in ("1 replica", "2 replicas"))
    ratio = double / single
    target = f"2 replicas >= {TARGET}x 1: {'met' if ratio >= TARGET else 'MISSED'}" if judged else ""
    case = f"reads/s through nginx, wrk 32 conns{', ' + label if label else ''}"
    emit("cluster", f"{case}: 1 replica", single, "reads/s", "baseline")
    emit("cluster", f"{case}: 2 replicas", double, "reads/s", f"{ratio:.2f}x", target)
    return single, double


def _missing() -> list[str]:
    missing = [name for name in ("redis-server", "nginx", "wrk") if shutil.which(name) is None]
    return [] if missing == ["nginx"] and Path("/usr/sbin/nginx").exists() else missing


def _measure(urls: tuple[str, str], pin: Pinning | None, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Per pairing (``""`` unpinned, then the pinned label), the rounds' reads/s of 1 and 2 replicas."""
    pairings = {"": ()} | ({pin.label: pin.wrk} if pin else {})
    rates = {label: {"1 replica": [], "2 replicas": []} for label in pairings}
    for n in range(rounds):
        for label, prefix in pairings.items():
            for case, url in zip(("1 replica", "2 replicas"), urls, strict=True):
                rates[label][case].append(wrk(url, 5, prefix)[0])
        shown = (f"{label or 'unpinned'}: 1 replica {r['1 replica'][-1]:,.0f}/s, "
                 f"2 replicas {r['2 replicas'][-1]:,.0f}/s" for label, r in rates.items())  # fmt: skip
        print(f"round {n + 1}: " + "; ".join(shown))
    return rates


def run(rounds: int, emit: Emit) -> None:
    if missing := _missing():
        why = f"skipped: {' and '.join(missing)} not installed"
        emit("cluster", "reads/s through nginx, wrk 32 conns: 1 replica", float("nan"), "reads/s", "baseline", why)
        emit("cluster", "reads/s through nginx, wrk 32 conns: 2 replicas", float("nan"), "reads/s", "", why)
        return
    pin = pinning()
    servers = pin.servers if pin else []
    redis_port = _free_port()
    redis_args = ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    with contextlib.ExitStack() as stack:
        stack.enter_context(_process([*servers, *redis_args], redis_port))
        redis_url = f"redis://127.0.0.1:{redis_port}/0"
        ports = [_free_port() for _ in range(3)]
        procs = [stack.enter_context(_process([*servers, sys.executable, "-m", "benchmarks.cluster", "--replica",
                                               str(port), "--redis", redis_url], port)) for port in ports]  # fmt: skip
        one, two = stack.enter_context(_nginx(ports[:1], servers)), stack.enter_context(_nginx(ports[1:], servers))
        wrk(one, 2)  # warm up both paths
        wrk(two, 2)
        rates = _measure((one, two), pin, rounds)
        medians = {label: report_pair(pair, label, emit, judged=bool(label) or pin is None)
                   for label, pair in rates.items()}  # fmt: skip
        single, double = medians[""]
        _top_up(one, ports[:1], single)
        _top_up(two, ports[1:], double)
        for n, (port, proc) in enumerate(zip(ports, procs, strict=True), start=1):
            where = "A, alone" if n == 1 else "B"
            rss = round(_rss_mb(proc.pid), 1)
            emit("cluster", f"RSS of replica {n} ({where}) after {_count(port):,} reads", rss, "MiB", vs="")


def replica(port: int, redis_url: str) -> None:
    """One replica: the generated provider over stateless JSON HTTP, ``[cluster]`` on ``redis_url``;
    ``GET /count`` answers how many MCP requests it has served."""
    import uvicorn

    from benchmarks import fixtures
    from mcp_providers._serve.transport.http_app import http_app
    from mcp_providers._serve.transport.http_policy import transport_policy
    from mcp_providers._serve.transport.limits import uvicorn_config
    from mcp_providers.config import ClusterSettings
    from mcp_providers.testing import compose

    cluster = ClusterSettings(redis_url=redis_url, key_prefix="bench")
    composition = compose({"gen0000": fixtures._Plugin(0)}, cluster=cluster)
    app = http_app(composition.server, stateless=True, json_response=True, security=transport_policy("127.0.0.1"))
    served = [0]

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/count":
            body = str(served[0]).encode()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http":
            served[0] += 1
        await app(scope, receive, send)

    uvicorn.Server(uvicorn_config(counted, "127.0.0.1", port)).run()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cluster", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 round instead of 5")
    parser.add_argument("--replica", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--redis", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replica is not None:
        replica(args.replica, args.redis)
        return
    from benchmarks import report

    rows: list[report.Row] = []
    print(f"machine: {report.machine()}\n", flush=True)
    t0 = time.perf_counter()
    run(1 if args.quick else 5, functools.partial(report.record, rows))
    print(f"\ntotal: {time.perf_counter() - t0:.0f} s\n\n{report.table(rows)}")


if __name__ == "__main__":
    main()
