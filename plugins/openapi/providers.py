"""A service's operations as the same declarations any provider makes, and the two providers serving them.

Mapping (each declaration's ``meta[ORIGIN_KEY]`` names the service, its document's title and
version, and the operation: ``operationId``, ``method``, ``path``; ``inspect`` shows it):

- ``GET`` with no parameters -> a fixed :class:`~mcp_providers.models.Resource`,
  ``GET /store/inventory`` -> ``openapi://petstore/store/inventory``;
- ``GET`` with path or query parameters -> a :class:`~mcp_providers.models.ResourceTemplate`, the
  path as an RFC 6570 template and the query parameters as ``{?a,b}`` (a parameter's ``enum``
  values are its completions):
  ``GET /pet/{petId}`` -> ``openapi://petstore/pet/{petId}``, ``GET /pet/findByStatus?status`` ->
  ``openapi://petstore/pet/findByStatus{?status}``;
- any other method -> a :class:`~mcp_providers.models.Tool` named ``<tool prefix><operationId>``
  (the service's errors come back as a result with ``isError``, naming the service),
  its input schema the path and query parameters plus ``body`` (the JSON request body); effects
  from the method (POST additive; PUT, PATCH and DELETE destructive and idempotent), each
  overridable per operationId in the settings (POST's ``additive`` is the method's word, not a
  fact checked here: its origin carries it as a claim, which ``inspect`` shows as unknown).
  Before sending, a tool asks the gate for ``call`` on the URI its path and path values name
  (``PUT /docs/{s}/{n}`` -> ``openapi://svc/docs/a/b``), so a rule on a path holds for its tools
  as for its reads.

The MIME type of a resource is its first 2xx response's media type (JSON preferred).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from mcp_providers.errors import InvalidParams, NotFound, TooLarge, ToolFailure, UpstreamError
from mcp_providers.models import EFFECTS_CLAIM_KEY, ORIGIN_KEY, Effects, Resource, ResourceTemplate, Tool
from mcp_providers.plugins._schemas import UnsafeSchema
from mcp_providers.plugins.openapi.client import Answer, Service
from mcp_providers.plugins.openapi.document import BODY, Operation
from mcp_providers.plugins.openapi.names import LeftOut
from mcp_providers.plugins.openapi.query import from_uri, is_object, simple
from mcp_providers.plugins.openapi.schema import arguments_model
from mcp_providers.plugins.openapi.values import Values, enum_of, spelled
from mcp_providers.providers import Content, ReadRequest, ResourceProvider, ToolCall, ToolProvider, ToolResult

__all__ = ["OpenAPIResources", "OpenAPITools", "selected"]

log = logging.getLogger(__name__)

_EFFECTS: dict[str, tuple[Effects, bool]] = {
    "POST": ("additive", False),
    "PUT": ("destructive", True),
    "PATCH": ("destructive", True),
    "DELETE": ("destructive", True),
}


def selected(service: Service) -> tuple[list[Operation], list[str]]:
    """The operations ``service`` serves, and one line per operation left out saying why."""
    s = service.settings
    out: list[Operation] = []
    left: list[str] = []
    if service.error is not None:  # a service that cannot be reached declares nothing, so lists never advertise it
        return out, left
    for op in service.document.operations if service.document else ():
        why = op.unsupported
        if why is None and s.include_operations and op.operation_id not in s.include_operations:
            why = "not in include_operations"
        elif why is None and op.operation_id in s.exclude_operations:
            why = "in exclude_operations"
        elif why is None and s.include_tags and not set(op.tags) & set(s.include_tags):
            why = "has none of include_tags"
        elif why is None and set(op.tags) & set(s.exclude_tags):
            why = "has one of exclude_tags"
        elif why is None and op.method == "GET":
            why = _not_a_template(op)
        if why is None:
            out.append(op)
        else:
            left.append(f"openapi: service {s.name!r}: {op.operation_id} ({op.method} {op.path}) left out: {why}")
    return out, left


def _not_a_template(op: Operation) -> str | None:
    """Why the parameters of GET operation ``op`` cannot be the variables of its URI template: a
    name with no variable, two names made one variable (``a-b`` and ``a_b``: :attr:`~.Parameter.variable`),
    or an object in the query."""
    bad = [p.name for p in op.parameters if not p.variable or (p.variable != p.name and not p.variable.strip("_"))]
    if bad:
        return f"parameter(s) {', '.join(map(repr, bad))} cannot be URI template variables (no letter or digit)"
    seen: dict[str, str] = {}
    for p in op.parameters:
        if p.variable in seen:
            return (f"parameters {seen[p.variable]!r} and {p.name!r} would both be the template variable "
                    f"{p.variable!r}; rename one in the document")  # fmt: skip
        seen[p.variable] = p.name
    objects = [p.name for p in op.parameters if p.location == "query" and is_object(p)]
    if objects:  # a template variable holds one string, an object's members are name=value pairs
        return f"query parameter(s) {', '.join(objects)} take an object, which a URI template variable cannot"
    return None


def _origin(service: Service, op: Operation, **more: str) -> dict[str, Any]:
    return {ORIGIN_KEY: {"service": service.name, "document": service.label, **op.origin, **more}}


def _renamed(op: Operation) -> str | None:
    """``"api_version as api-version"``: each template variable named unlike its parameter, or ``None``."""
    renamed = [f"{p.variable} as {p.name}" for p in op.parameters if p.variable != p.name]
    return ", ".join(renamed) or None


def uri_of(service: Service, op: Operation) -> str:
    """The URI or URI template of GET operation ``op``, each parameter as its template variable
    (``GET /users/{user-id}?api-version`` -> ``.../users/{user_id}{?api_version}``)."""
    path = op.path
    for p in op.parameters:
        if p.location == "path" and p.variable != p.name:
            path = path.replace("{" + p.name + "}", "{" + p.variable + "}")
    query = [p.variable for p in op.parameters if p.location == "query"]
    return path_uri(service, path) + (f"{{?{','.join(query)}}}" if query else "")


def path_uri(service: Service, path: str) -> str:
    """``path`` (an operation's, or one with its values put in) as a URI under the service's prefix:
    ``/docs/a/b`` -> ``openapi://svc/docs/a/b``, what a read of that path would ask the gate."""
    prefix = service.settings.owned_prefix
    return prefix + (path.lstrip("/") if prefix.endswith("/") else path)


class OpenAPIResources(ResourceProvider):
    """The GET operations of one service, as resources and templates under its owned prefix."""

    def __init__(self, service: Service, operations: Sequence[Operation]) -> None:
        self.name = f"openapi-{service.name}"
        self.prefixes = (service.settings.owned_prefix,)
        self.source = service.settings.setting  # its prefix overlapping another's leaves out this service alone
        self.service = service
        self.left_out: tuple[Any, ...] = tuple(service.left_out)  # check's left-out advisories
        self._values: dict[str, Values] = {}
        self._resources: list[Resource] = []
        self._templates: list[ResourceTemplate] = []
        self._by_key: dict[str, Operation] = {}
        for op in operations:
            if op.method != "GET":
                continue
            try:
                self._values[op.operation_id] = Values(op)
            except UnsafeSchema as exc:  # this operation only, as a tool's: the others serve
                why = f"service {service.settings.name!r}: operation {op.operation_id!r} is left out: its schema {exc}"
                log.warning("%s", why)
                self.left_out += (LeftOut(op.operation_id, why, "fix the schema in the document"),)
                continue
            key = uri_of(service, op)
            renamed = _renamed(op)
            fields: dict[str, Any] = {
                "name": op.operation_id,
                "title": op.summary,
                "description": _description(service, op),
                "mime_type": op.response_media,
                "meta": _origin(service, op, **({"variables": renamed} if renamed else {})),
            }
            if op.parameters:
                self._templates.append(
                    ResourceTemplate(uri_template=key, completions=_enums(op), opaque_query=True, **fields)
                )
            else:
                self._resources.append(Resource(uri=key, **fields))
            self._by_key[key] = op

    def resources(self) -> Sequence[Resource]:
        return self._resources

    def templates(self) -> Sequence[ResourceTemplate]:
        return self._templates

    async def read(self, request: ReadRequest) -> Content:
        declaration = request.resource
        key = declaration.uri if isinstance(declaration, Resource) else declaration.uri_template
        op = self._by_key[key]
        params = {p.name: request.params[p.variable] for p in op.parameters if p.location == "path"}
        # The query as sent (the gate judged it too): the canonical URI keeps one value per variable.
        query = from_uri(op, request.requested_uri or request.uri)
        missing = [p.variable for p in op.parameters if p.location == "query" and p.required and p.name not in query]
        if missing:
            example = "&".join(f"{name}=..." for name in missing)
            raise InvalidParams(
                f"{op.operation_id} needs the query parameter(s) {', '.join(missing)}: read "
                f"{request.uri.split('?')[0]}?{example}",
                data={"uri": request.uri[:200], "missing": missing},
            )
        self._values[op.operation_id].check(params, query)  # as the schema says, in one spelling
        path = self.service.url(op, params)
        answer = await self.service.send(op, path, query=query, gate_uri=request.uri, principal=request.principal)
        return _content(answer)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self.service.opened():
            yield


def _enums(op: Operation) -> dict[str, tuple[str, ...]]:
    """Completion values of each parameter whose schema (or whose array's items) is an ``enum``."""
    out = {}
    for p in op.parameters:
        schema = p.schema.get("items", p.schema) if p.schema.get("type") == "array" else p.schema
        choices = enum_of(schema, p.schema.get("$defs", {}))
        if choices is not None:
            out[p.variable] = tuple(str(v) for v in choices)
    return out


def _content(answer: Answer) -> Content:
    if answer.textual:
        try:
            return Content(text=answer.body.decode("utf-8"), mime_type=answer.media)
        except UnicodeDecodeError:
            pass
    return Content(blob=answer.body, mime_type=answer.media)


def _description(service: Service, op: Operation) -> str:
    said = (op.description or op.summary or "").strip()
    origin = f"{op.method} {op.path} ({op.operation_id}) of {service.label}, service {service.name!r}."
    if op.method == "GET" and (renamed := _renamed(op)):
        origin += f" Template variables named unlike their parameters (sent under their own names): {renamed}."
    return f"{said}\n\n{origin}" if said else origin


def input_schema(op: Operation) -> dict[str, Any]:
    """The tool's JSON Schema: one property per path and query parameter, plus ``body``."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    defs: dict[str, Any] = {}
    for p in op.parameters:
        own = dict(p.schema)
        defs.update(own.pop("$defs", {}))
        properties[p.name] = {**own, **({"description": p.description} if p.description else {})}
        if p.required or p.location == "path":
            required.append(p.name)
    if op.body is not None:
        body = dict(op.body)
        defs.update(body.pop("$defs", {}))
        properties[BODY] = body
        if op.body_required:
            required.append(BODY)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    if defs:
        schema["$defs"] = defs
    return schema


class OpenAPITools(ToolProvider):
    """The other operations of one service, as tools."""

    def __init__(self, service: Service, operations: Sequence[Operation]) -> None:
        self.name = f"openapi-{service.name}-tools"
        self.source = service.settings.setting
        self.service = service
        self._tools: list[Tool] = []
        self._by_name: dict[str, Operation] = {}
        self.left_out: list[LeftOut] = []
        """Operations whose schema is not checked here (``check`` lists them)."""
        overrides = service.settings.effects
        for op in operations:
            if op.method == "GET":
                continue
            name = (service.settings.tools_prefix + re.sub(r"[^A-Za-z0-9_.-]", "_", op.operation_id))[:128]
            effects, idempotent = _EFFECTS[op.method]
            effects = overrides.get(op.operation_id, effects)
            claimed = op.operation_id not in overrides and effects != "destructive"  # the method's word only
            claim = f"method {op.method}, taken as {effects} (what the service does is not checked)"
            try:
                arguments = arguments_model(f"{name}Arguments", input_schema(op), checked=True)
            except UnsafeSchema as exc:  # this operation only: the others serve
                why = f"service {service.settings.name!r}: operation {op.operation_id!r} is left out: its schema {exc}"
                log.warning("%s", why)
                self.left_out.append(LeftOut(op.operation_id, why, "fix the schema in the document"))
                continue
            self._tools.append(
                Tool(
                    name=name,
                    title=op.summary,
                    description=_description(service, op),
                    effects=effects,
                    idempotent=idempotent,
                    open_world=True,
                    meta=_origin(service, op, **({EFFECTS_CLAIM_KEY: claim} if claimed else {})),
                    input_model=arguments,
                )
            )
            self._by_name[name] = op

    def tools(self) -> Sequence[Tool]:
        return self._tools

    async def call(self, call: ToolCall) -> ToolResult:
        """Send the tool's operation with ``call.arguments``; the service's answer as text.

        :raises Denied: the policy refuses ``call`` on the path's URI (-32003; nothing is sent).
        :raises ToolFailure: a refused value, or the service's error (a result with ``isError``).
        """
        op = self._by_name[call.tool.name]
        arguments = call.arguments.model_dump(mode="json")
        path_values = {
            p.name: simple(arguments[p.name]) for p in op.parameters if p.location == "path" and p.name in arguments
        }
        query = {p.name: arguments[p.name] for p in op.parameters if p.location == "query" and p.name in arguments}
        try:
            for p in op.parameters:  # the path the gate judges: each value in its one spelling
                if p.location == "path" and isinstance(arguments.get(p.name), str):
                    spelled(op, p, arguments[p.name])
            path = self.service.url(op, path_values)
        except InvalidParams as exc:
            raise ToolFailure(exc.message) from None
        # The gate judged the tool by name; a rule on the path (openapi://svc/docs/private/*) must
        # hold for the path's tools as for its reads: asked before anything is sent (Denied: -32003).
        uri = path_uri(self.service, path)
        call.require("call", uri)
        try:
            answer = await self.service.send(
                op, path, query=query, body=arguments.get(BODY), gate_uri=uri, principal=call.principal
            )
        except (InvalidParams, NotFound, TooLarge, UpstreamError) as exc:  # the model sees it and may correct
            raise ToolFailure(exc.message) from None
        return ToolResult(text=_tool_text(answer))

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self.service.opened():
            yield


def _tool_text(answer: Answer) -> str:
    if not answer.body:
        return f"HTTP {answer.status} (no content)"
    if answer.textual:
        text = answer.body.decode("utf-8", "replace")
        if answer.media and "json" in answer.media:
            with contextlib.suppress(ValueError):
                return json.dumps(json.loads(text), ensure_ascii=False)
        return text
    return f"HTTP {answer.status}: {len(answer.body)} bytes of {answer.media or 'unknown type'}"
