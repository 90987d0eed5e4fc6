"""Watching live resources, in both protocol eras, with authorization on every delivery.

- 2026-07-28: ``subscriptions/listen``; the SDK's :class:`~mcp.server.subscriptions.ListenHandler`
  serves the stream, fed by a per-stream view of one bus that drops events the subject may no
  longer see.
- 2025-11-25: ``resources/subscribe`` and ``resources/unsubscribe``; the hub keeps each session's
  subscriptions and sends ``notifications/resources/updated`` on the session's standalone channel.

Only resources declared :meth:`Freshness.live() <mcp_providers.models.Freshness.live>` can be
watched. A provider publishes through the one core API, the :class:`Publisher` the core sets on it
as ``provider.publisher`` before its ``lifespan`` starts::

    await self.publisher.resource_updated("servicenow://dev/incidents")

Subscribing is authorized (action ``subscribe``) when the watch starts, and again for every
delivery, so a policy change takes effect on the next update. Notifications carry only the URI:
the client re-reads it through the normal, authorized read path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, ServerEvent

from mcp_providers._host.catalog import Catalog, Route
from mcp_providers._serve.pipeline import Actor, Exchange
from mcp_providers.errors import InvalidParams
from mcp_providers.providers import ResourceProvider

log = logging.getLogger("mcp_providers.subscriptions")

Allowed = Callable[[str, str], bool]
"""``allowed(subject, uri) -> bool``: may ``subject`` watch ``uri`` now."""


class Publisher:
    """What a resource provider calls when one of its live resources changed."""

    def __init__(self, hub: SubscriptionHub, provider: ResourceProvider) -> None:
        self._hub = hub
        self._provider = provider

    async def resource_updated(self, uri: str) -> None:
        """Tell every authorized watcher of ``uri`` that it changed.

        :raises ValueError: ``uri`` is not a live resource this provider serves.
        """
        route = self._hub.catalog.route(uri)
        if route.provider is not self._provider or route.declaration.freshness.kind != "live":
            raise ValueError(f"{uri} is not a live resource of provider {self._provider.name!r}")
        await self._hub.publish(route.canonical)  # watches are kept under the canonical URI


class _SubjectView:
    """One listen stream's view of the bus: only events its subject may still see."""

    def __init__(self, bus: InMemorySubscriptionBus, subject: str, allowed: Allowed) -> None:
        self._bus, self._subject, self._allowed = bus, subject, allowed

    async def publish(self, event: ServerEvent) -> None:
        await self._bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        def filtered(event: ServerEvent) -> None:
            if isinstance(event, ResourceUpdated) and not self._allowed(self._subject, event.uri):
                log.info("dropped update of %s for %s: no longer authorized", event.uri, self._subject)
                return
            listener(event)

        return self._bus.subscribe(filtered)


class SubscriptionHub:
    """Subscriptions of one composed server, in both eras."""

    def __init__(self, catalog: Catalog, allowed: Allowed) -> None:
        self.catalog = catalog
        self._allowed = allowed
        self._bus = InMemorySubscriptionBus()
        # uri -> {id(session): (session, subject)}; 2025-11-25 sessions only.
        self._sessions: dict[str, dict[int, tuple[Any, str]]] = {}

    def publisher(self, provider: ResourceProvider) -> Publisher:
        return Publisher(self, provider)

    def watchable(self, uri: str) -> Route:
        """Where ``uri`` goes, if it is a live resource of this composition.

        :raises NotFound: nothing serves ``uri``.
        :raises InvalidParams: it is served but not declared live.
        """
        route = self.catalog.route(uri)
        if route.declaration.freshness.kind != "live":
            raise InvalidParams(
                f"{uri} cannot be watched: provider {route.provider.name!r} does not declare it live; "
                "read it again instead",
                data={"uri": uri},
            )
        return route

    async def publish(self, uri: str) -> None:
        await self._bus.publish(ResourceUpdated(uri=uri))
        for key, (session, subject) in list(self._sessions.get(uri, {}).items()):
            if not self._allowed(subject, uri):
                log.info("dropped update of %s for %s: no longer authorized", uri, subject)
                continue
            try:
                await session.send_resource_updated(uri)
            except Exception:  # the session is gone: forget it
                self._sessions.get(uri, {}).pop(key, None)

    # -- 2025-11-25 ----------------------------------------------------------------------------

    def subscribe(self, session: Any, subject: str, uri: str) -> None:
        self._sessions.setdefault(uri, {})[id(session)] = (session, subject)

    def unsubscribe(self, session: Any, uri: str) -> None:
        watchers = self._sessions.get(uri)
        if watchers is not None:
            watchers.pop(id(session), None)
            if not watchers:
                del self._sessions[uri]

    # -- 2026-07-28 ----------------------------------------------------------------------------

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams, subject: str
    ) -> types.SubscriptionsListenResult:
        """Serve one ``subscriptions/listen`` stream for ``subject`` (URIs already checked)."""
        handler = ListenHandler(_SubjectView(self._bus, subject, self._allowed))
        return await handler(ctx, params)


# -- the methods -----------------------------------------------------------------------------------


class Subscribe:
    """``resources/subscribe`` (2025-era sessions): watch one live resource."""

    name = "resources/subscribe"
    actor: Actor = "application"

    def __init__(self, hub: SubscriptionHub) -> None:
        self._hub = hub

    def route(self, exchange: Exchange, params: types.SubscribeRequestParams) -> tuple[Route, str]:
        exchange.target = params.uri
        return self._hub.watchable(params.uri), params.uri

    def authorize(self, exchange: Exchange, target: tuple[Route, str]) -> None:
        exchange.gate.require_route("subscribe", *target)

    async def invoke(self, exchange: Exchange, target: tuple[Route, str]) -> None:
        self._hub.subscribe(exchange.ctx.session, exchange.subject, target[0].canonical)

    def evidence(self, exchange: Exchange, target: tuple[Route, str], produced: None) -> types.EmptyResult:
        return types.EmptyResult()


class Unsubscribe:
    """``resources/unsubscribe``: stop watching. Asked like a subscription, so a caller learns
    nothing about a resource it may not watch (its watch was never delivered to anyway)."""

    name = "resources/unsubscribe"
    actor: Actor = "application"

    def __init__(self, hub: SubscriptionHub) -> None:
        self._hub = hub

    def route(self, exchange: Exchange, params: types.UnsubscribeRequestParams) -> tuple[Route, str]:
        exchange.target = params.uri
        return self._hub.catalog.route(params.uri), params.uri

    def authorize(self, exchange: Exchange, target: tuple[Route, str]) -> None:
        exchange.gate.require_route("subscribe", *target)

    async def invoke(self, exchange: Exchange, target: tuple[Route, str]) -> None:
        self._hub.unsubscribe(exchange.ctx.session, target[0].canonical)

    def evidence(self, exchange: Exchange, target: tuple[Route, str], produced: None) -> types.EmptyResult:
        return types.EmptyResult()


class Listen:
    """``subscriptions/listen`` (2026-07-28): one stream of updates for the listed live resources."""

    name = "subscriptions/listen"
    actor: Actor = "application"

    def __init__(self, hub: SubscriptionHub) -> None:
        self._hub = hub

    def route(self, exchange: Exchange, params: types.SubscriptionsListenRequestParams) -> Any:
        uris = list(params.notifications.resource_subscriptions or ())
        exchange.target = ",".join(uris)
        return params, [(self._hub.watchable(uri), uri) for uri in uris]

    def authorize(self, exchange: Exchange, target: Any) -> None:
        for route, uri in target[1]:
            exchange.gate.require_route("subscribe", route, uri)

    async def invoke(self, exchange: Exchange, target: Any) -> types.SubscriptionsListenResult:
        return await self._hub.listen(exchange.ctx, target[0], exchange.subject)

    def evidence(self, exchange: Exchange, target: Any, produced: types.SubscriptionsListenResult) -> Any:
        return produced
