"""The SDK's private names this package relies on, each reached here and checked at start-up.

The MCP SDK (``mcp``, pinned to the minor it was tested with in ``pyproject.toml``) has no public
way to do a few things the core needs; each is one :class:`Seam` below, with what uses it.
:func:`check_seams` (called by :func:`~mcp_providers._serve.binding.build_server`, so by every
``serve`` and every composed server) raises :class:`~mcp_providers.errors.CompositionError` naming
every seam an installed SDK no longer has, instead of a silent fallback that would, say, key
watches by a per-request object and never release them.

``.ci/run`` runs ``tests/test_private_seams.py`` and the transport tests against the newest SDK
2.x in a throwaway venv (``scripts/sdk_drift``) and prints any drift, without failing the run.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp_providers.errors import CompositionError

TESTED_SDK = ">=2.3,<2.4"
"""The ``mcp`` versions these seams were checked against (the pin in ``pyproject.toml``)."""


@dataclass(frozen=True, slots=True)
class Seam:
    """One private SDK name: ``name`` as ``module.Class.attribute``, ``used_by`` what breaks without it."""

    name: str
    used_by: str
    present: Callable[[], bool]


def connection_of(session: Any) -> Any:
    """The ``Connection`` a per-request ``ServerSession`` belongs to (``session._connection``).

    The SDK builds one session proxy per request; only its connection outlives the request and
    carries the per-connection ``state`` and ``exit_stack``.
    """
    return session._connection


def tracing_middleware() -> type[Any]:
    """The class of the SDK's per-request OpenTelemetry middleware (``mcp.server._otel``)."""
    from mcp.server._otel import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware


def lifespan_state(manager: Any) -> Any:
    """What the server's lifespan yielded, as the session manager holds it (``_lifespan_state``)."""
    return manager._lifespan_state


def exit_callbacks_pending(stack: contextlib.AsyncExitStack) -> bool:
    """Whether an exit stack holds callbacks (``AsyncExitStack._exit_callbacks``, CPython's)."""
    return bool(stack._exit_callbacks)  # type: ignore[attr-defined]


def modern_request_handler() -> Callable[..., Any]:
    """The SDK's single-exchange 2026-07-28 HTTP entry (``mcp.server._streamable_http_modern``)."""
    from mcp.server._streamable_http_modern import handle_modern_request

    return handle_modern_request


def _has_connection() -> bool:
    from mcp.server.connection import Connection
    from mcp.server.session import ServerSession

    connection = Connection.from_envelope("2025-11-25", None, None)
    session = ServerSession(None, connection)  # type: ignore[arg-type]
    return getattr(session, "_connection", None) is connection and isinstance(connection.state, dict)


def _has_tracing_middleware() -> bool:
    from mcp.server import Server

    return any(isinstance(m, tracing_middleware()) for m in Server("seams").middleware)


def _manager() -> Any:
    from mcp.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    return StreamableHTTPSessionManager(app=Server("seams"))


def _has_lifespan_state() -> bool:
    return hasattr(_manager(), "_lifespan_state")


def _has_admit_session() -> bool:
    return callable(getattr(_manager(), "_admit_session", None))


def _has_transport_event_store() -> bool:
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    store = object()
    transport = StreamableHTTPServerTransport(None, event_store=store)  # type: ignore[arg-type]
    return getattr(transport, "_event_store", None) is store


def _has_exit_callbacks() -> bool:
    stack = contextlib.AsyncExitStack()
    before = getattr(stack, "_exit_callbacks", None)
    stack.callback(lambda: None)
    return before is not None and len(getattr(stack, "_exit_callbacks", ())) == 1


def _has_modern_handler() -> bool:
    return callable(modern_request_handler())


SEAMS: tuple[Seam, ...] = (
    Seam("mcp.server.session.ServerSession._connection", "subscriptions and log levels, kept per connection",
         _has_connection),
    Seam("mcp.server._otel.OpenTelemetryMiddleware", "leaving out per-request tracing when no tracer is set",
         _has_tracing_middleware),
    Seam("mcp.server.streamable_http_manager.StreamableHTTPSessionManager._lifespan_state",
         "the HTTP fast path (its handlers' lifespan state)", _has_lifespan_state),
    Seam("mcp.server.streamable_http_manager.StreamableHTTPSessionManager._admit_session",
         "one event-store view per session (resumable streams with [cluster])", _has_admit_session),
    Seam("mcp.server.streamable_http.StreamableHTTPServerTransport._event_store",
         "one event-store view per session (resumable streams with [cluster])", _has_transport_event_store),
    Seam("mcp.server._streamable_http_modern.handle_modern_request", "the HTTP fast path for 2026-07-28 JSON",
         _has_modern_handler),
    Seam("contextlib.AsyncExitStack._exit_callbacks", "the HTTP fast path's connection teardown",
         _has_exit_callbacks),
)  # fmt: skip


def missing_seams(seams: tuple[Seam, ...] = SEAMS) -> list[Seam]:
    """The seams the installed SDK lacks (a check that raises counts as missing)."""
    return [seam for seam in seams if not _holds(seam)]


def _holds(seam: Seam) -> bool:
    try:
        return seam.present()
    except Exception:  # an import, a constructor or an attribute gone: the seam is missing
        return False


@functools.cache
def _checked() -> tuple[str, ...]:
    return tuple(f"  {s.name} (used for {s.used_by})" for s in missing_seams())


def check_seams() -> None:
    """Refuse to serve on an SDK without every :data:`SEAMS` entry (checked once per process).

    :raises CompositionError: naming each missing seam, what it is used for, the installed ``mcp``
        version and the range tested.
    """
    missing = _checked()
    if missing:
        raise CompositionError(
            [
                f"the installed MCP SDK (mcp {_sdk_version()}) lacks private names this server needs; "
                f"install mcp{TESTED_SDK}, the versions it was tested with:",
                *missing,
            ]
        )


def _sdk_version() -> str:
    try:
        return version("mcp")
    except PackageNotFoundError:
        return "unknown"
