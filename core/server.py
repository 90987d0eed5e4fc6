"""Binds a :class:`~mcp_providers.composition.Composition` to the SDK's low-level ``Server``.

The low-level server is used because ``MCPServer`` cannot paginate, carry ``size``, add templates
programmatically or take a provider's own input schema (see the SDK notes). A handler is passed
only for a category that has declarations, so the advertised capabilities are true.

Every read walks the same pipeline: route -> authorize -> provider.read under the read deadline
-> size budget -> result. Errors a provider raises on purpose (:mod:`mcp_providers.errors`) keep
their code and message; anything else becomes -32603 with the provider named and the traceback
logged to stderr, never the exception text (it may carry secrets).
"""

from __future__ import annotations

import base64
import contextlib
import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp_providers.blocks import media_wire
from mcp_providers.channel import SessionChannel, set_log_level
from mcp_providers.composition import Composition
from mcp_providers.errors import (
    Denied,
    InvalidParams,
    ReadTimeout,
    RequestError,
    TooLarge,
    ToolFailure,
    UpstreamError,
)
from mcp_providers.models import Annotations, Resource, ResourceTemplate
from mcp_providers.policy import Action, Decision
from mcp_providers.providers import (
    CompletionRequest,
    Content,
    Link,
    Message,
    ReadRequest,
    ToolCall,
    ToolResult,
)
from pydantic import BaseModel, ValidationError

__all__ = ["build_server", "subject_of"]

log = logging.getLogger("mcp_providers.server")

Ctx = ServerRequestContext[Any, Any]
R = TypeVar("R")


def subject_of(ctx: Ctx) -> str:
    """Who is asking: the verified bearer token's client id over HTTP, ``"local"`` otherwise."""
    request = ctx.request
    if request is None:
        return "local"
    user = getattr(request, "scope", {}).get("user")
    token = getattr(user, "access_token", None)
    return str(getattr(token, "client_id", None) or "anonymous")


def _annotations(a: Annotations | None) -> types.Annotations | None:
    if a is None:
        return None
    return types.Annotations(
        audience=list(a.audience) if a.audience is not None else None,
        priority=a.priority,
        last_modified=a.last_modified.isoformat() if a.last_modified else None,
    )


def _resource_wire(r: Resource) -> types.Resource:
    return types.Resource(
        uri=r.uri,
        name=r.name,
        title=r.title,
        description=r.description,
        mime_type=r.mime_type,
        size=r.size,
        annotations=_annotations(r.annotations),
        _meta=r.meta,
    )


def _template_wire(t: ResourceTemplate) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        uri_template=t.uri_template,
        name=t.name,
        title=t.title,
        description=t.description,
        mime_type=t.mime_type,
        annotations=_annotations(t.annotations),
        _meta=t.meta,
    )


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True)


def _mcp_error(exc: RequestError) -> MCPError:
    return MCPError(exc.code, exc.message, exc.data)


def build_server(composition: Composition) -> Server[object]:
    """Build the SDK ``Server`` for ``composition`` (use :attr:`Composition.server`, which caches it)."""
    catalog = composition.catalog
    settings = composition.config.server
    authorize_hook = composition.plugin_manager.hook.authorize

    def allowed(subject: str, action: Action, target: str) -> Decision:
        if not authorize_hook.get_hookimpls():  # fast path: no policy installed
            return Decision(True)
        decision = authorize_hook(subject=subject, action=action, target=target)
        return decision if isinstance(decision, Decision) else Decision(True)

    def require(subject: str, action: Action, target: str) -> None:
        decision = allowed(subject, action, target)
        if not decision.allow:
            why = f": {decision.reason}" if decision.reason else ""
            raise Denied(f"{action} on {target} is not allowed for {subject}{why}", data={"target": target})

    def visible(subject: str, targets: Sequence[tuple[str, R]]) -> list[R]:
        if not authorize_hook.get_hookimpls():
            return [item for _, item in targets]
        return [item for target, item in targets if allowed(subject, "list", target).allow]

    async def guarded(what: str, provider_name: str, call: Awaitable[R]) -> R:
        if provider_name in composition.startup_failures:
            if inspect.iscoroutine(call):
                call.close()  # never awaited: the provider is down
            raise UpstreamError(
                f"provider {provider_name!r} failed to start, so it cannot serve {what}; the server log has the details"
            )
        try:
            with anyio.fail_after(settings.read_timeout):
                return await call
        except TimeoutError:
            raise ReadTimeout(
                f"provider {provider_name!r} did not finish {what} within {settings.read_timeout:g} s "
                "(server.read_timeout); try again later or ask the operator to raise the deadline"
            ) from None

    def errors_to_wire(
        handler: Callable[[Ctx, Any], Awaitable[R]],
    ) -> Callable[[Ctx, Any], Awaitable[R]]:
        async def wrapped(ctx: Ctx, params: Any) -> R:
            try:
                return await handler(ctx, params)
            except RequestError as exc:
                raise _mcp_error(exc) from None

        return wrapped

    # -- resources -------------------------------------------------------------------------------

    resource_items = [(e.declaration.uri, _resource_wire(e.declaration)) for e in catalog.resources]
    template_items = [(e.declaration.uri_template, _template_wire(e.declaration)) for e in catalog.templates]

    @errors_to_wire
    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        items = visible(subject_of(ctx), resource_items)
        page = catalog.page("resources", items, params.cursor if params else None, settings.page_size)
        return types.ListResourcesResult(resources=list(page.items), next_cursor=page.next_cursor)

    @errors_to_wire
    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        items = visible(subject_of(ctx), template_items)
        page = catalog.page("templates", items, params.cursor if params else None, settings.page_size)
        return types.ListResourceTemplatesResult(resource_templates=list(page.items), next_cursor=page.next_cursor)

    @errors_to_wire
    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = params.uri
        route = catalog.route(uri)
        subject = subject_of(ctx)
        if isinstance(route.declaration, ResourceTemplate):
            require(subject, "expand", route.declaration.uri_template)
        require(subject, "read", uri)
        request = ReadRequest(uri=uri, resource=route.declaration, params=route.params, subject=subject)
        try:
            # object: a plugin may break its contract, and the client must get a clear error
            content = cast(object, await guarded(f"reading {uri}", route.provider.name, route.provider.read(request)))
        except RequestError:
            raise
        except Exception:
            log.exception("provider %r failed reading %s", route.provider.name, uri)
            raise MCPError(
                types.INTERNAL_ERROR,
                f"provider {route.provider.name!r} (plugin {route.plugin!r}) failed reading {uri}; "
                "the server log has the details",
                {"uri": uri},
            ) from None
        if not isinstance(content, Content):
            log.error("provider %r returned %r from read(); expected Content", route.provider.name, type(content))
            raise MCPError(
                types.INTERNAL_ERROR,
                f"provider {route.provider.name!r} (plugin {route.plugin!r}) returned "
                f"{type(content).__name__} for {uri}; expected Content",
                {"uri": uri},
            )
        budget = route.declaration.max_bytes or settings.max_read_bytes
        data = content.data
        if len(data) > budget:
            raise TooLarge(
                f"{uri} is {len(data)} bytes, over the read budget of {budget} bytes; read a narrower "
                "resource (a single record or a smaller page) or ask the operator to raise max_read_bytes",
                data={"uri": uri, "bytes": len(data), "budget": budget},
            )
        mime = content.mime_type or route.declaration.mime_type
        item: types.TextResourceContents | types.BlobResourceContents
        if content.text is not None:
            item = types.TextResourceContents(uri=uri, mime_type=mime, text=content.text)
        else:
            item = types.BlobResourceContents(uri=uri, mime_type=mime, blob=base64.b64encode(data).decode())
        return types.ReadResourceResult(contents=[item])

    # -- completion ------------------------------------------------------------------------------

    @errors_to_wire
    async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        subject = subject_of(ctx)
        arg = params.argument
        request = CompletionRequest(
            argument=arg.name, value=arg.value, context=(params.context.arguments or {}) if params.context else {}
        )
        values: Sequence[str]
        if isinstance(params.ref, types.ResourceTemplateReference):
            entry = catalog.template(params.ref.uri)
            if entry is None:
                raise InvalidParams(
                    f"No resource template {params.ref.uri!r}; see resources/templates/list",
                    data={"uri": params.ref.uri},
                )
            require(subject, "complete", params.ref.uri)
            variables = entry.declaration.completions.keys() | set(_variables(entry.declaration.uri_template))
            if arg.name not in variables:
                raise InvalidParams(
                    f"Template {params.ref.uri} has no variable {arg.name!r}; it has: {', '.join(sorted(variables))}"
                )
            values = await guarded(
                "completion", entry.provider.name, entry.provider.complete(entry.declaration, request)
            )
        else:
            p_entry = catalog.prompt(params.ref.name)
            if p_entry is None:
                raise InvalidParams(f"No prompt {params.ref.name!r}; see prompts/list")
            require(subject, "complete", params.ref.name)
            values = await guarded(
                "completion", p_entry.provider.name, p_entry.provider.complete(p_entry.declaration, request)
            )
        values = list(values)
        return types.CompleteResult(
            completion=types.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
        )

    # -- tools -----------------------------------------------------------------------------------

    tool_items = []
    for e in catalog.tools:
        t = e.declaration
        hints = t.annotations()
        tool_items.append(
            (
                t.name,
                types.Tool(
                    name=t.name,
                    title=t.title,
                    description=t.description,
                    input_schema=_schema(t.input_model),
                    output_schema=_schema(t.output_model) if t.output_model else None,
                    annotations=types.ToolAnnotations(
                        title=t.title,
                        read_only_hint=hints["readOnlyHint"],
                        destructive_hint=hints["destructiveHint"],
                        idempotent_hint=hints["idempotentHint"],
                        open_world_hint=hints["openWorldHint"],
                    ),
                    _meta=t.meta,
                ),
            )
        )

    @errors_to_wire
    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        items = visible(subject_of(ctx), tool_items)
        page = catalog.page("tools", items, params.cursor if params else None, settings.page_size)
        return types.ListToolsResult(tools=list(page.items), next_cursor=page.next_cursor)

    @errors_to_wire
    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        entry = catalog.tool(params.name)
        if entry is None:
            raise InvalidParams(f"Unknown tool {params.name!r}; see tools/list", data={"tool": params.name})
        tool = entry.declaration
        subject = subject_of(ctx)
        require(subject, "call", tool.name)
        try:
            arguments = tool.input_model.model_validate(params.arguments or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}" for err in exc.errors()
            )
            return _error_result(f"Invalid arguments for {tool.name}: {problems}")
        try:
            result = await guarded(
                f"tool {tool.name}",
                entry.provider.name,
                entry.provider.call(
                    ToolCall(tool=tool, arguments=arguments, subject=subject, channel=SessionChannel(ctx))
                ),
            )
        except ToolFailure as exc:
            return _error_result(f"{tool.name} failed: {exc}")
        except RequestError:
            raise
        except Exception:
            log.exception("provider %r failed running tool %s", entry.provider.name, tool.name)
            raise MCPError(
                types.INTERNAL_ERROR,
                f"provider {entry.provider.name!r} (plugin {entry.plugin!r}) failed running {tool.name}; "
                "the server log has the details",
            ) from None
        return _tool_result(tool.name, tool.output_model, result)

    # -- prompts ---------------------------------------------------------------------------------

    prompt_items = [
        (
            e.declaration.name,
            types.Prompt(
                name=e.declaration.name,
                title=e.declaration.title,
                description=e.declaration.description,
                arguments=[
                    types.PromptArgument(name=a.name, description=a.description, required=a.required)
                    for a in e.declaration.arguments
                ],
            ),
        )
        for e in catalog.prompts
    ]

    @errors_to_wire
    async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        items = visible(subject_of(ctx), prompt_items)
        page = catalog.page("prompts", items, params.cursor if params else None, settings.page_size)
        return types.ListPromptsResult(prompts=list(page.items), next_cursor=page.next_cursor)

    @errors_to_wire
    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        entry = catalog.prompt(params.name)
        if entry is None:
            raise InvalidParams(f"Unknown prompt {params.name!r}; see prompts/list")
        require(subject_of(ctx), "prompt", params.name)
        arguments = dict(params.arguments or {})
        missing = [a.name for a in entry.declaration.arguments if a.required and not arguments.get(a.name)]
        if missing:
            raise InvalidParams(f"Prompt {params.name} needs argument(s): {', '.join(missing)}")
        known = {a.name for a in entry.declaration.arguments}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise InvalidParams(
                f"Prompt {params.name} has no argument(s) {', '.join(unknown)}; it takes: {', '.join(sorted(known))}"
            )
        messages = await guarded(
            f"prompt {params.name}", entry.provider.name, entry.provider.render(entry.declaration, arguments)
        )
        return types.GetPromptResult(
            description=entry.declaration.description,
            messages=[types.PromptMessage(role=m.role, content=_message_wire(params.name, m)) for m in messages],
        )

    @contextlib.asynccontextmanager
    async def lifespan(_server: Server[object]) -> AsyncIterator[object]:
        async with composition.running():
            yield {}

    has_resources = bool(catalog.resources or catalog.templates)
    server: Server[object] = Server(
        settings.name,
        version=_version(),
        lifespan=lifespan,
        on_list_resources=list_resources if has_resources else None,
        on_list_resource_templates=list_templates if has_resources else None,
        on_read_resource=read_resource if has_resources else None,
        on_completion=complete if (catalog.templates or catalog.prompts) else None,
        on_list_tools=list_tools if catalog.tools else None,
        on_call_tool=call_tool if catalog.tools else None,
        on_list_prompts=list_prompts if catalog.prompts else None,
        on_get_prompt=get_prompt if catalog.prompts else None,
    )
    # logging/setLevel is registered directly: the constructor's on_set_logging_level warns that
    # logging is deprecated at 2026-07-28, but 2025-11-25 clients still set levels for the log
    # messages tools send (ToolCall.log); the SDK keeps the method off the 2026 wire itself.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


def _variables(uri_template: str) -> list[str]:
    from mcp.shared.uri_template import UriTemplate

    return UriTemplate.parse(uri_template).variable_names


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    """``logging/setLevel``: the least severe level ``ToolCall.log`` sends on this connection."""
    set_log_level(ctx, params.level)
    return types.EmptyResult()


def _message_wire(
    prompt: str, m: Message
) -> types.TextContent | types.ImageContent | types.AudioContent | types.ResourceLink:
    """The wire content of one prompt message (``prompt`` names it in errors)."""
    block = m.content
    if block is None:
        return types.TextContent(type="text", text=m.text or "")
    if isinstance(block, Link):
        return types.ResourceLink(
            type="resource_link",
            uri=block.uri,
            name=block.name,
            description=block.description,
            mime_type=block.mime_type,
        )
    try:
        return media_wire(block)
    except TypeError as exc:
        raise MCPError(types.INTERNAL_ERROR, f"prompt {prompt} returned a message with bad content: {exc}") from None


def _tool_result(name: str, output_model: type[BaseModel] | None, result: object) -> types.CallToolResult:
    if not isinstance(result, ToolResult):
        if isinstance(result, BaseModel):
            result = ToolResult(output=result)
        else:
            raise MCPError(types.INTERNAL_ERROR, f"tool {name} returned {type(result).__name__}; expected ToolResult")
    content: list[types.ContentBlock] = []
    structured = None
    if result.output is not None:
        if output_model is None or not isinstance(result.output, output_model):
            raise MCPError(
                types.INTERNAL_ERROR,
                f"tool {name} returned {type(result.output).__name__}; its declared output model is "
                f"{output_model.__name__ if output_model else 'none'}",
            )
        structured = result.output.model_dump(mode="json", by_alias=True)
        content.append(types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False)))
    elif output_model is not None:
        raise MCPError(types.INTERNAL_ERROR, f"tool {name} returned no output; it declares {output_model.__name__}")
    if result.text:
        content.append(types.TextContent(type="text", text=result.text))
    content.extend(media_wire(block) for block in result.content)
    for link in result.links:
        content.append(
            types.ResourceLink(
                type="resource_link",
                uri=link.uri,
                name=link.name,
                description=link.description,
                mime_type=link.mime_type,
            )
        )
    return types.CallToolResult(content=content, structured_content=structured)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp-providers")
    except PackageNotFoundError:
        return "0+unknown"
