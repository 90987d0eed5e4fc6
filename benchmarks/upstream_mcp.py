"""A read through the upstream provider against the same read made directly (issue 40; target: at
most 1.3x the direct read, in the same run; p99 reported for each).

Run alone: ``uv run python -m benchmarks.upstream_mcp [--quick]``.

The upstream is an SDK v2 ``MCPServer`` over stdio (a subprocess of this Python), serving one text
resource. Two instances are started: one reached directly by an SDK ``Client`` (the baseline), one
composed in as an upstream provider and read through the composed server's in-memory ``Client``
(2026-07-28): gate, side-effect scope, budgets, receipt, audit, then ``resources/read`` upstream.
Reads are interleaved round by round, and every single read is timed, for the median and p99.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from pathlib import Path

import anyio

from benchmarks.timing import Emit, median, standalone
from mcp_providers.plugins import upstream
from mcp_providers.testing import compose

SECTION = "upstream MCP: read"
DIRECT, COMPOSED = "SDK client to the upstream (baseline)", "through the upstream provider"
URI = "bench://doc/readme"
SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("bench-upstream", log_level="WARNING")

@server.resource("bench://doc/readme", mime_type="text/plain")
def readme() -> str:
    return "x" * 2048

server.run()
"""


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def measure(rounds: int) -> dict[str, list[float]]:
    from mcp import Client, StdioServerParameters

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "upstream_server.py"
        script.write_text(SERVER)
        settings = {
            "servers": [{"name": "bench", "command": sys.executable, "args": [str(script)], "prefixes": ["bench://"]}]
        }
        composition = compose({"upstream": upstream}, {"upstream": settings})
        params = StdioServerParameters(command=sys.executable, args=[str(script)])
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(composition.running())
            clients = {
                DIRECT: await stack.enter_async_context(Client(params, cache=None)),
                COMPOSED: await stack.enter_async_context(Client(composition.server, cache=None)),
            }
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
    samples = anyio.run(measure, rounds)
    base = median(samples[DIRECT])
    emit(SECTION, DIRECT, base, "ms", "baseline", f"p99 {_p99(samples[DIRECT]):.3f} ms")
    composed = median(samples[COMPOSED])
    ratio = composed / base
    verdict = f"target <= 1.3x: {'met' if ratio <= 1.3 else 'MISSED'}; p99 {_p99(samples[COMPOSED]):.3f} ms"
    emit(SECTION, COMPOSED, composed, "ms", f"{ratio:.3f}x", verdict)


if __name__ == "__main__":
    standalone("python -m benchmarks.upstream_mcp", __doc__, run)
