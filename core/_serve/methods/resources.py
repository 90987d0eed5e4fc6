"""Resource methods: ``resources/list``, ``resources/templates/list`` and ``resources/read``.

Each is a :class:`~mcp_providers._serve.pipeline.Method`: lists filter every item through the
gate (``list``) and page the rest; a read routes the URI (canonical form), asks the gate
(``expand`` on its template, ``read`` on the URI), runs the provider through the invoker, applies
the read budget and builds the receipt.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import mcp_types as types

from mcp_providers._holders import Frozen
from mcp_providers._host.assembly import Assembly
from mcp_providers._host.catalog import Catalog, Route
from mcp_providers._serve.steps.asking import provider_asks
from mcp_providers._serve.steps.custody import (
    ReadReceiptParts,
    cache_hint_parts,
    caller_receipt,
    digest,
    read_receipt,
    read_receipt_parts,
    shareable,
)
from mcp_providers._serve.steps.evidence import within_budget
from mcp_providers._serve.steps.exchange import Actor, Exchange
from mcp_providers._serve.steps.gate import Gate
from mcp_providers._serve.steps.invoker import Invoker, Work
from mcp_providers._serve.steps.surrogates import note, replaced
from mcp_providers.errors import InvalidParams, NotFound, ProviderFailed, Stale
from mcp_providers.identity import Principal
from mcp_providers.models import MAX_AGE_KEY, RECEIPT_KEY, Freshness, ResourceTemplate
from mcp_providers.providers import Content, ReadRequest, ResourceProvider

I = TypeVar("I")  # noqa: E741 - an item of a list


class Listing(Generic[I]):
    """The items of one list method, each with the target the gate is asked about.

    Built on first use (tool JSON Schemas are slow to make, and start-up should not pay for them).
    """

    def __init__(
        self,
        kind: str,
        build: Callable[[], Sequence[tuple[str, I]]],
        copies: Callable[[], Mapping[str, Sequence[str]]] = dict,
    ) -> None:
        self.kind = kind
        self._build, self._copies = build, copies

    @functools.cached_property
    def items(self) -> Sequence[tuple[str, I]]:
        return self._build()

    @functools.cached_property
    def copies(self) -> Mapping[str, Sequence[str]]:
        """Target -> the other URIs its read is judged on (a skill file's
        :attr:`~mcp_providers._host.skills.SkillFile.judged_on`: what it copies, and for a
        ``SKILL.md`` every file of its skill): an item is listed only to a caller who may ``read``
        each of them, as its read asks."""
        return self._copies()

    @functools.cached_property
    def unfiltered(self) -> list[I]:
        return [item for _, item in self.items]


class ListMethod(Generic[I]):
    """Any paginated list: every item the caller may ``list``, one page at a time."""

    actor: Actor = "application"

    def __init__(
        self, name: str, catalog: Catalog, listing: Listing[I], page_size: int, result: Any,
        shown: Callable[[Gate, I], I] | None = None,
    ) -> None:  # fmt: skip
        self.name, self._catalog, self._listing, self._page_size = name, catalog, listing, page_size
        self._result, self._shown = result, shown  # shown: an item as the caller may see it (under a policy)

    def route(self, exchange: Exchange, params: types.PaginatedRequestParams | None) -> str | None:
        exchange.target = "*"
        return params.cursor if params else None

    def authorize(self, exchange: Exchange, cursor: str | None) -> None:
        """Listing is always allowed; what is listed is filtered item by item in :meth:`invoke`."""

    async def invoke(self, exchange: Exchange, cursor: str | None) -> Any:
        gate = exchange.gate
        if not gate.authorizer.active:  # no policy: a page costs O(page), not O(total)
            items = self._listing.unfiltered
        else:
            copies = self._listing.copies
            items = [
                item
                for target, item in self._listing.items
                if gate.allowed("list", target) and all(gate.allowed("read", u) for u in copies.get(target, ()))
            ]
        return self._catalog.page(self._listing.kind, items, cursor, self._page_size)

    def evidence(self, exchange: Exchange, cursor: str | None, page: Any) -> Any:
        exchange.count = len(page.items)
        items = list(page.items)
        if self._shown is not None and exchange.gate.authorizer.active:
            shown, gate = self._shown, exchange.gate
            items = [shown(gate, item) for item in items]
        return self._result(items, page.next_cursor)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class _Shared(Frozen):
    """What every read of one declaration shares, worked out on its first read."""

    __slots__ = ("cache_scope", "declaration", "parts", "sharer", "ttl_ms", "work")

    declaration: object
    """Held, so the identity it is kept under cannot be reused while it is kept."""
    parts: ReadReceiptParts
    """The receipt parts (:func:`~mcp_providers._serve.steps.custody.read_receipt_parts`)."""
    ttl_ms: int
    cache_scope: str
    """``public`` only where the declaration allows it; :meth:`ReadResource.evidence` narrows it per
    request (:func:`~mcp_providers._serve.steps.custody.shareable`)."""
    work: Work | None
    """The invoker's :class:`Work` for a fixed URI read as declared (canonical form), else ``None``."""
    sharer: str
    """Who reads, for sharing reads: the provider's name and a digest of its plugin's settings, so a
    read never joins one of the same provider reconfigured by a reload (still running on the old
    settings), and replicas serving the same config still share."""

    def __init__(
        self,
        declaration: object,
        parts: ReadReceiptParts,
        ttl_ms: int,
        cache_scope: str,
        work: Work | None,
        sharer: str,
    ) -> None:
        object.__setattr__(self, "declaration", declaration)
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "ttl_ms", ttl_ms)
        object.__setattr__(self, "cache_scope", cache_scope)
        object.__setattr__(self, "work", work)
        object.__setattr__(self, "sharer", sharer)


class _Caller:
    """What one caller's reads of one fixed URI (as declared) share: the provider's request and
    its read of it, the coalescing key, the receipt's blank with the caller and the URI filled,
    and the cache scope. Made on the caller's first read; a fixed URI keeps the last caller's
    (:class:`_Fixed`). Reused only for the same principal object (and, in ``evidence``, the same
    policy state), and never once a provider has filled the request's ``params``."""

    __slots__ = ("blank", "key", "policy", "principal", "read", "request", "scope")

    def __init__(
        self, provider: ResourceProvider, principal: Principal, request: ReadRequest, key: Hashable | None,
        blank: dict[str, Any], scope: str, policy: bool,
    ) -> None:  # fmt: skip
        self.principal, self.request, self.key, self.blank, self.scope, self.policy = (
            principal, request, key, blank, scope, policy,
        )  # fmt: skip
        self.read = functools.partial(provider.read, request)
        """The provider's read of :attr:`request` (no frame of its own, as a lambda would be)."""


class _Fixed:
    """The read path of one fixed URI as declared (canonical form): its route and shared parts,
    bound on its first read, and the last caller's :class:`_Caller`."""

    __slots__ = ("caller", "route", "shared", "work")

    def __init__(self, route: Route, shared: _Shared, work: Work) -> None:
        self.route, self.shared, self.work = route, shared, work
        self.caller: _Caller | None = None


_Target = tuple[Route, str, float | None, _Shared, _Fixed | None]
"""A routed read: the route, the URI as sent, the caller's freshness demand, the shared parts, the
fixed URI's read path (``None``: a template, or a URI sent in another spelling than declared)."""


def _settings_digest(assembly: Assembly, plugin: str) -> str:
    """12 hex digits of SHA-256 over ``plugin``'s validated settings (JSON), ``""`` without any."""
    settings = next((r.settings for r in assembly.records if r.name == plugin), None)
    if settings is None:
        return ""
    return hashlib.sha256(settings.model_dump_json().encode()).hexdigest()[:12]


class ReadResource:
    """``resources/read``.

    The read path is decided once per declaration, not per read: a fixed URI sent as declared is
    bound to its route and shared parts on its first read (:class:`_Fixed`, one dict lookup
    thereafter instead of the catalog's route and the shared parts' lookup), and what its reads by
    one caller share is made once (:class:`_Caller`). Every read still takes every step: the gate,
    the invoker (deadline, side-effect scope, containment, coalescing), the budget and receipt.
    """

    name = "resources/read"
    actor: Actor = "application"

    def __init__(self, assembly: Assembly, invoker: Invoker) -> None:
        self._assembly = assembly
        self._catalog = assembly.catalog
        self._settings = assembly.config.server
        self._authenticated = self._settings.auth is not None
        self._coalesce = self._settings.coalesce_reads  # settings are fixed per assembly: read once
        self._invoker = invoker
        self._shared_by_id: dict[int, _Shared] = {}
        """Per declaration (by identity): what every read of it shares; see :meth:`_shared`. Keyed by
        ``object.__hash__``, the identity as ``id()`` gives it (one-to-one for live objects), because
        ``id()`` raises a PEP 578 audit event and each costs a Python call of every audit hook in the
        process, the side-effect scope's included (two per read)."""
        self._fixed: dict[str, _Fixed] = {}
        """Fixed URIs as declared -> their read path, bound on first read (at most one per fixed
        resource the catalog serves: only a URI the catalog routes to itself is kept)."""

    def route(self, exchange: Exchange, params: types.ReadResourceRequestParams) -> _Target:
        uri = exchange.target = params.uri
        fixed = self._fixed.get(uri)
        if fixed is not None:
            return fixed.route, uri, _max_age(params) if params.meta else None, fixed.shared, fixed
        route = self._routed(exchange, uri)
        declaration = route.declaration
        shared = self._shared_by_id.get(object.__hash__(declaration))
        if shared is None or shared.declaration is not declaration:
            shared = self._shared(route)
        if shared.work is not None and route.canonical == uri:  # a fixed URI, sent as declared
            fixed = self._fixed[uri] = _Fixed(route, shared, shared.work)
        return route, uri, _max_age(params) if params.meta else None, shared, fixed

    def _routed(self, exchange: Exchange, uri: str) -> Route:
        try:
            return self._catalog.route(uri, exchange.gate.listable)
        except NotFound:
            owner = self._assembly.unavailable_owner(uri)
            if owner is None:
                raise
            raise NotFound(
                f"The plugin that serves this URI ({owner}) is unavailable on this server: it failed to load. "
                "Its other plugins serve as usual; the operator's `mcp-providers plugins` says why.",
                data={"uri": uri},
            ) from None

    def authorize(self, exchange: Exchange, target: _Target) -> None:
        exchange.gate.require_route("read", target[0], target[1])

    def invoke(self, exchange: Exchange, target: _Target) -> Awaitable[object]:
        """The invoker's run of the provider's read, handed back for the pipeline to await (not
        awaited in a coroutine of this method's own: one frame fewer per read).

        :raises Stale: the caller's freshness demand cannot be met, before the read starts."""
        route, uri, demanded, shared, fixed = target
        if demanded is not None:
            refuse_if_stale(uri, route.declaration.freshness, demanded, None, after_read=False)
        principal = exchange.principal
        policy = exchange.gate.authorizer.active
        if fixed is not None:
            caller = fixed.caller
            if caller is None or caller.principal is not principal or caller.request.params:
                caller = fixed.caller = self._caller(route, uri, shared, principal, policy)
            read, key, work = caller.read, caller.key, fixed.work
        else:
            request = self._request(route, uri, principal)
            key = (shared.sharer, uri, principal.share_key) if self._coalesce else None
            kept = shared.work
            # messages name the URI as sent
            work = (
                kept
                if kept is not None and kept.target == uri
                else Work(route.plugin, route.provider.name, f"reading {uri}", uri)
            )
            read = functools.partial(route.provider.read, request)  # no frame of its own, as a lambda would be
        if not policy:
            return self._invoker.run(work, read, share=key, custody=exchange.custody)
        return self._asking(exchange, work, read, key)

    async def _asking(self, exchange: Exchange, work: Work, read: Callable[[], Any], key: Hashable | None) -> object:
        """:meth:`invoke`'s run with a policy installed: the provider's own questions routed."""
        with provider_asks(exchange.gate, self._catalog):  # a listing asks about its members as reads do
            return await self._invoker.run(work, read, share=key, custody=exchange.custody)

    @staticmethod
    def _request(route: Route, uri: str, principal: Principal) -> ReadRequest:
        # The provider gets the URI the router matched (canonical) and, for messages, the one sent.
        # A fixed URI's route shares a read-only NO_PARAMS: the provider gets a dict of its own.
        return ReadRequest(
            uri=route.canonical, resource=route.declaration, params=route.params or {}, requested_uri=uri,
            principal=principal,
        )  # fmt: skip

    def _caller(self, route: Route, uri: str, shared: _Shared, principal: Principal, policy: bool) -> _Caller:
        """What ``principal``'s reads of the fixed URI ``uri`` share. Its request is handed to each
        of them (frozen; its ``params`` an empty dict, made again if a provider filled it)."""
        key = (shared.sharer, uri, principal.share_key) if self._coalesce else None
        scope = shared.cache_scope
        if scope == "public" and not shareable(principal, policy=policy, authenticated=self._authenticated):
            scope = "private"  # who may read it, and whom the receipt names, depends on the caller
        blank = caller_receipt(shared.parts, principal, uri)
        return _Caller(route.provider, principal, self._request(route, uri, principal), key, blank, scope, policy)

    def evidence(self, exchange: Exchange, target: _Target, produced: object) -> dict[str, Any]:
        route, uri, demanded, shared, fixed = target
        content = produced if type(produced) is Content else _checked(route, uri, produced)
        declaration = route.declaration
        if demanded is not None:
            refuse_if_stale(uri, declaration.freshness, demanded, content.as_of, after_read=True)
        try:
            data = content.data
            surrogates = 0
        except UnicodeEncodeError:  # a lone surrogate: serve U+FFFD, and say so below
            text, surrogates = replaced(content.text or "")
            content = dataclasses.replace(content, text=text)
            data = content.data
        budget = declaration.max_bytes or self._settings.max_read_bytes
        truncation = None
        if len(data) > budget:
            content, truncation = within_budget(uri, declaration, content, budget)
            data = content.data
        mime = content.mime_type or declaration.mime_type
        caller = None if fixed is None else fixed.caller
        if (
            caller is not None
            and caller.principal is exchange.principal
            and caller.policy is exchange.gate.authorizer.active
        ):
            scope, filled = caller.scope, caller.blank
        else:
            scope, filled = shared.cache_scope, None
            if scope == "public" and not shareable(
                exchange.principal, policy=exchange.gate.authorizer.active, authenticated=self._authenticated
            ):
                scope = "private"  # who may read it, and whom the receipt names, depends on the caller
        exchange.receipt = self._receipt(exchange, route, uri, content, data, mime, truncation, shared.parts, filled)
        if surrogates:
            exchange.receipt["transforms"] = [*(exchange.receipt.get("transforms") or ()), note(surrogates)]
        # The wire form directly (what ReadResourceResult would dump to): the SDK validates it once.
        item: dict[str, Any] = {"uri": uri}
        if mime is not None:
            item["mimeType"] = mime
        if content.text is not None:
            item["text"] = content.text
        else:
            item["blob"] = base64.b64encode(data).decode()
        return {
            "contents": [item],
            "ttlMs": shared.ttl_ms,
            "cacheScope": scope,
            "_meta": {RECEIPT_KEY: exchange.receipt},
            "resultType": "complete",
        }

    def _shared(self, route: Route) -> _Shared:
        """What every read of ``route``'s declaration shares, made and kept (:meth:`route` looks it
        up first: this runs on a declaration's first read)."""
        declaration = route.declaration
        distribution, version = self._assembly.origins.get(route.plugin, (None, None))
        template = declaration.uri_template if isinstance(declaration, ResourceTemplate) else None
        parts = read_receipt_parts(
            route.provider.name, route.plugin, distribution, version, template, declaration.freshness
        )
        work = None
        if template is None:
            work = Work(route.plugin, route.provider.name, f"reading {route.canonical}", route.canonical)
        ttl_ms, cache_scope = cache_hint_parts(declaration.freshness, shareable=True)
        if declaration.members is not None and declaration.members.filtered:
            cache_scope = "private"  # what it lists depends on who asks: no shared cache may keep it
        sharer = f"{route.provider.name}@{_settings_digest(self._assembly, route.plugin)}"
        shared = _Shared(declaration, parts, ttl_ms, cache_scope, work, sharer)
        self._shared_by_id[object.__hash__(declaration)] = shared
        return shared

    def _receipt(
        self,
        exchange: Exchange,
        route: Route,
        uri: str,
        content: Content,
        data: bytes,
        mime: str | None,
        truncation: Any,
        parts: ReadReceiptParts,
        filled: dict[str, Any] | None,
    ) -> dict[str, Any]:
        custody = exchange.custody
        if route.canonical != uri:
            extra: dict[str, Any] | None = {"canonicalUri": route.canonical, **custody}
        else:
            extra = custody or None
        return read_receipt(
            parts,
            principal=exchange.principal,
            uri=uri,
            params=route.params,
            size=len(data),
            sha256=content_digest(content, data),
            mime_type=mime,
            truncation=truncation,
            extra=extra,
            as_of=content.as_of,
            filled=filled,
        )


_DIGESTS: dict[int, tuple[object, str]] = {}
_DIGESTS_MAX = 256
_DIGEST_CACHED_UP_TO = 1 << 20


def content_digest(content: Content, data: bytes) -> str:
    """Hex SHA-256 of ``data`` (the bytes of ``content``), computed once per source object.

    A provider serving content that cannot change (a static resource, a constant) hands back the
    same ``str``/``bytes`` object on every read; its digest is kept under that object's identity
    (the entry holds the object, so the identity cannot be reused while cached). At most
    :data:`_DIGESTS_MAX` sources of up to 1 MiB each are kept, oldest dropped first.
    """
    source: object = content.text if content.text is not None else content.blob
    if len(data) > _DIGEST_CACHED_UP_TO:
        return digest(data)
    key = object.__hash__(source)  # the identity, as id() is, without id()'s audit event (_shared_by_id)
    hit = _DIGESTS.get(key)
    if hit is not None and hit[0] is source:
        return hit[1]
    value = digest(data)
    if len(_DIGESTS) >= _DIGESTS_MAX:
        del _DIGESTS[next(iter(_DIGESTS))]
    _DIGESTS[key] = (source, value)
    return value


def _checked(route: Route, uri: str, produced: object) -> Content:
    if not isinstance(produced, Content):
        raise ProviderFailed(
            f"provider {route.provider.name!r} (plugin {route.plugin!r}) returned "
            f"{type(produced).__name__} for {uri}; expected Content: return Content(text=...) or "
            "Content(blob=...) (functions declared with mcp_providers.plugin may return str, bytes or JSON values)",
            data={"uri": uri},
        )
    return produced


def _max_age(params: types.RequestParams) -> float | None:
    """The caller's freshness demand from ``_meta``, in seconds, or ``None``."""
    meta = params.meta or {}
    value = meta.get(MAX_AGE_KEY)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidParams(f"_meta {MAX_AGE_KEY} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def refuse_if_stale(
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
