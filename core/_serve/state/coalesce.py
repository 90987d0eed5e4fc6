"""Identical in-flight reads share one provider read.

When several requests read the same resource at the same moment, only the first (the *leader*)
calls the provider; the others wait for its outcome and get the same content or the same error.
Nothing is kept once the read finishes, so this never serves content older than a read that was
already running when the request arrived: it honours every declared freshness, ``live`` included.

Reads are shared only between identical keys; the server uses ``(provider, uri, subject)`` so one
caller never receives content read on behalf of another. The upstream identities a shared read's
credentials were for (:mod:`mcp_providers.credentials`) are recorded for every request it answers.
If the leader is cancelled (its client went away, or its deadline passed), each waiter retries on
its own, one of them becoming the new leader.

Example::

    coalescer = Coalescer()
    content = await coalescer.run(("ssg-catalog", uri, "local"), lambda: provider.read(request))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

import anyio

from mcp_providers.credentials import current_scope

T = TypeVar("T")


class _Flight(Generic[T]):
    __slots__ = ("done", "error", "result", "succeeded", "upstreams")

    def __init__(self) -> None:
        self.done: anyio.Event | None = None  # made by the first waiter: most reads have none
        self.succeeded = False
        self.result: T | None = None
        self.error: BaseException | None = None
        self.upstreams: list[dict[str, str]] = []  # the upstream identities the read used


class Coalescer(Generic[T]):
    """Runs at most one read per key at a time; concurrent callers of the same key share it."""

    def __init__(self) -> None:
        self._flights: dict[Hashable, _Flight[T]] = {}
        self.shared = 0
        """How many calls were answered by another caller's read (for benchmarks and tests)."""

    async def run(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        """The outcome of ``read()``, or of the identical read already in flight for ``key``.

        :param key: identifies identical reads (hashable).
        :param read: starts the read; called only when no read for ``key`` is in flight.
        :returns: what ``read()`` returned; waiters get the same object.
        :raises Exception: what ``read()`` raised; waiters get the same exception.
        """
        while True:
            flight = self._flights.get(key)
            if flight is None:
                break
            if flight.done is None:
                flight.done = anyio.Event()
            await flight.done.wait()
            if flight.succeeded:
                self.shared += 1
                _record(flight.upstreams)  # the shared read's upstream identity served this request too
                return flight.result  # type: ignore[return-value]  # set with succeeded
            if flight.error is not None:
                self.shared += 1
                raise flight.error
            # The leader was cancelled: try again, perhaps as the new leader.
        mine: _Flight[T] = _Flight()  # unsubscripted: a subscripted call costs a typing hop
        self._flights[key] = mine
        # The read notes in `mine` the upstream credentials it used (for the waiters' receipts),
        # here rather than in a coroutine of its own around read(): while it runs, the request's
        # own scope collects into mine.upstreams (no scope object and context variable per read;
        # the pipeline makes one scope per request, and a request runs one coalesced read).
        scope = current_scope.get()
        kept = None
        if scope is not None:
            kept, scope.used = scope.used, mine.upstreams
        try:
            mine.result = await read()
            mine.succeeded = True
            return mine.result
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            mine.error = exc
            raise
        finally:
            if scope is not None and kept is not None:
                scope.used = kept
                if mine.upstreams:
                    _record(mine.upstreams)  # this request's own scope gets them too
            del self._flights[key]
            if mine.done is not None:
                mine.done.set()


def _record(upstreams: list[dict[str, str]]) -> None:
    scope = current_scope.get()
    if scope is not None:
        for used in upstreams:
            if used not in scope.used:
                scope.used.append(used)
