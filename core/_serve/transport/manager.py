"""What the core knows of the SDK's streamable HTTP session manager, kept on its own side.

The SDK's ``StreamableHTTPSessionManager`` has no public view of the sessions it holds nor of
whether its ``run()`` has ended (after which every MCP request is a 500). :func:`watch`, called
once per manager by :func:`~mcp_providers._serve.transport.http_app.http_app`, records both:

- ``run()`` is wrapped on the instance (a public method): :func:`run_ended` is true once it has
  returned, however it ended (the app's shutdown, or its task group cancelled);
- each session the manager admits is recorded with its transport, through the one admission seam
  the core already has (``_admit_session``, :data:`~mcp_providers._serve.seams.SEAMS`);
  :func:`live_transports` are those not yet terminated (``is_terminated``, public), which is how
  long the SDK keeps them (it forgets a session, then terminates its transport).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Watched:
    ended: bool = False
    transports: dict[str, Any] = field(default_factory=dict)
    """Session id -> its transport, as admitted (terminated ones are dropped as admissions go on)."""
    prune_at: int = 64


_watched: weakref.WeakKeyDictionary[Any, _Watched] = weakref.WeakKeyDictionary()


def session_manager_of(server: Any) -> Any | None:
    """``server``'s streamable HTTP session manager; ``None`` before ``streamable_http_app()`` made one."""
    try:
        return server.session_manager
    except RuntimeError:  # the SDK's answer before streamable_http_app()
        return None


def watch(manager: Any) -> None:
    """Start recording ``manager``'s run and sessions (see the module docstring); once per manager."""
    if manager in _watched:
        return
    seen = _watched[manager] = _Watched()
    run, admit = manager.run, manager._admit_session

    @contextlib.asynccontextmanager
    async def watched_run() -> AsyncIterator[None]:
        try:
            async with run():
                yield
        finally:
            seen.ended = True

    def admit_recorded(*args: Any, **kwargs: Any) -> Any:
        transport = admit(*args, **kwargs)
        if transport is not None and transport.mcp_session_id:
            if len(seen.transports) >= seen.prune_at:
                seen.transports = {k: t for k, t in seen.transports.items() if not t.is_terminated}
                seen.prune_at = max(64, 2 * len(seen.transports))
            seen.transports[transport.mcp_session_id] = transport
        return transport

    manager.run = watched_run
    manager._admit_session = admit_recorded


def run_ended(manager: Any) -> bool:
    """Whether a watched ``manager``'s ``run()`` has returned (``False`` before it started, and for
    a manager never watched)."""
    seen = _watched.get(manager)
    return seen is not None and seen.ended


def holds(manager: Any, session_id: str) -> bool:
    """Whether a watched ``manager`` still holds the session ``session_id`` (its transport is not
    terminated); ``False`` for an id it never admitted, and once its ``run()`` has ended."""
    seen = _watched.get(manager)
    if seen is None or seen.ended:
        return False
    transport = seen.transports.get(session_id)
    return transport is not None and not transport.is_terminated


def live_transports(manager: Any) -> list[Any]:
    """The transports of the sessions a watched ``manager`` holds (see :func:`holds`)."""
    seen = _watched.get(manager)
    if seen is None or seen.ended:
        return []
    return [t for t in seen.transports.values() if not t.is_terminated]
