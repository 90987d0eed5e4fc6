"""The methods of watching, each a thin handler over the hub
(:class:`~mcp_providers._serve.methods.subscriptions.SubscriptionHub`): ``resources/subscribe`` and
``resources/unsubscribe`` (2025-era sessions) and ``subscriptions/listen`` (2026-07-28)."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from mcp_providers._host.catalog import Route
from mcp_providers._serve.methods.subscriptions import SubscriptionHub
from mcp_providers._serve.methods.tasks import NEEDS_TASKS, TASKS_EXTENSION, declares_tasks
from mcp_providers._serve.steps.exchange import Actor, Exchange
from mcp_providers.errors import MissingCapability


def _located(hub: SubscriptionHub, exchange: Exchange, uri: str) -> tuple[Route, str]:
    """Where the watched ``uri`` goes, for this caller (a not-found hint names only what it may list)."""
    exchange.target = uri[:256]  # the audit line never carries an oversized URI
    return hub.locate(uri, exchange.gate.listable), uri


class Subscribe:
    """``resources/subscribe`` (2025-era sessions): watch one live resource."""

    name = "resources/subscribe"
    actor: Actor = "application"

    def __init__(self, hub: SubscriptionHub) -> None:
        self._hub = hub

    def route(self, exchange: Exchange, params: types.SubscribeRequestParams) -> tuple[Route, str]:
        return _located(self._hub, exchange, params.uri)

    def authorize(self, exchange: Exchange, target: tuple[Route, str]) -> None:
        exchange.gate.require_route("subscribe", *target)
        exchange.gate.require_route("read", *target)  # watch only what the caller may read
        self._hub.require_watchable(*target)  # after the gate: a denied caller learns nothing of it

    async def invoke(self, exchange: Exchange, target: tuple[Route, str]) -> None:
        self._hub.subscribe(exchange.ctx.session, exchange.principal, target[0].canonical)

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
        return _located(self._hub, exchange, params.uri)

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
        """:raises MissingCapability: task notifications (``taskIds``) asked by a client that did
        not declare the tasks extension on the request (SEP-2663: MUST be -32021). Declared, they
        are not sent (the spec's MAY): the acknowledgement does not list them."""
        if "taskIds" in (params.notifications.model_extra or {}) and not declares_tasks(exchange.ctx):
            raise MissingCapability(
                f"task notifications (notifications.taskIds) need the {TASKS_EXTENSION} extension declared in "
                "the request's client capabilities",
                data=NEEDS_TASKS,
            )
        uris = list(params.notifications.resource_subscriptions or ())
        exchange.target = ",".join(uris)[:1024]
        self._hub.check_listen(uris)
        return params, [(self._hub.locate(uri, exchange.gate.listable), uri) for uri in uris]

    def authorize(self, exchange: Exchange, target: Any) -> None:
        for route, uri in target[1]:
            exchange.gate.require_route("subscribe", route, uri)
            exchange.gate.require_route("read", route, uri)
        for route, uri in target[1]:  # after the gate: a denied caller learns nothing of how it is kept
            self._hub.require_watchable(route, uri)

    async def invoke(self, exchange: Exchange, target: Any) -> types.SubscriptionsListenResult:
        return await self._hub.listen(exchange.ctx, target[0], exchange.principal)

    def evidence(self, exchange: Exchange, target: Any, produced: types.SubscriptionsListenResult) -> Any:
        return produced
