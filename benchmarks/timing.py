"""What every benchmark section shares: interleaved rounds, reads timed through a client, and how
a section run on its own (``python -m benchmarks.NAME``) prints its rows.

``benchmarks/__main__.py`` imports these; the section modules import them from here (they cannot
import ``__main__``, which imports them).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

Emit = Callable[..., None]
"""``emit(section, case, value, unit, ratio="", target="", *, vs=None)``: one row of the report
(``vs``: the case it is compared with, ``benchmarks.report.Row``)."""


def median(values: list[float]) -> float:
    return statistics.median(values)


def interleaved_samples(cases: Mapping[str, Callable[[], T]], rounds: int) -> dict[str, list[T]]:
    """Each case's samples, one per round, running the cases in turn each round (the order
    alternates, so no case always runs on the warmer or the busier side of another)."""
    samples: dict[str, list[T]] = {name: [] for name in cases}
    for r in range(rounds):
        for name in list(cases) if r % 2 == 0 else list(reversed(list(cases))):
            samples[name].append(cases[name]())
    return samples


def interleaved(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Median of each case over ``rounds``, running the cases in turn each round."""
    return {name: median(values) for name, values in interleaved_samples(cases, rounds).items()}


async def ainterleaved(cases: dict[str, Callable[[], Awaitable[float]]], rounds: int) -> dict[str, float]:
    """:func:`interleaved` for cases that are awaited."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(rounds):
        names = list(cases) if r % 2 == 0 else list(reversed(cases))
        for name in names:
            samples[name].append(await cases[name]())
    return {name: median(values) for name, values in samples.items()}


def per_read_ms(client: Any, uri: str, n: int) -> Callable[[], Awaitable[float]]:
    """A case: ``n`` reads of ``uri`` through ``client``, in milliseconds per read."""

    async def run() -> float:
        gc.collect()  # no case pays for garbage another case left behind
        t0 = time.perf_counter()
        for _ in range(n):
            await client.read_resource(uri)
        return (time.perf_counter() - t0) / n * 1000

    return run


def _print(
    section: str, case: str, value: float, unit: str, ratio: str = "", target: str = "", *, vs: str | None = None
) -> None:
    print(f"  {section:<24} {case:<46} {value:10.4f} {unit}  {ratio:<28} {target}", flush=True)


def standalone(prog: str, description: str | None, run: Callable[[int, Emit], None]) -> None:
    """``python -m benchmarks.NAME [--quick]``: the section's ``run`` with 9 rounds (3 with
    ``--quick``), its rows printed."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 9")
    run(3 if parser.parse_args().quick else 9, _print)
