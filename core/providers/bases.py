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
from datetime import datetime
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel

from mcp_providers import credentials, policy
from mcp_providers.credentials import Credential, Upstream
from mcp_providers.errors import ToolFailure
from mcp_providers.identity import LOCAL, Principal
from mcp_providers.models import Extension, ExtensionMethod, Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.policy import Action

__all__ = [
    "LOG_LEVELS",
    "Audio",
    "ClientChannel",
    "CompletionRequest",
    "Content",
    "Elicited",
    "Embed",
    "ExtensionProvider",
    "ExtensionRequest",
    "Image",
    "Link",
    "LogLevel",
    "Media",
    "Message",
    "PromptProvider",
    "Publisher",
    "ReadRequest",
    "ResourceProvider",
    "Sampled",
    "Text",
    "ToolCall",
    "ToolProvider",
    "ToolResult",
]

# -- content blocks ------------------------------------------------------------------------------


def _check_mime(kind: str, mime_type: str, major: str) -> None:
    if not mime_type.startswith(f"{major}/"):
        example = "png" if major == "image" else "wav"
        raise ValueError(f"{kind} mime_type must be {major}/..., e.g. {major}/{example}; got {mime_type!r}")


@dataclass(frozen=True, slots=True)
class Text:
    """A ``text`` block.

    :param text: the text, sent as is.
    """

    text: str


@dataclass(frozen=True, slots=True)
class Image:
    """An ``image`` block.

    :param data: the raw image bytes (the core base64-encodes them).
    :param mime_type: ``image/...``, e.g. ``image/png``.
    :raises ValueError: the MIME type is not ``image/...`` or ``data`` is empty.
    """

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        _check_mime("Image", self.mime_type, "image")
        if not self.data:
            raise ValueError("Image data is empty")


@dataclass(frozen=True, slots=True)
class Audio:
    """An ``audio`` block.

    :param data: the raw audio bytes (the core base64-encodes them).
    :param mime_type: ``audio/...``, e.g. ``audio/wav``.
    :raises ValueError: the MIME type is not ``audio/...`` or ``data`` is empty.
    """

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        _check_mime("Audio", self.mime_type, "audio")
        if not self.data:
            raise ValueError("Audio data is empty")


Media = Text | Image | Audio
"""A text, image or audio block."""


# -- the client channel ---------------------------------------------------------------------------

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""Syslog severities as MCP names them, least severe first."""
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)


@dataclass(frozen=True, slots=True)
class Sampled:
    """The client's answer to :meth:`ClientChannel.sample`.

    :param text: the generated text (empty if the client answered with non-text content).
    :param model: the model that answered, as the client names it.
    :param stop_reason: why generation stopped (``"endTurn"``, ``"maxTokens"`` ...), if given.
    """

    text: str
    model: str
    stop_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Elicited:
    """The user's answer to :meth:`ClientChannel.elicit`.

    :param action: ``"accept"`` (``content`` holds the form), ``"decline"`` or ``"cancel"``.
    :param content: the submitted values, keyed by the schema's property names (empty unless accepted).
    """

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any]


class ClientChannel:
    """A channel with no client behind it: progress and logs go nowhere, requests fail.

    This is what a :class:`~mcp_providers.providers.ToolCall` built outside a server (a unit
    test, an embedding application calling a provider directly) carries.
    """

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress of this call (``progress`` should never decrease). No-op here."""

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message about this call (``data``: any JSON-serializable value). No-op here."""

    async def sample(
        self,
        prompt: str | Sequence[tuple[Literal["user", "assistant"], str]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
    ) -> Sampled:
        """Ask the client's model for a completion.

        :param prompt: a user message, or ``(role, text)`` pairs for a conversation.
        :param max_tokens: the most tokens the client may generate.
        :param system_prompt: an optional system prompt.
        :raises ToolFailure: there is no client to ask (always, on this channel).
        """
        raise ToolFailure("sampling needs a connected client; this call has none")

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicited:
        """Ask the user to fill in a form.

        :param message: what to ask, shown to the user.
        :param schema: a flat JSON Schema object (``{"type": "object", "properties": {...}}``) of
            primitive properties, as MCP's elicitation allows.
        :raises ToolFailure: there is no client to ask (always, on this channel).
        """
        raise ToolFailure("elicitation needs a connected client; this call has none")


# -- requests and providers -----------------------------------------------------------------------


class _ActsForCaller:
    """Upstream credentials of the request's caller (:mod:`mcp_providers.credentials`), for every
    request type that carries a ``principal``."""

    __slots__ = ()
    principal: Principal

    async def credential(self, upstream: Upstream) -> Credential:
        """A credential of this request's caller for ``upstream``, from the server's broker
        (cached per issuer, subject and upstream; concurrent calls share one obtain), recorded
        in this request's receipt and audit line as ``upstream: {name, subject, grant}``.

        :raises ~mcp_providers.credentials.CredentialRefused: the upstream will not grant one.
        """
        return await credentials.credential_for(upstream, self.principal)

    async def forget_credential(self, upstream: Upstream, stale: Credential | None = None) -> None:
        """Drop the caller's cached credential for ``upstream`` (the upstream rejected it, e.g. a
        401); the next :meth:`credential` obtains a new one. Pass the rejected credential as
        ``stale``: it is then dropped only while still cached, so requests refused together cause
        one refresh, not one each."""
        await credentials.forget_for(upstream, self.principal, stale)


@dataclass(frozen=True, slots=True)
class ReadRequest(_ActsForCaller):
    """One ``resources/read``, routed to the provider that owns the URI.

    :param uri: the URI the router matched, in canonical form (lower-case scheme, escapes of
        unreserved characters decoded: ``DOCUMCP://ssgs/%61vailable`` arrives as
        ``documcp://ssgs/available``), so comparing it with a declared URI holds for every spelling.
    :param resource: the fixed resource or template that matched.
    :param params: template variables, percent-decoded exactly once (empty for a fixed URI). No
        value holds a ``.`` or ``..`` path segment, a NUL or a leading ``/``, and a ``{name}``
        value no ``/`` or ``\\``, in any spelling: the router refuses those with -32602.
    :param requested_uri: the URI exactly as the client sent it (for messages); ``None`` when no
        client sent one (a unit test, ``mcp-providers check``).
    :param principal: who is asking (:data:`~mcp_providers.identity.LOCAL` on stdio; the verified
        token's principal on HTTP).
    """

    uri: str
    resource: Resource | ResourceTemplate
    params: Mapping[str, str] = field(default_factory=dict)
    requested_uri: str | None = None
    principal: Principal = LOCAL

    @property
    def subject(self) -> str:
        """``principal.subject`` (unique only within ``principal.issuer``)."""
        return self.principal.subject


@dataclass(frozen=True, slots=True)
class Content:
    """What a read returns: exactly one of ``text`` and ``blob``.

    :param text: text content (sent as ``text``).
    :param blob: binary content (sent base64-encoded as ``blob``).
    :param mime_type: overrides the declaration's MIME type for this read.
    :param as_of: when the source produced this content (timezone-aware); a provider with
        ``max_age`` freshness that knows the actual age lets the core serve requests demanding
        fresher data than the declared maximum.
    """

    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    as_of: datetime | None = None

    def __post_init__(self) -> None:
        """:raises ValueError: neither or both of ``text`` and ``blob``.
        :raises TypeError: a field of the wrong type (each goes on the wire as it is)."""
        if (self.text is None) == (self.blob is None):
            raise ValueError("Content takes exactly one of text= and blob=")
        for name, value, kinds, expected in (
            ("text", self.text, str, "a str"),
            ("blob", self.blob, bytes | bytearray, "bytes"),
            ("mime_type", self.mime_type, str, "a str such as 'text/plain'"),
            ("as_of", self.as_of, datetime, "a timezone-aware datetime"),
        ):
            if value is not None and not isinstance(value, kinds):
                raise TypeError(f"Content {name}= must be {expected} or None, not {type(value).__name__}")

    @property
    def data(self) -> bytes:
        """The bytes served: UTF-8 of ``text``, or ``blob``."""
        return self.blob if self.blob is not None else (self.text or "").encode()


@dataclass(frozen=True, slots=True)
class CompletionRequest(_ActsForCaller):
    """One ``completion/complete`` for a template variable or prompt argument.

    :param argument: the variable or argument name.
    :param value: what the user has typed so far.
    :param context: values of the other arguments already chosen.
    :param principal: who is asking (as on :class:`ReadRequest`).
    """

    argument: str
    value: str
    context: Mapping[str, str] = field(default_factory=dict)
    principal: Principal = LOCAL


def _prefix_filter(values: Sequence[str], typed: str) -> list[str]:
    typed = typed.casefold()
    return [v for v in values if v.casefold().startswith(typed)]


class Publisher(Protocol):
    """What a resource provider calls when one of its live resources changed (set by the core)."""

    async def resource_updated(self, uri: str) -> None:
        """Tell every authorized watcher of ``uri`` that it changed.

        :raises ValueError: ``uri`` is not a live resource this provider serves.
        """
        ...

    async def hold(self, source: str, seconds: float) -> bool:
        """Whether this process should poll ``source`` (a name unique to the provider) now.

        In one process always ``True``. With a cluster backend, one replica at a time holds a lease
        on ``source`` for ``seconds``, renewed by each call of its holder; the others get ``False``
        and take over when the holder stops renewing. Call it before every poll, with ``seconds``
        longer than the poll interval. Never raises: ``False`` when the backend is unreachable.
        """
        ...

    async def recall(self, source: str) -> str | None:
        """The text last given to :meth:`remember` for ``source`` (by any replica), or ``None``."""
        ...

    async def remember(self, source: str, text: str) -> None:
        """Keep ``text`` (e.g. a poller's last snapshot) for whoever polls ``source`` next; best effort."""
        ...

    async def declarations_changed(self, reason: str) -> bool:
        """Say that what this provider would declare changed at its source (an upstream MCP
        server's ``list_changed``): the provider is marked :attr:`ResourceProvider.stale` and the
        server reloads (composing again off the serving path, asking the plugin's hooks for new
        providers, checking and swapping them in; clients get ``list_changed``). Returns at once.

        :param reason: for the reload's log and ``mcp-providers reload`` (no secrets).
        :returns: ``False`` when this server has no reloader (a test, an embedder), so nothing happens.
        """
        ...


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
    publisher: Publisher | None = None
    """Set by the core before :meth:`lifespan` starts: call
    ``await self.publisher.resource_updated(uri)`` when a resource declared live changed."""
    stale: bool = False
    """Set by :meth:`Publisher.declarations_changed`: the next reload asks this provider's plugin
    for new providers even though its settings are unchanged."""

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

    def check_watch(self, declaration: Resource | ResourceTemplate, params: Mapping[str, str]) -> None:
        """Refuse a watch on a URI that matches a watchable declaration but can never change, such
        as a template value naming nothing configured; called before a subscription is accepted,
        without any I/O. By default every such URI may be watched.

        :raises mcp_providers.errors.InvalidParams: the values name nothing this provider serves.
        """

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open what reads need (HTTP clients, files) while the server runs."""
        yield


@dataclass(frozen=True, slots=True)
class ExtensionRequest(_ActsForCaller):
    """One request of an extension method, its params validated against the method's model.

    :param method: the declaration requested.
    :param params: an instance of ``method.params_model``.
    :param principal: who asks.
    """

    method: ExtensionMethod
    params: BaseModel
    principal: Principal = LOCAL

    def require(self, action: Action, target: str) -> None:
        """Ask the policy about the data this request touches (as :meth:`ToolCall.require`).

        :raises mcp_providers.errors.Denied: the policy refuses (the client gets -32003).
        """
        policy.require(action, target, asked_by=f"method {self.method.name}")


class ExtensionProvider:
    """Serves extensions (SEP-2133): their capability settings and their request methods."""

    name: str = ""
    """Unique provider name."""

    def extensions(self) -> Sequence[Extension]:
        """Declared extensions. Called once per composition."""
        return ()

    async def handle(self, request: ExtensionRequest) -> Mapping[str, Any]:
        """Answer one request; the result is a JSON object (``_meta`` allowed).

        :raises mcp_providers.errors.RequestError: a refusal with its JSON-RPC code (e.g.
            :class:`~mcp_providers.errors.InvalidParams`).
        """
        raise NotImplementedError(f"{type(self).__name__}.handle")

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open what requests need while the server runs."""
        yield


@dataclass(frozen=True, slots=True)
class ToolCall(_ActsForCaller):
    """One ``tools/call``: the declaration and the arguments already validated against its model.

    :param tool: the declaration that was called.
    :param arguments: an instance of ``tool.input_model``.
    :param principal: who is calling (:data:`~mcp_providers.identity.LOCAL` on stdio; the verified
        token's principal on HTTP).
    :param channel: the way back to the calling client (see :class:`ClientChannel`). The
        default has no client behind it: progress and logs go nowhere, and ``sample``/``elicit``
        raise :class:`~mcp_providers.errors.ToolFailure`.
    """

    tool: Tool
    arguments: BaseModel
    principal: Principal = LOCAL
    channel: ClientChannel = field(default_factory=ClientChannel)

    @property
    def subject(self) -> str:
        """``principal.subject`` (unique only within ``principal.issuer``)."""
        return self.principal.subject

    def require(self, action: Action, target: str) -> None:
        """Ask the policy about the data this call touches; raise if it refuses.

        The core authorizes the call by the tool's name. A tool that reads or changes data also
        served as resources should ask about that data too, so a rule on its URIs holds for the
        tool as it does for reads: e.g. ``call.require("read", "servicenow://prod/incident")``
        before querying prod, ``call.require("call", "servicenow://prod/incident")`` before
        changing it. The same gate answers as for every other request (see
        :func:`mcp_providers.policy.require`).

        :raises mcp_providers.errors.Denied: the policy refuses (the client gets -32003).
        """
        policy.require(action, target, asked_by=f"tool {self.tool.name}")

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress, e.g. ``progress(50, 100)``; sent only if the client asked for progress."""
        await self.channel.progress(progress, total, message)

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send the client a log message at ``level`` (``"debug"`` ... ``"emergency"``).

        :raises ValueError: ``level`` is not an MCP log level.
        """
        await self.channel.log(level, data, logger)

    async def sample(
        self,
        prompt: str | Sequence[tuple[Literal["user", "assistant"], str]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
    ) -> Sampled:
        """Ask the client's model for a completion (``sampling/createMessage``).

        The same code serves every protocol version: before 2026-07-28 the question is a
        server-to-client request; on 2026-07-28 (no such requests) the call ends with an
        ``InputRequiredResult`` at the first question not yet answered and runs again from the
        start when the client retries with the answer, so keep what a tool does before its
        questions free of side effects (ask first, act after). See ``docs/protocol-versions.md``.

        :returns: the generated text, the model's name and the stop reason.
        :raises ~mcp_providers.errors.ToolFailure: the client cannot be asked (it did not declare
            the sampling capability, or the connection carries no server-to-client requests), or
            refused.
        """
        return await self.channel.sample(prompt, max_tokens=max_tokens, system_prompt=system_prompt)

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicited:
        """Ask the user to fill in a form described by a flat JSON Schema (``elicitation/create``).

        Both eras from the same code, as for :meth:`sample`: a server-to-client request before
        2026-07-28; an input round (``InputRequiredResult``, then the tool runs again with the
        answer) on 2026-07-28. Do not catch ``BaseException`` around it: the end of a round is one.

        :returns: the action (``accept``/``decline``/``cancel``) and the submitted values.
        :raises ~mcp_providers.errors.ToolFailure: the client cannot be asked (it did not declare
            the elicitation capability, or the connection carries no server-to-client requests),
            or refused.
        """
        return await self.channel.elicit(message, schema)


@dataclass(frozen=True, slots=True)
class Link:
    """A ``resource_link`` content block pointing at a URI a provider serves."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class Embed:
    """A resource embedded in a tool result: bounded evidence for this call.

    The URI must be one this composition serves and the caller may read. Over the server's
    ``max_embed_bytes`` the core replaces the embed with a ``resource_link`` to the same URI
    (``over_budget="link"``, recorded in the receipt) or fails the call (``"error"``).
    """

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    over_budget: Literal["link", "error"] = "link"

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("Embed takes exactly one of text= and blob=")

    @property
    def data(self) -> bytes:
        return self.blob if self.blob is not None else (self.text or "").encode()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns.

    :param output: an instance of the tool's ``output_model`` (sent as ``structuredContent`` and,
        serialized, as a text block), or ``None`` for a tool with no output model.
    :param text: extra text for the model.
    :param links: resource links to URIs served by this composition (never fetched by the core).
    :param embedded: resources embedded as evidence (see :class:`Embed`).
    :param content: media blocks (:class:`Text`,
        :class:`Image`, :class:`Audio`), sent in order
        after ``output`` and ``text``.
    """

    output: BaseModel | None = None
    text: str | None = None
    links: tuple[Link, ...] = ()
    embedded: tuple[Embed, ...] = ()
    content: tuple[Media, ...] = ()


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
    """One prompt message: who says it, and either text or one content block.

    ``Message("user", "Review this")`` or ``Message("user", content=Image(png, "image/png"))``.

    :param role: ``"user"`` or ``"assistant"``.
    :param text: the message text; exactly one of ``text`` and ``content``.
    :param content: a :class:`Text`, :class:`Image`
        or :class:`Audio` block, a :class:`Link`, or an :class:`Embed`
        whose URI this composition serves (the core checks it and the caller's right to read it).
    :raises ValueError: both or neither of ``text`` and ``content`` are given.
    """

    role: Literal["user", "assistant"]
    text: str | None = None
    content: Media | Link | Embed | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.content is None):
            raise ValueError("Message takes exactly one of text= and content=")


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
