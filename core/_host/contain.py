"""Containment: what plugin code raises stays that plugin's failure, ``BaseException`` included.

``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit`` and other ``BaseException`` subclasses a
provider or hook raises would otherwise pass every ``except Exception`` and end the stdio server,
break the HTTP server's task group, or leave a request unanswered. Where the core calls plugin code
it turns them into :class:`Escaped`, an ordinary ``Exception``, so the caller's usual failure path
(a -32603 naming the provider, a deny, a rejected plugin) applies. The one thing that passes is the
cancellation of the running task itself: it belongs to the request (its client went away, its
deadline passed), not to the plugin.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Escaped(Exception):
    """A ``BaseException`` that plugin code raised, caught where the core called it.

    :param original: what was raised; ``str()`` names its type and text.
    """

    def __init__(self, original: BaseException) -> None:
        text = " ".join(str(original).split())
        super().__init__(f"{type(original).__name__}: {text}" if text else type(original).__name__)
        self.original = original


def cancels_this_task(exc: BaseException) -> bool:
    """Whether ``exc`` is the running task's own cancellation (which must propagate), rather than a
    ``CancelledError`` plugin code raised on its own while nothing cancelled the task."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no asyncio loop: sync code (cannot be cancelled), or trio
        task = None
    if task is not None:
        return isinstance(exc, asyncio.CancelledError) and task.cancelling() > 0
    trio = sys.modules.get("trio")  # trio's Cancelled is only ever raised by trio itself
    return trio is not None and isinstance(exc, trio.Cancelled)


def escapes(exc: BaseException) -> bool:
    """Whether ``exc``, caught around plugin code, is a ``BaseException`` that must be contained:
    not an ``Exception``, not this task's cancellation, and not the ``GeneratorExit`` of closing
    the coroutine that caught it (that one arrives with no deeper frame in its traceback)."""
    if isinstance(exc, Exception) or cancels_this_task(exc):
        return False
    if isinstance(exc, GeneratorExit):
        return exc.__traceback__ is not None and exc.__traceback__.tb_next is not None
    return True


def contain_sync(call: Callable[..., T]) -> Callable[..., T]:
    """``call`` with every ``BaseException`` it raises turned into :class:`Escaped` (plain
    ``Exception`` subclasses pass unchanged). For hook callers such as ``authorize``."""

    def contained(*args: Any, **kwargs: Any) -> T:
        try:
            return call(*args, **kwargs)
        except Exception:
            raise
        except BaseException as exc:
            raise Escaped(exc) from exc

    contained.__wrapped__ = call  # type: ignore[attr-defined]
    return contained


def contain_async(call: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
    """``call`` whose awaitable turns a ``BaseException`` into :class:`Escaped` inside the same
    coroutine, before any task boundary sees it (asyncio re-raises ``SystemExit`` and
    ``KeyboardInterrupt`` out of the event loop). This task's cancellation passes, and so does the
    ``GeneratorExit`` of closing the coroutine (it arrives with no deeper frame)."""

    async def contained() -> T:
        try:
            return await call()
        except Exception:
            raise
        except BaseException as exc:
            if not escapes(exc):
                raise  # this request's cancellation, or close() of this coroutine
            raise Escaped(exc) from exc

    return contained
