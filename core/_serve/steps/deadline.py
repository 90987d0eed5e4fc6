"""Awaiting under a deadline, with a timer only when the awaited work actually waits.

Most of what the server awaits under a deadline finishes without suspending: a provider's read of
content it holds in memory, a request body the HTTP server has already buffered. Arming a timer
for those (an anyio cancel scope costs about 10 us on asyncio under Python 3.11, where
``asyncio.current_task`` is pure Python) is most of their cost. :func:`within` runs the first step
of the coroutine before any timer exists; only if it suspends does the rest run under
``asyncio.timeout_at`` (one timer handle). A coroutine that finishes without suspending cannot be
cancelled anyway, so nothing the deadline could have stopped runs without it.

Example::

    deadline = deadline_after(30.0)
    body = await within(receive(), deadline)  # TimeoutError after 30 s of waiting
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


def deadline_after(seconds: float) -> float:
    """The deadline ``seconds`` from now, on the running event loop's clock (anyio's clock when the
    loop is not asyncio's): what :func:`within` takes."""
    try:
        return asyncio.get_running_loop().time() + seconds
    except RuntimeError:  # not asyncio (trio)
        return anyio.current_time() + seconds


def stepping_deadline(seconds: float) -> float | None:
    """:func:`deadline_after` on asyncio, where a caller may take a coroutine's first step itself
    and await the rest with :func:`rest_within` (its timer is asyncio's, outside any cancel scope
    the coroutine entered in that step); ``None`` on another loop (trio: use :func:`within`, whose
    cancel scope then encloses the coroutine's own)."""
    try:
        return asyncio.get_running_loop().time() + seconds
    except RuntimeError:
        return None


async def within(pending: Awaitable[T], deadline: float) -> T:
    """The value of ``pending``, awaited until ``deadline`` (from :func:`deadline_after`).

    A coroutine is stepped once first: if it finishes then, no timer is armed. ``pending`` is
    closed if it was never finished (the deadline passed, or the caller was cancelled).

    :raises TimeoutError: the deadline passed while ``pending`` waited (or ``pending`` raised it).
    """
    try:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio)
            loop = None
        if loop is None:
            with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                return await pending
        if type(pending) is not types.CoroutineType:
            async with asyncio.timeout_at(deadline):
                return await pending
        try:
            first = pending.send(None)
        except StopIteration as done:
            value: T = done.value
            return value
        return await rest_within(pending, first, deadline)
    finally:
        if type(pending) is types.CoroutineType:  # what inspect.iscoroutine asks, without its call
            pending.close()  # a no-op once finished; else never awaited to its end


async def rest_within(pending: Coroutine[Any, Any, T], suspended: Any, deadline: float) -> T:
    """The rest of ``pending``, a coroutine its caller stepped once (``pending.send(None)``
    yielded ``suspended``), awaited until ``deadline`` (from :func:`stepping_deadline`: asyncio
    only): the second half of :func:`within`, for a caller that takes the first step in its own
    frame (the invoker, one frame fewer per call). ``pending`` is closed if never finished.

    :raises TimeoutError: the deadline passed while ``pending`` waited (or ``pending`` raised it).
    """
    try:
        async with asyncio.timeout_at(deadline):
            value: T = await _resume(pending, suspended)
            return value
    finally:
        pending.close()  # a no-op once finished


@types.coroutine
def _resume(coroutine: Coroutine[Any, Any, Any], suspended: Any) -> Generator[Any, Any, Any]:
    """Await the rest of ``coroutine``, already stepped once (it yielded ``suspended``): what
    ``await`` would do had it been awaited from the start (values, sends and throws pass through)."""
    value = suspended
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            raise  # the caller closes the coroutine
        except BaseException as exc:  # thrown in by the task (e.g. cancellation): pass it on
            try:
                value = coroutine.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                value = coroutine.send(sent)
            except StopIteration as done:
                return done.value
