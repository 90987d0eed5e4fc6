"""The same resources served three ways: composed providers, a hand-written ``MCPServer``, FastMCP 4.

Each generated provider ``i`` owns ``bench://p{i}/`` and declares 10 fixed resources
(``bench://p{i}/r{j}``) and 2 templates (``bench://p{i}/items/{id}`` and
``bench://p{i}/users/{user}/notes/{note}``). Every read returns a small JSON document (about 120
bytes) built once, so the benchmarks measure the servers, not the providers.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from typing import Any

from mcp_providers._serve.composition import Composition
from mcp_providers.config import ServerSettings
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Resource, ResourceTemplate
from mcp_providers.providers import Content, ReadRequest, ResourceProvider
from mcp_providers.testing import compose

FIXED = 10
MIME = "application/json"


def body(uri: str) -> str:
    return json.dumps({"uri": uri, "title": "A benchmark document", "tags": ["bench", "small"], "n": 42})


def fixed_uri(i: int, j: int) -> str:
    return f"bench://p{i}/r{j}"


def item_uri(i: int, item: str = "abc") -> str:
    return f"bench://p{i}/items/{item}"


class Generated(ResourceProvider):
    """Provider ``i``: 10 fixed resources and 2 templates, answered from memory."""

    def __init__(self, i: int) -> None:
        self.name = f"gen-{i}"
        self.prefixes = (f"bench://p{i}/",)
        self.i = i
        self._fixed = {fixed_uri(i, j): body(fixed_uri(i, j)) for j in range(FIXED)}

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=u, name=f"p{self.i}-r{j}", mime_type=MIME) for j, u in enumerate(self._fixed)]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(uri_template=f"bench://p{self.i}/items/{{id}}", name=f"p{self.i}-item", mime_type=MIME),
            ResourceTemplate(
                uri_template=f"bench://p{self.i}/users/{{user}}/notes/{{note}}", name=f"p{self.i}-note", mime_type=MIME
            ),
        ]

    async def read(self, request: ReadRequest) -> Content:
        text = self._fixed.get(request.uri)
        return Content(text=text if text is not None else body(request.uri))


class _Plugin:
    def __init__(self, i: int) -> None:
        self.i = i

    @hookimpl
    def register_resource_providers(self, settings: Any) -> list[ResourceProvider]:
        return [Generated(self.i)]


def composed(n: int, *, otel: bool = False, coalesce: bool = True) -> Composition:
    """``n`` generated providers, one plugin each; ``otel`` puts back the SDK's tracing middleware."""
    composition = compose({f"gen{i:04d}": _Plugin(i) for i in range(n)}, server=ServerSettings(coalesce_reads=coalesce))
    if otel:
        from mcp.server._otel import OpenTelemetryMiddleware  # the SDK default, for the before/after pair

        composition.server.middleware.insert(0, OpenTelemetryMiddleware())
    return composition


def _template_fn(names: list[str], uri_of: Callable[..., str], fn_name: str) -> Callable[..., str]:
    def fn(**kw: str) -> str:
        return body(uri_of(**kw))

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in names]
    )
    fn.__annotations__ = {n: str for n in names}
    fn.__name__ = fn_name
    return fn


def mcpserver(n: int = 1, *, otel: bool = True) -> Any:
    """A hand-written SDK ``MCPServer`` serving the same resources as :func:`composed`.

    ``otel=True`` is what a user of ``MCPServer`` gets (the SDK's ``OpenTelemetryMiddleware`` on);
    ``otel=False`` removes it, the switch the composed server has on by default.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.resources import TextResource

    server = MCPServer("bench-sdk", log_level="WARNING")
    if not otel:
        from mcp.server._otel import OpenTelemetryMiddleware

        lowlevel = server._lowlevel_server
        lowlevel.middleware = [m for m in lowlevel.middleware if not isinstance(m, OpenTelemetryMiddleware)]
    for i in range(n):
        for j in range(FIXED):
            u = fixed_uri(i, j)
            server.add_resource(TextResource(uri=u, name=f"p{i}-r{j}", mime_type=MIME, text=body(u)))
        server.resource(f"bench://p{i}/items/{{id}}", name=f"p{i}-item", mime_type=MIME)(
            _template_fn(["id"], lambda id, i=i: item_uri(i, id), f"item{i}")
        )
        server.resource(f"bench://p{i}/users/{{user}}/notes/{{note}}", name=f"p{i}-note", mime_type=MIME)(
            _template_fn(["user", "note"], lambda user, note, i=i: f"bench://p{i}/users/{user}/notes/{note}", f"n{i}")
        )
    return server


def sdk_floor() -> Any:
    """The SDK's floor for a read: a low-level ``Server`` whose ``resources/read`` handler returns one
    result made in advance (the same contents the others serve), the SDK's OTel middleware off.

    What any server whose handlers run inside the SDK's runner pays before its handler does any work:
    the runner's checks of the request for its version, the context, and the result's validation and
    dump. Read against it, a composed read's remainder is the pipeline's own cost, and ``MCPServer``'s
    is what its resource manager adds.
    """
    from mcp import types
    from mcp.server._otel import OpenTelemetryMiddleware
    from mcp.server.lowlevel.server import Server

    results = {
        u: types.ReadResourceResult(contents=[types.TextResourceContents(uri=u, mime_type=MIME, text=body(u))])
        for u in (fixed_uri(0, j) for j in range(FIXED))
    }

    async def read(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return results[str(params.uri)]

    server: Any = Server("bench-sdk-floor", on_read_resource=read)
    server.middleware = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]
    return server


def fastmcp_mounted(n: int) -> Any:
    """FastMCP 4: a parent server mounting ``n`` child servers, one per generated provider."""
    from fastmcp import FastMCP

    parent = FastMCP("bench-fastmcp")
    for i in range(n):
        child = FastMCP(f"p{i}")
        for j in range(FIXED):
            u = fixed_uri(i, j)
            child.resource(u, name=f"p{i}-r{j}", mime_type=MIME)(_const(u, f"r{i}_{j}"))
        child.resource(f"bench://p{i}/items/{{id}}", name=f"p{i}-item", mime_type=MIME)(
            _template_fn(["id"], lambda id, i=i: item_uri(i, id), f"item{i}")
        )
        child.resource(f"bench://p{i}/users/{{user}}/notes/{{note}}", name=f"p{i}-note", mime_type=MIME)(
            _template_fn(["user", "note"], lambda user, note, i=i: f"bench://p{i}/users/{user}/notes/{note}", f"n{i}")
        )
        parent.mount(child)
    return parent


def _const(uri: str, fn_name: str) -> Callable[[], str]:
    text = body(uri)

    def fn() -> str:
        return text

    fn.__name__ = fn_name
    return fn
