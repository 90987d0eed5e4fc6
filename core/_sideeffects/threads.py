"""Work a guarded call hands to a thread runs in the call's scope (process-wide level; tester 26 F5).

The scope is a context variable. ``asyncio.to_thread`` and ``anyio.to_thread`` copy the caller's
context into the worker, but in Python 3.11 a ``threading.Thread`` starts with an empty one, and
``concurrent.futures`` runs a job in its worker's. :func:`patch_threads` makes both follow a scope:

- ``threading.Thread.start`` called in a scope: the new thread's ``run`` (its ``target``, or a
  subclass's own ``run``) runs in a copy of the starting context, so the thread is judged as the
  call that started it, for its whole life, as a task the call starts is. After the call ended
  its attempts are still refused, and logged (:attr:`.scope.Scope.ended`). Except anyio's worker
  threads (``anyio.to_thread``, the core's own path for plain functions): each runs every job in
  that job's caller's context already, and serves later jobs from anywhere.
- ``concurrent.futures.ThreadPoolExecutor.submit`` called in a scope (``loop.run_in_executor`` on
  a thread pool, the loop's default executor included, calls it): the function runs in a copy of
  the submitting context. The worker threads the pool may start for it start outside the scope:
  they serve later jobs from anywhere, each in its own submitter's context.

Outside a scope both cost one ContextVar read. Not followed: ``_thread.start_new_thread`` called
directly, executors of other kinds, and a pool's ``initializer`` (it runs in the worker's context).
A library that starts a long-lived worker lazily, on first use inside a call, gives it that call's
scope for good (as it would a task): its later writes are refused and logged; start it outside.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects.scope import scope_var

_patched: list[Callable[..., Any]] = []  # the wrappers in place (once per process)
_OWN_CONTEXT_PER_JOB = ("anyio.",)
"""Modules of thread classes that run each job in the job's own context: started clean."""


def _followed_start(start: Callable[[threading.Thread], None]) -> Callable[[threading.Thread], None]:
    def guarded_start(self: threading.Thread) -> None:
        if scope_var.get() is not None and not type(self).__module__.startswith(_OWN_CONTEXT_PER_JOB):
            # an instance attribute, found before the class's run by the thread's bootstrap
            self.run = functools.partial(contextvars.copy_context().run, self.run)  # type: ignore[method-assign]
        start(self)

    guarded_start.__wrapped__ = start  # type: ignore[attr-defined]
    return guarded_start


def _followed_submit(submit: Callable[..., Any]) -> Callable[..., Any]:
    def guarded_submit(self: concurrent.futures.ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        if scope_var.get() is None:
            return submit(self, fn, *args, **kwargs)
        context = contextvars.copy_context()
        token = scope_var.set(None)  # a worker thread the pool starts now serves others later
        try:
            return submit(self, context.run, fn, *args, **kwargs)
        finally:
            scope_var.reset(token)

    guarded_submit.__wrapped__ = submit  # type: ignore[attr-defined]
    return guarded_submit


def patch_threads() -> None:
    """Wrap ``threading.Thread.start`` and ``ThreadPoolExecutor.submit`` (see the module
    docstring); once per process, under the caller's install lock."""
    if _patched:
        return
    start = _followed_start(threading.Thread.start)
    submit = _followed_submit(concurrent.futures.ThreadPoolExecutor.submit)
    threading.Thread.start = start  # type: ignore[method-assign,assignment]
    concurrent.futures.ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]
    _patched.extend((start, submit))
