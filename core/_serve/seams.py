"""Other packages' private names this package relies on, each reached here and checked at start-up.

The MCP SDK (``mcp``), uvicorn, pluggy, pydantic and CPython have no public way to do a few things
the core needs; each such name is one :class:`Seam` below, with what uses it, the distribution it
comes from and the versions it was tested with (the pins in ``pyproject.toml``). :func:`check_seams`
raises :class:`~mcp_providers.errors.CompositionError` naming every seam the installed packages no
longer have, instead of a silent fallback that would, say, key watches by a per-request object and
never release them. The ``core`` seams are checked by
:func:`~mcp_providers._serve.binding.build_server` (so by every ``serve`` and every composed
server); the ``http`` ones (uvicorn's) by ``serve --http`` before it listens, so a stdio server
never imports uvicorn.

``.ci/run`` runs ``tests/test_private_seams.py`` and the transport tests against the newest SDK
2.x in a throwaway venv (``scripts/sdk_drift``) and prints any drift, without failing the run.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from mcp_providers._holders import Frozen
from mcp_providers.errors import CompositionError

Area = Literal["core", "http"]

TESTED: dict[str, str] = {
    "mcp": ">=2.3,<2.4",
    "uvicorn": ">=0.55,<0.56",
    "pluggy": ">=1.7,<1.8",
    "pydantic": ">=2.12",
    "python": ">=3.11",
}
"""Distribution (or ``python``) -> the versions its seams were checked against (``pyproject.toml``)."""


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Seam(Frozen):
    """One private name of another package.

    :param name: ``module.Class.attribute`` (or what stands for several attributes, in parentheses).
    :param used_by: what breaks without it.
    :param present: ``() -> bool``, true when the installed package has it as used (a raise is false).
    :param package: the distribution it comes from (``python`` for CPython's standard library).
    :param area: ``core``, checked whenever a server is built; ``http``, checked by ``serve --http``.
    """

    __slots__ = ("area", "name", "package", "present", "used_by")

    name: str
    used_by: str
    present: Callable[[], bool]
    package: str
    area: Area

    def __init__(
        self, name: str, used_by: str, present: Callable[[], bool], package: str = "mcp", area: Area = "core"
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "used_by", used_by)
        object.__setattr__(self, "present", present)
        object.__setattr__(self, "package", package)
        object.__setattr__(self, "area", area)


# -- what the serving code reaches for --------------------------------------------------------------


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


def modern_request_handler() -> Callable[..., Any]:
    """The SDK's single-exchange 2026-07-28 HTTP entry (``mcp.server._streamable_http_modern``)."""
    from mcp.server._streamable_http_modern import handle_modern_request

    return handle_modern_request


# -- presence checks ----------------------------------------------------------------------------------


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


def _has_modern_handler() -> bool:
    return callable(modern_request_handler())


def _has_pluggy_markers() -> bool:
    """pluggy marks a hookimpl with the attribute ``<project>_impl`` and a hookspec with
    ``<project>_spec``, and its own lookup reads them (``_host/hookscan.py``, ``_host/shape.py``)."""
    import types

    import pluggy

    def impl() -> None: ...

    def spec() -> None: ...

    pluggy.HookimplMarker("seams")(impl)
    pluggy.HookspecMarker("seams")(spec)
    opts = getattr(impl, "seams_impl", None)
    manager = pluggy.PluginManager("seams")
    return (
        isinstance(opts, dict)
        and isinstance(getattr(spec, "seams_spec", None), dict)
        and manager.parse_hookimpl_opts(types.SimpleNamespace(impl=impl), "impl") == opts
    )


def _has_pydantic_plugin_cache() -> bool:
    """pydantic keeps the plugins it read in ``pydantic.plugin._loader._plugins`` (``_metadata.py``)."""
    from pydantic.plugin import _loader

    return hasattr(_loader, "_plugins") and callable(getattr(_loader, "get_plugins", None))


def _has_fork_exec() -> bool:
    """The call that starts a process without an audit event (``_sideeffects/files.py`` guards it)."""
    import _posixsubprocess

    return callable(getattr(_posixsubprocess, "fork_exec", None))


def _has_handle_run() -> bool:
    """Where every callback and task step of an asyncio loop runs (``_host/contain.py`` wraps it)."""
    import asyncio.events

    return callable(vars(asyncio.events.Handle).get("_run"))


def _has_distribution_path() -> bool:
    """A distribution found on ``sys.path`` keeps its ``.dist-info`` folder as ``_path``."""
    where = Path("seams-0.1.dist-info")
    return getattr(importlib.metadata.PathDistribution(where), "_path", None) is where


def _has_metadata_cache_reset() -> bool:
    """``importlib.metadata``'s finder can drop its folder listings (``_metadata.forget_installed``)."""
    return "invalidate_caches" in vars(importlib.metadata.MetadataPathFinder)


_H11_OVERRIDDEN = ("connection_made", "connection_lost", "data_received", "on_response_complete")


async def _no_app(scope: Any, receive: Any, send: Any) -> None: ...


def _has_h11_protocol() -> bool:
    """uvicorn's h11 protocol has what ``LimitedH11Protocol`` (``transport/limits.py``) uses of it."""
    import asyncio

    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.server import ServerState

    config = uvicorn.Config(_no_app, http="h11", ws="none", lifespan="off", log_config=None)
    loop = asyncio.new_event_loop()
    try:
        protocol = H11Protocol(config, ServerState(), {}, loop)
    finally:
        loop.close()
    return (
        isinstance(protocol.conn, h11.Connection)
        and protocol.loop is loop
        and protocol.client is None
        and hasattr(protocol, "transport")
        and callable(getattr(protocol, "on_response_complete", None))
        and all(m in vars(H11Protocol) for m in _H11_OVERRIDDEN)  # its own, not asyncio.Protocol's
    )


SEAMS: tuple[Seam, ...] = (
    Seam("mcp.server.session.ServerSession._connection", "subscriptions and log levels, kept per connection",
         _has_connection),
    Seam("mcp.server._otel.OpenTelemetryMiddleware", "leaving out per-request tracing when no tracer is set",
         _has_tracing_middleware),
    Seam("mcp.server.streamable_http_manager.StreamableHTTPSessionManager._lifespan_state",
         "the HTTP fast path (its handlers' lifespan state)", _has_lifespan_state),
    Seam("mcp.server.streamable_http_manager.StreamableHTTPSessionManager._admit_session",
         "the sessions an HTTP server holds (session quota, shutdown) and one event-store view per session",
         _has_admit_session),
    Seam("mcp.server.streamable_http.StreamableHTTPServerTransport._event_store",
         "one event-store view per session (resumable streams with [cluster])", _has_transport_event_store),
    Seam("mcp.server._streamable_http_modern.handle_modern_request", "the HTTP fast path for 2026-07-28 JSON",
         _has_modern_handler),
    Seam("pluggy.HookimplMarker/HookspecMarker (<project>_impl, <project>_spec)",
         "finding hookimpls without pluggy's lookup at start-up, and authorize markers pluggy would not register",
         _has_pluggy_markers, "pluggy"),
    Seam("pydantic.plugin._loader._plugins", "starting with broken package metadata on sys.path",
         _has_pydantic_plugin_cache, "pydantic"),
    Seam("_posixsubprocess.fork_exec", "refusing process starts that raise no audit event (enforce)",
         _has_fork_exec, "python"),
    Seam("asyncio.events.Handle._run",
         "containing SystemExit/KeyboardInterrupt from work a read scheduled on the server's loop",
         _has_handle_run, "python"),
    Seam("importlib.metadata.PathDistribution._path",
         "a plugin distribution's folder: its core check once per folder, the version a reload reports",
         _has_distribution_path, "python"),
    Seam("importlib.metadata.MetadataPathFinder.invalidate_caches (undocumented)",
         "a reload seeing distributions installed since the last read", _has_metadata_cache_reset, "python"),
    Seam("uvicorn.protocols.http.h11_impl.H11Protocol (conn, client, loop, transport, on_response_complete)",
         "the HTTP connection limits (header timeout, connections per client)", _has_h11_protocol, "uvicorn",
         "http"),
)  # fmt: skip


def missing_seams(seams: tuple[Seam, ...] = SEAMS, area: Area | None = None) -> list[Seam]:
    """The seams the installed packages lack (a check that raises counts as missing), of ``area``
    only when given."""
    return [seam for seam in seams if (area is None or seam.area == area) and not _holds(seam)]


def _holds(seam: Seam) -> bool:
    try:
        return seam.present()
    except Exception:  # an import, a constructor or an attribute gone: the seam is missing
        return False


@functools.cache
def _checked(area: Area) -> tuple[str, ...]:
    return tuple(
        f"  {s.name} (used for {s.used_by}; {s.package} {_installed(s.package)} installed, "
        f"tested {s.package}{TESTED[s.package]})"
        for s in missing_seams(area=area)
    )


def check_seams(area: Area = "core") -> None:
    """Refuse to serve without every :data:`SEAMS` entry of ``area`` (checked once per process).

    :param area: ``core`` (every built server) or ``http`` (``serve --http``, before it listens).
    :raises CompositionError: naming each missing seam, what it is used for, the installed version
        of its package and the range tested.
    """
    missing = _checked(area)
    if missing:
        raise CompositionError(
            [
                "installed packages lack private names this server needs; install the versions it was tested with:",
                *missing,
            ]
        )


def _installed(package: str) -> str:
    if package == "python":
        return ".".join(map(str, sys.version_info[:3]))
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"
