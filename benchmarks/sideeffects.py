"""The side-effect scope's cost per read (issue 16; target: under 5 % of the read).

Run alone: ``uv run python -m benchmarks.sideeffects [--quick]``; or in the full table with
``uv run --group bench python -m benchmarks --only sideeffects``.

Two measures, each scope-on and scope-off interleaved round by round in one process:

- a whole ``resources/read`` through the SDK's in-memory client (2026-07-28), with the server's
  ``enter_scope`` swapped for a no-op for the "without" case;
- the provider's ``read()`` called directly, bare and inside the scope (``enter_scope``/``exit_scope``) (the scope's
  absolute cost in microseconds, with no client or server around it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import anyio

from benchmarks import fixtures
from benchmarks.timing import Emit, ainterleaved, standalone


def _no_scope(*_args: Any) -> tuple[None, None]:
    return None, None  # the invoker skips leaving a scope it never entered


@contextlib.contextmanager
def _scope_removed() -> Iterator[None]:
    """The invoker without the side-effect scope (it enters one through ``enter_scope``)."""
    from mcp_providers._serve.steps import invoker as server

    real = server.enter_scope
    server.enter_scope = _no_scope  # type: ignore[assignment]
    try:
        yield
    finally:
        server.enter_scope = real


async def measure(rounds: int) -> dict[str, float]:
    """Median milliseconds per read for each case (names are the keys)."""
    from mcp import Client

    from mcp_providers._sideeffects import enter_scope, exit_scope, install
    from mcp_providers.providers import ReadRequest

    install()
    composition = fixtures.composed(1)
    uri = fixtures.fixed_uri(0, 3)
    provider = composition.catalog.route(uri).provider
    request = ReadRequest(uri=uri, resource=composition.catalog.route(uri).declaration)

    async with Client(composition.server, mode="auto", cache=None) as client:  # type: ignore[arg-type]
        await client.read_resource(uri)

        async def client_reads(scoped: bool, n: int = 300) -> float:
            with contextlib.nullcontext() if scoped else _scope_removed():
                t0 = time.perf_counter()
                for _ in range(n):
                    await client.read_resource(uri)
            return (time.perf_counter() - t0) / n * 1000

        async def direct_reads(scoped: bool, n: int = 20_000) -> float:
            t0 = time.perf_counter()
            if scoped:
                for _ in range(n):  # entered and left as the invoker does
                    scope, token = enter_scope("gen", "gen0000", uri, "read", "enforce")
                    try:
                        await provider.read(request)
                    finally:
                        exit_scope(scope, token)
            else:
                for _ in range(n):
                    await provider.read(request)
            return (time.perf_counter() - t0) / n * 1000

        return await ainterleaved(
            {
                "client read, no scope": lambda: client_reads(False),
                "client read, in the scope": lambda: client_reads(True),
                "provider read() alone, no scope": lambda: direct_reads(False),
                "provider read() alone, in the scope": lambda: direct_reads(True),
            },
            rounds,
        )


def report(result: dict[str, float], emit: Emit) -> None:
    """Emit the rows: both pairs with their ratio, and the scope's cost in microseconds."""
    base, scoped = result["client read, no scope"], result["client read, in the scope"]
    emit("side-effect scope", "client read, no scope", base, "ms", "baseline")
    cost = (scoped - base) / base
    emit(
        "side-effect scope",
        "client read, in the scope",
        scoped,
        "ms",
        f"{scoped / base:.3f}x ({cost:+.1%})",
        f"target < 5%: {'met' if cost < 0.05 else 'MISSED'}",
    )
    alone, alone_scoped = result["provider read() alone, no scope"], result["provider read() alone, in the scope"]
    emit("side-effect scope", "provider read() alone, no scope", alone, "ms", "baseline")
    emit(
        "side-effect scope",
        "provider read() alone, in the scope",
        alone_scoped,
        "ms",
        f"+{(alone_scoped - alone) * 1000:.2f} us per scope",
    )


def run(rounds: int, emit: Emit) -> None:
    report(anyio.run(measure, rounds), emit)


if __name__ == "__main__":
    standalone("python -m benchmarks.sideeffects", __doc__, run)
