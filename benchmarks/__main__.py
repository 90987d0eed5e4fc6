"""Run every benchmark in one process and print one table: ``uv run --group bench python -m benchmarks``.

Each comparison interleaves baseline and candidates round by round (this machine is shared and
noisy) and reports the median over rounds. The table's ratio is always candidate / baseline of the
row's own measure (times: below 1.0 is cheaper; rates: above 1.0 is faster), ``benchmarks.report``.
Options: ``--quick`` (fewer rounds, for a smoke run), ``--only SECTION[,SECTION]``,
``--markdown FILE`` (also write the page: ``--markdown docs/benchmarks.md`` regenerates it),
``--json FILE`` (also write this run's rows) and ``--previous FILE`` (an earlier run's ``--json``
file: the page then shows each row's value and verdict in both runs).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio

from benchmarks import authoring, cluster, embedding, fixtures, identity, reload, report, sideeffects, traces
from benchmarks.report import Row, skipped_because_missing
from benchmarks.timing import ainterleaved, interleaved, interleaved_samples, median, per_read_ms

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ROUNDS = 9


ROWS: list[Row] = []


def emit(
    section: str, case: str, value: float, unit: str, ratio: str = "", target: str = "", *, vs: str | None = None
) -> None:
    """One row: printed now, kept in :data:`ROWS` for the table (see :func:`report.record`)."""
    report.record(ROWS, section, case, value, unit, ratio, target, vs=vs)


def ratio_of(candidate: float, baseline: float) -> str:
    return f"{candidate / baseline:.2f}x" if baseline else "n/a"


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


# -- 1. read overhead through the SDK client -------------------------------------------------------


SDK_ON, SDK_OFF = "MCPServer (SDK default: OTel middleware on)", "MCPServer, OTel middleware off"
OURS_ON, OURS_OFF = "composed, SDK OTel middleware put back", "composed (default: OTel middleware off)"
SDK_FLOOR = "floor: SDK low-level Server, handler returns a result made in advance (OTel off)"


async def read_overhead(rounds: int) -> None:
    """In-memory and SDK-client stdio reads; each anchor both as shipped and with our switch."""
    from mcp import Client, StdioServerParameters

    uri = fixtures.fixed_uri(0, 3)
    for mode in ("auto", "legacy"):
        async with contextlib.AsyncExitStack() as stack:
            servers = {
                SDK_ON: fixtures.mcpserver(1),
                SDK_OFF: fixtures.mcpserver(1, otel=False),
                OURS_ON: fixtures.composed(1, otel=True).server,
                OURS_OFF: fixtures.composed(1).server,
                SDK_FLOOR: fixtures.sdk_floor(),
            }
            cases = {}
            for name, srv in servers.items():
                client = await stack.enter_async_context(Client(srv, mode=mode, cache=None))  # type: ignore[arg-type]
                await client.read_resource(uri)
                cases[name] = per_read_ms(client, uri, 50)
            # A ratio near 1.0 needs each case measured right beside the others: this machine's speed
            # drifts by a third within a minute, so short samples over many rounds (50 reads x 130
            # rounds for 9 rounds elsewhere; the same reads as 500 x 13) keep the drift out of it.
            result = await ainterleaved(cases, 10 * (rounds + rounds // 2))
        report_pairs(f"read, in-memory {mode}", result, "ms", target=1.0)
        report_floor(f"read, in-memory {mode}", result)

    async with contextlib.AsyncExitStack() as stack:
        spawn = {
            SDK_ON: ["mcpserver", "--transport", "sdk"],
            SDK_OFF: ["mcpserver", "--transport", "sdk", "--no-otel"],
            OURS_ON: ["composed", "--otel"],
            OURS_OFF: ["composed"],
        }
        cases = {}
        for name, args in spawn.items():
            params = StdioServerParameters(command=PY, args=["-m", "benchmarks.serve", *args], cwd=str(ROOT))
            client = await stack.enter_async_context(Client(params, cache=None))
            await client.read_resource(uri)
            cases[name] = per_read_ms(client, uri, 200)
        result = await ainterleaved(cases, max(3, rounds // 2))
    report_pairs("read, stdio (SDK client; SDK stdio vs mcp_providers.stdio)", result, "ms", target=1.0)


def report_pairs(section: str, result: dict[str, float], unit: str, *, target: float) -> None:
    """The four anchor cases as two fair pairs: each MCPServer case is the baseline of the composed
    case with the same switch; the target (time ratio at most ``target``) is judged on the
    like-for-like pair with the middleware off, the user-default pair is reported beside it."""
    emit(section, SDK_ON, result[SDK_ON], unit, "baseline")
    emit(section, OURS_ON, result[OURS_ON], unit, f"{ratio_of(result[OURS_ON], result[SDK_ON])} (both on)")
    emit(section, SDK_OFF, result[SDK_OFF], unit, "baseline")
    fair = result[OURS_OFF] / result[SDK_OFF]
    emit(section, OURS_OFF, result[OURS_OFF], unit,
         f"{fair:.2f}x (both off); {ratio_of(result[OURS_OFF], result[SDK_ON])} vs MCPServer as shipped",
         f"target <= {target:.1f}x (both off): {verdict(fair <= target)}")  # fmt: skip


def report_floor(section: str, result: dict[str, float]) -> None:
    """The SDK floor's row (:func:`fixtures.sdk_floor`): each server's time over it is what its own
    handler costs; for the composed read to be at most 1.0x ``MCPServer``, the whole pipeline may
    cost no more than ``MCPServer``'s resource manager."""
    floor = result[SDK_FLOOR]
    own = {name: result[name] - floor for name in (SDK_OFF, OURS_OFF)}
    emit(section, SDK_FLOOR, floor, "ms",
         f"{ratio_of(floor, result[SDK_OFF])} MCPServer (off); over it: MCPServer's handler "
         f"{own[SDK_OFF] * 1000:.0f} us, the composed pipeline {own[OURS_OFF] * 1000:.0f} us",
         vs=SDK_OFF)  # fmt: skip


# -- 2. server-side cost over stdio, raw JSON-RPC lines --------------------------------------------


class RawStdio:
    """A server subprocess driven by writing and reading JSON lines (no SDK client)."""

    def __init__(self, *args: str, argv: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        """``args`` for ``benchmarks.serve``, or a whole ``argv`` (and its ``env``) to spawn instead."""
        self.proc = subprocess.Popen(
            argv or [PY, "-m", "benchmarks.serve", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.echo = bool(args) and args[0] == "echo"
        self._id = 0
        if not self.echo:
            init = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "b", "version": "1"},
                },
            }
            self._send(init)
            self._recv()
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"server {self.proc.args} closed stdout")
        return json.loads(line)

    def request_line(self, uri: str) -> bytes:
        self._id += 1
        return json.dumps(
            {"jsonrpc": "2.0", "id": self._id, "method": "resources/read", "params": {"uri": uri}}
        ).encode()

    def reads(self, uri: str, n: int, batch: int = 1) -> float:
        """Read ``uri`` ``n`` times, ``batch`` requests in flight at once; ms per read."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        t0 = time.perf_counter()
        done = 0
        while done < n:
            k = min(batch, n - done)
            self.proc.stdin.write(b"".join(self.request_line(uri) + b"\n" for _ in range(k)))
            self.proc.stdin.flush()
            for _ in range(k):
                line = self.proc.stdout.readline()
                if not self.echo and b'"result"' not in line:
                    raise RuntimeError(f"unexpected answer: {line[:200]!r}")
            done += k
        return (time.perf_counter() - t0) / n * 1000

    def latencies(self, uri: str, n: int) -> list[float]:
        """``n`` sequential reads of ``uri``, one in flight; each one's ms from write to answer."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.proc.stdin.write(self.request_line(uri) + b"\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            out.append((time.perf_counter() - t0) * 1000)
            if b'"result"' not in line:
                raise RuntimeError(f"unexpected answer: {line[:200]!r}")
        return out

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def server_side_stdio(rounds: int) -> None:
    uri = fixtures.fixed_uri(0, 3)
    floor = "floor: bare Python echoing lines"
    spawn = {
        floor: ["echo"],
        SDK_ON: ["mcpserver", "--transport", "sdk"],
        SDK_OFF: ["mcpserver", "--transport", "sdk", "--no-otel"],
        "composed, SDK stdio, OTel middleware put back": ["composed", "--transport", "sdk", "--otel"],
        "composed, SDK stdio (OTel middleware off)": ["composed", "--transport", "sdk"],
        OURS_ON: ["composed", "--otel"],
        OURS_OFF: ["composed"],
    }
    servers = {name: RawStdio(*args) for name, args in spawn.items()}
    try:
        for s in servers.values():
            s.reads(uri, 200)  # warm up
        result = interleaved({name: (lambda s=s: s.reads(uri, 300)) for name, s in servers.items()}, rounds)
    finally:
        for s in servers.values():
            s.close()
    section = "server-side read, raw stdio"
    emit(section, floor, result[floor], "ms", "baseline")
    for base, names in ((SDK_ON, (OURS_ON, "composed, SDK stdio, OTel middleware put back")),
                        (SDK_OFF, (OURS_OFF, "composed, SDK stdio (OTel middleware off)"))):  # fmt: skip
        emit(section, base, result[base], "ms", f"{ratio_of(result[base], result[floor])} floor", vs=floor)
        for name in names:
            value = result[name]
            tgt = ""
            if name == OURS_OFF:
                ok = value <= 0.25 and value / result[SDK_OFF] <= 0.3
                tgt = f"target <= 0.25 ms and <= 0.3x MCPServer (both off): {verdict(ok)}"
            emit(section, name, value, "ms", f"{ratio_of(value, result[floor])} floor", tgt, vs=base)


# -- 3. streamable HTTP --------------------------------------------------------------------------


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(kind: str, *extra: str) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [PY, "-m", "benchmarks.serve", kind, "--http", str(port), *extra], cwd=ROOT, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.closing(socket.socket()) as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def http_rate(url: str, clients: int, seconds: float) -> float:
    import httpx2

    uri = fixtures.fixed_uri(0, 3)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}})
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    count = 0

    async def worker(http: Any, stop: float) -> None:
        nonlocal count
        while time.perf_counter() < stop:
            answer = await http.post(url, content=body, headers=headers)
            if answer.status_code != 200 or b'"result"' not in answer.content:
                raise RuntimeError(f"HTTP read failed: {answer.status_code} {answer.content[:200]!r}")
            count += 1

    async with contextlib.AsyncExitStack() as stack:
        # Clients (and their connections) are made before the clock starts: making one costs more than a read.
        https = [await stack.enter_async_context(httpx2.AsyncClient(timeout=30)) for _ in range(clients)]
        async with anyio.create_task_group() as tg:
            for http in https:
                tg.start_soon(worker, http, time.perf_counter() + 0.3)  # opens the connections
        count = 0
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for http in https:
                tg.start_soon(worker, http, t0 + seconds)
        return count / (time.perf_counter() - t0)


HTTP_FLOOR = "floor: raw ASGI, fixed JSON body"
RUNNER_FLOOR = "floor: this transport and the SDK's runner, handler returns a result made in advance"
HTTP_KINDS = {
    HTTP_FLOOR: ["echo"],
    RUNNER_FLOOR: ["sdkfloor"],
    SDK_ON: ["mcpserver"],
    SDK_OFF: ["mcpserver", "--no-otel"],
    OURS_ON: ["composed", "--otel"],
    OURS_OFF: ["composed"],
}
WRK_CLIENTS = (10, 50)
FLOOR_SHARE = 0.6
"""The wrk rows' target against the floor: the composed server's rate over the raw ASGI app's."""
MCPSERVER_SHARE = 2.5
"""The wrk rows' target against ``MCPServer`` (both off): issue 43 raised it from issue 29's 2x."""


def streamable_http(rounds: int) -> None:
    with contextlib.ExitStack() as stack:
        urls = {name: stack.enter_context(http_server(*args)) for name, args in HTTP_KINDS.items()}
        for url in urls.values():
            anyio.run(http_rate, url, 1, 0.5)  # warm up
        http_wrk(urls, rounds)
        for clients in (1, 10, 50):
            cases = {n: (lambda u=u, c=clients: anyio.run(http_rate, u, c, 1.5)) for n, u in urls.items()}
            _report_http(f"HTTP, Python clients, {clients} concurrent clients", interleaved(cases, rounds))


def http_wrk(urls: dict[str, str], rounds: int) -> None:
    """The wrk rows; without wrk on PATH each says so (the servers are not contacted)."""
    for clients in WRK_CLIENTS:
        section = f"HTTP, wrk, {clients} concurrent clients"
        if skip := skipped_because_missing("wrk"):
            for name in urls:
                emit(section, name, float("nan"), "reads/s", "baseline" if name == SDK_ON else "", skip)
            continue
        cases = {n: (lambda u=u, c=clients: identity.wrk_sample(u, None, c, 2)) for n, u in urls.items()}
        runs = interleaved_samples(cases, rounds)
        rates = {n: median([r.rate for r in v]) for n, v in runs.items()}
        latency = {
            n: f"p50 {median([r.p50_ms for r in v]):.2f} ms, p99 {median([r.p99_ms for r in v]):.2f} ms"
            for n, v in runs.items()
        }
        _report_http(section, rates, latency)


def _report_http(section: str, result: dict[str, float], latency: Mapping[str, str] | None = None) -> None:
    """Rates: each composed case against the MCPServer case with the same switch (candidate /
    baseline, above 1.0 is faster); the :data:`MCPSERVER_SHARE` target is judged on the pair with the
    middleware off.
    ``latency``: each case's wrk percentiles (median over rounds), put in its notes."""
    lat = {n: f"; {v}" for n, v in (latency or {}).items()}
    floor = result[HTTP_FLOOR]
    emit(section, SDK_ON, result[SDK_ON], "reads/s", "baseline" + lat.get(SDK_ON, ""))
    emit(
        section,
        HTTP_FLOOR,
        floor,
        "reads/s",
        f"{floor / result[SDK_ON]:.2f}x MCPServer's rate" + lat.get(HTTP_FLOOR, ""),
    )
    runner = result[RUNNER_FLOOR]
    emit(section, RUNNER_FLOOR, runner, "reads/s",
         f"{runner / floor:.2f}x floor, {runner / result[SDK_OFF]:.2f}x MCPServer (off): the most a handler in the "
         "SDK's runner reaches" + lat.get(RUNNER_FLOOR, ""), vs=HTTP_FLOOR)  # fmt: skip
    both_on = f"{result[OURS_ON] / result[SDK_ON]:.2f}x (both on)" + lat.get(OURS_ON, "")
    emit(section, OURS_ON, result[OURS_ON], "reads/s", both_on)
    base, ours = result[SDK_OFF], result[OURS_OFF]
    emit(section, SDK_OFF, base, "reads/s", "baseline" + lat.get(SDK_OFF, ""))
    tgt = ""
    if ", wrk," in section:
        tgt = f"target >= {MCPSERVER_SHARE}x MCPServer's rate (both off): {verdict(ours >= MCPSERVER_SHARE * base)}"
    elif floor < 2 * base:  # the load generator, not the server, sets the rate: the target is the wrk rows'
        tgt = f"client-bound: the floor itself is only {floor / base:.2f}x MCPServer's rate"
    notes = f"{ours / base:.2f}x (both off), {ours / floor:.2f}x floor, {ours / runner:.2f}x the runner's floor"
    notes += lat.get(OURS_OFF, "")
    emit(section, OURS_OFF, ours, "reads/s", notes, tgt)
    if ", wrk," in section:  # issue 29: at least 0.6x of what uvicorn alone answers with a fixed body
        floor_tgt = f">= {FLOOR_SHARE}x the floor's rate (raw ASGI): {verdict(ours >= FLOOR_SHARE * floor)}"
        emit(section, f"{OURS_OFF}, against the floor", ours, "reads/s", f"{ours / floor:.2f}x floor", floor_tgt,
             vs=HTTP_FLOOR)  # fmt: skip


# -- 4. scale ------------------------------------------------------------------------------------


async def _list_all(client: Any) -> int:
    count = 0
    cursor = None
    while True:
        page = await client.list_resources(cursor=cursor)
        count += len(page.resources)
        cursor = page.next_cursor
        if not cursor:
            break
    cursor = None
    while True:
        tpage = await client.list_resource_templates(cursor=cursor)
        count += len(tpage.resource_templates)
        cursor = tpage.next_cursor
        if not cursor:
            return count


def _timed(op: Callable[[], Awaitable[Any]], n: int) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            await op()
        return (time.perf_counter() - t0) / n * 1000

    return run


def compose_bind_ms(sizes: tuple[int, ...], samples: int) -> dict[int, float]:
    """Median ms to compose ``n`` providers and bind the SDK server, after one warm-up build
    (imports, first-use caches); the sizes interleaved sample by sample."""
    fixtures.composed(10).server  # noqa: B018  # warm up
    times: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(samples):
        for n in sizes:
            t0 = time.perf_counter()
            fixtures.composed(n).server  # noqa: B018
            times[n].append((time.perf_counter() - t0) * 1000)
    return {n: median(v) for n, v in times.items()}


async def scale(rounds: int) -> None:
    from mcp import Client

    sizes = (1, 10, 100, 500, 1000)
    ops: dict[str, dict[int, Callable[[], Awaitable[float]]]] = {
        "fixed read": {},
        "templated read": {},
        "one list page (100 items)": {},
        "full listing (all pages)": {},
    }
    build = compose_bind_ms(sizes, 3 if rounds <= 3 else 5)
    async with contextlib.AsyncExitStack() as stack:
        for n in sizes:
            composition = fixtures.composed(n)
            client = await stack.enter_async_context(Client(composition.server, cache=None))
            last = n - 1
            fixed, templated = fixtures.fixed_uri(last, 5), f"bench://p{last}/users/ada/notes/n1"
            await client.read_resource(fixed)
            ops["fixed read"][n] = _timed(lambda c=client, u=fixed: c.read_resource(u), 100)
            ops["templated read"][n] = _timed(lambda c=client, u=templated: c.read_resource(u), 100)
            ops["one list page (100 items)"][n] = _timed(lambda c=client: c.list_resources(), 30)
            ops["full listing (all pages)"][n] = _timed(lambda c=client: _list_all(c), 1)
        base = f"100 providers ({100 * 12} declarations)"
        for n in sizes:
            tgt = f"target <= 6x of 100: {verdict(build[500] / build[100] <= 6)}" if n == 500 else ""
            name = f"{n} providers ({n * 12} declarations)"
            note = "baseline" if n == 100 else (ratio_of(build[n], build[100]) + " of 100" if n > 100 else "")
            emit("scale: compose + bind", name, build[n], "ms", note, tgt, vs=base if n > 100 else "")
        for op, by_size in ops.items():
            result = await ainterleaved({str(n): f for n, f in by_size.items()}, rounds)
            # One provider has only 10 resources, so a full 100-item page starts at 10 providers.
            base_n = 10 if op.startswith("one list page") else 1
            base = result[str(base_n)]
            for n in sizes:
                value = result[str(n)]
                tgt = ""
                if n == 500 and op.endswith("read"):
                    tgt = f"target <= 1.1x: {verdict(value / base <= 1.1)}"
                if n == 500 and op.startswith("one list page"):
                    tgt = f"target independent of total (<= 1.1x of 10): {verdict(value / base <= 1.1)}"
                note = "baseline" if n == base_n else ratio_of(value, base)
                emit(f"scale: {op}", f"{n} providers", value, "ms", note, tgt, vs="" if n < base_n else None)


async def fastmcp_200(rounds: int) -> None:
    import fastmcp
    from mcp import Client

    n = 200
    last = n - 1
    fixed, templated = fixtures.fixed_uri(last, 5), f"bench://p{last}/users/ada/notes/n1"
    ours = fixtures.composed(n)
    async with Client(ours.server, cache=None) as client, fastmcp.Client(fixtures.fastmcp_mounted(n)) as fast:
        await client.read_resource(fixed)
        await fast.read_resource(fixed)
        for op, a, b, k in (
            ("fixed read", lambda: fast.read_resource(fixed), lambda: client.read_resource(fixed), 30),
            ("templated read", lambda: fast.read_resource(templated), lambda: client.read_resource(templated), 30),
            ("full listing", lambda: fast.list_resources(), lambda: _list_all(client), 1),
        ):
            result = await ainterleaved({"FastMCP 4": _timed(a, k), "composed": _timed(b, k)}, max(3, rounds // 2))
            base, value = result["FastMCP 4"], result["composed"]
            emit(f"200 providers: {op}", "FastMCP 4, 200 mounted servers", base, "ms", "baseline")
            tgt = f"target >= 10x faster: {verdict(base / value >= 10)}" if op.endswith("read") else ""
            emit(
                f"200 providers: {op}",
                "composed",
                value,
                "ms",
                f"{ratio_of(value, base)} ({base / value:.0f}x faster)",
                tgt,
            )


# -- 5. start-up ---------------------------------------------------------------------------------


PLUGIN_MODULE = """
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Resource
from mcp_providers.providers import Content, ResourceProvider


class P(ResourceProvider):
    name = "startup-{i}"
    prefixes = ("startup{i}://x/",)

    def resources(self):
        return [Resource(uri="startup{i}://x/r", name="r{i}", mime_type="text/plain")]

    async def read(self, request):
        return Content(text="{i}")


@hookimpl
def register_resource_providers(settings):
    return [P()]
"""


def make_distributions(where: Path, count: int) -> None:
    """``count`` installed plugin distributions: a module and a ``.dist-info`` each, on one path entry."""
    for i in range(count):
        module = f"bench_startup_plugin_{i:03d}"
        (where / f"{module}.py").write_text(PLUGIN_MODULE.replace("{i}", str(i)))
        info = where / f"bench_startup_plugin_{i:03d}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: bench-startup-plugin-{i:03d}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[mcp_providers]\nstartup_{i:03d} = {module}\n")
        (info / "RECORD").write_text("")


INIT_LINE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "1"},
            },
        }
    ).encode()
    + b"\n"
)


def startup_env() -> dict[str, str]:
    """The environment for start-up timings: bytecode caching on, as on a user's machine.

    With ``PYTHONDONTWRITEBYTECODE`` set (as on this workplace's machines) every process compiles
    every module from source, which swamps what is measured with compile time and its noise.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


@functools.cache
def user_cwd() -> str:
    """An empty working directory for the timed processes, as a client launching a server gives.

    Started from a source checkout, ``python -m`` puts the checkout on ``sys.path``, and with it the
    ``.egg-info`` setuptools leaves there: metadata no installed user has, read at every start.
    """
    return tempfile.mkdtemp(prefix="mcp-providers-bench-cwd-")


def time_to_ready(extra_path: str | None) -> float:
    """ms from spawning ``mcp-providers serve`` to its answer to ``initialize``."""
    env = startup_env()
    if extra_path:
        env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [PY, "-m", "mcp_providers", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=user_cwd(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT_LINE)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = (time.perf_counter() - t0) * 1000
    if b'"result"' not in line:
        raise RuntimeError(f"serve did not answer initialize: {line[:200]!r}")
    proc.stdin.close()
    proc.wait(timeout=30)
    proc.stdout.close()
    return elapsed


def time_import(module: str, *, paused: bool = False) -> float:
    """ms for a process that imports ``module`` and exits; ``paused``: with the cyclic collector
    disabled first, as ``serve`` pauses it for its own start-up."""
    code = f"import gc; gc.disable(); import {module}" if paused else f"import {module}"
    t0 = time.perf_counter()
    subprocess.run([PY, "-c", code], check=True, env=startup_env(), cwd=user_cwd())
    return (time.perf_counter() - t0) * 1000


STARTUP_TARGETS = {"serve, 0 extra plugin distributions": 40.0, "serve, 100 extra plugin distributions": 100.0}
"""ms over the bare ``import mcp.server`` process (issue 29)."""


def startup(rounds: int) -> None:
    """Time to ready against a bare ``import mcp.server`` process, interleaved in each round.

    Two bare processes: as a user of the SDK gets it, and with the cyclic collector paused as
    ``serve`` pauses it while it starts (``mcp_providers._gc``), the fair pair the targets are
    judged on. Besides each case's median, the median of the per-round differences (the serve
    process minus the bare one of the same round) is printed: on a shared machine it moves less
    than the difference of the medians, since both sides of a pair see the same load.
    """
    bare_name = "bare `import mcp.server` process"
    paused_name = "bare `import mcp.server` process, collector paused as serve's"
    with tempfile.TemporaryDirectory(prefix="mcp-providers-bench-") as tmp:
        make_distributions(Path(tmp), 100)
        # Warm the bytecode caches (the SDK's, ours, the generated modules') before timing.
        time_import("mcp.server")
        time_to_ready(None)
        time_to_ready(tmp)
        cases: dict[str, Callable[[], float]] = {
            bare_name: lambda: time_import("mcp.server"),
            paused_name: lambda: time_import("mcp.server", paused=True),
            "serve, 0 extra plugin distributions": lambda: time_to_ready(None),
            "serve, 100 extra plugin distributions": lambda: time_to_ready(tmp),
        }
        samples = interleaved_samples(cases, rounds)
    medians = {name: median(values) for name, values in samples.items()}
    emit("start-up to ready", bare_name, medians[bare_name], "ms", "baseline (as shipped)")
    emit("start-up to ready", paused_name, medians[paused_name], "ms", "baseline (fair pair)")
    for name, limit in STARTUP_TARGETS.items():
        notes = []
        for base_name, label in ((bare_name, "as shipped"), (paused_name, "fair pair")):
            paired = median([s - b for s, b in zip(samples[name], samples[base_name], strict=True)])
            over = medians[name] - medians[base_name]
            notes.append(
                f"{label}: {over:+.0f} ms ({ratio_of(medians[name], medians[base_name])}), paired {paired:+.0f} ms"
            )
        fair_over = medians[name] - medians[paused_name]
        emit(
            "start-up to ready",
            name,
            medians[name],
            "ms",
            "; ".join(notes),
            f"target <= {limit:.0f} ms over bare (fair pair): {verdict(fair_over <= limit)}",
        )


# -- 5b. cost per installed plugin -----------------------------------------------------------------


PLUGIN_COUNTS = (1, 10, 100)


def plugins_installed(rounds: int) -> None:
    """Sequential reads through ``mcp-providers serve`` (stdio, raw JSON lines) with 1, 10 and 100
    generated plugin distributions installed (the start-up section's ``.dist-info`` folders on
    ``PYTHONPATH``) and composed: reads/s and p99 latency, the servers interleaved round by round."""
    uri_of = "startup{last}://x/r"
    with tempfile.TemporaryDirectory(prefix="mcp-providers-bench-plugins-") as tmp:
        servers: dict[int, RawStdio] = {}
        try:
            for count in PLUGIN_COUNTS:
                where = Path(tmp) / str(count)
                where.mkdir()
                make_distributions(where, count)
                env = startup_env()
                env["PYTHONPATH"] = str(where) + os.pathsep + env.get("PYTHONPATH", "")
                servers[count] = RawStdio(argv=[PY, "-m", "mcp_providers", "serve"], env=env)
            samples: dict[int, list[float]] = {count: [] for count in PLUGIN_COUNTS}
            for count, server in servers.items():
                server.latencies(uri_of.format(last=f"{count - 1}"), 200)  # warm up
            for r in range(rounds):
                for count in PLUGIN_COUNTS if r % 2 == 0 else PLUGIN_COUNTS[::-1]:
                    samples[count] += servers[count].latencies(uri_of.format(last=f"{count - 1}"), 300)
        finally:
            for server in servers.values():
                server.close()
    _report_plugins(samples)


def _report_plugins(samples: dict[int, list[float]]) -> None:
    import statistics

    for count, values in samples.items():
        base = "baseline" if count == PLUGIN_COUNTS[0] else ""
        case = f"{count} plugin distributions"
        emit("plugins installed: reads/s", case, 1000 / statistics.fmean(values), "reads/s", base)
        emit("plugins installed: p50 latency", case, statistics.median(values), "ms", base)
        emit("plugins installed: p99 latency", case, statistics.quantiles(values, n=100)[98], "ms", base)


# -- 6. memory -----------------------------------------------------------------------------------


def memory() -> None:
    server = RawStdio("composed")
    try:
        uri = fixtures.fixed_uri(0, 3)
        server.reads(uri, 1000, batch=100)
        after_1k = server.rss_mb()
        server.reads(uri, 99_000, batch=100)
        after_100k = server.rss_mb()
    finally:
        server.close()
    emit("memory (RSS of the server)", "after 1,000 reads", after_1k, "MB RSS", "baseline")
    growth = after_100k - after_1k
    emit(
        "memory (RSS of the server)",
        "after 100,000 reads",
        after_100k,
        "MB RSS",
        f"{growth:+.2f} MB",
        f"target growth <= 2 MB: {verdict(growth <= 2)}",
    )


# -- 7. ServiceNow -------------------------------------------------------------------------------


SN_CLIENT_FLOOR = "one reused httpx2 client, fixed-body server (client bound)"
SN_DIRECT = "direct GET, one reused httpx2 client"
SN_COMPOSED = "composed read (pooled client per instance)"
SN_TARGET = 1000.0
"""Sequential reads/s the emulator itself must serve on a quiet machine (issue 29)."""


async def _emulator_alone(url: str, user: str, password: str, rounds: int) -> None:
    """The emulator's own sequential rate: ``wrk`` with one connection (one request in flight),
    a C client that costs the emulator's process nothing; the benchmark process only waits."""
    section = "ServiceNow emulator, sequential"
    name = "emulator alone: wrk, 1 connection (GET of one incident)"
    if skip := skipped_because_missing("wrk"):
        emit(section, name, float("nan"), "reads/s", "", skip, vs="")
        return
    import base64

    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    script = f'wrk.headers["Authorization"] = "Basic {auth}"\nwrk.headers["Accept"] = "application/json"\n'
    rates = [await anyio.to_thread.run_sync(_wrk_get, url, script, 2.0) for _ in range(rounds)]
    value = median(rates)
    emit(section, name, value, "reads/s", "", f"target >= {SN_TARGET:,.0f} reads/s: {verdict(value >= SN_TARGET)}",
         vs="")  # fmt: skip


def _wrk_get(url: str, script: str, seconds: float) -> float:
    import re

    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(["wrk", "-t1", "-c1", f"-d{seconds:.0f}s", "-s", f.name, url],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    finally:
        os.unlink(f.name)
    found = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    if "Non-2xx" in out or found is None:
        raise RuntimeError(f"wrk against the emulator: {out}")
    return float(found.group(1))


async def servicenow(rounds: int) -> None:
    import httpx2
    from mcp import Client

    import mcp_providers.plugins.servicenow as plugin
    from mcp_providers.config import ServerSettings
    from mcp_providers.plugins.servicenow.emulator import Emulator
    from mcp_providers.plugins.servicenow.settings import ResourceFields
    from mcp_providers.testing import compose

    user, password = "bench.user", "bench-Pa55"
    os.environ["MCP_PROVIDERS_BENCH_SN_PASSWORD"] = password
    with Emulator("dev", users={user: password}) as emulator:
        instance = {
            "name": "dev",
            "url": emulator.base_url,
            "auth": {"type": "basic", "username": user, "password_env": "MCP_PROVIDERS_BENCH_SN_PASSWORD"},
        }

        def composed(coalesce: bool) -> Any:
            return compose(
                {"servicenow": plugin},
                {"servicenow": {"instances": [instance]}},
                server=ServerSettings(coalesce_reads=coalesce),
            )

        uri = "servicenow://dev/incidents/INC0010001"
        url = f"{emulator.base_url}/api/now/table/incident"
        # the same request the plugin sends for that read, so the floor does the same upstream work
        query = {"sysparm_query": "number=INC0010001", "sysparm_limit": "1", "sysparm_offset": "0",
                 "sysparm_display_value": "all", "sysparm_exclude_reference_link": "true",
                 "sysparm_fields": ",".join(ResourceFields().incident)}  # fmt: skip
        async with (
            Client(composed(True).server, cache=None) as client,
            Client(composed(False).server, cache=None) as plain,
            httpx2.AsyncClient(auth=(user, password)) as http,
        ):
            await client.read_resource(uri)
            await plain.read_resource(uri)

            async def direct() -> None:
                (await http.get(url, params=query)).raise_for_status()

            async def rate(op: Callable[[], Awaitable[Any]]) -> float:
                n, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < 1.0:
                    await op()
                    n += 1
                return n / (time.perf_counter() - t0)

            await _emulator_alone(f"{url}?{urlencode(query)}", user, password, max(3, rounds // 2))
            with http_server("echo") as fixed_url:
                async with httpx2.AsyncClient() as fixed_http:

                    async def fixed() -> None:
                        (await fixed_http.get(fixed_url)).raise_for_status()

                    await rate(fixed)  # warm up
                    result = await ainterleaved(
                        {
                            SN_CLIENT_FLOOR: lambda: rate(fixed),
                            SN_DIRECT: lambda: rate(direct),
                            SN_COMPOSED: lambda: rate(lambda: client.read_resource(uri)),
                        },
                        max(3, rounds // 2),
                    )
            section = "ServiceNow emulator, sequential"
            emit(section, SN_CLIENT_FLOOR, result[SN_CLIENT_FLOOR], "reads/s", "", "the client's own bound", vs="")
            base = result[SN_DIRECT]
            emit(section, SN_DIRECT, base, "reads/s", "baseline")
            value = result[SN_COMPOSED]
            emit(section, SN_COMPOSED, value, "reads/s", f"{ratio_of(value, base)} of direct's rate")

            async def burst(c: Any, k: int = 50) -> tuple[float, int]:
                emulator.clear_requests()
                t0 = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    for _ in range(k):
                        tg.start_soon(c.read_resource, uri)
                return (time.perf_counter() - t0) * 1000, len(emulator.table_requests())

            walls: dict[str, list[float]] = {"off": [], "on": []}
            upstream: dict[str, list[int]] = {"off": [], "on": []}
            for _ in range(max(3, rounds // 2)):
                for name, c in (("off", plain), ("on", client)):
                    wall, requests = await burst(c)
                    walls[name].append(wall)
                    upstream[name].append(requests)
            off, on = median(walls["off"]), median(walls["on"])
            emit(
                "ServiceNow, 50 identical concurrent reads",
                f"coalescing off (upstream requests: {int(median(upstream['off']))})",
                off,
                "ms",
                "baseline",
            )
            emit(
                "ServiceNow, 50 identical concurrent reads",
                f"coalescing on (upstream requests: {int(median(upstream['on']))})",
                on,
                "ms",
                ratio_of(on, off),
                "live resource: in-flight sharing only, nothing cached",
            )


# -- driver --------------------------------------------------------------------------------------


SECTIONS = (
    "overhead",
    "stdio",
    "http",
    "scale",
    "fastmcp",
    "startup",
    "plugins",
    "memory",
    "servicenow",
    "sideeffects",
    "cluster",
    "identity",
    "traces",
    "reload",
    "authoring",
    "embedding",
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 9 (smoke run)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the page (docs/benchmarks.md) here")
    parser.add_argument("--json", type=Path, default=None, help="also write this run's rows here (for --previous)")
    parser.add_argument(
        "--previous", type=Path, default=None, help="an earlier run's --json file, shown beside this one"
    )
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    earlier = None
    if args.previous is not None:
        try:
            earlier = report.load(args.previous)
        except ValueError as exc:
            parser.error(f"--previous {args.previous}: {exc}")
    rounds = 3 if args.quick else ROUNDS
    only = set(args.only.split(","))
    if unknown := only - set(SECTIONS):
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {','.join(SECTIONS)}")
    if "fastmcp" in only:
        import fastmcp  # noqa: F401  # loaded now: a concurrent `uv sync` of the shared venv may remove it later

    started, load_before = report.run_started()
    print(f"machine: {report.machine()}, load average {load_before}")
    print(f"rounds: {rounds} (medians over interleaved rounds)\n", flush=True)
    t0 = time.perf_counter()
    run_sections(only, rounds)
    took = time.perf_counter() - t0
    head = report.header(argv, started, load_before, took)
    print(f"\n{head}\n\n{report.table(ROWS)}")
    if args.json:
        report.save(args.json, report.Run(head, list(ROWS)))
    if args.markdown:
        args.markdown.write_text(report.page(ROWS, head, earlier))


def run_sections(only: set[str], rounds: int) -> None:
    steps: dict[str, Callable[[], object]] = {
        "overhead": lambda: anyio.run(read_overhead, rounds),
        "stdio": lambda: server_side_stdio(rounds),
        "http": lambda: streamable_http(max(3, rounds // 3)),
        "scale": lambda: anyio.run(scale, rounds),
        "fastmcp": lambda: anyio.run(fastmcp_200, rounds),
        "startup": lambda: startup(max(3, rounds + 2)),  # process start-up is the noisiest measure: more rounds
        "plugins": lambda: plugins_installed(max(3, rounds // 3)),
        "memory": memory,
        "servicenow": lambda: anyio.run(servicenow, rounds),
        "sideeffects": lambda: sideeffects.run(rounds, emit),
        "cluster": lambda: cluster.run(max(3, rounds // 2), emit),  # needs redis-server, nginx, wrk
        "identity": lambda: identity.run(max(3, rounds // 3), emit),  # JWT validation's cost over HTTP
        "traces": lambda: traces.run(rounds, emit),  # read overhead with OpenTelemetry traces off and on
        "reload": lambda: reload.run(rounds, emit),  # reads while reloads run beside them, and one reload
        "authoring": lambda: authoring.run(rounds, emit),  # a decorated function's read against a class provider's
        "embedding": lambda: embedding.run(rounds, emit),  # a read through add_to_mcpserver against a plain MCPServer's
    }
    for name in SECTIONS:
        if name in only:
            run_section(name, steps[name])


def run_section(name: str, step: Callable[[], object]) -> None:
    """Run one section; one that fails leaves a row saying so (and its traceback on stderr) and the
    run goes on, so one section's failure does not lose the others' figures."""
    try:
        step()
    except Exception as exc:
        traceback.print_exc()
        first = (str(exc).splitlines() or [""])[0][:160]
        emit(name, "section failed", float("nan"), "", "", f"skipped: failed ({type(exc).__name__}: {first})", vs="")


if __name__ == "__main__":
    main()
