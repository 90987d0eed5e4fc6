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
import functools
import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.shared.uri_template import UriTemplate
from pydantic import BaseModel, ValidationError

from mcp_providers.audit import AuditLog
from mcp_providers.blocks import media_wire
from mcp_providers.catalog import Route
from mcp_providers.channel import SessionChannel, set_log_level
from mcp_providers.coalesce import Coalescer
from mcp_providers.composition import Composition
from mcp_providers.custody import RECEIPT_KEY, cache_hint, digest, receipt
from mcp_providers.errors import (
    Denied,
    InvalidParams,
    NotFound,
    ReadTimeout,
    RequestError,
    Stale,
    TooLarge,
    ToolFailure,
    UpstreamError,
)
from mcp_providers.models import Annotations, Freshness, Resource, ResourceTemplate
from mcp_providers.policy import Action
from mcp_providers.providers import (
    CompletionRequest,
    Content,
    Embed,
    Link,
    Message,
    ReadRequest,
    ToolCall,
    ToolResult,
)
from mcp_providers.sideeffects import side_effect_scope

__all__ = ["MAX_AGE_META_KEY", "build_server", "subject_of", "tracing_configured"]

MAX_AGE_META_KEY = "io.mcp-providers/maxAge"
"""Request ``_meta`` key: the oldest content, in seconds, the caller accepts (``0`` = current)."""

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
    return str(getattr(token, "subject", None) or getattr(token, "client_id", None) or "anonymous")


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
    authorizer = composition.authorizer
    audit = AuditLog(settings.audit_log)
    records = {r.name: r for r in composition.records}

    @functools.cache
    def origin(plugin: str) -> tuple[str | None, str | None]:
        """(distribution, version) of a plugin, read once on first use rather than at start-up."""
        record = records.get(plugin)
        return (record.distribution, record.version) if record is not None else (None, None)

    hub = composition.subscriptions
    coalescer: Coalescer[Content] = Coalescer()

    allowed = authorizer

    def require(subject: str, action: Action, target: str, actor: str = "application") -> None:
        decision = allowed(subject, action, target)
        if not decision.allow:
            audit.record(
                actor=actor, subject=subject, operation=action, target=target, decision="denied", reason=decision.reason
            )
            why = f": {decision.reason}" if decision.reason else ""
            raise Denied(
                f"permission-denied: {action} on {target} is not allowed for {subject}{why}",
                data={"target": target, "action": action, "rule": "permission-denied"},
            )

    unfiltered: dict[int, list[Any]] = {}  # id of a constant target list -> its items, built once

    def require_uri(subject: str, action: Action, canonical: str, raw: str, actor: str = "application") -> None:
        """Authorize a URI in its canonical form, and as sent when that differs (either refusal stands)."""
        require(subject, action, canonical, actor)
        if raw != canonical:
            require(subject, action, raw, actor)

    def visible(subject: str, targets: Sequence[tuple[str, R]]) -> list[R]:
        if not authorizer.active:  # fast path: no policy installed, so a page costs O(page), not O(total)
            items = unfiltered.get(id(targets))
            if items is None:
                items = unfiltered[id(targets)] = [item for _, item in targets]
            return items
        return [item for target, item in targets if allowed(subject, "list", target).allow]

    async def guarded(what: str, provider_name: str, call: Awaitable[R]) -> R:
        if provider_name in composition.startup_failures:
            if inspect.iscoroutine(call):
                call.close()  # never awaited: the provider is down
            raise UpstreamError(
                f"provider {provider_name!r} failed to start, so it cannot serve {what}; the server log has the details"
            )
        # A bare cancel scope, not anyio.fail_after: same deadline, a third cheaper per read.
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + settings.read_timeout):
                return await call
        except TimeoutError:
            pass  # a provider's own timeout reads as the deadline, as it did with fail_after
        # Reached when the deadline cancelled the call (the scope swallowed the cancellation).
        raise ReadTimeout(
            f"provider {provider_name!r} did not finish {what} within {settings.read_timeout:g} s "
            "(server.read_timeout); try again later or ask the operator to raise the deadline"
        )

    async def shielded(what: str, plugin: str, provider_name: str, call: Awaitable[R]) -> R:
        """:func:`guarded`, with a provider's unexpected exception turned into -32603 naming it
        (the exception text stays in the log: it may carry secrets)."""
        try:
            return await guarded(what, provider_name, call)
        except (RequestError, ToolFailure):
            raise
        except Exception:
            log.exception("provider %r (plugin %r) failed %s", provider_name, plugin, what)
            raise MCPError(
                types.INTERNAL_ERROR,
                f"provider {provider_name!r} (plugin {plugin!r}) failed {what}; the server log has the details",
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
        subject = subject_of(ctx)
        items = visible(subject, resource_items)
        page = catalog.page("resources", items, params.cursor if params else None, settings.page_size)
        audit.record(
            actor="application", subject=subject, operation="resources/list", target="*", count=len(page.items)
        )
        return types.ListResourcesResult(resources=list(page.items), next_cursor=page.next_cursor)

    @errors_to_wire
    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        subject = subject_of(ctx)
        items = visible(subject, template_items)
        page = catalog.page("templates", items, params.cursor if params else None, settings.page_size)
        audit.record(
            actor="application",
            subject=subject,
            operation="resources/templates/list",
            target="*",
            count=len(page.items),
        )
        return types.ListResourceTemplatesResult(resource_templates=list(page.items), next_cursor=page.next_cursor)

    def audit_failure(ctx: Ctx, actor: str, operation: str, target: str, exc: Exception) -> None:
        if isinstance(exc, Denied):
            return  # recorded where the denial happened
        code, message = (exc.code, exc.message) if isinstance(exc, RequestError | MCPError) else (0, type(exc).__name__)
        audit.record(
            actor=actor,
            subject=subject_of(ctx),
            operation=operation,
            target=target[:2048],
            decision="error",
            reason=f"{code}: {message[:300]}",
        )

    @errors_to_wire
    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        try:
            return await read_one(ctx, params)
        except Exception as exc:
            audit_failure(ctx, "application", "resources/read", params.uri, exc)
            raise

    async def read_one(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = params.uri
        route = catalog.route(uri)
        subject = subject_of(ctx)
        if isinstance(route.declaration, ResourceTemplate):
            require(subject, "expand", route.declaration.uri_template)
        require_uri(subject, "read", route.canonical, uri)
        declaration = route.declaration
        demanded = _max_age(params)
        if demanded is not None:
            _refuse_if_stale(uri, declaration.freshness, demanded, None, after_read=False)
        request = ReadRequest(uri=uri, resource=declaration, params=route.params, subject=subject)
        try:
            mode = settings.side_effects.get(route.plugin, "enforce")
            with side_effect_scope(provider=route.provider.name, plugin=route.plugin, target=uri, mode=mode) as scope:
                # object: a plugin may break its contract, and the client must get a clear error
                key = (route.provider.name, uri, subject)
                pending = (
                    coalescer.run(key, lambda: route.provider.read(request))
                    if settings.coalesce_reads
                    else route.provider.read(request)
                )
                content = cast(object, await guarded(f"reading {uri}", route.provider.name, pending))
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
        if demanded is not None:
            _refuse_if_stale(uri, declaration.freshness, demanded, content.as_of, after_read=True)
        budget = declaration.max_bytes or settings.max_read_bytes
        data = content.data
        truncation = None
        if len(data) > budget:
            if not declaration.allow_truncation:
                raise TooLarge(
                    f"{uri} is {len(data)} bytes, over the read budget of {budget} bytes; read a narrower "
                    "resource (a single record or a smaller page) or ask the operator to raise max_read_bytes",
                    data={"uri": uri, "bytes": len(data), "budget": budget},
                )
            original = len(data)
            content = _truncate(content, budget)
            data = content.data
            truncation = {
                "originalBytes": original,
                "servedBytes": len(data),
                "budget": budget,
                "reason": "over the read budget; the provider allows truncation",
            }
        mime = content.mime_type or declaration.mime_type
        distribution, version = origin(route.plugin)
        is_template = isinstance(declaration, ResourceTemplate)
        custody = receipt(
            actor="application",
            operation="resources/read",
            subject=subject,
            provider=route.provider.name,
            plugin=route.plugin,
            distribution=distribution,
            version=version,
            data=data,
            mime_type=mime,
            uri=uri,
            template=declaration.uri_template if isinstance(declaration, ResourceTemplate) else None,
            params=route.params if is_template else None,
            freshness=declaration.freshness,
            truncation=truncation,
            extra={**({"asOf": content.as_of.isoformat()} if content.as_of else {}), **scope.receipt_fields()},
        )
        audit.record(actor="application", subject=subject, operation="resources/read", target=uri, receipt=custody)
        item: types.TextResourceContents | types.BlobResourceContents
        if content.text is not None:
            item = types.TextResourceContents(uri=uri, mime_type=mime, text=content.text)
        else:
            item = types.BlobResourceContents(uri=uri, mime_type=mime, blob=base64.b64encode(data).decode())
        hint = cache_hint(declaration.freshness)
        return types.ReadResourceResult(
            contents=[item], ttl_ms=hint.ttl_ms, cache_scope=hint.scope, _meta={RECEIPT_KEY: custody}
        )

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
            template = UriTemplate.parse(entry.declaration.uri_template)
            chosen = {k: v for k, v in request.context.items() if k in template.variable_names and k != arg.name}
            if authorizer.active and chosen:
                # Completing inside a scope (e.g. instance=prod) reveals what is in it: it takes read there.
                require(subject, "read", template.expand(chosen))
            with side_effect_scope(
                provider=entry.provider.name,
                plugin=entry.plugin,
                target=params.ref.uri,
                kind="completion",
                mode=settings.side_effects.get(entry.plugin, "enforce"),
            ):
                values = await shielded(
                    f"completing {arg.name} of {params.ref.uri}",
                    entry.plugin,
                    entry.provider.name,
                    entry.provider.complete(entry.declaration, request),
                )
            if authorizer.active:  # offer only values whose resources the caller may read
                values = [v for v in values if allowed(subject, "read", template.expand({**chosen, arg.name: v})).allow]
        else:
            p_entry = catalog.prompt(params.ref.name)
            if p_entry is None:
                raise InvalidParams(f"No prompt {params.ref.name!r}; see prompts/list")
            require(subject, "complete", params.ref.name)
            with side_effect_scope(
                provider=p_entry.provider.name,
                plugin=p_entry.plugin,
                target=params.ref.name,
                kind="completion",
                mode=settings.side_effects.get(p_entry.plugin, "enforce"),
            ):
                values = await shielded(
                    f"completing {arg.name} of prompt {params.ref.name}",
                    p_entry.plugin,
                    p_entry.provider.name,
                    p_entry.provider.complete(p_entry.declaration, request),
                )
        values = list(values)
        return types.CompleteResult(
            completion=types.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
        )

    # -- tools -----------------------------------------------------------------------------------

    @functools.cache
    def tool_items() -> list[tuple[str, types.Tool]]:
        """The tools list, built on first use: JSON Schemas from pydantic are slow to make."""
        items = []
        for e in catalog.tools:
            t = e.declaration
            hints = t.annotations()
            tool = types.Tool(
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
            )
            items.append((t.name, tool))
        return items

    @errors_to_wire
    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        items = visible(subject_of(ctx), tool_items())
        page = catalog.page("tools", items, params.cursor if params else None, settings.page_size)
        return types.ListToolsResult(tools=list(page.items), next_cursor=page.next_cursor)

    @errors_to_wire
    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = await call_one(ctx, params)
        except Exception as exc:
            audit_failure(ctx, "model", "tools/call", params.name, exc)
            raise
        if result.is_error:
            # That it failed, not why: the text may quote argument values, which the log never holds.
            audit.record(
                actor="model",
                subject=subject_of(ctx),
                operation="tools/call",
                target=params.name,
                decision="error",
                reason="the tool returned an error result",
            )
        return result

    async def call_one(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        entry = catalog.tool(params.name)
        if entry is None:
            raise InvalidParams(f"Unknown tool {params.name!r}; see tools/list", data={"tool": params.name})
        tool = entry.declaration
        subject = subject_of(ctx)
        require(subject, "call", tool.name, actor="model")
        try:
            arguments = tool.input_model.model_validate(params.arguments or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg'].removeprefix('Value error, ')}"
                for err in exc.errors()
            )
            return _error_result(f"Invalid arguments for {tool.name}: {problems}")
        scope = (
            side_effect_scope(
                provider=entry.provider.name,
                plugin=entry.plugin,
                target=tool.name,
                kind="tool",
                mode=settings.side_effects.get(entry.plugin, "enforce"),
            )
            if tool.effects == "none"
            else contextlib.nullcontext()
        )
        try:
            with scope as in_scope:
                result = await guarded(
                    f"tool {tool.name}",
                    entry.provider.name,
                    entry.provider.call(
                        ToolCall(
                            tool=tool,
                            arguments=arguments,
                            subject=subject,
                            channel=SessionChannel(ctx),
                            authorizer=authorizer if authorizer.active else None,
                        )
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
        out = _tool_result(tool.name, tool.output_model, result)
        transforms = []
        if isinstance(result, ToolResult):
            # Links and embeds must name URIs this composition serves (a link is never fetched here);
            # one that does not is dropped and the receipt says so, rather than failing the call.
            for link in result.links:
                if served(link.uri, tool.name) is None:
                    transforms.append(f"dropped resource_link {link.uri}: not served by this server")
                    continue
                out.content.append(
                    types.ResourceLink(
                        type="resource_link",
                        uri=link.uri,
                        name=link.name,
                        description=link.description,
                        mime_type=link.mime_type,
                    )
                )
            for embed in result.embedded:
                route = served(embed.uri, tool.name)
                if route is None:
                    transforms.append(f"dropped embedded resource {embed.uri}: not served by this server")
                    continue
                block, transform = embedded(embed, route, subject, tool.name)
                out.content.append(block)
                if transform:
                    transforms.append(transform)
        data = _tool_bytes(out)
        distribution, version = origin(entry.plugin)
        args_json = json.dumps(arguments.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        custody = receipt(
            actor="model",
            operation="tools/call",
            subject=subject,
            provider=entry.provider.name,
            plugin=entry.plugin,
            distribution=distribution,
            version=version,
            data=data,
            mime_type="application/json" if out.structured_content is not None else "text/plain",
            side_effects=tool.effects,
            transforms=transforms,
            extra={
                "tool": tool.name,
                "idempotent": tool.annotations()["idempotentHint"],  # read-only tools are idempotent
                "openWorld": tool.open_world,
                "argumentsSha256": digest(args_json.encode()),
                **(in_scope.receipt_fields() if in_scope is not None else {}),
            },
        )
        audit.record(actor="model", subject=subject, operation="tools/call", target=tool.name, receipt=custody)
        out.meta = {**(out.meta or {}), RECEIPT_KEY: custody}
        return out

    def served(uri: str, tool_name: str) -> Route | None:
        """Where ``uri`` goes, or ``None`` (logged) when this server does not serve it."""
        try:
            return catalog.route(uri)
        except NotFound:
            log.warning("tool %s pointed at %s, which this server does not serve; dropped", tool_name, uri)
            return None

    def embedded(embed: Embed, route: Route, subject: str, tool_name: str) -> tuple[types.ContentBlock, str | None]:
        # The caller must be allowed to see the bytes.
        require_uri(subject, "read", route.canonical, embed.uri, actor="model")
        size = len(embed.data)
        if size > settings.max_embed_bytes:
            if embed.over_budget == "error":
                raise TooLarge(
                    f"embed-over-budget: tool {tool_name} would embed {embed.uri} ({size} bytes), over the "
                    f"embed budget of {settings.max_embed_bytes} bytes; read the resource instead",
                    data={
                        "uri": embed.uri,
                        "bytes": size,
                        "budget": settings.max_embed_bytes,
                        "rule": "embed-over-budget",
                    },
                )
            link = types.ResourceLink(
                type="resource_link", uri=embed.uri, name=embed.uri, mime_type=embed.mime_type, size=size
            )
            return link, f"embed-over-budget->resource_link {embed.uri} ({size} bytes)"
        resource: types.TextResourceContents | types.BlobResourceContents
        if embed.text is not None:
            resource = types.TextResourceContents(uri=embed.uri, mime_type=embed.mime_type, text=embed.text)
        else:
            resource = types.BlobResourceContents(
                uri=embed.uri, mime_type=embed.mime_type, blob=base64.b64encode(embed.data).decode()
            )
        return types.EmbeddedResource(type="resource", resource=resource), None

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
        with side_effect_scope(
            provider=entry.provider.name,
            plugin=entry.plugin,
            target=params.name,
            kind="prompt",
            mode=settings.side_effects.get(entry.plugin, "enforce"),
        ):
            messages = await shielded(
                f"rendering prompt {params.name}",
                entry.plugin,
                entry.provider.name,
                entry.provider.render(entry.declaration, arguments),
            )
        subject = subject_of(ctx)
        for m in messages:
            if isinstance(m.content, Embed):  # embedded evidence must be served and readable by the caller
                catalog.route(m.content.uri)
                require(subject, "read", m.content.uri)
        return types.GetPromptResult(
            description=entry.declaration.description,
            messages=[types.PromptMessage(role=m.role, content=_message_wire(params.name, m)) for m in messages],
        )

    @contextlib.asynccontextmanager
    async def lifespan(_server: Server[object]) -> AsyncIterator[object]:
        audit.open()
        try:
            async with composition.running():
                yield {}
        finally:
            audit.close()

    # -- subscriptions (both eras) ---------------------------------------------------------------

    def may_watch(subject: str, uri: str) -> None:
        hub.watchable(uri)
        require_uri(subject, "subscribe", catalog.route(uri).canonical, uri)

    @errors_to_wire
    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        subject = subject_of(ctx)
        may_watch(subject, params.uri)
        hub.subscribe(ctx.session, subject, params.uri)
        audit.record(actor="application", subject=subject, operation="resources/subscribe", target=params.uri)
        return types.EmptyResult()

    @errors_to_wire
    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        hub.unsubscribe(ctx.session, params.uri)
        return types.EmptyResult()

    @errors_to_wire
    async def listen(ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        subject = subject_of(ctx)
        for uri in params.notifications.resource_subscriptions or ():
            may_watch(subject, uri)
        audit.record(
            actor="application",
            subject=subject,
            operation="subscriptions/listen",
            target=",".join(params.notifications.resource_subscriptions or ()),
        )
        return await hub.listen(ctx, params, subject)

    has_resources = bool(catalog.resources or catalog.templates)
    live = any(e.declaration.freshness.kind == "live" for e in catalog.resources) or any(
        e.declaration.freshness.kind == "live" for e in catalog.templates
    )
    server: Server[object] = Server(
        settings.name,
        version=_version(),
        lifespan=lifespan,
        on_list_resources=list_resources if has_resources else None,
        on_list_resource_templates=list_templates if has_resources else None,
        on_read_resource=read_resource if has_resources else None,
        on_subscribe_resource=subscribe if live else None,
        on_unsubscribe_resource=unsubscribe if live else None,
        on_subscriptions_listen=listen if live else None,
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
    if not tracing_configured():
        # The SDK's tracing middleware builds a span per request even with no tracer installed.
        server.middleware = [m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]
    return server


def tracing_configured() -> bool:
    """Whether an OpenTelemetry tracer provider has been set (``trace.set_tracer_provider`` or
    ``OTEL_PYTHON_TRACER_PROVIDER``).

    :func:`build_server` keeps the SDK's per-request tracing middleware only when this is true, so
    set the provider before the server is built; without one the spans were no-ops anyway.
    """
    import os

    from opentelemetry import trace

    if os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"):
        return True
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _max_age(params: types.RequestParams) -> float | None:
    """The caller's freshness demand from ``_meta``, in seconds, or ``None``."""
    meta = params.meta or {}
    value = meta.get(MAX_AGE_META_KEY)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidParams(f"_meta {MAX_AGE_META_KEY} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def _refuse_if_stale(
    uri: str, freshness: Freshness, demanded: float, as_of: datetime | None, *, after_read: bool
) -> None:
    """Refuse (``stale-content``) when the content cannot be ``demanded`` seconds fresh.

    Static content never changes and live content is read now, so both satisfy any demand. A
    ``max_age`` provider satisfies demands no stricter than its maximum, or stricter ones when the
    content it returned says how old it is (``Content.as_of``); this is why the check runs before
    the read (to spare the upstream) and again after it. ``unspecified`` satisfies none.
    """
    if freshness.kind in ("static", "live"):
        return
    if as_of is not None:
        age = (datetime.now(UTC) - as_of).total_seconds()
        if age <= demanded:
            return
        detail = f"the content is {age:.1f} s old"
    elif freshness.kind == "max_age" and freshness.max_age_seconds is not None:
        if freshness.max_age_seconds <= demanded or not after_read:
            return
        detail = f"the provider only promises content up to {freshness.max_age_seconds:g} s old"
    else:
        detail = "the provider declares no freshness"
    raise Stale(
        f"stale-content: {uri} cannot be served at most {demanded:g} s old: {detail}; "
        "accept older content or read a live resource",
        data={"uri": uri, "maxAge": demanded, "rule": "stale-content"},
    )


def _truncate(content: Content, budget: int) -> Content:
    """The first ``budget`` bytes of ``content`` (text cut at a character boundary)."""
    if content.text is not None:
        cut = content.text.encode()[:budget].decode("utf-8", errors="ignore")
        return Content(text=cut, mime_type=content.mime_type, as_of=content.as_of)
    return Content(blob=(content.blob or b"")[:budget], mime_type=content.mime_type, as_of=content.as_of)


def _variables(uri_template: str) -> list[str]:
    return UriTemplate.parse(uri_template).variable_names


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    """``logging/setLevel``: the least severe level ``ToolCall.log`` sends on this connection."""
    set_log_level(ctx, params.level)
    return types.EmptyResult()


def _message_wire(
    prompt: str, m: Message
) -> types.TextContent | types.ImageContent | types.AudioContent | types.ResourceLink | types.EmbeddedResource:
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
    if isinstance(block, Embed):
        resource: types.TextResourceContents | types.BlobResourceContents
        if block.text is not None:
            resource = types.TextResourceContents(uri=block.uri, mime_type=block.mime_type, text=block.text)
        else:
            resource = types.BlobResourceContents(
                uri=block.uri, mime_type=block.mime_type, blob=base64.b64encode(block.data).decode()
            )
        return types.EmbeddedResource(type="resource", resource=resource)
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
    return types.CallToolResult(content=content, structured_content=structured)


def _tool_bytes(result: types.CallToolResult) -> bytes:
    """What a tool receipt digests: the canonical JSON of ``structuredContent`` (sorted keys, no
    spaces) when there is one, else the text blocks joined by newlines."""
    if result.structured_content is not None:
        return json.dumps(result.structured_content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent)).encode()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp-providers")
    except PackageNotFoundError:
        return "0+unknown"
