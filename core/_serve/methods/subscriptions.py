"""Watching live resources, in both protocol eras, with authorization on every delivery.

- 2026-07-28: ``subscriptions/listen``; the SDK's :class:`~mcp.server.subscriptions.ListenHandler`
  serves the stream, fed by a per-stream view of one bus that drops events the subject may no
  longer see.
- 2025-11-25: ``resources/subscribe`` and ``resources/unsubscribe``; the hub keeps each session's
  subscriptions and sends ``notifications/resources/updated`` on the session's standalone channel.

Only resources declared :meth:`Freshness.live() <mcp_providers.models.Freshness.live>` (and not
``subscribable=False``) can be watched, and only URIs the catalog serves, the provider accepts
(:meth:`~mcp_providers.providers.ResourceProvider.check_watch`) and the caller may ``read``; a
session holds at most ``max_subscriptions_per_session`` watches of URIs up to ``max_uri_length``
characters. Watches go with their session (the connection's exit stack) or listen stream.

A provider publishes through the one core API, the :class:`Publisher` the core sets on it as
``provider.publisher`` before its ``lifespan`` starts::

    await self.publisher.resource_updated("servicenow://dev/incidents")

Subscribing is authorized (action ``subscribe``) when the watch starts, and again for every
delivery, so a policy change takes effect on the next update. Notifications carry only the URI:
the client re-reads it through the normal, authorized read path.

The methods themselves are in :mod:`.watch_methods`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import (
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    SubscriptionBus,
    ToolsListChanged,
)

from mcp_providers._host.catalog import Catalog, Route
from mcp_providers._serve.seams import connection_of
from mcp_providers._serve.state.cluster import InProcess, Shared
from mcp_providers._serve.steps.invoker import Invoker, Work
from mcp_providers.config import LimitsSettings
from mcp_providers.errors import InvalidParams, RateLimited
from mcp_providers.identity import Principal
from mcp_providers.models import Resource, ResourceTemplate
from mcp_providers.providers import ResourceProvider

log = logging.getLogger("mcp_providers.subscriptions")


_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError)
"""What sending on a session whose stream has closed raises (its memory stream, or its socket)."""

Allowed = Callable[[Principal, str], bool]
"""``allowed(principal, uri) -> bool``: may ``principal`` watch ``uri`` now."""

WATCHABLE_META = "io.mcp-providers/subscribable"
"""``_meta`` key on list items: ``true`` when the resource can be watched, ``false`` when it is live
but announces no changes; absent for resources that are not live."""


def watch_meta(declaration: Resource | ResourceTemplate) -> dict[str, Any] | None:
    """The list item's ``_meta``: the declaration's own, plus :data:`WATCHABLE_META` for live ones."""
    if declaration.freshness.kind != "live":
        return declaration.meta
    return {**(declaration.meta or {}), WATCHABLE_META: declaration.freshness.watchable}


class Publisher:
    """What a resource provider calls when one of its live resources changed."""

    def __init__(self, hub: SubscriptionHub, provider: ResourceProvider) -> None:
        self._hub = hub
        self._provider = provider

    async def resource_updated(self, uri: str) -> None:
        """Tell every authorized watcher of ``uri`` that it changed.

        :raises ValueError: ``uri`` is not a watchable resource this provider serves.
        """
        route = self._hub.catalog.find(uri)
        if route is None or route.provider is not self._provider or not route.declaration.freshness.watchable:
            raise ValueError(f"{uri} is not a watchable live resource of provider {self._provider.name!r}")
        await self._hub.publish(route.canonical)  # watches are kept under the canonical URI

    async def hold(self, source: str, seconds: float) -> bool:
        """Whether this replica should poll ``source`` now (always, without ``[cluster]``).

        ``seconds``: how long until the caller asks again; past it the hold is let go. With
        ``[cluster]`` the lease itself lasts ``lease_seconds`` and is renewed meanwhile.
        """
        return await self._hub.shared.hold(self._source(source), seconds)

    async def recall(self, source: str) -> str | None:
        return await self._hub.shared.recall(self._source(source))

    async def remember(self, source: str, text: str) -> None:
        await self._hub.shared.remember(self._source(source), text)

    async def declarations_changed(self, reason: str) -> bool:
        """Mark the provider stale and ask for a reload (see the protocol in ``providers``); once:
        a stale provider is replaced by that reload, so saying it again asks for nothing more."""
        request = self._hub.reload_requested
        if request is None:
            return False
        if self._provider.stale:
            return True
        self._provider.stale = True
        request(f"provider {self._provider.name!r}: {reason}")
        return True

    def _source(self, source: str) -> str:
        return f"{self._provider.name}/{source}"


class _SubjectView:
    """One listen stream's view of the bus: updates of the URIs it watches that its subject may
    still see (asked per delivery, as a read asks), and the list changes; counted.

    The hub hands an update only to the streams watching its URI (:meth:`SubscriptionHub._on_event`),
    so an update costs one authorization per stream watching it, never one per open stream: a
    stream that watches no resource costs nothing per update (round 4 item 15).
    """

    def __init__(self, hub: SubscriptionHub, principal: Principal, uris: frozenset[str]) -> None:
        self._hub, self._principal, self._uris = hub, principal, uris

    async def publish(self, event: ServerEvent) -> None:
        await self._hub.bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        hub, principal = self._hub, self._principal

        def filtered(event: ServerEvent) -> None:
            if isinstance(event, ResourceUpdated) and not hub.allowed(principal, event.uri):
                log.info("dropped update of %s for %s: no longer authorized", event.uri, principal.subject)
                return
            listener(event)

        return hub.watch(self._uris, filtered, listener)


class SubscriptionHub:
    """Subscriptions of one composed server, in both eras, over one :class:`SubscriptionBus`.

    Every update goes through the bus (in process by default, Redis with a cluster backend); the
    hub listens on it and relays updates to its own 2025-era sessions, so a publish on any replica
    reaches every replica's watchers.
    """

    def __init__(self, catalog: Catalog, allowed: Allowed, *, max_per_session: int = 100,
                 max_uri_length: int = 2048, shared: Shared | None = None,
                 limits: LimitsSettings | None = None, invoker: Invoker | None = None) -> None:  # fmt: skip
        self.catalog = catalog
        self.invoker = invoker if invoker is not None else Invoker({}, 0.0, False, {})
        """Runs ``check_watch`` in the scope a read gets, in the plugin's mode (the runtime's invoker)."""
        self.allowed = allowed
        self.shared: Shared = shared if shared is not None else InProcess()
        self.bus: SubscriptionBus = self.shared.bus
        self.reload_requested: Callable[[str], None] | None = None
        """Set by the reloader: starts a reload in the background, given its trigger."""
        self.max_per_session = max_per_session
        self.max_uri_length = max_uri_length
        self.listening = 0
        """Watches held by open listen streams (2026-07-28)."""
        # uri -> {id(connection): (connection, principal)}; 2025-11-25 sessions only.
        self._sessions: dict[str, dict[int, tuple[Any, Principal]]] = {}
        self._by_connection: dict[int, set[str]] = {}
        self._pending: deque[str] = deque(maxlen=4096)  # updates to relay to 2025-era sessions
        self._wake: anyio.Event | None = None  # made by relay(), in the loop that serves
        self._local: set[Callable[[ServerEvent], None]] = set()  # this process's listen streams
        self._streams: dict[int, tuple[ListenHandler, frozenset[str]]] = {}  # open listen streams, their URIs
        self._opened: dict[int, tuple[Any, frozenset[str]]] = {}  # 2025-era connections, their list capabilities
        self._watching: dict[str, set[Callable[[ServerEvent], None]]] = {}  # uri -> listen streams watching it
        self._limits = limits
        self._listens: collections.Counter[tuple[str, str]] = collections.Counter()  # open streams per caller
        self.bus.subscribe(self._on_event)

    def publisher(self, provider: ResourceProvider) -> Publisher:
        return Publisher(self, provider)

    def watch(
        self, uris: frozenset[str], watcher: Callable[[ServerEvent], None], listener: Callable[[ServerEvent], None]
    ) -> Callable[[], None]:
        """Hand ``watcher`` the updates of ``uris`` and ``listener`` this replica's list changes, for
        one listen stream; returns the release (idempotent) that stops both."""
        for uri in uris:
            self._watching.setdefault(uri, set()).add(watcher)
        self.listening += len(uris)
        self._local.add(listener)  # list changes are this replica's own (each reloads its config)
        done = False

        def release() -> None:
            nonlocal done
            if not done:
                done = True
                self.listening -= len(uris)
                self._local.discard(listener)
                for uri in uris:
                    watchers = self._watching.get(uri)
                    if watchers is not None:
                        watchers.discard(watcher)
                        if not watchers:
                            del self._watching[uri]

        return release

    def watch_count(self) -> int:
        """Watches held now: 2025-era (session, URI) pairs plus URIs of open listen streams."""
        return sum(len(v) for v in self._sessions.values()) + self.listening

    def locate(self, uri: str, visible: Callable[[str], bool] | None) -> Route:
        """Where ``uri`` goes; ``visible``: what the caller may list (a not-found message names
        nothing else, :meth:`Catalog.route`). Whether it may be watched is asked after the gate
        (:meth:`require_watchable`), so a caller denied it learns nothing of how it is kept.

        :raises NotFound: nothing serves ``uri``.
        :raises InvalidParams: malformed. (One over ``max_uri_length`` never gets here: the pipeline
            refuses it before any method routes, ``steps.uri_length``.)
        """
        return self.catalog.route(uri, visible)

    def require_watchable(self, route: Route, uri: str) -> None:
        """:raises InvalidParams: ``uri`` (routed to ``route``) is not declared live and
        subscribable, or its provider refuses the watch."""
        freshness = route.declaration.freshness
        if not freshness.watchable:
            why = "does not declare it live" if freshness.kind != "live" else "publishes no changes to it"
            raise InvalidParams(
                f"{uri} cannot be watched: provider {route.provider.name!r} {why}; read it again instead",
                data={"uri": uri},
            )
        # provider code on behalf of the request, read-like: in the scope a read of the URI gets (tester 26 F8)
        work = Work(route.plugin, route.provider.name, f"checking a watch on {uri}", route.canonical)
        self.invoker.check(work, lambda: route.provider.check_watch(route.declaration, route.params or {}))
        # with the cluster bus down a watch still starts: it hears this replica's updates, and every
        # watched URI is re-announced when the bus is back (.state.outage)

    async def publish(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))

    def reannounce(self) -> int:
        """Tell every watcher on this replica, of both eras, that what it watches may have changed
        (the cluster bus is back after an outage: updates may have been missed); returns how many
        URIs were announced. Each delivery is authorized as any update is."""
        uris = sorted(set(self._watching) | set(self._sessions))
        for uri in uris:
            self._on_event(ResourceUpdated(uri=uri))
        return len(uris)

    def _on_event(self, event: ServerEvent) -> None:
        if not isinstance(event, ResourceUpdated):
            for listener in list(self._local):  # no such event is published today; a stream would want it
                listener(event)
            return
        for watcher in list(self._watching.get(event.uri, ())):
            watcher(event)
        if event.uri in self._sessions:
            self._pending.append(event.uri)
            if self._wake is not None:
                self._wake.set()

    async def relay(self) -> None:
        """Send queued updates to this process's 2025-era watchers (runs while the server runs)."""
        try:
            while True:
                while self._pending:
                    await self._deliver(self._pending.popleft())
                self._wake = anyio.Event()
                if not self._pending:
                    await self._wake.wait()
        finally:
            self._wake = None

    async def _deliver(self, uri: str) -> None:
        for key, (connection, principal) in list(self._sessions.get(uri, {}).items()):
            if not self.allowed(principal, uri):
                log.info("dropped update of %s for %s: no longer authorized", uri, principal.subject)
                continue
            try:
                await connection.send_resource_updated(uri)
            except _GONE as exc:  # the session's stream is closed: forget its watches
                log.info("dropped the watches of a closed session (%s) on delivering %s", type(exc).__name__, uri)
                self._drop(key)
            except Exception:  # a bug, not a closed session: say so in full, keep the watch, serve the others
                log.exception("delivering the update of %s to a session (subject %s) failed", uri, principal.subject)

    # -- 2025-11-25 ----------------------------------------------------------------------------

    def subscribe(self, session: Any, principal: Principal, uri: str) -> None:
        """Watch ``uri`` for the session's connection, until it unsubscribes or the connection ends.

        :raises InvalidParams: the session already holds ``max_subscriptions_per_session`` watches.
        """
        connection = _connection(session)
        key = id(connection)
        held = self._by_connection.get(key, set())
        if uri not in held and len(held) >= self.max_per_session:
            raise InvalidParams(
                f"this session already watches {len(held)} resources (max_subscriptions_per_session); "
                "unsubscribe from one first",
                data={"uri": uri, "max_subscriptions_per_session": self.max_per_session},
            )
        if key not in self._by_connection:
            self._by_connection[key] = set()
            connection.exit_stack.callback(self._drop, key)  # the connection's teardown drops its watches
        self._by_connection[key].add(uri)
        self._sessions.setdefault(uri, {})[key] = (connection, principal)

    def unsubscribe(self, session: Any, uri: str) -> None:
        key = id(_connection(session))
        watchers = self._sessions.get(uri)
        if watchers is not None:
            watchers.pop(key, None)
            if not watchers:
                del self._sessions[uri]
        self._by_connection.get(key, set()).discard(uri)

    def _drop(self, key: int) -> None:
        """Forget every watch of one connection."""
        for uri in self._by_connection.pop(key, set()):
            watchers = self._sessions.get(uri, {})
            watchers.pop(key, None)
            if not watchers:
                self._sessions.pop(uri, None)

    # -- 2026-07-28 ----------------------------------------------------------------------------

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams, principal: Principal
    ) -> types.SubscriptionsListenResult:
        """Serve one ``subscriptions/listen`` stream for ``principal`` (URIs already checked).

        :raises RateLimited: ``principal`` holds ``[server.limits] listen_streams`` open streams
            already (authenticated callers: also without the table, at its default; anonymous
            callers share one count, only under the table).
        """
        uris = frozenset(params.notifications.resource_subscriptions or ())
        caller = self._count_listen(principal)
        handler = ListenHandler(_SubjectView(self, principal, uris))
        self._streams[id(handler)] = (handler, uris)
        try:
            return await handler(ctx, params)
        finally:
            self._streams.pop(id(handler), None)
            if caller is not None:
                self._listens[caller] -= 1
                if not self._listens[caller]:
                    del self._listens[caller]

    def end_streams(self) -> int:
        """End every open listen stream gracefully (the server is stopping): each sends its
        ``subscriptions/listen`` result as its last frame, so its client knows the end was meant and
        listens again (on another replica). Returns how many were asked to end."""
        handlers = [handler for handler, _ in self._streams.values()]
        for handler in handlers:
            handler.close()
        return len(handlers)

    def _count_listen(self, principal: Principal) -> tuple[str, str] | None:
        """Count one more open stream for ``principal``'s key; ``None`` when not counted."""
        if principal.anonymous and self._limits is None:
            return None
        most = (self._limits or LimitsSettings()).listen_streams
        key = principal.key
        if self._listens[key] >= most:
            raise RateLimited(
                f"this caller holds {most} open listen streams, the most [server.limits] listen_streams allows; "
                "close one (one stream can watch many resources)",
                data={"retryAfter": 60, "limit": "listen_streams", "allowed": most},
            )
        self._listens[key] += 1
        return key

    # -- both eras: the served lists changed (a reload) -----------------------------------------

    def opened(self, session: Any, lists: frozenset[str]) -> None:
        """Remember a 2025-era connection that completed ``initialize`` with the list capabilities
        ``lists`` (``"resources"``, ``"tools"``, ``"prompts"``), until it ends; one without a
        channel for notifications (stateless HTTP) cannot be told, so it is not kept."""
        connection = _connection(session)
        if not connection.has_standalone_channel or id(connection) in self._opened:
            return
        key = id(connection)
        self._opened[key] = (connection, lists)
        connection.exit_stack.callback(self._opened.pop, key, None)

    async def lists_changed(self, lists: frozenset[str]) -> int:
        """Tell this process's clients that ``lists`` changed: each 2025-era session whose
        capabilities name the list, and each listen stream that asked (the SDK's filter). Watches
        of URIs the catalog no longer serves end: a 2025-era one with a last
        ``notifications/resources/updated`` (its re-read says the URI is gone), a listen stream
        closed gracefully (its client listens again). Returns how many sessions were told.
        """
        for kind, event in (("resources", ResourcesListChanged()), ("tools", ToolsListChanged()),
                            ("prompts", PromptsListChanged())):  # fmt: skip
            if kind in lists:
                for listener in list(self._local):
                    listener(event)
        told = 0
        for connection, advertised in list(self._opened.values()):
            told += await _tell(connection, lists & advertised)
        await self._end_vanished()
        return told

    async def _end_vanished(self) -> None:
        for handler, uris in list(self._streams.values()):
            if any(not self._serves(uri) for uri in uris):
                handler.close()
        for uri in [u for u in self._sessions if not self._serves(u)]:
            for connection, _ in list(self._sessions.pop(uri).values()):
                self._by_connection.get(id(connection), set()).discard(uri)
                with contextlib.suppress(*_GONE):
                    await connection.send_resource_updated(uri)

    def _serves(self, uri: str) -> bool:
        route = self.catalog.find(uri)
        return route is not None and route.declaration.freshness.watchable  # not served any more: no

    def check_listen(self, uris: list[str]) -> None:
        """:raises InvalidParams: more URIs than ``max_subscriptions_per_session``."""
        if len(set(uris)) > self.max_per_session:
            raise InvalidParams(
                f"a listen stream may watch at most {self.max_per_session} resources "
                f"(max_subscriptions_per_session); {len(set(uris))} were asked",
                data={"max_subscriptions_per_session": self.max_per_session},
            )


async def _tell(connection: Any, lists: frozenset[str]) -> int:
    """Send ``connection`` one ``notifications/*/list_changed`` per list; 1 if any was sent."""
    sends = {"resources": connection.send_resource_list_changed, "tools": connection.send_tool_list_changed,
             "prompts": connection.send_prompt_list_changed}  # fmt: skip
    try:
        for kind in sorted(lists):
            await sends[kind]()
    except _GONE:  # closed meanwhile: its exit stack forgets it
        return 0
    return 1 if lists else 0


def _connection(session: Any) -> Any:
    """The connection a per-request ``ServerSession`` belongs to: watches live as long as it does.

    The SDK builds one ``ServerSession`` proxy per request, so the proxy cannot name the session;
    its connection (``session._connection``, checked at start-up by ``seams.check_seams``) can, and
    carries the per-connection exit stack.
    """
    return connection_of(session)
