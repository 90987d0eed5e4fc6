"""Provider base classes: what a plugin's hooks return, and what the core calls at request time.

A plugin subclasses one of these per data source::

    class Catalog(ResourceProvider):
        name = "ssg-catalog"
        prefixes = ("documcp://ssgs/",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="documcp://ssgs/available", name="ssgs", mime_type="application/json")]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text=json.dumps(...))

Declarations (``resources``, ``templates``, ``tools``, ``prompts``) are read once, at composition
time; the request-time methods (``read``, ``complete``, ``call``, ``render``) are called with the
declaration that matched, so a provider never parses URIs itself. ``lifespan`` is entered once when
the server starts and left when it stops: open network clients there, not at import.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from mcp_providers.models import Prompt, Resource, ResourceTemplate, Tool
from pydantic import BaseModel

__all__ = [
    "CompletionRequest",
    "Content",
    "Link",
    "Message",
    "PromptProvider",
    "ReadRequest",
    "ResourceProvider",
    "ToolCall",
    "ToolProvider",
    "ToolResult",
]


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """One ``resources/read``, routed to the provider that owns the URI.

    :param uri: the URI exactly as the client sent it.
    :param resource: the fixed resource or template that matched.
    :param params: template variables, percent-decoded exactly once (empty for a fixed URI).
    :param subject: who is asking (``"local"`` on stdio; the verified token's client on HTTP).
    """

    uri: str
    resource: Resource | ResourceTemplate
    params: Mapping[str, str] = field(default_factory=dict)
    subject: str = "local"


@dataclass(frozen=True, slots=True)
class Content:
    """What a read returns: exactly one of ``text`` and ``blob``.

    :param text: text content (sent as ``text``).
    :param blob: binary content (sent base64-encoded as ``blob``).
    :param mime_type: overrides the declaration's MIME type for this read.
    """

    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("Content takes exactly one of text= and blob=")

    @property
    def data(self) -> bytes:
        """The bytes served: UTF-8 of ``text``, or ``blob``."""
        return self.blob if self.blob is not None else (self.text or "").encode()


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """One ``completion/complete`` for a template variable or prompt argument.

    :param argument: the variable or argument name.
    :param value: what the user has typed so far.
    :param context: values of the other arguments already chosen.
    """

    argument: str
    value: str
    context: Mapping[str, str] = field(default_factory=dict)


def _prefix_filter(values: Sequence[str], typed: str) -> list[str]:
    typed = typed.casefold()
    return [v for v in values if v.casefold().startswith(typed)]


class ResourceProvider:
    """Serves read-only data under the URI prefixes it owns.

    Subclasses set :attr:`name` and :attr:`prefixes` and override :meth:`resources` and/or
    :meth:`templates`, and :meth:`read`.
    """

    name: str = ""
    """Unique provider name, e.g. ``"ssg-catalog"``."""
    prefixes: tuple[str, ...] = ()
    """URI prefixes this provider owns (scheme, ``://``, optional authority and path), e.g.
    ``("documcp://ssgs/",)``. Two providers' prefixes may not overlap."""

    def resources(self) -> Sequence[Resource]:
        """Fixed resources, listed by ``resources/list``. Called once, at composition."""
        return ()

    def templates(self) -> Sequence[ResourceTemplate]:
        """Resource templates, listed by ``resources/templates/list``. Called once, at composition."""
        return ()

    async def read(self, request: ReadRequest) -> Content:
        """Read one resource this provider declared.

        :raises mcp_providers.errors.NotFound: the URI matched a template but names nothing.
        :raises mcp_providers.errors.InvalidParams: a template value is malformed.
        :raises mcp_providers.errors.UpstreamError: the data source failed.
        """
        raise NotImplementedError(f"{type(self).__name__}.read")

    async def complete(self, template: ResourceTemplate, request: CompletionRequest) -> Sequence[str]:
        """Values for a template variable; by default the declared ones starting with the typed text."""
        return _prefix_filter(template.completions.get(request.argument, ()), request.value)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open what reads need (HTTP clients, files) while the server runs."""
        yield


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One ``tools/call``: the declaration and the arguments already validated against its model."""

    tool: Tool
    arguments: BaseModel
    subject: str = "local"


@dataclass(frozen=True, slots=True)
class Link:
    """A ``resource_link`` content block pointing at a URI a provider serves."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns.

    :param output: an instance of the tool's ``output_model`` (sent as ``structuredContent`` and,
        serialized, as a text block), or ``None`` for a tool with no output model.
    :param text: extra text for the model.
    :param links: resource links to URIs served by this composition.
    """

    output: BaseModel | None = None
    text: str | None = None
    links: tuple[Link, ...] = ()


class ToolProvider:
    """Serves tools the model may call."""

    name: str = ""
    """Unique provider name."""

    def tools(self) -> Sequence[Tool]:
        """Declared tools. Called once, at composition."""
        return ()

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one tool.

        :raises mcp_providers.errors.ToolFailure: an expected failure the model should see and
            may correct (sent as a result with ``isError: true``).
        """
        raise NotImplementedError(f"{type(self).__name__}.call")

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open what calls need while the server runs."""
        yield


@dataclass(frozen=True, slots=True)
class Message:
    """One prompt message: who says it and the text."""

    role: Literal["user", "assistant"]
    text: str


class PromptProvider:
    """Serves user-controlled prompt templates."""

    name: str = ""

    def prompts(self) -> Sequence[Prompt]:
        """Declared prompts. Called once, at composition."""
        return ()

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        """Render one prompt; required arguments are present (the core checks them)."""
        raise NotImplementedError(f"{type(self).__name__}.render")

    async def complete(self, prompt: Prompt, request: CompletionRequest) -> Sequence[str]:
        """Values for a prompt argument; by default the declared ones starting with the typed text."""
        for argument in prompt.arguments:
            if argument.name == request.argument:
                return _prefix_filter(argument.completions, request.value)
        return []

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open what rendering needs while the server runs."""
        yield
