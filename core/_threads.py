"""Threads for provider code: one bound per server on the threads that run plugins' plain
(non-``async``) functions, each counted until its function actually returns.

A plain provider function (a decorated ``def``, a skill provider's ``read``) runs in a worker
thread. At the request's deadline the request is answered and the thread abandoned; anyio hands
its limiter token back at once, so abandoned threads stopped counting and a function that never
returned raised the process's threads without end (tester thirteen: 802 threads, then "can't
start new thread" for every request and for a reload). Here a thread holds its slot of
:class:`ProviderThreads` until its function returns, abandoned or not. A call finding every slot
taken waits for one within its own deadline; past it the invoker answers -32005 naming the bound
and who holds it (:attr:`Seat.starved`), never -32603 and never one thread more. The server's own
threads (a reload's config read and compose, the side-effect scope's workers) take no slot, so a
reload runs however busy providers are.

Example (the invoker sets the seat; provider code only calls :func:`run_sync`)::

    threads = ProviderThreads(40)               # [server.limits] provider_threads
    with seated(threads, "notes") as seat:      # the invoker, around one provider call
        text = await run_sync(partial(open_note, "a"), "function notes.open_note")
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import math
import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Final, Literal, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from mcp_providers.errors import ReadTimeout

T = TypeVar("T")

DEFAULT_BOUND: Final = 40
"""Threads running provider code at once when ``[server.limits] provider_threads`` is not set
(anyio's default worker-thread limit)."""

SETTING: Final = "[server.limits] provider_threads"

State = Literal["queued", "running", "done", "dropped"]


# not a dataclass: never shown, and its methods are not made at start-up (issue 43)
class _Slot:
    """One thread's place in the bound, held from before the thread starts until its function returns."""

    __slots__ = ("abandoned", "plugin", "state", "what")

    plugin: str
    what: str
    state: State
    abandoned: bool
    """Its request was answered (deadline, cancel) while the function still ran."""

    def __init__(self, plugin: str, what: str, state: State = "queued", abandoned: bool = False) -> None:
        self.plugin = plugin
        self.what = what
        self.state = state
        self.abandoned = abandoned


# not a dataclass: never shown, and its methods are not made at start-up (issue 43)
class _Waiter:
    __slots__ = ("plugin", "slot", "wake", "what")

    plugin: str
    what: str
    wake: Callable[[], None]
    slot: _Slot | None
    """Handed over by :meth:`ProviderThreads._release` (before ``wake``)."""

    def __init__(self, plugin: str, what: str, wake: Callable[[], None], slot: _Slot | None = None) -> None:
        self.plugin = plugin
        self.what = what
        self.wake = wake
        self.slot = slot


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Seat:
    """The provider call a thread would serve (set by the invoker around each call)."""

    __slots__ = ("data", "plugin", "starved", "threads")

    threads: ProviderThreads
    plugin: str
    starved: str | None
    """Set when the call's deadline passed while it waited for a slot: the message to answer with."""
    data: dict[str, Any] | None
    """The error's ``data`` with :attr:`starved`, set with it (a seat is taken per provider call:
    a dict made for each would almost never be filled)."""

    def __init__(
        self, threads: ProviderThreads, plugin: str, starved: str | None = None, data: dict[str, Any] | None = None
    ) -> None:
        self.threads = threads
        self.plugin = plugin
        self.starved = starved
        self.data = data


_seat: contextvars.ContextVar[Seat | None] = contextvars.ContextVar("mcp_providers_thread_seat", default=None)
_limiter_var: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar("mcp_providers_provider_limiter")


class ProviderThreads:
    """At most ``bound`` threads running provider code at once, each counted until its function returns.

    :param bound: the most threads (>= 1).
    :raises ValueError: ``bound`` is less than 1.
    """

    def __init__(self, bound: int = DEFAULT_BOUND) -> None:
        if bound < 1:
            raise ValueError(f"provider threads bound {bound} is less than 1; allow at least one ({SETTING})")
        self.bound = bound
        self._lock = threading.Lock()  # released from worker threads, so a thread lock, not an anyio one
        self._held: set[_Slot] = set()
        self._waiters: collections.deque[_Waiter] = collections.deque()

    @property
    def busy(self) -> int:
        """Slots held now: functions queued or running, past their deadline or not."""
        return len(self._held)

    @property
    def past_deadline(self) -> int:
        """Functions still running whose request was already answered."""
        with self._lock:
            return sum(1 for slot in self._held if slot.abandoned)

    async def run_sync(self, function: Callable[[], T], plugin: str, what: str, seat: Seat | None = None) -> T:
        """``function()`` in a worker thread (context variables go with it), once a slot is free.

        :param plugin: the plugin whose code it is (for messages).
        :param what: ``"function notes.index"``: how messages name it.
        :param seat: told why, should the caller's deadline pass while waiting for a slot.
        :raises ReadTimeout: the process could not start a thread.
        """
        slot = await self._acquire(plugin, what, seat)
        try:
            return await anyio.to_thread.run_sync(
                partial(self._body, slot, function), abandon_on_cancel=True, limiter=_limiter()
            )
        except BaseException as exc:
            with self._lock:
                state = slot.state
                if state == "running":
                    slot.abandoned = True  # the thread keeps its slot until the function returns
                elif state == "queued":
                    slot.state = "dropped"  # never started, and never will (see _body)
            if state == "queued":
                self._release(slot)
                if isinstance(exc, RuntimeError):
                    raise ReadTimeout(self._unstartable(plugin, what, exc), data={"limit": "process threads"}) from None
            raise

    def _body(self, slot: _Slot, function: Callable[[], T]) -> Any:
        """Runs in the worker thread; gives the slot back when ``function`` returns."""
        with self._lock:
            if slot.state == "dropped":
                return None  # its caller left before the thread picked it up: nobody waits for it
            slot.state = "running"
        try:
            return function()
        finally:
            self._release(slot)

    async def _acquire(self, plugin: str, what: str, seat: Seat | None) -> _Slot:
        with self._lock:
            if len(self._held) < self.bound and not self._waiters:
                slot = _Slot(plugin, what)
                self._held.add(slot)
                return slot
        event = anyio.Event()
        waiter = _Waiter(plugin, what, _waker(event))
        with self._lock:
            self._waiters.append(waiter)
        self._release(None)  # a slot may have come free in between
        try:
            await event.wait()
        except BaseException:
            with self._lock:
                handed = waiter.slot
                if handed is None:
                    self._waiters.remove(waiter)
            if handed is not None:
                self._release(handed)  # handed over as it was cancelled: pass it on
            elif seat is not None:
                seat.starved, seat.data = self._starved()
            raise
        handed = waiter.slot
        if handed is None:  # cannot happen: _release hands the slot over before it wakes the waiter
            raise RuntimeError("woken without a provider thread slot")
        return handed

    def _release(self, slot: _Slot | None) -> None:
        """Give ``slot`` back (``None``: none) and hand free slots to waiters, first come first served."""
        with self._lock:
            if slot is not None:
                if slot.state != "dropped":
                    slot.state = "done"
                self._held.discard(slot)
            while self._waiters and len(self._held) < self.bound:
                waiter = self._waiters.popleft()
                waiter.slot = _Slot(waiter.plugin, waiter.what)
                self._held.add(waiter.slot)
                try:
                    waiter.wake()
                except RuntimeError:  # its event loop is gone: nobody waits there
                    self._held.discard(waiter.slot)
                    waiter.slot = None

    def _starved(self) -> tuple[str, dict[str, Any]]:
        with self._lock:
            late = collections.Counter((s.plugin, s.what) for s in self._held if s.abandoned)
        count = sum(late.values())
        where = "; ".join(f"{n} in plugin {plugin!r}, {what}" for (plugin, what), n in late.most_common(3))
        held = f" ({count} still running past their deadline: {where})" if count else ""
        message = (
            f"all {self.bound} provider threads are busy{held}, and none came free before this request's "
            f"deadline; try again later, or ask the operator to fix the slow function or raise {SETTING} "
            f"(now {self.bound})"
        )
        return message, {"limit": "provider_threads", "allowed": self.bound, "pastDeadline": count}

    def _unstartable(self, plugin: str, what: str, exc: RuntimeError) -> str:
        return (
            f"the server could not start a thread for plugin {plugin!r}, {what} ({exc}; {self.busy} of "
            f"{self.bound} provider threads busy); try again later, or ask the operator to lower {SETTING} "
            "or raise the process's thread and memory limits"
        )


_DEFAULT = ProviderThreads()
"""Used by provider code called outside the invoker (a test calling a provider directly)."""


@contextlib.contextmanager
def seated(threads: ProviderThreads, plugin: str) -> Iterator[Seat]:
    """Within the block, :func:`run_sync` takes its slots from ``threads`` for ``plugin``."""
    seat, token = take_seat(threads, plugin)
    try:
        yield seat
    finally:
        leave_seat(token)


def take_seat(threads: ProviderThreads, plugin: str) -> tuple[Seat, contextvars.Token[Seat | None]]:
    """:func:`seated` without a context manager (the invoker's per-call path): from here until
    :func:`leave_seat` (pair them in a ``finally``), :func:`run_sync` takes slots from ``threads``."""
    seat = Seat(threads, plugin)
    return seat, _seat.set(seat)


def leave_seat(token: contextvars.Token[Seat | None]) -> None:
    """End what :func:`take_seat` began (``token``: the second item it returned)."""
    _seat.reset(token)


async def run_sync(function: Callable[[], T], what: str) -> T:
    """``function()`` in a worker thread counted against the current server's bound (see the
    module docstring); abandoned at the deadline but counted until it returns.

    :param what: ``"function notes.index"``: how messages name it.
    :raises ReadTimeout: the process could not start a thread.
    """
    seat = _seat.get()
    if seat is None:
        return await _DEFAULT.run_sync(function, "?", what)
    return await seat.threads.run_sync(function, seat.plugin, what, seat)


def _limiter() -> anyio.CapacityLimiter:
    """anyio's own limiter for these threads, unbounded: the bound is :class:`ProviderThreads`,
    and anyio's default limiter stays free for the server's own threads."""
    try:
        return _limiter_var.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(math.inf)
        _limiter_var.set(limiter)
        return limiter


def _waker(event: anyio.Event) -> Callable[[], None]:
    """A call that sets ``event`` on its own event loop from any thread, without waiting."""
    native: Any = anyio.lowlevel.current_token().native_token
    schedule = native.call_soon_threadsafe if isinstance(native, asyncio.AbstractEventLoop) else native.run_sync_soon

    def wake() -> None:
        schedule(event.set)  # trio's TrioToken.run_sync_soon, or the asyncio loop's call_soon_threadsafe

    return wake
