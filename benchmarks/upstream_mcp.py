"""A read through the upstream provider against the same read made directly (issue 40; target: at
most 1.3x the direct read, in the same run; p99 reported for each).

Run alone: ``uv run python -m benchmarks.upstream_mcp [--quick]``.

The upstream is an SDK v2 ``MCPServer`` (a subprocess of this Python) serving one text resource,
over stdio and, in a second measurement, over streamable HTTP. Two instances are started: one
reached directly by an SDK ``Client`` (the baseline), one composed in as an upstream provider and
read through the composed server's in-memory ``Client``
(2026-07-28): gate, side-effect scope, budgets, receipt, audit, then ``resources/read`` upstream.
A third case is the floor of any relay: a plain SDK ``MCPServer`` (tracing off, as ours) whose
resource reads the same upstream through a kept-open SDK ``Client`` and returns its text, read by
the same kind of in-memory client (no gate, receipts, budgets or scope), so the composed read
against it is this server's own share. Reads are interleaved round by round, and every single read
is timed, for the median and p99.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

from benchmarks.timing import Emit, median, standalone
from mcp_providers.plugins import upstream
from mcp_providers.testing import compose

SECTION = "upstream read"
DIRECT, COMPOSED = "SDK client to the upstream (baseline)", "through the upstream provider"
FLOOR = "through a plain SDK MCPServer relaying it (the floor)"
URI = "bench://doc/readme"
SERVER = """
import sys
from mcp.server.mcpserver import MCPServer
server = MCPServer("bench-upstream", log_level="WARNING")

@server.resource("bench://doc/readme", mime_type="text/plain")
def readme() -> str:
    return "x" * 2048

if len(sys.argv) > 1:  # a port: streamable HTTP
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
else:
    server.run()
"""


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@contextlib.contextmanager
def _http_upstream(script: Path) -> Iterator[str]:
    """The upstream over streamable HTTP in a subprocess; yields its URL once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(script), str(port)], stderr=subprocess.DEVNULL)
    try:
        for _ in range(400):
            with socket.socket() as s, contextlib.suppress(OSError):
                s.connect(("127.0.0.1", port))
                break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def measure(rounds: int, transport: str) -> dict[str, list[float]]:
    """Every read's milliseconds, per case, for ``transport`` (``"stdio"`` or ``"http"``)."""
    from mcp import Client, StdioServerParameters

    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as processes:
        script = Path(folder) / "upstream_server.py"
        script.write_text(SERVER)
        if transport == "http":
            url = processes.enter_context(_http_upstream(script))
            target: Any = url
            server: dict[str, Any] = {"url": url}
        else:
            target = StdioServerParameters(command=sys.executable, args=[str(script)])
            server = {"command": sys.executable, "args": [str(script)]}
        settings = {"servers": [{"name": "bench", "prefixes": ["bench://"], **server}]}
        composition = compose({"upstream": upstream}, {"upstream": settings})
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(composition.running())
            relay = await stack.enter_async_context(Client(target, cache=None))
            clients = {
                DIRECT: await stack.enter_async_context(Client(target, cache=None)),
                COMPOSED: await stack.enter_async_context(Client(composition.server, cache=None)),
                FLOOR: await stack.enter_async_context(Client(_relaying(relay), cache=None)),
            }
            return await _samples(clients, rounds)


def _relaying(upstream: Any) -> Any:
    """A plain SDK ``MCPServer`` (tracing off) serving :data:`URI` by reading it from ``upstream``."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-relay", log_level="WARNING")
    lowlevel = server._lowlevel_server  # without the SDK's tracing middleware, as the composed server runs
    lowlevel.middleware = [m for m in lowlevel.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]

    @server.resource(URI, mime_type="text/plain")
    async def relayed() -> str:
        result = await upstream.read_resource(URI)
        return str(result.contents[0].text)

    return server


async def _samples(clients: dict[str, Any], rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in clients}
    for client in clients.values():  # warm both paths
        for _ in range(20):
            await client.read_resource(URI)
    for r in range(rounds * 10):
        for name in list(clients) if r % 2 == 0 else list(reversed(clients)):
            for _ in range(20):
                t0 = time.perf_counter()
                await clients[name].read_resource(URI)
                samples[name].append((time.perf_counter() - t0) * 1000)
    return samples


def run(rounds: int, emit: Emit) -> None:
    for transport in ("stdio", "http"):
        samples = anyio.run(measure, rounds, transport)
        section = f"{SECTION}, {transport}"
        base = median(samples[DIRECT])
        emit(section, DIRECT, base, "ms", "baseline", f"p99 {_p99(samples[DIRECT]):.3f} ms")
        composed = median(samples[COMPOSED])
        ratio = composed / base
        verdict = f"target <= 1.3x: {'met' if ratio <= 1.3 else 'MISSED'}; p99 {_p99(samples[COMPOSED]):.3f} ms"
        emit(section, COMPOSED, composed, "ms", f"{ratio:.3f}x", verdict)
        floor = median(samples[FLOOR])
        emit(section, FLOOR, floor, "ms", f"{floor / base:.3f}x",
             f"the provider {composed / floor:.3f}x this; p99 {_p99(samples[FLOOR]):.3f} ms")  # fmt: skip


if __name__ == "__main__":
    standalone("python -m benchmarks.upstream_mcp", __doc__, run)
