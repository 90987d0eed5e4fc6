"""The event loop a read runs on is the server's: its settings are judged in a scope (tester
twenty-nine F5; process-wide only, :func:`patch_loops`).

A read that sets the running loop's task factory removes the runtime's containment of tasks that
raise ``SystemExit`` (:mod:`mcp_providers._host.contain`: the next such task ends the server); its
debug mode, exception handler or default executor, a signal handler added or removed, the loop
stopped or closed, its default executor or asynchronous generators shut down: each changes the loop
for every later request, or ends it. In a scope these are refused on a loop made outside any scope
(the host's, made before the read); a loop the read made itself (``asyncio.run`` in a worker
thread, ``asyncio.new_event_loop()``) is the read's own, and all of them pass there. A reader or
writer added or removed for a standard descriptor (0-2: the protocol channel under stdio) is refused
on any loop; another descriptor is the read's own business, as for ``os.close`` (nothing tells a
descriptor the read opened from one it did not; asyncio refuses a descriptor a transport holds).

Each method is wrapped in every class of asyncio's loops that defines it (``BaseEventLoop``, the
selector loop, the Unix loop), so a subclass's override that calls ``super()`` is judged once, by
the outermost call. Not followed: loops implemented in C (``uvloop``: their methods cannot be
replaced), attributes set by assignment (``loop.slow_callback_duration``), and the embedded level
(nothing of the host's is patched there; its runtime installs no task factory either).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects.scope import scope_var

SETTINGS = (
    "set_task_factory", "set_debug", "set_exception_handler", "set_default_executor",
    "add_signal_handler", "remove_signal_handler", "stop", "close",
    "shutdown_default_executor", "shutdown_asyncgens",
)  # fmt: skip
"""Loop methods that change or end the loop for every later request: refused on the host's loop."""
DESCRIPTORS = ("add_reader", "add_writer", "remove_reader", "remove_writer")
"""Loop methods that (un)register a descriptor: refused for a standard descriptor, on any loop."""

_made_in_scope: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
"""Loops made while a scope was current: the read's own."""
_judging = threading.local()  # .on while the outermost guarded method of this thread runs


def _fd(value: Any) -> Any:
    """The descriptor asyncio would use: an int, or a file object's ``fileno()``."""
    if type(value) is not int and hasattr(value, "fileno"):
        try:
            return value.fileno()
        except (OSError, ValueError):
            return None
    return value


def attempted(loop: asyncio.AbstractEventLoop, name: str, args: tuple[Any, ...]) -> str | None:
    """What ``loop.name(*args)`` would change that a read may not, else ``None``."""
    if name in DESCRIPTORS:
        fd = _fd(args[0]) if args else None
        if type(fd) is int and 0 <= fd <= 2:
            return f"loop.{name} of the standard descriptor {fd} (the protocol channel under stdio)"
        return None
    if loop in _made_in_scope:
        return None  # the read's own loop
    return f"loop.{name} on the server's event loop (it changes or ends the loop for every later request)"


def _guarded(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(self: asyncio.AbstractEventLoop, *args: Any, **kwargs: Any) -> Any:
        scope = scope_var.get()
        if scope is None or getattr(_judging, "on", False):
            return original(self, *args, **kwargs)  # outside a read, or inside a call judged already
        what = attempted(self, name, args)
        if what is not None:
            scope.attempt(what, "process", event=f"asyncio loop.{name}")
        _judging.on = True
        try:
            return original(self, *args, **kwargs)
        finally:
            _judging.on = False

    guarded.__name__, guarded.__qualname__ = name, getattr(original, "__qualname__", name)
    guarded.__doc__ = original.__doc__
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    guarded.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
    return guarded


def _recording_init(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(self: asyncio.AbstractEventLoop, *args: Any, **kwargs: Any) -> None:
        if scope_var.get() is not None:
            _made_in_scope.add(self)  # first: the loop's own __init__ sets its debug mode
        original(self, *args, **kwargs)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    __init__.__mcp_providers_guarded__ = True  # type: ignore[attr-defined]
    return __init__


def loop_classes() -> list[type]:
    """asyncio's loop classes on this platform, most derived first (the selector loop's MRO)."""
    return [c for c in asyncio.SelectorEventLoop.__mro__ if issubclass(c, asyncio.BaseEventLoop)]


def patch_loops() -> None:
    """Wrap :data:`SETTINGS` and :data:`DESCRIPTORS` wherever asyncio's loop classes define them,
    and ``BaseEventLoop.__init__`` to tell the read's own loops (see the module docstring); once."""
    init = vars(asyncio.BaseEventLoop)["__init__"]
    if getattr(init, "__mcp_providers_guarded__", False):
        return
    for cls in loop_classes():
        for name in (*SETTINGS, *DESCRIPTORS):
            if name in vars(cls):
                setattr(cls, name, _guarded(name, vars(cls)[name]))
    asyncio.BaseEventLoop.__init__ = _recording_init(init)  # type: ignore[method-assign]
