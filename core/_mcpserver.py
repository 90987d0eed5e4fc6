"""``add_to_mcpserver`` (re-exported by :mod:`mcp_providers.embedding`): a composition's
resources, templates, tools and prompts registered on an ``MCPServer`` through its public API,
each read, call and prompt answered by the composition's pipeline with the MCPServer request's
own context (its caller, session and protocol version)."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import inspect
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, cast

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.uri_template import UriTemplate
from pydantic import Field

from mcp_providers._serve.binding import dispatcher
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.steps.wire import icons_wire, tool_annotations

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

Ctx = ServerRequestContext[Any, Any]


def add_to_mcpserver(mcp: MCPServer, composition: Composition) -> None:
    """Add the composition's resources, templates, tools and prompts to an ``MCPServer``.

    Each is registered through MCPServer's public API; each read, call and prompt is answered by
    the composition's pipeline directly (no client, no second session), with the MCPServer
    request's own context: its caller (the verified token's principal when MCPServer serves HTTP
    with a ``token_verifier``; ``anonymous`` over HTTP without auth; ``local`` in memory and on
    stdio, unless :func:`mcp_providers.identity.serving_as` chooses another), its session and
    negotiated protocol version. So routing, authorization of that caller, budgets and tool output
    validation happen in the composition, and its audit line names the caller. Enter
    ``composition.running()`` in the MCPServer's ``lifespan`` to keep providers open between
    requests (otherwise each request starts and stops them). One server middleware is appended
    to ``mcp.middleware``: it hands each request's context to these functions.

    What cannot cross MCPServer's API (use :func:`attach` on a low-level ``Server`` for these):

    - pagination and ``size``: MCPServer lists everything in one page and its resources have no size;
      its lists are not filtered by the composition's policy either (a read, call or prompt is);
    - completions: MCPServer has one completion handler per server, which is yours to keep;
    - exact tool input schemas: MCPServer derives them from a function signature, rebuilt here from
      the input model's fields (names, types, defaults and descriptions survive; model-level
      validators and ``$defs`` titles may not);
    - tool ``resource_link`` content when the tool also has an output model (MCPServer returns only
      the model), per-read cache hints and ``_meta`` receipts on reads (read errors keep their
      codes, messages and data: they cross as protocol errors; so do a denied call's and prompt's).

    A tool's questions (``ToolCall.elicit``, ``sample``) reach the MCPServer's client in either era
    (on 2026-07-28 as an input round, which MCPServer passes through), as from the composition's
    own server.

    Names are never shadowed: MCPServer would keep a tool, prompt, resource or template it already
    has and drop the composition's silently, so any such clash is refused before anything is added
    (:func:`attach` cannot see its server's names before a list, and calls the composition's).

    :raises TypeError: ``mcp`` is not an ``MCPServer``, or ``composition`` not a Composition.
    :raises ValueError: the MCPServer already has a name or URI the composition declares (each clash
        named, with whose it is: the MCPServer's own or another composition's), this composition was
        already added, or MCPServer refuses a declaration.
    :raises RuntimeError: (from a registered function) it was called outside a request MCPServer
        received (``mcp.call_tool(...)`` in process): there is no caller to answer as.
    """
    _check_types(mcp, composition)
    ours = _names(composition)
    _refuse_clashes(mcp, composition, ours)
    if _remember_request not in mcp.middleware:
        mcp.middleware.append(_remember_request)
    ask = _asker(composition)
    _add_resources(mcp, composition, ask)
    _add_tools(mcp, composition, ask)
    _add_prompts(mcp, composition, ask)
    _ADDED.setdefault(mcp, {}).update(dict.fromkeys(ours, composition))


def _check_types(mcp: object, composition: object) -> None:
    from mcp.server.mcpserver import MCPServer

    if not isinstance(mcp, MCPServer):
        raise TypeError(
            f"add_to_mcpserver() needs an MCPServer (mcp.server.mcpserver.MCPServer), not {type(mcp).__name__}; "
            "for an SDK low-level Server use attach(), for a Starlette or FastAPI app mount()"
        )
    if not isinstance(composition, Composition):
        raise TypeError(
            f"add_to_mcpserver() needs a Composition (from mcp_providers.compose()), not {type(composition).__name__}"
        )


Name = tuple[str, str]
"""``(kind, name or URI)``: ``("tool", "mix")``, ``("resource", "emb://all")``, ``("resource template", ...)``."""

_ADDED: weakref.WeakKeyDictionary[Any, dict[Name, Composition]] = weakref.WeakKeyDictionary()
"""What :func:`add_to_mcpserver` added to each MCPServer, and from which composition."""


def _names(composition: Composition) -> dict[Name, str]:
    """Each name the composition adds, and the plugin that declares it."""
    catalog = composition.catalog
    found: dict[Name, str] = {("resource", e.declaration.uri): e.plugin for e in catalog.resources}
    found |= {("resource template", e.declaration.uri_template): e.plugin for e in catalog.templates}
    found |= {("tool", e.declaration.name): e.plugin for e in catalog.tools}
    return found | {("prompt", e.declaration.name): e.plugin for e in catalog.prompts}


def _refuse_clashes(mcp: MCPServer, composition: Composition, ours: dict[Name, str]) -> None:
    added = _ADDED.get(mcp, {})
    if composition in added.values():
        raise ValueError("this composition was already added to this MCPServer; add_to_mcpserver() it once")
    theirs = {("tool", t.name) for t in _now(mcp.list_tools)}
    theirs |= {("resource", str(r.uri)) for r in _now(mcp.list_resources)}
    theirs |= {("resource template", t.uri_template) for t in _now(mcp.list_resource_templates)}
    theirs |= {("prompt", p.name) for p in _now(mcp.list_prompts)}
    clashes = [
        f"{kind} {name!r} (plugin {ours[(kind, name)]!r}) is already "
        + ("another composition's, added earlier" if (kind, name) in added else "the MCPServer's own")
        for kind, name in sorted(theirs & ours.keys())
    ]
    if clashes:
        raise ValueError(
            "add_to_mcpserver() refuses names the MCPServer already has (it would keep its own and drop the "
            "composition's silently): " + "; ".join(clashes) + ". Rename one side, or leave that plugin out"
        )


def _now(listing: Callable[[], Coroutine[Any, Any, list[Any]]]) -> list[Any]:
    """The value of one of MCPServer's ``list_*`` coroutines, which read its tables and never suspend."""
    coroutine = listing()
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(list[Any], done.value)
    coroutine.close()  # a later SDK that suspends here: run it on a loop of its own
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, listing()).result()


_request: ContextVar[Ctx | None] = ContextVar("mcp_providers_mcpserver_request", default=None)
"""The MCPServer request being answered (set by :func:`_remember_request`)."""

Ask = Callable[[str, Any], Awaitable[Any]]
"""``ask(method, params) -> result``: one request of the composition's, as the current MCPServer request."""


async def _remember_request(ctx: Ctx, call_next: Callable[[Ctx], Awaitable[Any]]) -> Any:
    """MCPServer middleware: the request's context, for the functions :func:`add_to_mcpserver` registered."""
    token = _request.set(ctx)
    try:
        return await call_next(ctx)
    finally:
        _request.reset(token)


def _asker(composition: Composition) -> Ask:
    """Answers ``resources/read``, ``tools/call`` and ``prompts/get`` through the composition's
    pipeline (its handler table, :func:`~mcp_providers._serve.binding.dispatcher`), with the
    current MCPServer request's context; its ``MCPError`` (codes, messages, data) raised as itself.

    The request's own params are sent when it is that method (its ``arguments`` as the client
    sent them, a 2026-07-28 retry's ``inputResponses`` and ``requestState``, its ``_meta``); else
    ``params``. The result is the method's result model, or an ``InputRequiredResult`` (a tool
    asks the client a question on a 2026-07-28 connection)."""
    handlers = {m: dispatcher(composition.runtime, composition.pipeline, m) for m in _ASKED}

    async def ask(method: str, params: Any) -> Any:
        ctx = _request.get()
        if ctx is None:
            raise RuntimeError(
                f"{method} of the composition was asked outside a request MCPServer received; "
                "add_to_mcpserver answers its clients' requests (send it through an MCP client of that server)"
            )
        if ctx.method == method and isinstance(ctx.params, dict):
            params = type(params).model_validate(ctx.params, by_name=False)
        async with composition.running():  # nested: a count when the MCPServer's lifespan holds it
            result = await handlers[method](ctx, params)
        if isinstance(result, dict):  # a read is answered in wire form
            done = result.get("resultType") == "input_required"
            return (types.InputRequiredResult if done else _ASKED[method]).model_validate(result, by_name=False)
        return result

    return ask


_ASKED: dict[str, type[Any]] = {
    "resources/read": types.ReadResourceResult,
    "tools/call": types.CallToolResult,
    "prompts/get": types.GetPromptResult,
}
"""The methods :func:`add_to_mcpserver` answers through the pipeline, and their result models."""


def _add_resources(mcp: MCPServer, composition: Composition, ask: Ask) -> None:
    from mcp.server.mcpserver.resources import Resource as MCPResource

    async def read(uri: str) -> str | bytes:
        # An MCPError passes through MCPServer unchanged, so the composition's code (-32602 not
        # found, -32003 denied, -32004 too large ...), message and data reach the client.
        result = await ask("resources/read", types.ReadResourceRequestParams(uri=uri))
        item = result.contents[0]
        if isinstance(item, types.TextResourceContents):
            return str(item.text)
        return base64.b64decode(item.blob)

    class _Bridged(MCPResource):
        async def read(self) -> str | bytes:
            return await read(str(self.uri))

    for entry in composition.catalog.resources:
        d = entry.declaration
        mcp.add_resource(
            _Bridged(
                uri=d.uri,
                name=d.name,
                title=d.title,
                description=d.description,
                mime_type=d.mime_type or "text/plain",
                icons=icons_wire(d.icons),
            )
        )
    for t_entry in composition.catalog.templates:
        td = t_entry.declaration
        template = UriTemplate.parse(td.uri_template)
        mcp.resource(
            td.uri_template,
            name=td.name,
            title=td.title,
            description=td.description,
            mime_type=td.mime_type,
            icons=icons_wire(td.icons),
        )(_template_function(td.name, template, read))


def _add_tools(mcp: MCPServer, composition: Composition, ask: Ask) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    for tool_entry in composition.catalog.tools:
        tool = tool_entry.declaration
        mcp.add_tool(
            _tool_function(tool.name, tool.input_model, tool.output_model, ask, ToolError),
            name=tool.name,
            title=tool.title,
            description=tool.description,
            icons=icons_wire(tool.icons),
            annotations=tool_annotations(tool),
        )


def _add_prompts(mcp: MCPServer, composition: Composition, ask: Ask) -> None:
    from mcp.server.mcpserver.prompts import Prompt as MCPPrompt

    for p_entry in composition.catalog.prompts:
        prompt = p_entry.declaration
        fn = _prompt_function(prompt.name, [(a.name, a.required) for a in prompt.arguments], ask)
        mcp.add_prompt(
            MCPPrompt.from_function(
                fn, name=prompt.name, title=prompt.title, description=prompt.description, icons=icons_wire(prompt.icons)
            )
        )


def _prompt_function(name: str, arguments: list[tuple[str, bool]], ask: Ask) -> Callable[..., Awaitable[list[Any]]]:
    from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage

    async def fn(**kwargs: str | None) -> list[Any]:
        given = {k: v for k, v in kwargs.items() if v is not None}
        result = await ask("prompts/get", types.GetPromptRequestParams(name=name, arguments=given))
        return [
            (UserMessage if m.role == "user" else AssistantMessage)(
                m.content.text if isinstance(m.content, types.TextContent) else str(m.content)
            )
            for m in result.messages
        ]

    keyword = inspect.Parameter.KEYWORD_ONLY
    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(n, keyword, annotation=str)
            if required
            else inspect.Parameter(n, keyword, annotation=str | None, default=None)
            for n, required in arguments
        ]
    )
    fn.__annotations__ = {n: (str if required else str | None) for n, required in arguments}
    fn.__name__ = name.replace("-", "_").replace(".", "_")
    return fn


def _template_function(
    name: str, template: UriTemplate, read: Callable[[str], Awaitable[str | bytes]]
) -> Callable[..., Awaitable[str | bytes]]:
    # MCPServer requires the function's parameters to equal the template's variables.
    async def fn(**values: str) -> str | bytes:
        return await read(template.expand(values))

    names = template.variable_names
    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in names]
    )
    fn.__annotations__ = {n: str for n in names}
    fn.__name__ = name.replace("-", "_")
    return fn


def _tool_function(
    name: str,
    input_model: type[Any],
    output_model: type[Any] | None,
    ask: Ask,
    tool_error: type[Exception],
) -> Callable[..., Awaitable[Any]]:
    async def fn(**arguments: Any) -> Any:
        payload = input_model(**arguments).model_dump(mode="json", by_alias=True, exclude_unset=True)
        result = await ask("tools/call", types.CallToolRequestParams(name=name, arguments=payload))
        if isinstance(result, types.InputRequiredResult):
            return result  # MCPServer passes it through (the return annotation admits it)
        if result.is_error:
            text = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))
            raise tool_error(text)
        if output_model is not None:
            return output_model.model_validate(result.structured_content)
        return list(result.content)

    parameters = []
    annotations: dict[str, Any] = {}
    for field_name, info in input_model.model_fields.items():
        # Annotated keeps the field's description and constraints in the derived schema; the
        # default travels in the signature (a FieldInfo carrying default_factory could not).
        described = Field(description=info.description, title=info.title, examples=info.examples)
        annotation = cast(Any, Annotated)[(info.annotation, *info.metadata, described)]
        default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        parameters.append(
            inspect.Parameter(field_name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        )
        annotations[field_name] = annotation
    # InputRequiredResult in the annotation: MCPServer passes a 2026-07-28 input round through, and
    # derives the output schema from the other arm alone
    returned = output_model if output_model is not None else list[types.ContentBlock]
    annotations["return"] = returned | types.InputRequiredResult
    fn.__signature__ = inspect.Signature(parameters, return_annotation=annotations["return"])  # type: ignore[attr-defined]
    fn.__annotations__ = annotations
    fn.__name__ = name.replace("-", "_").replace(".", "_")
    return fn
