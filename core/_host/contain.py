"""Containment: what plugin code raises stays that plugin's failure, ``BaseException`` included.

``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit`` and other ``BaseException`` subclasses a
provider or hook raises would otherwise pass every ``except Exception`` and end the stdio server,
break the HTTP server's task group, or leave a request unanswered. Where the core calls plugin code
it turns them into :class:`Escaped`, an ordinary ``Exception``, so the caller's usual failure path
(a -32603 naming the provider, a deny, a rejected plugin) applies. The one thing that passes is the
cancellation of the running task itself: it belongs to the request (its client went away, its
deadline passed), not to the plugin.

Tasks plugin code starts itself (a poller in its ``lifespan``, a fire-and-forget task from a read)
are contained too: :func:`contain_tasks` installs a task factory on the running loop that wraps
the coroutine of every task created while :func:`plugin_code` names an owner, since asyncio
re-raises ``SystemExit`` and ``KeyboardInterrupt`` from any task out of the event loop before
anything else sees them. The factory sees ``loop.create_task`` only: a task made by its class
(``asyncio.Task(coro)``) or a callback plugin code schedules (``loop.call_soon``, ``call_later``,
``call_soon_threadsafe``) reaches the loop through its scheduling calls, so :func:`contain_tasks`
also wraps those on the running loop (its own attributes: asyncio's classes are left as they are):
what runs in a context that names an owner, a task's every step included, has a ``SystemExit`` or
``KeyboardInterrupt`` it raises logged and contained (tester twenty-nine F5). Work scheduled past
those wrappers (a context made empty, ``asyncio.BaseEventLoop.call_soon(loop, cb)``, the loop's
private ``_call_soon`` or ``_ready``, ``asyncio.Task(coro, context=...)``, a future's done callback)
all runs through one method, ``asyncio.events.Handle._run``, which re-raises those two: it is
wrapped process-wide, once, and on a loop :func:`contain_tasks` was called on (the server's) what it
re-raises is logged and contained whatever the owner (tester thirty-two F1). Followed there: every
callback and task step of such a loop. Not followed: other loops (their ``SystemExit`` ends them as
asyncio means it to), the forced exit of a second Ctrl-C under ``asyncio.run`` (raised from
``asyncio.runners``' handler, it passes), and a loop whose handles are not asyncio's (``uvloop``'s:
the task factory only). A ``KeyboardInterrupt`` a signal delivers while a callback of the server's
loop runs is contained too; ``asyncio.run`` and uvicorn handle ``SIGINT`` themselves, so Ctrl-C
reaches them as a cancellation or a shutdown, not as that exception.
The same factory keeps a read's side-effect scope on a task the read starts with a context of its
own (``create_task(coro, context=contextvars.Context())``): :func:`mcp_providers._sideeffects.carried`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from mcp_providers._sideeffects import carried

T = TypeVar("T")
log = logging.getLogger("mcp_providers.composition")

_owner: ContextVar[str | None] = ContextVar("mcp_providers_plugin_code", default=None)


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


def contain_async(call: Callable[[], Awaitable[T]], owner: str | None = None) -> Callable[[], Awaitable[T]]:
    """``call`` whose awaitable turns a ``BaseException`` into :class:`Escaped` inside the same
    coroutine, before any task boundary sees it (asyncio re-raises ``SystemExit`` and
    ``KeyboardInterrupt`` out of the event loop): :func:`contained` bound to ``call`` and ``owner``."""
    return functools.partial(contained, call, owner)


async def contained(call: Callable[[], Awaitable[T]], owner: str | None = None) -> T:
    """The value of ``call()``, a ``BaseException`` it raises turned into :class:`Escaped` in this
    coroutine (:func:`contain_async`; the invoker calls it directly, one frame per read). This
    task's cancellation passes, and so does the ``GeneratorExit`` of closing the coroutine (it
    arrives with no deeper frame). With ``owner`` (a provider's name), the tasks ``call`` starts are
    contained as that provider's."""
    token = _owner.set(owner) if owner is not None else None
    try:
        return await call()
    except Exception:
        raise
    except BaseException as exc:
        if not escapes(exc):
            raise  # this request's cancellation, or close() of this coroutine
        raise Escaped(exc) from exc
    finally:
        if token is not None:
            _owner.reset(token)


@contextmanager
def plugin_code(owner: str) -> Iterator[None]:
    """Within the block, tasks the current task starts belong to ``owner`` (a provider's name) and
    are contained by the factory :func:`contain_tasks` installs."""
    token = _owner.set(owner)
    try:
        yield
    finally:
        _owner.reset(token)


async def _owned(coro: Coroutine[Any, Any, T], owner: str) -> T:
    try:
        return await contained(lambda: coro)
    except Escaped as exc:
        name = type(exc.original).__name__
        log.error("a task provider %r started raised %s; contained, the server goes on", owner, name, exc_info=exc)
        raise


def contain_tasks() -> None:
    """Install on the running asyncio loop (once; a no-op without one, e.g. under trio) a task
    factory wrapping every task created inside :func:`plugin_code` or a :func:`contain_async` call
    with an owner; other tasks, and a factory set before, are kept as they were. Its scheduling
    calls are wrapped too, for tasks and callbacks that never meet the factory (module docstring)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    _server_loops.add(loop)
    _contain_handles()
    _contain_callbacks(loop)
    previous = loop.get_task_factory()
    if getattr(previous, "contains_plugin_tasks", False):
        return

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
        if kwargs.get("context") is not None:  # a context made empty keeps the read's scope
            kwargs["context"] = carried(kwargs["context"])
        owner = _owner.get()
        if owner is not None and asyncio.iscoroutine(coro):
            coro = _owned(coro, owner)
        if previous is not None:
            return previous(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    factory.contains_plugin_tasks = True  # type: ignore[attr-defined]
    loop.set_task_factory(factory)


_SCHEDULERS = {"call_soon": 0, "call_soon_threadsafe": 0, "call_at": 1}
"""A loop's calls that schedule a callback, and where the callback is among their arguments
(``call_later`` calls ``call_at``; a task's steps and wakeups go through ``call_soon``)."""


def _contain_callbacks(loop: asyncio.AbstractEventLoop) -> None:
    for name, at in _SCHEDULERS.items():
        original = getattr(loop, name)
        if getattr(original, "contains_plugin_callbacks", False):
            continue
        try:
            setattr(loop, name, _scheduling(original, at))
        except AttributeError:
            return  # a loop implemented in C: the task factory only


def _scheduling(original: Callable[..., Any], at: int) -> Callable[..., Any]:
    def schedule(*args: Any, context: Any = None, **kwargs: Any) -> Any:
        owner = _owner.get() if context is None else context.get(_owner)
        if owner is not None and len(args) > at:
            args = (*args[:at], functools.partial(_contained_callback, args[at], owner), *args[at + 1 :])
        return original(*args, context=context, **kwargs)

    schedule.contains_plugin_callbacks = True  # type: ignore[attr-defined]
    return schedule


def _contained_callback(callback: Callable[..., Any], owner: str, *args: Any) -> None:
    try:
        callback(*args)
    except (SystemExit, KeyboardInterrupt) as exc:  # the loop would re-raise these and end
        name = type(exc).__name__
        log.error("work provider %r scheduled raised %s; contained, the server goes on", owner, name, exc_info=exc)


_server_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
"""The loops :func:`contain_tasks` was called on, whose handles contain what they re-raise."""


def _contain_handles() -> None:
    """Wrap ``asyncio.events.Handle._run`` (once, process-wide; timer handles inherit it): every
    callback and task step of a pure-Python asyncio loop runs there, and it re-raises ``SystemExit``
    and ``KeyboardInterrupt`` out of the loop (module docstring)."""
    handle = asyncio.events.Handle
    run = handle._run
    if getattr(run, "contains_plugin_callbacks", False):
        return

    def contained_run(self: asyncio.Handle) -> None:
        try:
            run(self)
        except (SystemExit, KeyboardInterrupt) as exc:
            if not _contained_here(exc):
                raise
            name = type(exc).__name__
            log.error("a callback on the server's loop raised %s; contained, the server goes on", name, exc_info=exc)

    contained_run.contains_plugin_callbacks = True  # type: ignore[attr-defined]
    contained_run.__wrapped__ = run  # type: ignore[attr-defined]
    handle._run = contained_run  # type: ignore[method-assign]


def _contained_here(exc: BaseException) -> bool:
    """Whether ``exc``, re-raised by a handle, is contained: on the server's loop, and not the
    forced exit ``asyncio.runners`` raises on a second Ctrl-C."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    if loop not in _server_loops:
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is None or tb.tb_frame.f_code.co_filename != asyncio.runners.__file__
