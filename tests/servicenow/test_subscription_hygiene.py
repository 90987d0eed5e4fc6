"""Issue 14, part 1: watchers go when their session or stream goes, and watching has limits.

- a 2025-era session that ends (or unsubscribes) leaves no watcher behind; neither does a
  2026-era listen stream that ends;
- a session may hold at most ``max_subscriptions_per_session`` watches, of URIs no longer than
  ``max_uri_length``, of resources the catalog serves, the caller may read, and (for ServiceNow)
  on instances that exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from servicenow_support import dev_instance

import mcp_providers.plugins.servicenow as servicenow_plugin
from mcp_providers import Decision, ServerSettings, hookimpl
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose, connect

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),  # 2025-11-25 subscribe
]

URI = "servicenow://dev/incidents"


class DenyRead:
    def __init__(self, target: str) -> None:
        self.target = target

    @hookimpl
    def authorize(self, subject: str, action: str, target: str) -> Any:
        return Decision(False, f"no read of {target}") if (action, target) == ("read", self.target) else None


def _compose(emulator: Emulator, server: ServerSettings | None = None, **plugins: Any) -> Any:
    return compose({"servicenow": servicenow_plugin, **plugins},
                   {"servicenow": {"instances": [dev_instance(emulator)]}}, server=server)  # fmt: skip


async def test_sessions_that_end_leave_no_watchers(dev_emulator: Emulator, secrets_env: Mapping[str, str]) -> None:
    composition = _compose(dev_emulator)
    hub = composition.runtime.hub
    for _ in range(50):
        async with Client(composition.server, mode="legacy", cache=None) as legacy:
            await legacy.subscribe_resource(URI)
            await legacy.subscribe_resource(URI)  # twice from one session: still one watch
            assert hub.watch_count() == 1
    assert hub.watch_count() == 0

    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        await legacy.subscribe_resource(URI)
        await legacy.unsubscribe_resource(URI)
        assert hub.watch_count() == 0

    async with connect(composition) as modern:
        for _ in range(20):
            async with modern.listen(resource_subscriptions=[URI]):
                assert hub.watch_count() == 1
            with anyio.fail_after(2):
                while hub.watch_count():
                    await anyio.sleep(0.01)


async def test_watches_are_limited_per_session(dev_emulator: Emulator, secrets_env: Mapping[str, str]) -> None:
    composition = _compose(dev_emulator, ServerSettings(max_subscriptions_per_session=3, max_uri_length=256))
    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        for n in (1, 2, 3):
            await legacy.subscribe_resource(f"servicenow://dev/incidents/INC001000{n}")
        with pytest.raises(MCPError) as err:
            await legacy.subscribe_resource("servicenow://dev/incidents/INC0010004")
        assert err.value.code == types.INVALID_PARAMS and "max_subscriptions_per_session" in err.value.message
        await legacy.unsubscribe_resource("servicenow://dev/incidents/INC0010001")
        await legacy.subscribe_resource("servicenow://dev/incidents/INC0010004")  # a slot was freed

        with pytest.raises(MCPError) as long:
            await legacy.subscribe_resource("servicenow://dev/incidents/" + "A" * 65536)
        assert long.value.code == types.INVALID_PARAMS and "max_uri_length" in long.value.message
    assert composition.runtime.hub.watch_count() == 0

    async with connect(composition) as modern:
        with pytest.raises(MCPError) as many:
            async with modern.listen(resource_subscriptions=[f"servicenow://dev/incidents/INC001000{n}"
                                                             for n in range(1, 5)]):  # fmt: skip
                pass
        assert many.value.code == types.INVALID_PARAMS


async def test_only_what_exists_and_may_be_read_can_be_watched(
    dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = _compose(dev_emulator, deny=DenyRead("servicenow://dev/problems"))
    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        with pytest.raises(MCPError) as unknown:
            await legacy.subscribe_resource("servicenow://nowhere/incidents")
        assert unknown.value.code == types.INVALID_PARAMS and "nowhere" in unknown.value.message
        with pytest.raises(MCPError) as malformed:
            await legacy.subscribe_resource("servicenow://dev/incidents/not-a-number")
        assert malformed.value.code == types.INVALID_PARAMS
        with pytest.raises(MCPError) as unserved:
            await legacy.subscribe_resource("nothing://here")
        assert unserved.value.code in (types.INVALID_PARAMS, -32002)
        with pytest.raises(MCPError) as unreadable:
            await legacy.subscribe_resource("servicenow://dev/problems")
        assert unreadable.value.code == -32003
    assert composition.runtime.hub.watch_count() == 0
