"""One upstream MCP server as three providers (resources, tools, prompts) over one :class:`Link`.

Requests are forwarded as the upstream's own methods: a read as ``resources/read`` of the
upstream's URI (re-homed URIs mapped back), a call as ``tools/call`` of its own tool name, a
prompt as ``prompts/get``. The answers come back as this project's :class:`Content`,
:class:`ToolResult` and :class:`Message`, so budgets, receipts and wire shaping apply as to any
provider. The resource provider's ``lifespan`` holds the connection (:meth:`Link.serving`); the
tool and prompt providers use it while it is up.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import time
import warnings
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_providers import policy
from mcp_providers.errors import NotFound, RequestError, ToolFailure, UpstreamError
from mcp_providers.http import exempt
from mcp_providers.models import ORIGIN_KEY, Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.plugins.upstream.connect import reason
from mcp_providers.plugins.upstream.link import Link
from mcp_providers.plugins.upstream.listing import Listed, list_all, served_view
from mcp_providers.plugins.upstream.mapping import Homes, LeftOut, Listing
from mcp_providers.plugins.upstream.tasks import Handed, follow
from mcp_providers.providers import (
    Audio,
    CompletionRequest,
    Content,
    Embed,
    Image,
    Media,
    Message,
    PromptProvider,
    ReadRequest,
    ResourceProvider,
    Text,
    ToolCall,
    ToolProvider,
    ToolResult,
)
from mcp_providers.providers import (
    Link as ResourceLink,
)

__all__ = ["UpstreamPrompts", "UpstreamResources", "UpstreamTools"]

log = logging.getLogger(__name__)
SETTLE_SECONDS = 0.5
"""How long after a ``list_changed`` the upstream is listed again: a burst of them is one listing."""


class Flapping:
    """When each upstream's listing last changed (a reload each time): one that changes again and
    again (tools whose annotations flip on every connection) is listed again ever later, instead
    of reloading the server every few seconds for as long as it lives.

    Kept per process, since a reload replaces the providers that saw the changes. Within
    ``window`` seconds, ``free`` changes reload at once; each further one first waits ``base``
    seconds, doubled per change, at most ``longest``.
    """

    def __init__(self, *, free: int = 3, base: float = 5.0, longest: float = 300.0, window: float = 600.0) -> None:
        self.free, self.base, self.longest, self.window = free, base, longest, window
        self._changes: dict[str, list[float]] = {}

    def _recent(self, key: str, now: float) -> list[float]:
        recent = [t for t in self._changes.get(key, ()) if now - t < self.window]
        if recent:
            self._changes[key] = recent
        else:
            self._changes.pop(key, None)  # forgotten: the map holds only upstreams that changed lately
        return recent

    def wait(self, key: str) -> float:
        """Seconds to wait before ``key`` is listed again (0 while it has changed ``free`` times or fewer)."""
        over = len(self._recent(key, time.monotonic())) - self.free
        return 0.0 if over < 0 else min(self.longest, self.base * 2**over)

    def changed(self, key: str) -> None:
        """Note that ``key``'s listing changed now (a reload follows)."""
        now = time.monotonic()
        self._changes[key] = [*self._recent(key, now), now]


FLAPPING = Flapping()


def _blob(link: Link, data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise UpstreamError(f"{link.who} sent a blob that is not base64") from None


def _completes(link: Link) -> bool:
    """Whether the upstream, connected now, offers ``completion/complete``."""
    c = link.connected
    return c is not None and c.server_capabilities.completions is not None


async def _completed(
    link: Link, ref: types.ResourceTemplateReference | types.PromptReference, request: CompletionRequest, **where: str
) -> list[str]:
    """The upstream's values for ``request`` on ``ref`` (at most 100, as MCP allows)."""
    what = f"completion/complete {request.argument}"
    argument = {"name": request.argument, "value": request.value}
    context = dict(request.context) or None
    result = await link.request(
        what, lambda c: c.complete(ref, argument, context), principal=request.principal, **where
    )
    return [v for v in result.completion.values[:100] if isinstance(v, str)]


def _bounded(link: Link, size: int, what: str) -> None:
    if size > link.server.max_bytes:
        raise UpstreamError(
            f"{link.who} answered {what} with {size} bytes, over its max_bytes of {link.server.max_bytes}; "
            "raise max_bytes in its settings if this is expected"
        )


def _served(homes: Homes, link: Link, uri: str, what: str) -> str | None:
    """The URI this server serves for the upstream's ``uri`` in a result, else ``None`` (logged): an
    embed or link is then dropped, never passed on under the upstream's own URI, which could be
    another plugin's or one the operator left out."""
    served = homes.served(str(uri))
    if served is None:
        log.warning("%s: %s named %s, which this server does not serve; dropped", link.who, what, str(uri)[:200])
    return served


def _referenced(homes: Homes, link: Link, block: object, what: str) -> Embed | ResourceLink | None:
    """An upstream's embedded resource or resource link as the core's :class:`Embed` or link to the
    served URI: the core then checks that it is served and that the caller may read it (a denied
    one fails the request, as any plugin's would), or ``None`` when this server does not serve it."""
    if isinstance(block, types.ResourceLink):
        uri = _served(homes, link, block.uri, what)
        return None if uri is None else ResourceLink(uri=uri, name=block.name, mime_type=block.mime_type)
    if isinstance(block, types.EmbeddedResource):
        uri = _served(homes, link, block.resource.uri, what)
        if uri is None:
            return None
        if isinstance(block.resource, types.TextResourceContents):
            return Embed(uri=uri, text=block.resource.text, mime_type=block.resource.mime_type)
        return Embed(uri=uri, blob=_blob(link, block.resource.blob), mime_type=block.resource.mime_type)
    return None


_LIST_CHANGED = (
    types.ResourceListChangedNotification,
    types.ToolListChangedNotification,
    types.PromptListChangedNotification,
)


class UpstreamResources(ResourceProvider):
    """The upstream's resources and templates, under its owned prefixes or namespace.

    :ivar left_out: what the upstream listed but is not served, and why (``check`` prints each).
    """

    def __init__(
        self, link: Link, homes: Homes, listing: Listing, failure: str | None, listed: Listed | None = None
    ) -> None:
        self.name = f"upstream-{link.server.name}"
        self.prefixes = link.server.owned
        self.source = link.server.setting  # its prefix overlapping another's leaves out this server alone
        self.link, self.homes, self.listing = link, homes, listing
        self.watching = False
        self._watched_before = False  # a stream opened again re-announces every watched URI
        """Whether a 2026-07-28 upstream's listen stream is open: what it sends before then (a
        stream opening, or opened again after a restart) cannot reach this server."""
        self.left_out: list[LeftOut] = listing.left_out
        self.failure = failure
        """Why listing at composition failed (``None``: it did not); the lifespan still tries."""
        self.built_from = served_view(listed) if failure is None else None
        """What of the composition's listing decides what is served (:func:`served_view`;
        ``None`` when it could not be listed): a ``list_changed`` reloads only when it differs."""
        self.relistings = 0
        """How many times the upstream was listed again after saying its lists changed."""
        self._asked: anyio.Event | None = None
        self._why: list[str] = []

    def resources(self) -> Sequence[Resource]:
        return self.listing.resources

    def templates(self) -> Sequence[ResourceTemplate]:
        return self.listing.templates

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Hold the upstream connection and watch it on each connection (restarts too), once per
        URI in this process: a 2025-era upstream by ``resources/subscribe`` to every watchable
        resource, a 2026-07-28 one by a ``subscriptions/listen`` stream. Its updates enter the
        hub (2025 subscribers and 2026 listeners alike). Its ``list_changed`` (a burst is one) has
        it listed again over the live connection, and a reload is asked for only when what would
        be served changed (:meth:`_relisting`); so is a connection opened again after a loss, and
        the first one of an upstream that could not be listed at composition (then it is asked
        for at once: its lists differ from none)."""
        self.link.on_message = self._notified
        self.link.on_connect += [self._subscribe, self._reconnected]
        self.link.watch = self._listen
        self.link.alongside.append(self._relisting)
        self.link.patient = self.failure is not None
        self._asked = anyio.Event()
        async with self.link.serving():
            yield

    def _watched(self) -> list[str]:
        return [self.homes.upstream(r.uri) for r in self.listing.resources if r.freshness.watchable]

    async def _subscribe(self, c: Any) -> None:
        if c.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return  # watched by _listen
        for uri in self._watched():
            with warnings.catch_warnings():  # the SDK warns that 2026-07-28 removed it; this upstream is 2025-era
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await c.subscribe_resource(uri)

    async def _listen(self, c: Any) -> None:
        """Watch a 2026-07-28 upstream through one listen stream, for what it says it announces.
        With nothing to listen for (a 2025-era upstream: :meth:`_subscribe` watches it; or one that
        announces nothing) it waits for the connection's end: the link runs it again when it returns."""
        if c.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await anyio.sleep_forever()
        caps = c.server_capabilities
        flags = {  # only what it says it announces: a server offering nothing may not know listen at all
            "tools_list_changed": bool(caps.tools and caps.tools.list_changed),
            "prompts_list_changed": bool(caps.prompts and caps.prompts.list_changed),
            "resources_list_changed": bool(caps.resources and caps.resources.list_changed),
        }
        watched = self._watched()
        if not watched and not any(flags.values()):
            await anyio.sleep_forever()  # mcp-server-time, for one: it refuses a listen stream (-32601)
        async with c.listen(resource_subscriptions=watched, **flags) as events:
            self.watching = True
            if self._watched_before:  # opened again (a lost stream, a restart): any may have changed meanwhile
                for uri in watched:
                    await self._updated(uri)
            self._watched_before = True
            try:
                async for event in events:
                    if isinstance(event, ResourceUpdated):
                        await self._updated(event.uri)
                    else:
                        await self._changed(type(event).__name__)
            finally:
                self.watching = False

    async def _notified(self, message: Any) -> None:
        c = self.link.connected
        if c is not None and c.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return  # the listen stream's events, which the SDK also hands here: _listen has them
        if isinstance(message, _LIST_CHANGED):
            await self._changed(message.method)
        elif isinstance(message, types.ResourceUpdatedNotification):
            await self._updated(message.params.uri)

    async def _changed(self, what: str) -> None:
        self._ask(f"{self.link.who} sent {what}")

    def _ask(self, why: str) -> None:
        """Have :meth:`_relisting` list the upstream again (soon, once for a burst)."""
        if why not in self._why:
            self._why.append(why)
        if self._asked is not None:
            self._asked.set()

    async def _reconnected(self, c: Any) -> None:
        if self.built_from is None:
            self._ask(f"{self.link.who} connected (it could not be listed at composition)")
        elif self.link.restarts:
            self._ask(f"{self.link.who} connected again")

    async def _relisting(self, c: Any) -> None:
        """For as long as connection ``c`` lives: when asked (:meth:`_ask`), wait for the burst to
        settle, list the upstream over ``c`` and ask for a reload when what would be served
        differs from what the providers were built from; then stop (the reload replaces them).
        A listing that fails changes nothing (logged); the next ``list_changed`` tries again."""
        key = f"{self.link.server.name} {self.link.who}"
        while self._asked is not None:
            await self._asked.wait()
            await anyio.sleep(SETTLE_SECONDS)
            if wait := FLAPPING.wait(key):
                log.warning("%s keeps changing what it lists; listing it again in %g s", self.link.who, wait)
                await anyio.sleep(wait)
            self._asked = anyio.Event()
            why, self._why = "; ".join(self._why), []
            self.relistings += 1
            try:
                with anyio.fail_after(self.link.server.read_timeout):
                    now = served_view(await list_all(c))
            except Exception as exc:
                log.warning("%s could not be listed again (%s): %s; what it serves is kept", self.link.who, why,
                            reason(exc, self.link.secrets.masked)[:200])  # fmt: skip
                continue
            if now == self.built_from:
                log.info("%s lists what it listed before (%s); no reload", self.link.who, why)
                continue
            if self.publisher is not None:
                FLAPPING.changed(key)
                await self.publisher.declarations_changed(why)
            return

    async def _updated(self, uri: str) -> None:
        served = self.homes.served(uri)
        if served is not None and self.publisher is not None:
            try:
                await self.publisher.resource_updated(served)
            except (ValueError, RequestError) as exc:  # not served here (as live): said once per notice, briefly
                log.debug("%s sent resources/updated for %s, not served here: %s", self.link.who, served[:200], exc)

    async def complete(self, template: ResourceTemplate, request: CompletionRequest) -> Sequence[str]:
        """Forward as ``completion/complete`` of the upstream's own template, when the upstream
        offers completions (else the declared values, none); the core then keeps only the values
        the caller may see, as for any provider.

        :raises UpstreamError: the upstream failed (named).
        """
        own = ((template.meta or {}).get(ORIGIN_KEY) or {}).get("uri_template")
        if not isinstance(own, str) or not _completes(self.link):
            return await super().complete(template, request)
        ref = types.ResourceTemplateReference(type="ref/resource", uri=own)
        return await _completed(self.link, ref, request, uri=own)

    async def read(self, request: ReadRequest) -> Content:
        """Forward as ``resources/read`` of the upstream's own URI; the first content block is served.

        :raises UpstreamError: the upstream failed, answered nothing or too much (named).
        :raises NotFound: the upstream does not have it.
        """
        declared = request.resource
        if isinstance(declared, Resource) and declared.meta:  # the upstream's own spelling, as it listed it
            upstream_uri = declared.meta[ORIGIN_KEY]["uri"]
        else:
            upstream_uri = self.homes.upstream(request.uri)
        what = f"resources/read {upstream_uri}"
        try:
            result = await self.link.request(
                what, lambda c: c.read_resource(upstream_uri), principal=request.principal, uri=upstream_uri
            )
        except NotFound as exc:
            exc.data = {"uri": request.requested_uri or request.uri}
            raise
        if not result.contents:
            raise UpstreamError(f"{self.link.who} answered {what} with no content")
        first = result.contents[0]
        if isinstance(first, types.TextResourceContents):
            _bounded(self.link, len(first.text.encode()), what)
            return Content(text=first.text, mime_type=first.mime_type)
        _bounded(self.link, len(first.blob) * 3 // 4, what)
        return Content(blob=_blob(self.link, first.blob), mime_type=first.mime_type)


class UpstreamTools(ToolProvider):
    """The upstream's tools, named with the configured ``tool_prefix``."""

    def __init__(self, link: Link, listing: Listing, homes: Homes) -> None:
        self.name = f"upstream-{link.server.name}-tools"
        self.source = link.server.setting
        self.link, self.listing, self.homes = link, listing, homes

    def tools(self) -> Sequence[Tool]:
        return self.listing.tools

    async def call(self, call: ToolCall) -> ToolResult:
        """Forward as ``tools/call`` of the upstream's own name; what the upstream asks meanwhile
        (elicitation, sampling) is asked of the downstream client through ``call``
        (:mod:`~mcp_providers.plugins.upstream.asking`); a task it answers with is followed until
        it ends (:func:`~mcp_providers.plugins.upstream.tasks.follow`).

        :raises ToolFailure: the upstream answered ``isError`` (its text goes to the model).
        :raises UpstreamError: the upstream failed or answered too much, or its task failed (named).
        """
        name = self.listing.tool_names[call.tool.name]
        arguments = call.arguments.model_dump(mode="json")
        what = f"tools/call {name}"

        async def forward() -> types.CallToolResult:
            try:
                return await self.link.request(
                    what, lambda c: c.call_tool(name, arguments), principal=call.principal, tool=name
                )
            except Handed as handed:
                return await follow(self.link, call, name, handed.created)

        with _forwarded(call.tool, self.link, name):
            result = await self.link.relay.forwarding(call, forward)
        if not isinstance(result, types.CallToolResult):
            raise UpstreamError(f"{self.link.who} answered {what} with {type(result).__name__}, not a tool result")
        _bounded(self.link, len(result.model_dump_json()), what)
        texts = [b.text for b in result.content if isinstance(b, types.TextContent)]  # masked already (Sieve)
        if result.is_error:
            raise ToolFailure("\n".join(texts) or f"{self.link.who}: {name} failed")
        model = call.tool.output_model
        output = None
        if model is not None and result.structured_content is not None:
            output = model.model_validate(result.structured_content)
        media: list[Media] = [] if output is not None else [Text(t) for t in texts]
        links: list[ResourceLink] = []
        embedded: list[Embed] = []
        for block in result.content:
            if isinstance(block, types.ImageContent):
                media.append(Image(_blob(self.link, block.data), block.mime_type))
            elif isinstance(block, types.AudioContent):
                media.append(Audio(_blob(self.link, block.data), block.mime_type))
            elif isinstance(ref := _referenced(self.homes, self.link, block, what), Embed):
                embedded.append(ref)
            elif ref is not None:
                links.append(ref)
        return ToolResult(output=output, content=tuple(media), links=tuple(links), embedded=tuple(embedded))


def _forwarded(tool: Tool, link: Link, name: str) -> contextlib.AbstractContextManager[None]:
    """A read-only tool runs in the side-effect scope, where the POST carrying ``tools/call`` to an
    HTTP upstream would be refused: it is let through as an exemption, logged and recorded in the
    receipt, on the upstream's (or the operator's) word that the tool changes nothing."""
    if tool.effects != "none":
        return contextlib.nullcontext()
    return exempt(f"tools/call {name} forwarded to {link.who}, read-only by its declaration")


class UpstreamPrompts(PromptProvider):
    """The upstream's prompts, named with the configured ``tool_prefix``."""

    def __init__(self, link: Link, listing: Listing, homes: Homes) -> None:
        self.name = f"upstream-{link.server.name}-prompts"
        self.source = link.server.setting
        self.link, self.listing, self.homes = link, listing, homes

    def prompts(self) -> Sequence[Prompt]:
        return self.listing.prompts

    async def complete(self, prompt: Prompt, request: CompletionRequest) -> Sequence[str]:
        """Forward as ``completion/complete`` of the upstream's own prompt, when the upstream offers
        completions (else the declared values, none).

        :raises UpstreamError: the upstream failed (named).
        """
        if not _completes(self.link):
            return await super().complete(prompt, request)
        name = self.listing.prompt_names[prompt.name]
        return await _completed(self.link, types.PromptReference(type="ref/prompt", name=name), request, prompt=name)

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        """Forward as ``prompts/get`` of the upstream's own name; text, image and audio messages.

        :raises UpstreamError: the upstream failed, or sent a message of another kind (named).
        """
        name = self.listing.prompt_names[prompt.name]
        what = f"prompts/get {name}"
        result = await self.link.request(
            what, lambda c: c.get_prompt(name, dict(arguments)), principal=policy.principal(), prompt=name
        )
        _bounded(self.link, len(result.model_dump_json()), what)
        messages = (self._message(m, what) for m in result.messages)
        return [m for m in messages if m is not None]

    def _message(self, m: types.PromptMessage, what: str) -> Message | None:
        """One message; an embedded resource or link goes to the core as such (served URI, checked
        against the caller's rights there), or is dropped when this server does not serve it."""
        block: Any = m.content
        if isinstance(block, types.TextContent):
            return Message(m.role, block.text)
        if isinstance(block, types.ImageContent):
            return Message(m.role, content=Image(_blob(self.link, block.data), block.mime_type))
        if isinstance(block, types.AudioContent):
            return Message(m.role, content=Audio(_blob(self.link, block.data), block.mime_type))
        if isinstance(block, types.EmbeddedResource | types.ResourceLink):
            ref = _referenced(self.homes, self.link, block, what)
            return None if ref is None else Message(m.role, content=ref)
        kind = type(block).__name__
        raise UpstreamError(f"{self.link.who} answered {what} with a {kind} message, which is not served")
