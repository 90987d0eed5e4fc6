"""Binding: the handler table that ties the pipeline's methods to the SDK's low-level ``Server``.

The low-level server is used because ``MCPServer`` cannot paginate, carry ``size``, add templates
programmatically or take a provider's own input schema. :func:`method_table` is what one
generation of the runtime serves (a method only for a category that has declarations);
:func:`routes` is the table of ``(method, params model, handler)`` entries whose handlers answer
from the generation current when a request starts. :func:`build_server` registers every method
(a reload may add a category) and :func:`handshake` shapes the capabilities each ``initialize``
and ``server/discover`` answers to what the current generation serves, ``listChanged`` on;
:func:`mcp_providers.embedding.attach` merges the current generation's entries into yours.
"""

from __future__ import annotations

import contextlib
import functools
import typing
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from mcp_providers._holders import Frozen
from mcp_providers._host.assembly import Assembly
from mcp_providers._serve.methods.argument_values import LinkedArguments
from mcp_providers._serve.methods.channel import set_log_level
from mcp_providers._serve.methods.completion import Complete
from mcp_providers._serve.methods.extensions import ExtensionCall, ExtensionParams, advertised
from mcp_providers._serve.methods.prompts import GetPrompt
from mcp_providers._serve.methods.resources import Listing, ListMethod, ReadResource
from mcp_providers._serve.methods.skills import PARAMS as SKILL_PARAMS
from mcp_providers._serve.methods.skills import advertised as skills_advertised
from mcp_providers._serve.methods.skills import skill_methods
from mcp_providers._serve.methods.subscriptions import SubscriptionHub, watch_meta
from mcp_providers._serve.methods.tasks import TASK_METHODS, TASKS_EXTENSION, TaskMethod, Tasks, params_model
from mcp_providers._serve.methods.tools import CallTool
from mcp_providers._serve.methods.watch_methods import Listen, Subscribe, Unsubscribe
from mcp_providers._serve.pipeline import Pipeline
from mcp_providers._serve.runtime import Runtime
from mcp_providers._serve.seams import check_seams, tracing_middleware
from mcp_providers._serve.state.tasks import RunningTask
from mcp_providers._serve.steps import wire
from mcp_providers._serve.steps.custody import LIST_CACHE_HINT
from mcp_providers._serve.steps.exchange import Ctx, Method
from mcp_providers._serve.steps.invoker import Invoker
from mcp_providers.models import Icon


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class RouteEntry(Frozen):
    """One row of the handler table."""

    __slots__ = ("handler", "method", "params")

    method: str
    params: type[Any]
    handler: Callable[[Ctx, Any], Awaitable[Any]]

    def __init__(self, method: str, params: type[Any], handler: Callable[[Ctx, Any], Awaitable[Any]]) -> None:
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "handler", handler)


def _lists(assembly: Assembly) -> list[Method[Any, Any, Any]]:
    catalog, size = assembly.catalog, assembly.config.server.page_size
    out: list[Method[Any, Any, Any]] = []
    if catalog.resources or catalog.templates:
        resources = Listing(
            "resources",
            lambda: [
                (e.declaration.uri, _watch(wire.resource_wire(e.declaration), e.declaration)) for e in catalog.resources
            ],
            lambda: {f.uri: f.judged_on[1:] for e in catalog.skills for f in e.declaration.files if f.judged_on[1:]},
        )
        templates = Listing(
            "templates",
            lambda: [
                (e.declaration.uri_template, _watch(wire.template_wire(e.declaration), e.declaration))
                for e in catalog.templates
            ],
        )
        out.append(
            ListMethod("resources/list", catalog, resources, size, _result(types.ListResourcesResult, "resources"))
        )
        out.append(
            ListMethod(
                "resources/templates/list",
                catalog,
                templates,
                size,
                _result(types.ListResourceTemplatesResult, "resource_templates"),
            )
        )
    if catalog.tools:
        tools = Listing("tools", lambda: [(e.declaration.name, wire.tool_wire(e.declaration)) for e in catalog.tools])
        shown = LinkedArguments(catalog).shown
        out.append(ListMethod("tools/list", catalog, tools, size, _result(types.ListToolsResult, "tools"), shown))
    if catalog.prompts:
        prompts = Listing(
            "prompts", lambda: [(e.declaration.name, wire.prompt_wire(e.declaration)) for e in catalog.prompts]
        )
        out.append(ListMethod("prompts/list", catalog, prompts, size, _result(types.ListPromptsResult, "prompts")))
    return out


def _watch(item: Any, declaration: Any) -> Any:
    """The list item with its ``_meta`` saying whether it can be watched (live ones only)."""
    meta = watch_meta(declaration)
    return item if meta is declaration.meta else item.model_copy(update={"meta": meta})


def _result(model: type[Any], field: str) -> Callable[[list[Any], str | None], Any]:
    # Set explicitly (never the SDK's or a server-wide default): the gate filters every list.
    hint = {"ttl_ms": LIST_CACHE_HINT.ttl_ms, "cache_scope": LIST_CACHE_HINT.scope}
    return lambda items, cursor: model(**{field: items, "next_cursor": cursor, **hint})


def methods(
    assembly: Assembly, invoker: Invoker, hub: SubscriptionHub, tasks: Tasks | None = None
) -> list[Method[Any, Any, Any]]:
    """Every method ``assembly`` serves (lists, reads, calls, prompts, completion, subscriptions).

    ``subscriptions/listen`` always: a 2026-07-28 client hears of list changes (a reload) on it;
    with ``tasks``, the task methods always: a task outlives a reload that drops its tool.
    """
    catalog = assembly.catalog
    out = _lists(assembly)
    if catalog.resources or catalog.templates:
        out.append(ReadResource(assembly, invoker))
    if catalog.tools:
        out.append(CallTool(assembly, invoker, tasks))
    if tasks is not None:
        out += [TaskMethod(name, tasks) for name in TASK_METHODS]
    if catalog.prompts:
        out.append(GetPrompt(assembly, invoker))
    if catalog.templates or catalog.prompts:
        out.append(Complete(assembly, invoker))
    if _watchable(assembly):
        out += [Subscribe(hub), Unsubscribe(hub)]
    out += skill_methods(assembly)  # skills/list, skills/get, resources/directory/read: with a skill served
    out += [ExtensionCall(name, catalog, invoker) for name in catalog.extension_methods]
    return [*out, Listen(hub)]


def _runs_tasks(assembly: Assembly) -> bool:
    return any(e.declaration.task_support != "forbidden" for e in assembly.catalog.tools)


def _watchable(assembly: Assembly) -> bool:
    catalog = assembly.catalog
    live = any(e.declaration.freshness.watchable for e in catalog.resources)
    return live or any(e.declaration.freshness.watchable for e in catalog.templates)


def method_table(runtime: Runtime, assembly: Assembly) -> dict[str, Method[Any, Any, Any]]:
    """Method name -> method, for one generation of ``runtime`` serving ``assembly``."""
    return {m.name: m for m in methods(assembly, runtime.invoker, runtime.hub, runtime.tasks)}


_PARAMS: dict[str, type[Any]] = {
    "resources/list": types.PaginatedRequestParams,
    "resources/templates/list": types.PaginatedRequestParams,
    "resources/read": types.ReadResourceRequestParams,
    "resources/subscribe": types.SubscribeRequestParams,
    "resources/unsubscribe": types.UnsubscribeRequestParams,
    "subscriptions/listen": types.SubscriptionsListenRequestParams,
    "completion/complete": types.CompleteRequestParams,
    "tools/list": types.PaginatedRequestParams,
    "tools/call": types.CallToolRequestParams,
    "prompts/list": types.PaginatedRequestParams,
    "prompts/get": types.GetPromptRequestParams,
    **{name: params_model(name) for name in TASK_METHODS},
    **SKILL_PARAMS,
}


LISTEN = "subscriptions/listen"


def dispatcher(runtime: Runtime, pipeline: Pipeline, name: str) -> Callable[[Ctx, Any], Awaitable[Any]]:
    """The SDK request handler for method ``name``: through ``pipeline``, wholly on the generation
    current when the request starts (``-32601`` when that one does not serve ``name``)."""

    return functools.partial(_dispatch, runtime, pipeline, name)  # no coroutine of its own around _dispatch


async def run_task_call(
    runtime: Runtime, pipeline: Pipeline, task: RunningTask, params: types.CallToolRequestParams
) -> Any:
    """A task's ``tools/call`` through ``pipeline`` once more, as :func:`dispatcher`'s handler runs
    it, marked as ``task``'s body (the task :data:`~mcp_providers._serve.methods.tasks.Body`)."""
    return await _dispatch(runtime, pipeline, "tools/call", task.ctx, params, task)


async def _dispatch(
    runtime: Runtime, pipeline: Pipeline, name: str, ctx: Ctx, params: Any, task: RunningTask | None = None
) -> Any:
    generation = runtime.generation
    method = generation.methods.get(name)
    if method is None:
        raise MCPError(types.METHOD_NOT_FOUND, "Method not found", data=name)
    if name == LISTEN:  # open for as long as the client listens; it keeps no generation running
        return await pipeline.run(method, ctx, params, generation.authorizer)
    with generation:  # counts the request on its generation (Generation.serving), one call fewer
        return await pipeline.run(method, ctx, params, generation.authorizer, task)


def routes(runtime: Runtime, pipeline: Pipeline, *, every: bool = False) -> list[RouteEntry]:
    """The handler table, each entry running through ``pipeline``: the methods the current
    generation serves, or with ``every`` every spec method a generation could serve; and the
    current generation's extension methods (their params checked by their own models)."""
    served = dict(runtime.generation.methods)
    if not every and not _watchable(runtime.generation.assembly):
        served.pop(LISTEN)  # attached to your server: its own listen stream, unless something here is live
    out = [RouteEntry(n, p, dispatcher(runtime, pipeline, n)) for n, p in _PARAMS.items() if every or n in served]
    return out + _extension_routes(runtime, pipeline)


def _extension_routes(runtime: Runtime, pipeline: Pipeline) -> list[RouteEntry]:
    names = runtime.generation.assembly.catalog.extension_methods
    return [RouteEntry(n, ExtensionParams, dispatcher(runtime, pipeline, n)) for n in names]


_LIST_CAPABILITIES = (("resources", "resources/list"), ("tools", "tools/list"), ("prompts", "prompts/list"))


def handshake(runtime: Runtime) -> Callable[[Ctx, dict[str, Any]], dict[str, Any]]:
    """``(ctx, result) -> result``: an ``initialize`` or ``server/discover`` result (wire form) with
    the capabilities of what the current generation serves, each list's ``listChanged`` on (a
    reload tells clients); a 2025-era session is remembered so it can be told
    (:meth:`SubscriptionHub.opened`)."""

    def shape(ctx: Ctx, result: dict[str, Any]) -> dict[str, Any]:
        capabilities = result.get("capabilities")
        if not isinstance(capabilities, dict):
            return result
        # A copy, one level into each capability: what it was given is never changed in place.
        capabilities = {k: dict(v) if isinstance(v, dict) else v for k, v in capabilities.items()}
        result = {**result, "capabilities": capabilities}
        generation = runtime.generation
        served = generation.methods
        for key, method in (*_LIST_CAPABILITIES, ("completions", "completion/complete")):
            if method not in served:
                capabilities.pop(key, None)
            elif key != "completions" and isinstance(capabilities.get(key), dict):
                capabilities[key]["listChanged"] = True
        resources = capabilities.get("resources")
        if isinstance(resources, dict):
            resources["subscribe"] = _watchable(generation.assembly)
        extensions = advertised(generation.assembly.catalog)
        if ctx.method == "server/discover":  # 2026-07-28 only
            if _runs_tasks(generation.assembly):
                extensions[TASKS_EXTENSION] = {}
            extensions.update(skills_advertised(generation.assembly.catalog))
        if extensions:
            capabilities["extensions"] = {**(capabilities.get("extensions") or {}), **extensions}
        if ctx.method == "initialize":
            runtime.hub.opened(ctx.session, frozenset(k for k, _ in _LIST_CAPABILITIES if k in capabilities))
        return result

    return shape


_ON = {
    "resources/list": "on_list_resources",
    "resources/templates/list": "on_list_resource_templates",
    "resources/read": "on_read_resource",
    "resources/subscribe": "on_subscribe_resource",
    "resources/unsubscribe": "on_unsubscribe_resource",
    "subscriptions/listen": "on_subscriptions_listen",
    "completion/complete": "on_completion",
    "tools/list": "on_list_tools",
    "tools/call": "on_call_tool",
    "prompts/list": "on_list_prompts",
    "prompts/get": "on_get_prompt",
}


def build_server(
    runtime: Runtime, pipeline: Pipeline, name: str, version: str, icons: tuple[Icon, ...] = ()
) -> Server[object]:
    """The SDK ``Server`` answering every method of :func:`routes` through ``pipeline``; ``name``,
    ``version`` and ``icons`` are its ``serverInfo`` (icons shaped away before 2025-11-25).

    :raises CompositionError: the installed SDK lacks a private name the core uses
        (:func:`~mcp_providers._serve.seams.check_seams`).
    """

    @contextlib.asynccontextmanager
    async def lifespan(_server: Server[object]) -> AsyncIterator[object]:
        async with runtime.running():
            yield {}

    check_seams()  # refuse an SDK without the private names the serving code reaches for
    served = routes(runtime, pipeline, every=True)  # a reload may add a category: each answers -32601 until then
    handlers: dict[str, Any] = {_ON[r.method]: r.handler for r in served if r.method in _ON}
    server: Server[object] = Server(
        name,
        version=version,
        icons=wire.icons_wire(icons),
        lifespan=lifespan,
        get_tool_input_schema=input_schemas(runtime),
        **handlers,
    )
    _REGISTERED[server] = {r.method for r in served} | {"logging/setLevel"}
    _register_extensions(server, runtime, pipeline)
    for r in served:  # methods the SDK has no constructor argument for: the tasks extension's
        if r.method not in _ON:
            server.add_request_handler(r.method, r.params, r.handler)
    # logging/setLevel is registered directly: the constructor's on_set_logging_level warns that
    # logging is deprecated at 2026-07-28, but 2025-11-25 clients still set levels for the log
    # messages tools send (ToolCall.log); the SDK keeps the method off the 2026 wire itself.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    # One layer: a line for requests no method's stages answer, and capabilities shaped for the
    # negotiated version (wire.initialize_middleware inside Pipeline.middleware).
    server.middleware.append(pipeline.middleware)
    pipeline.handshake = handshake(runtime)
    runtime.swapped.append(lambda _: _register_extensions(server, runtime, pipeline))  # a reload may add some
    pipeline.serve(server)  # its handlers are the one way into the pipeline
    _PIPELINES[server] = pipeline
    # The pipeline makes the request's span (steps/tracing.py: parented from _meta and HTTP headers,
    # no error messages); the SDK's would be a second one, and it builds spans even with no tracer.
    tracing = tracing_middleware()
    server.middleware = [m for m in server.middleware if not isinstance(m, tracing)]
    return server


def input_schemas(runtime: Runtime) -> Callable[[str], dict[str, Any] | None]:
    """``name -> inputSchema`` of the current generation's tool (``None``: no such tool), for the
    SDK's ``Mcp-Param`` header check of a 2026-07-28 ``tools/call`` over HTTP. Without it the SDK
    runs a ``tools/list`` of its own before each call: an audit line the client never asked for.
    The schema is made once per declaration."""
    made: dict[int, tuple[object, dict[str, Any]]] = {}

    def lookup(name: str) -> dict[str, Any] | None:
        entry = runtime.generation.assembly.catalog.tool(name)
        if entry is None:
            return None
        kept = made.get(id(entry.declaration))
        if kept is None or kept[0] is not entry.declaration:
            kept = made[id(entry.declaration)] = (entry.declaration, wire.tool_wire(entry.declaration).input_schema)
        return kept[1]

    return lookup


def _register_extensions(server: Server[object], runtime: Runtime, pipeline: Pipeline) -> None:
    """Register the current generation's extension methods the server does not know yet (one that
    a later generation drops answers -32601 through its dispatcher)."""
    for route in _extension_routes(runtime, pipeline):
        if server.get_request_handler(route.method) is None:
            server.add_request_handler(route.method, route.params, route.handler)
            _REGISTERED.setdefault(server, set()).add(route.method)


_PIPELINES: weakref.WeakKeyDictionary[Server[Any], Pipeline] = weakref.WeakKeyDictionary()
"""The pipeline whose handlers and middleware each server :func:`build_server` built holds."""


def around_pipeline(server: Server[Any], middleware: Any) -> bool:
    """Run ``middleware`` (a transport's SDK server middleware) around the pipeline's own layer of
    ``server``, in one SDK middleware (:meth:`Pipeline.around`); ``False`` when :func:`build_server`
    did not build ``server`` (the caller adds the middleware itself)."""
    pipeline = _PIPELINES.get(server)
    if pipeline is None:
        return False
    pipeline.around(middleware)
    return True


def built_by_pipeline(server: Server[Any]) -> bool:
    """Whether :func:`build_server` built ``server`` (a composition's own server)."""
    return server in _PIPELINES


_REGISTERED: weakref.WeakKeyDictionary[Server[Any], set[str]] = weakref.WeakKeyDictionary()
"""The methods :func:`build_server` registered on each server it built (extensions added by reloads too)."""


def _spec_methods() -> frozenset[str]:
    """Every client request method of the MCP versions the SDK speaks (``mcp_types.ClientRequest``)."""
    return frozenset(
        method
        for request in typing.get_args(types.ClientRequest)
        for method in typing.get_args(request.model_fields["method"].annotation)
    )


def served_methods(server: Server[Any]) -> list[str]:
    """Every request method ``server`` has a handler for now, sorted, ``initialize`` aside (the SDK's
    runner answers it): the spec's methods the SDK or :func:`build_server` registered, and this
    package's own (tasks, skills, extensions). The SDK keeps no public list of them."""
    candidates = (_spec_methods() | _REGISTERED.get(server, set())) - {"initialize"}
    return sorted(m for m in candidates if server.get_request_handler(m) is not None)


async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    """``logging/setLevel``: the least severe level ``ToolCall.log`` sends on this connection."""
    set_log_level(ctx, params.level)
    return types.EmptyResult()
