"""Back-off shared by every request to one instance, behind a small interface.

When an instance answers 429 with ``Retry-After: N``, every request to that instance (from any
read, tool or poller in this process) waits until the N seconds have passed, instead of each
finding out with its own 429. :class:`Backoff` is the interface; :class:`LocalBackoff` keeps the
state in this process. A cluster backend (e.g. Redis, a key per instance holding the resume time
with a TTL) implements the same two methods so replicas share it.
"""

from __future__ import annotations

import time
from typing import Protocol

import anyio

__all__ = ["Backoff", "LocalBackoff"]


class Backoff(Protocol):
    """Where the per-instance "do not send before" time lives."""

    async def hold(self, instance: str, seconds: float) -> None:
        """Let no request reach ``instance`` for ``seconds`` from now (an earlier end is extended,
        a later one kept)."""

    async def remaining(self, instance: str) -> float:
        """Seconds until ``instance`` may be asked again (``0.0``: now)."""


class LocalBackoff:
    """:class:`Backoff` in this process's memory (monotonic clock)."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    async def hold(self, instance: str, seconds: float) -> None:
        until = time.monotonic() + max(0.0, seconds)
        self._until[instance] = max(self._until.get(instance, 0.0), until)

    async def remaining(self, instance: str) -> float:
        return max(0.0, self._until.get(instance, 0.0) - time.monotonic())


async def wait_turn(backoff: Backoff, instance: str) -> float:
    """Sleep until ``instance`` may be asked again; returns the seconds waited."""
    waited = 0.0
    while (left := await backoff.remaining(instance)) > 0:
        await anyio.sleep(left)
        waited += left
    return waited
