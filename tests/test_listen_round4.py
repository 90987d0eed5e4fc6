"""Round 4 items 9 and 15: what an open watch costs, and what it asks on every delivery.

Item 9: a delivery to an open watch asked ``subscribe`` and ``read`` on the URI, never ``expand``
on its template, which the watch and every read ask: a template closed by ``deny expand`` went
on announcing changes. Now a delivery asks what a read asks, in both eras.

Item 15: every update cost one authorization per open listen stream, watching its URI or not, and
nothing capped how many streams one subject held. Now an update reaches (and is authorized for)
only the streams watching its URI, and ``[server.limits] listen_streams`` caps each subject.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
import pytest
from custody_fixture import MutablePolicy
from mcp import Client, MCPError

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.config import LimitsSettings, ServerSettings
from mcp_providers.errors import RateLimited
from mcp_providers.identity import Principal
from mcp_providers.models import ResourceTemplate
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

TEMPLATE = "live://items/{name}"
ITEM, OTHER, STATUS = "live://items/a", "live://items/b", "live://status"


class Live(ResourceProvider):
    name = "live"
    prefixes = ("live://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=STATUS, name="status", mime_type="text/plain", freshness=Freshness.live())]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template=TEMPLATE, name="item", mime_type="text/plain",
                                 freshness=Freshness.live())]  # fmt: skip

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="now")


class Plugin:
    def __init__(self) -> None:
        self.provider = Live()

    @hookimpl
    def register_resource_providers(self, settings: Any) -> Sequence[ResourceProvider]:
        return [self.provider]


def _composed(**server: Any) -> tuple[Any, Plugin, MutablePolicy]:
    plugin, policy = Plugin(), MutablePolicy()
    return compose({"live": plugin, "policy": policy}, server=ServerSettings(**server)), plugin, policy


# the questions a read of ITEM asks; closing any one of them closes delivery too
CLOSED = [("expand", TEMPLATE), ("read", ITEM), ("subscribe", ITEM)]


@pytest.mark.parametrize("denied", CLOSED, ids=[a for a, _ in CLOSED])
async def test_round4_item9_a_listen_stream_stops_hearing_of_a_uri_its_subject_may_no_longer_read(
    denied: tuple[str, str],
) -> None:
    composition, plugin, policy = _composed()
    async with connect(composition) as client, client.listen(resource_subscriptions=[ITEM, STATUS]) as stream:
        policy.denied.add(denied)
        await plugin.provider.publisher.resource_updated(ITEM)  # dropped
        policy.denied.clear()
        await plugin.provider.publisher.resource_updated(STATUS)  # delivered: the one event seen
        with anyio.fail_after(5):
            async for event in stream:
                assert getattr(event, "uri", None) == STATUS, event
                break


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("denied", CLOSED, ids=[a for a, _ in CLOSED])
async def test_round4_item9_a_2025_session_stops_hearing_of_a_uri_its_subject_may_no_longer_read(
    denied: tuple[str, str],
) -> None:
    composition, plugin, policy = _composed()
    got: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            got.append(message.params.uri)

    async with Client(composition.server, mode="legacy", cache=None, message_handler=on_message) as legacy:
        await legacy.subscribe_resource(ITEM)
        policy.denied.add(denied)
        await plugin.provider.publisher.resource_updated(ITEM)
        policy.denied.clear()
        await plugin.provider.publisher.resource_updated(ITEM)
        with anyio.fail_after(5):
            while not got:
                await anyio.sleep(0.01)
        await legacy.send_ping()  # a full round trip: anything sent before it has arrived
        assert got == [ITEM]


async def test_round4_item9_the_delivery_check_asks_what_a_read_asks() -> None:
    composition, _, policy = _composed()
    runtime, alice = composition.runtime, Principal("alice", issuer="https://idp.example")
    assert runtime._may_watch(alice, ITEM) and runtime._may_watch(alice, STATUS)
    policy.denied.add(("expand", TEMPLATE))
    assert not runtime._may_watch(alice, ITEM) and runtime._may_watch(alice, STATUS)
    assert not runtime._may_watch(alice, "other://not/served")  # gone after a reload: no


async def test_round4_item15_an_update_is_authorized_only_for_the_streams_watching_it() -> None:
    composition, plugin, _ = _composed()
    hub, asked = composition.runtime.hub, []
    allowed = hub.allowed
    hub.allowed = lambda principal, uri: asked.append(uri) or allowed(principal, uri)  # type: ignore[method-assign]
    async with (
        connect(composition) as client,
        client.listen(resource_subscriptions=[ITEM]) as watching,
        connect(composition) as other,
        other.listen(tools_list_changed=True),
        other.listen(resource_subscriptions=[OTHER]),
    ):
        for _ in range(5):
            await plugin.provider.publisher.resource_updated(STATUS)  # nobody watches it
        await plugin.provider.publisher.resource_updated(ITEM)
        with anyio.fail_after(5):
            async for event in watching:
                assert getattr(event, "uri", None) == ITEM
                break
        assert asked == [ITEM]  # one stream watches ITEM: one check; none for the others
    assert hub._watching == {} and hub.listening == 0  # closed streams leave nothing behind


@pytest.mark.parametrize("limits", [None, LimitsSettings(listen_streams=3)], ids=["default", "table"])
async def test_round4_item15_one_subject_holds_at_most_its_listen_streams(limits: LimitsSettings | None) -> None:
    composition, _, _ = _composed(limits=limits)
    hub = composition.runtime.hub
    most = (limits or LimitsSettings()).listen_streams
    alice, bob = Principal("alice", issuer="https://idp.example"), Principal("alice", issuer="https://other.example")
    for _ in range(most):
        assert hub._count_listen(alice) == alice.key
    with pytest.raises(RateLimited) as refused:
        hub._count_listen(alice)
    assert refused.value.code == -32009 and "listen_streams" in str(refused.value)
    assert hub._count_listen(bob) == bob.key  # a namesake at another issuer has a count of its own
    anonymous = Principal("anonymous")
    assert (hub._count_listen(anonymous) is None) == (limits is None)  # shared, and only under the table


async def test_round4_item15_a_closed_stream_gives_its_place_back() -> None:
    composition, _, _ = _composed(limits=LimitsSettings(listen_streams=1))
    async with connect(composition) as client:
        async with client.listen(resource_subscriptions=[ITEM]):
            with pytest.raises(MCPError) as refused:
                async with client.listen(resource_subscriptions=[STATUS]):
                    pass
            assert refused.value.code == -32009
        async with client.listen(resource_subscriptions=[STATUS]):  # the first one closed
            pass
