"""What live composition costs (issue 26): a read while reloads run beside it, and a reload itself.

Run alone: ``uv run python -m benchmarks.reload [--quick]``; or in the full table with
``uv run --group bench python -m benchmarks --only reload``.

Reads of one resource through the SDK's in-memory client (2026-07-28), cases interleaved round by
round in one process:

- a hand-written SDK ``MCPServer`` serving the same resource (the baseline of every read section),
  as shipped (OTel middleware on) and with that middleware removed (the like-for-like pair);
- the composed server with no reload running (every request picks its generation: the cost of
  being reloadable at all, to set beside the ``overhead`` section of a run without the feature);
- the composed server while a task reloads it back to back (each reload rescans nothing, as the
  plugins are passed directly, but composes, checks and swaps a new assembly: the worst case a
  reload storm makes for requests in flight).

Then the reload itself, in milliseconds: one whose config is unchanged (composed and compared,
nothing swapped) and one that is applied (a setting changed: swapped, clients told).
"""

from __future__ import annotations

import contextlib
import time

import anyio

from benchmarks import fixtures
from benchmarks.timing import Emit, ainterleaved, median, per_read_ms, standalone
from mcp_providers._serve.composition import compose
from mcp_providers._serve.reload import Reloader
from mcp_providers.config import Config, ServerSettings

SECTION = "reload: read, in-memory"
RELOADS = "reload: one reload"
SDK_ON, SDK_OFF = "MCPServer (SDK default: OTel middleware on)", "MCPServer, OTel middleware off"


def _reloadable() -> tuple[object, Reloader, list[Config]]:
    plugins = {f"gen{i:04d}": fixtures._Plugin(i) for i in range(4)}
    configs = [Config(server=ServerSettings(page_size=100)), Config(server=ServerSettings(page_size=99))]
    current = [configs[0]]
    composition = compose(configs[0], load_entrypoints=False, plugins=plugins)
    reloader = Reloader(composition, lambda: current[0], load_entrypoints=False, plugins=plugins)
    return composition, reloader, current


class _Storm:
    """Reloads back to back while on (:meth:`start`, :meth:`stop`); waits, costing nothing, while off."""

    def __init__(self, reloader: Reloader, current: list[Config]) -> None:
        self.reloader, self.current = reloader, current
        self.on, self.go = False, anyio.Event()
        self.count, self.closed = 0, False

    async def run(self) -> None:
        while not self.closed:
            await self.go.wait()
            while self.on:
                self.count += 1
                self.current[0] = Config(server=ServerSettings(page_size=100 - self.count % 2))
                await self.reloader.reload()
                await anyio.sleep(0)  # let the reads in between reloads

    def start(self) -> None:
        self.on = True
        self.go.set()

    def stop(self) -> None:
        self.on, self.go = False, anyio.Event()

    def close(self) -> None:
        self.closed = True
        self.go.set()


async def measure(rounds: int) -> dict[str, float]:
    from mcp import Client

    uri = fixtures.fixed_uri(0, 3)
    quiet, _, _ = _reloadable()
    stormy, reloader, current = _reloadable()
    storm = _Storm(reloader, current)
    servers = {SDK_ON: fixtures.mcpserver(1), SDK_OFF: fixtures.mcpserver(1, otel=False),
               "composed, no reloads": quiet.server,  # type: ignore[attr-defined]
               "composed, reloading beside": stormy.server}  # type: ignore[attr-defined]  # fmt: skip
    async with anyio.create_task_group() as tasks, contextlib.AsyncExitStack() as stack:
        cases = {}
        for name, server in servers.items():
            client = await stack.enter_async_context(Client(server, cache=None))
            await client.read_resource(uri)
            cases[name] = per_read_ms(client, uri, 50)
        reads = cases["composed, reloading beside"]

        async def during_storm() -> float:
            storm.start()
            try:
                return await reads()
            finally:
                storm.stop()

        cases["composed, reloading beside"] = during_storm
        tasks.start_soon(storm.run)
        result = await ainterleaved(cases, 10 * (rounds + rounds // 2))
        storm.close()
    result["reloads per storm read"] = storm.count / (10 * (rounds + rounds // 2) * 50)
    result.update(await _reload_ms(rounds))
    return result


async def _reload_ms(rounds: int) -> dict[str, float]:
    composition, reloader, current = _reloadable()
    unchanged, applied = [], []
    async with composition.running():  # type: ignore[attr-defined]
        for i in range(5 * rounds):
            t0 = time.perf_counter()
            await reloader.reload()
            unchanged.append((time.perf_counter() - t0) * 1000)
            current[0] = Config(server=ServerSettings(page_size=100 - (i + 1) % 2))
            t0 = time.perf_counter()
            await reloader.reload()
            applied.append((time.perf_counter() - t0) * 1000)
    return {"unchanged config": median(unchanged), "applied (a setting changed)": median(applied)}


def report(result: dict[str, float], emit: Emit) -> None:
    sdk, quiet = result[SDK_OFF], result["composed, no reloads"]
    emit(SECTION, SDK_ON, result[SDK_ON], "ms", "baseline")
    emit(SECTION, SDK_OFF, sdk, "ms", "baseline")
    emit(SECTION, "composed, no reloads", quiet, "ms",
         f"{quiet / sdk:.2f}x MCPServer (both off), {quiet / result[SDK_ON]:.2f}x as shipped",
         "compare: overhead section")  # fmt: skip
    stormy = result["composed, reloading beside"]
    per = result["reloads per storm read"]
    emit(
        SECTION,
        "composed, reloading beside",
        stormy,
        "ms",
        f"{stormy / quiet:.2f}x no reloads",
        f"{per:.2f} reloads/read",
        vs="composed, no reloads",
    )
    for name in ("unchanged config", "applied (a setting changed)"):
        emit(RELOADS, name, result[name], "ms", "", "reported", vs="")


def run(rounds: int, emit: Emit) -> None:
    report(anyio.run(measure, rounds), emit)


if __name__ == "__main__":
    standalone("python -m benchmarks.reload", __doc__, run)
