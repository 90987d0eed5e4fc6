"""Where an in-memory read's time goes, by counts that a loaded machine does not change (issue 43).

``uv run python -m benchmarks.read_cost [--mode auto|legacy] [--reads N]`` prints, for ``MCPServer``
(OTel off), the composed server and the SDK floor (:func:`benchmarks.fixtures.sdk_floor`), each
read through the SDK ``Client`` in memory:

- **calls/read**: Python and C function calls per read, counted by ``cProfile`` over ``N`` reads
  (the same on any machine, for the same code and library versions);
- **peak KiB/read**: the most memory one read holds at once beyond what was held before it
  (``tracemalloc``, median of 50 reads);
- **CPU us/read**: ``time.process_time`` per read, the servers taking turns in 100-read slices
  (median of 30 slices), so that load from other processes falls on all of them alike;
- **Pipeline.run alone**: the composed server's ``Pipeline.run`` called again and again with the
  arguments of one captured read, with no SDK or client around it (CPU us per call).

The ratios of the ``python -m benchmarks --only overhead`` table are wall-clock times; these are
what to compare when the machine is busy.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import pstats
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from benchmarks import fixtures
from benchmarks.timing import median


async def _cpu_us(read: Callable[[], Awaitable[Any]], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        await read()
    return (time.process_time() - start) / n * 1e6


async def _calls(read: Callable[[], Awaitable[Any]], n: int) -> float:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        await read()
    profile.disable()
    return pstats.Stats(profile).total_calls / n  # type: ignore[attr-defined]  # set by Stats, untyped


async def _peak_kib(read: Callable[[], Awaitable[Any]]) -> float:
    peaks = []
    tracemalloc.start()
    try:
        for _ in range(50):
            gc.collect()
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            await read()
            peaks.append(tracemalloc.get_traced_memory()[1] - held)
    finally:
        tracemalloc.stop()
    return median(peaks) / 1024


async def _pipeline_alone(mode: str, uri: str) -> float:
    """CPU us per ``Pipeline.run`` with the arguments of one read captured through a client."""
    from mcp import Client

    from mcp_providers._serve.pipeline import Pipeline

    captured: list[tuple[Any, ...]] = []
    run = Pipeline.run

    async def capture(self: Pipeline, *args: Any) -> Any:
        captured.append((self, *args))
        return await run(self, *args)

    Pipeline.run = capture  # type: ignore[method-assign]  # for one read only
    try:
        async with Client(fixtures.composed(1).server, mode=mode, cache=None) as client:
            await client.read_resource(uri)
    finally:
        Pipeline.run = run  # type: ignore[method-assign]
    args = captured[0]

    async def again() -> Any:
        return await run(*args)

    await _cpu_us(again, 2000)  # warm
    return median([await _cpu_us(again, 500) for _ in range(30)])


async def measure(mode: str, reads: int) -> None:
    """Print the table of the module docstring for protocol ``mode`` (``auto`` or ``legacy``)."""
    from mcp import Client

    uri = fixtures.fixed_uri(0, 3)
    servers = {
        "MCPServer (OTel off)": fixtures.mcpserver(1, otel=False),
        "composed": fixtures.composed(1).server,
        "SDK floor": fixtures.sdk_floor(),
    }
    async with contextlib.AsyncExitStack() as stack:
        reads_of: dict[str, Callable[[], Awaitable[Any]]] = {}
        for name, server in servers.items():
            client = await stack.enter_async_context(Client(server, mode=mode, cache=None))
            reads_of[name] = lambda client=client: client.read_resource(uri)
            await _cpu_us(reads_of[name], 300)  # warm
        calls = {name: await _calls(read, reads) for name, read in reads_of.items()}
        peaks = {name: await _peak_kib(read) for name, read in reads_of.items()}
        cpu: dict[str, list[float]] = {name: [] for name in reads_of}
        for _ in range(30):
            for name, read in reads_of.items():
                cpu[name].append(await _cpu_us(read, 100))
    print(f"in-memory read, mode {mode} ({reads} reads counted)")
    print(f"{'server':24} {'calls/read':>10} {'peak KiB/read':>14} {'CPU us/read':>12}")
    for name in reads_of:
        print(f"{name:24} {calls[name]:10.0f} {peaks[name]:14.1f} {median(cpu[name]):12.1f}")
    print(f"Pipeline.run alone: {await _pipeline_alone(mode, uri):.1f} CPU us per call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("auto", "legacy"), default="auto", help="the client's protocol mode")
    parser.add_argument("--reads", type=int, default=2000, help="reads counted by cProfile (default 2000)")
    args = parser.parse_args()
    anyio.run(measure, args.mode, args.reads)


if __name__ == "__main__":
    main()
