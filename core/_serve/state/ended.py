"""The memory budget of ended tasks kept in the process (round 4 item 5).

An ended task keeps its result (up to ``max_result_bytes``) or error until ``ttl_seconds`` after it
ended. :class:`EndedBudget` bounds the bytes those records hold per owner and in total: once a cap
is passed, the oldest ended tasks (first of the owner over its cap, then of anyone) are dropped.
Running tasks are never dropped (their records are small, and their number is capped by
``max_running_per_subject``). The store keeps a small stand-in of each dropped task
(:func:`stand_in`), so that its owner is told why its result is gone rather than "not found" (at
most :data:`REMEMBERED`, oldest forgotten first).
"""

from __future__ import annotations

from collections import OrderedDict

REMEMBERED = 10_000
"""Stand-ins of dropped tasks remembered (each ~600 bytes)."""

DROPPED = (
    "the task ended, but its result was dropped to keep the server's memory within [server.tasks] "
    "max_ended_bytes_per_subject / max_ended_bytes (the oldest ended tasks go first); fetch results "
    "sooner, or run the call again"
)


class EndedBudget:
    """Bytes held by ended tasks, per owner and in total, oldest ended first.

    :param per_owner: the most bytes one owner's ended tasks may hold.
    :param total: the most bytes every owner's ended tasks together may hold.
    """

    def __init__(self, per_owner: int, total: int) -> None:
        self.per_owner = per_owner
        self.total = total
        self._sizes: OrderedDict[str, tuple[str, int]] = OrderedDict()
        """Ended task id -> (owner, bytes), in the order they ended."""
        self._by_owner: dict[str, OrderedDict[str, int]] = {}
        self._owner_bytes: dict[str, int] = {}
        self._bytes = 0
        self.evicted = 0
        """Ended tasks dropped to stay within the caps since start-up (a counter)."""

    def held(self, owner: str | None = None) -> int:
        """Bytes held by ended tasks: of ``owner``, or of everyone."""
        return self._bytes if owner is None else self._owner_bytes.get(owner, 0)

    def add(self, task_id: str, owner: str, size: int) -> list[str]:
        """Count a task that just ended with ``size`` bytes; the ids to drop to stay within the caps
        (oldest first; only the new one when it alone is over a cap: it could never fit)."""
        self._sizes[task_id] = (owner, size)
        self._by_owner.setdefault(owner, OrderedDict())[task_id] = size
        self._owner_bytes[owner] = self._owner_bytes.get(owner, 0) + size
        self._bytes += size
        if size > min(self.per_owner, self.total):
            return [self._evict(task_id)]
        drop: list[str] = []
        mine = self._by_owner[owner]
        while self._owner_bytes.get(owner, 0) > self.per_owner and mine:
            drop.append(self._evict(next(iter(mine))))
        while self._bytes > self.total and self._sizes:
            drop.append(self._evict(next(iter(self._sizes))))
        return drop

    def forget(self, task_id: str) -> None:
        """Stop counting ``task_id`` (it expired); a no-op for a task not counted."""
        entry = self._sizes.pop(task_id, None)
        if entry is None:
            return
        owner, size = entry
        mine = self._by_owner[owner]
        del mine[task_id]
        if not mine:
            del self._by_owner[owner]
        left = self._owner_bytes[owner] - size
        if left:
            self._owner_bytes[owner] = left
        else:
            del self._owner_bytes[owner]
        self._bytes -= size

    def _evict(self, task_id: str) -> str:
        self.forget(task_id)
        self.evicted += 1
        return task_id
