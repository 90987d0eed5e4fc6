"""The cost of masking one upstream message, by how many secrets are held for the upstream.

Run: ``uv run python -m benchmarks.masking [--quick]``.

An upstream acting on behalf of its callers holds one handed credential per caller (up to
``Secrets.HANDED_KEPT``, 256), and every message it sends is searched for each of them
(``plugins/upstream/sieve.py``: ``found_in`` on the dumped message, then ``masked_data`` only when
one is found). The baseline is the same 2 KB message searched with one secret held; the target is
that 256 cost at most 2x that (one automaton's pass, not one try per spelling per position).
"""

from __future__ import annotations

import json
import timeit

from benchmarks.timing import Emit, interleaved, standalone
from mcp_providers.plugins._masking import Secrets

SECTION = "masking, 2 KB message"
TARGET = 2.0


def _holding(count: int) -> Secrets:
    secrets = Secrets()
    secrets.add("configured-secret-value-0123")
    for n in range(count - 1):
        secrets.add(f"eyJhbGciOiJFUzI1NiJ9.handed-{n:04d}-b8f3e1d2c4a5", handed=True)
    secrets.found_in("")  # the automaton is made before timing
    return secrets


def _per_message_us(secrets: Secrets, text: str) -> float:
    n = 2000
    return timeit.timeit(lambda: (secrets.found_in(text), secrets.masked(text)), number=n) / n * 1e6


def run(rounds: int, emit: Emit) -> None:
    message = {"jsonrpc": "2.0", "id": 7, "result": {"contents": [{"uri": "up://a", "text": "lorem ipsum " * 165}]}}
    text = json.dumps(message)
    one, many = _holding(1), _holding(Secrets.HANDED_KEPT)
    result = interleaved(
        {"1 secret held": lambda: _per_message_us(one, text), "256 held": lambda: _per_message_us(many, text)},
        rounds * 3,
    )
    base = result["1 secret held"]
    emit(SECTION, "1 secret held (found_in and masked)", base, "us", "baseline")
    ratio = result["256 held"] / base
    emit(SECTION, f"{Secrets.HANDED_KEPT} held", result["256 held"], "us", f"{ratio:.2f}x",
         f"target <= {TARGET:.0f}x: {'met' if ratio <= TARGET else 'MISSED'}")  # fmt: skip


if __name__ == "__main__":
    standalone("python -m benchmarks.masking", __doc__, run)
