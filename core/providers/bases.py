"""The provider base classes a plugin subclasses, one per kind of source: :class:`ResourceProvider`,
:class:`ToolProvider`, :class:`PromptProvider` and :class:`ExtensionProvider`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_providers.models import Extension, Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.providers.content import Content, Message, ToolResult
from mcp_providers.providers.requests import CompletionRequest, ExtensionRequest, ReadRequest, ToolCall

__all__ = ["ExtensionProvider", "PromptProvider", "Publisher", "ResourceProvider", "SourceSetting", "ToolProvider"]


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


@dataclass(frozen=True, slots=True)
class SourceSetting:
    """Where the one configured source a provider was made for is set, in its plugin's settings: an
    upstream MCP server, an OpenAPI service. A plugin that makes providers per configured entry sets
    :attr:`ResourceProvider.source` (and the same on the entry's tool and prompt providers).

    The operator, not the plugin's author, chose that source's prefix, so when it overlaps another
    provider's the core leaves out that source alone (every provider of the plugin with an equal
    ``source``), serves the plugin's other sources and the other side, and says which setting to
    change (:mod:`mcp_providers._host.collisions`). Example, for ``[[plugins.upstream.servers]]``
    named ``bad``: ``SourceSetting('servers "bad"', "prefixes")``.
    """

    entry: str
    """The entry in ``[plugins.<plugin>]``, as an operator finds it, e.g. ``servers "bad"``."""
    prefix_setting: str
    """The entry's setting that gives the provider its prefixes, e.g. ``prefixes``, ``namespace``."""
    rename: str = ""
    """What tells apart two items its source names alike (no prefix can), e.g. ``give one of them an
    operationId of its own in the document``; empty: only the source itself can rename one."""


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
    source: SourceSetting | None = None
    """The configured source this provider was made for, if one (:class:`SourceSetting`)."""

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
        without any I/O. It runs in the side-effect scope a read of the URI gets: a write, a process
        start or an unsafe HTTP request is refused (``-32008``), or logged in ``warn`` mode. By
        default every such URI may be watched.

        :raises mcp_providers.errors.InvalidParams: the values name nothing this provider serves.
        """

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Open what reads need (HTTP clients, files) while the server runs."""
        yield


class ExtensionProvider:
    """Serves extensions (SEP-2133): their capability settings and their request methods."""

    name: str = ""
    """Unique provider name."""
    source: SourceSetting | None = None
    """The configured source this provider was made for, if one (:class:`SourceSetting`)."""

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


class ToolProvider:
    """Serves tools the model may call."""

    name: str = ""
    """Unique provider name."""
    source: SourceSetting | None = None
    """The configured source this provider was made for, if one (:class:`SourceSetting`)."""

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


class PromptProvider:
    """Serves user-controlled prompt templates."""

    name: str = ""
    source: SourceSetting | None = None
    """The configured source this provider was made for, if one (:class:`SourceSetting`)."""

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
