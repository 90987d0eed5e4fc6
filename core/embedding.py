"""Embedding: serve a composition inside an application or server you already have.

Three ways in, from the most faithful to the least:

- :func:`mount`: add the composition's streamable-HTTP endpoint to an existing Starlette (or
  FastAPI) app at a path. The app's lifespan is wrapped so the providers' lifespans and the SDK
  session manager run while the app runs; the app's own routes and lifespan keep working.
- :func:`attach`: add the composition's resources, templates, tools, prompts and completions to
  an SDK low-level ``Server`` you built. Its own handlers are chained, not replaced: list results
  are the server's own items followed by the composition's (one opaque cursor spans both), and a
  read, call, prompt or completion goes to the composition when it owns the URI, tool, prompt or
  template and to the server's own handler otherwise. Everything the composition does (routing,
  authorization with the caller's subject, budgets, error codes) is kept.
- :func:`add_to_mcpserver`: copy the declarations into an ``MCPServer`` through its public API
  (``add_resource``, ``resource()``, ``add_tool``, ``add_prompt``). Each request is answered by the
  composition's pipeline directly, as the MCPServer request's caller, but some things cannot cross
  MCPServer's API; its docstring lists them.

Build the composition with :func:`mcp_providers.compose` (a library object; nothing is served
until you mount or attach it).

Your process stays yours: ``import mcp_providers`` changes nothing global, and an embedded
composition (``side_effects="scoped"``, the default) installs only the audit hook when it starts,
which judges files and processes for provider code alone; HTTP is judged in the client the
framework hands providers (:func:`mcp_providers.http.client`). ``side_effects="enforce"`` (or
``[server] embedded_side_effects = "enforce"``) installs every process-wide guard ``serve``
installs, for the rest of the process. ``docs/embedding.md`` lists exactly what each installs.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext

from mcp_providers._mcpserver import add_to_mcpserver
from mcp_providers._serve.binding import built_by_pipeline, routes
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.transport.auth import WELL_KNOWN
from mcp_providers._serve.transport.http_app import HttpApp
from mcp_providers._serve.transport.mounted import Identify, MountedEndpoint
from mcp_providers.providers import ResourceProvider
from mcp_providers.uris import InvalidUri, canonical

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette

__all__ = [
    "add_to_mcpserver",
    "attach",
    "mount",
]


log = logging.getLogger("mcp_providers.embedding")

Ctx = ServerRequestContext[Any, Any]
Handler = Callable[[Ctx, Any], Awaitable[Any]]

# Which result field holds the items of each list method.
_LISTS = {
    "resources/list": "resources",
    "resources/templates/list": "resource_templates",
    "tools/list": "tools",
    "prompts/list": "prompts",
}
_ROUTED = {"resources/read", "tools/call", "prompts/get", "completion/complete"}
_HOST_CURSOR, _OURS_CURSOR = "host:", "mcpp:"

SideEffects = Literal["scoped", "enforce"]
"""What an embedded composition installs to enforce the side-effect scope: ``"scoped"`` patches
nothing of the host (the audit hook only); ``"enforce"`` installs every process-wide guard."""


def _guards(composition: Composition, side_effects: SideEffects | None) -> None:
    """Choose, before it starts, what ``composition`` installs (``None``: its config's choice)."""
    if side_effects is None:
        return
    if side_effects not in ("scoped", "enforce"):
        raise ValueError(
            f"side_effects must be 'scoped' (patch nothing of this process) or 'enforce'; got {side_effects!r}"
        )
    composition.runtime.process_guards = side_effects == "enforce"


def mount(
    app: Starlette,
    composition: Composition,
    path: str = "/mcp",
    *,
    stateless: bool = False,
    json_response: bool = False,
    host: str = "127.0.0.1",
    transport_security: TransportSecuritySettings | None = None,
    side_effects: SideEffects | None = None,
    identify: Identify | None = None,
) -> None:
    """Serve ``composition`` over streamable HTTP at ``path`` of an existing Starlette/FastAPI app.

    The app's lifespan is wrapped: on startup the providers' lifespans and an SDK session manager
    are entered (then the app's own lifespan); on shutdown they are left in reverse. Each run of
    the lifespan gets a fresh session manager, so an app may start and stop many times in one
    process (one at a time). Call it on the outermost app: Starlette does not run the lifespan of
    an app mounted inside another, and a request then gets a 500 saying so.

    :param app: a ``starlette.applications.Starlette`` or ``fastapi.FastAPI`` instance.
    :param path: where clients connect, e.g. ``"/mcp"``: a plain path (see ``:raises``) that the
        app does not route yet (the app's own route would answer first).
    :param stateless: streamable HTTP without sessions (for replicas behind a load balancer).
    :param json_response: answer POSTs with JSON instead of SSE.
    :param host: the address the app is served on. Every host gets DNS-rebinding protection
        (the same policy as ``serve --http``): loopback names on loopback, the host's own name on a
        specific address, loopback names only on a wildcard (``0.0.0.0``, ``::``); name other Host
        headers in ``transport_security``.
    :param transport_security: the SDK's allowed hosts/origins, replacing that policy.
    :param side_effects: ``"scoped"`` (patch nothing of this process) or ``"enforce"`` (every guard
        ``serve`` installs); ``None``: ``[server] embedded_side_effects`` (see the module docstring).
    :param identify: without ``[server.auth]``, ``identify(request) -> Principal | None`` (sync or
        async) says who a request your app authenticated is; ``None`` is anonymous. Without it only
        an SDK ``AccessToken`` in ``request.user.access_token`` is read; a host user without one is
        anonymous (warned once), one whose ``access_token`` is anything else is refused (403).
    :raises TypeError: ``app`` is not a Starlette app, ``composition`` not a Composition, ``path`` no str.
    :raises ValueError: ``path`` does not start with ``/``, holds ``?``, ``#``, ``%``, ``{``, ``}``,
        an empty (``//``) or dot segment, or the app routes it already; ``side_effects`` is neither
        value; ``identify`` is given together with ``[server.auth]``.
    :raises ConfigError: ``[server.auth]`` names a token variable that is unset, or (``jwt``,
        ``introspection``) has no ``resource_url`` or cannot reach its issuer.

    ``[server.auth]`` applies as for ``serve --http`` (401 without an accepted token; RFC 9728
    metadata at ``/.well-known/oauth-protected-resource`` and that path followed by ``path``).
    """
    from starlette.routing import Route

    _check_mount(app, composition, path, identify)
    _guards(composition, side_effects)
    endpoint = _endpoint(composition, path, stateless, json_response, host, transport_security, identify)
    paths = _free_paths(app, (path, *endpoint.metadata_paths))
    # Routes, not a Mount (no /mcp -> /mcp/ redirect); the RFC 9728 metadata paths answer beside it.
    app.router.routes += [Route(p, endpoint=endpoint) for p in paths]
    _run_with_app(app, composition, endpoint)


def _check_mount(app: object, composition: Composition, path: object, identify: Identify | None) -> None:
    from starlette.applications import Starlette

    if not isinstance(app, Starlette):
        raise TypeError(
            f"mount() needs a Starlette or FastAPI app, not {type(app).__name__}; "
            "for an SDK low-level Server use attach(), for an MCPServer add_to_mcpserver()"
        )
    _need_composition("mount", composition)
    _check_path(path)
    if identify is not None and composition.config.server.auth is not None:
        raise ValueError(
            "mount() takes identify= or [server.auth], not both: with [server.auth] the bearer token alone says "
            "who the caller is; drop one"
        )


def _endpoint(
    composition: Composition,
    path: str,
    stateless: bool,
    json_response: bool,
    host: str,
    transport_security: TransportSecuritySettings | None,
    identify: Identify | None,
) -> MountedEndpoint:
    """The mounted endpoint; it builds its first HTTP app now (``[server.auth]`` errors raise here)."""
    from mcp_providers._serve.transport.auth import http_auth
    from mcp_providers._serve.transport.http_app import http_app
    from mcp_providers._serve.transport.http_policy import transport_policy

    server = composition.server
    security = transport_policy(host, explicit=transport_security)
    auth = http_auth(composition.config.server.auth)
    limits = composition.config.server.limits

    def make() -> HttpApp:  # one per run of the app's lifespan: the SDK's session manager runs once
        return http_app(
            server, path=path, stateless=stateless, json_response=json_response, security=security, auth=auth,
            limits=limits, audit=composition.runtime.audit,
        )  # fmt: skip

    return MountedEndpoint(make, path, identify, authenticated=auth is not None)


def _need_composition(caller: str, composition: object) -> None:
    if not isinstance(composition, Composition):
        raise TypeError(
            f"{caller}() needs a Composition (from mcp_providers.compose()), not {type(composition).__name__}"
        )


def _check_path(path: object) -> None:
    """Refuse a mount path no request can reach (a route matches the decoded path, without query)."""
    if not isinstance(path, str):
        raise TypeError(f"mount path must be a str such as '/mcp', not {type(path).__name__}")
    segments = path.split("/")[1:]
    why = (
        "must start with '/'" if not path.startswith("/")
        else "may not hold '?' or '#': a query or fragment is never part of the path a request is routed by"
        if "?" in path or "#" in path
        else "may not hold '{' or '}': Starlette would read a path parameter" if "{" in path or "}" in path
        else "may not hold '%': requests are routed by their decoded path; give it decoded" if "%" in path
        else "may not have an empty segment ('//')" if "" in segments[:-1]
        else "may not have a '.' or '..' segment: clients remove those before sending" if {".", ".."} & set(segments)
        else None
    )  # fmt: skip
    if why is not None:
        raise ValueError(f"mount path {why}, e.g. '/mcp'; got {path!r}")


def _free_paths(app: Starlette, paths: tuple[str, ...]) -> list[str]:
    """``paths`` to route, refusing any one of ``app``'s routes already matches (that route is
    first, so it would answer); the bare RFC 9728 path another mount() routes is shared, not refused."""
    from starlette.routing import Match

    free = []
    for path in paths:
        route = next((r for r in app.router.routes if _matches(r, path) is not Match.NONE), None)
        if route is None:
            free.append(path)
        elif path != WELL_KNOWN or not isinstance(getattr(route, "endpoint", None), MountedEndpoint):
            raise ValueError(
                f"the app already routes {path!r} ({type(route).__name__} {getattr(route, 'path', '')!r}), "
                "which would answer before the composition; mount at another path, or call mount() "
                "before adding that route"
            )
    return free


def _matches(route: Any, path: str) -> Any:
    from starlette.routing import Match

    for method in ("POST", "GET", "DELETE"):
        probe: dict[str, Any] = {"type": "http", "path": path, "root_path": "", "method": method, "headers": []}
        try:
            match, _ = route.matches(probe)
        except Exception:  # a custom route that needs more of a scope: it cannot be asked
            return Match.NONE
        if match is not Match.NONE:
            return match
    return Match.NONE


def _run_with_app(app: Starlette, composition: Composition, endpoint: MountedEndpoint) -> None:
    """Wrap ``app``'s lifespan: the providers' lifespans and the endpoint's run happen inside it."""
    previous = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with endpoint.running(), composition.running(), previous(a) as state:
            yield state

    app.router.lifespan_context = lifespan


def attach(server: Server[Any], composition: Composition, *, side_effects: SideEffects | None = None) -> None:
    """Add the composition's resources, templates, tools, prompts and completions to ``server``.

    The server's own handlers keep serving its own items. Lists return the server's items first
    and then the composition's, under one cursor. A read goes to the composition when the URI lies
    under one of its providers' prefixes; a tool call, prompt or completion when the composition
    declares that name or template; everything else goes to the server's own handler. The
    server's lifespan is wrapped so the providers' lifespans run while it runs.

    Names are not merged: if the server and the composition both declare a tool or prompt name,
    the composition's is called (and a warning is logged when a list shows both).

    :param side_effects: as for :func:`mount`.
    :raises TypeError: ``server`` is not an SDK low-level ``Server``, or ``composition`` not a Composition.
    :raises ValueError: both serve a method that cannot be merged (e.g. ``subscriptions/listen``),
        ``server`` is ``composition.server`` itself or another composition's, a composition is
        already attached to it (this one or another), or ``side_effects`` is neither value.
    """
    if not isinstance(server, Server):
        raise TypeError(
            f"attach() needs an SDK low-level Server (mcp.server.Server), not {type(server).__name__}; "
            "for a Starlette or FastAPI app use mount(), for an MCPServer add_to_mcpserver()"
        )
    _need_composition("attach", composition)
    ours = composition.server
    if server is ours:
        raise ValueError("attach() takes your own Server; composition.server already serves the composition")
    _refuse_second(server, composition)
    _guards(composition, side_effects)
    owns = _owner(composition)
    plans: list[tuple[str, type[Any], Handler]] = []
    for route in routes(composition.runtime, composition.pipeline):  # the same table build_server uses
        method = route.method
        theirs = server.get_request_handler(method)
        if theirs is None:
            plans.append((method, route.params, route.handler))
        elif method in _LISTS:
            plans.append((method, theirs.params_type, _chain_list(method, theirs.handler, route.handler)))
        elif method in _ROUTED:
            plans.append((method, theirs.params_type, _chain_routed(method, theirs.handler, route.handler, owns)))
        else:
            raise ValueError(
                f"both your server and the composition serve {method!r}, which cannot be merged; "
                "remove your handler or serve the composition separately (mount())"
            )
    for method, params_type, handler in plans:
        server.add_request_handler(method, params_type, handler)

    original = server.lifespan

    @contextlib.asynccontextmanager
    async def lifespan(s: Server[Any]) -> AsyncIterator[Any]:
        async with composition.running(), original(s) as state:
            yield state

    server.lifespan = lifespan
    _ATTACHED[server] = composition


_ATTACHED: weakref.WeakKeyDictionary[Server[Any], Composition] = weakref.WeakKeyDictionary()
"""The composition :func:`attach` added to each server."""


def _refuse_second(server: Server[Any], composition: Composition) -> None:
    """Refuse a server that already serves a composition: its handlers are that composition's, not
    the embedder's, and two pipelines cannot share the methods neither can merge (``tasks/*``, ...)."""
    fix = (
        "one Server serves one composition: compose both plugin sets into one composition "
        "(one config, or compose(plugins=...)), or serve the second on its own (its composition.server, or mount())"
    )
    attached = _ATTACHED.get(server)
    if attached is composition:
        raise ValueError("this composition is already attached to this server; attach() it once")
    if attached is not None:
        raise ValueError(f"another composition is attached to this server already; {fix}")
    if built_by_pipeline(server):
        raise ValueError(f"that Server is another composition's own server (its composition.server); {fix}")


def _owner(composition: Composition) -> Callable[[str, Any], bool]:
    """Whether the composition answers a routed request (its prefixes, tools, prompts, templates)."""
    prefixes = tuple(
        canonical(p)
        for d in composition.declared
        if isinstance(d.provider, ResourceProvider)
        for p in d.provider.prefixes
    )
    catalog = composition.catalog

    def owns(method: str, params: Any) -> bool:
        if method == "resources/read":
            try:
                return bool(prefixes) and canonical(params.uri).startswith(prefixes)
            except InvalidUri:
                return False
        if method == "tools/call":
            return catalog.tool(params.name) is not None
        if method == "prompts/get":
            return catalog.prompt(params.name) is not None
        ref = params.ref
        if isinstance(ref, types.ResourceTemplateReference):
            return catalog.template(ref.uri) is not None
        return catalog.prompt(ref.name) is not None

    return owns


def _with_cursor(params: Any, cursor: str | None) -> types.PaginatedRequestParams:
    if params is None:
        return types.PaginatedRequestParams(cursor=cursor)
    return params.model_copy(update={"cursor": cursor})  # type: ignore[no-any-return]


def _chain_list(method: str, theirs: Handler, mine: Handler) -> Handler:
    field = _LISTS[method]

    async def handler(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        cursor = params.cursor if params is not None else None
        if cursor is not None and not cursor.startswith((_HOST_CURSOR, _OURS_CURSOR)):
            raise MCPError(types.INVALID_PARAMS, f"Invalid cursor {cursor!r}; pass back a nextCursor from {method}")
        if cursor is None or cursor.startswith(_HOST_CURSOR):
            host_cursor = cursor.removeprefix(_HOST_CURSOR) if cursor else None
            first = await theirs(ctx, _with_cursor(params, host_cursor))
            if first.next_cursor is not None:
                return first.model_copy(update={"next_cursor": _HOST_CURSOR + first.next_cursor})
            rest = await mine(ctx, _with_cursor(params, None))
            names = {getattr(i, "name", None) for i in getattr(first, field)}
            clash = sorted(n for i in getattr(rest, field) if (n := getattr(i, "name", None)) in names and n)
            if clash and field in ("tools", "prompts"):
                log.warning(
                    "your server and the composition both declare %s %s; calls go to the composition", field, clash
                )
            items = [*getattr(first, field), *getattr(rest, field)]
            nxt = _OURS_CURSOR + rest.next_cursor if rest.next_cursor is not None else None
            return rest.model_copy(update={field: items, "next_cursor": nxt})
        page = await mine(ctx, _with_cursor(params, cursor.removeprefix(_OURS_CURSOR)))
        nxt = _OURS_CURSOR + page.next_cursor if page.next_cursor is not None else None
        return page.model_copy(update={"next_cursor": nxt})

    return handler


def _chain_routed(method: str, theirs: Handler, mine: Handler, owns: Callable[[str, Any], bool]) -> Handler:
    async def handler(ctx: Ctx, params: Any) -> Any:
        return await (mine if owns(method, params) else theirs)(ctx, params)

    return handler
