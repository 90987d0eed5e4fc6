"""The active incidents list is live: a change on the instance reaches watchers in both eras."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from servicenow_support import compose_servicenow, dev_instance

from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

URI = "servicenow://dev/incidents"


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # 2025-11-25 subscribe
async def test_a_new_incident_is_published_to_watchers_in_both_eras(
    dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = compose_servicenow(dev_instance(dev_emulator, live_poll=True, incidents_poll_seconds=0.1))
    got: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            got.append(message.params.uri)

    async with Client(composition.server, mode="legacy", cache=None, message_handler=on_message) as legacy:
        await legacy.subscribe_resource(URI)
        await anyio.sleep(0.3)  # let the poller see the list once
        created = await legacy.call_tool(
            "servicenow_create_incident",
            {
                "instance": "dev",
                "short_description": "Printer on fire",
                "urgency": "1",
            },
        )
        assert not created.is_error, created.content
        with anyio.fail_after(10):
            while URI not in got:
                await anyio.sleep(0.05)
        before = len([r for r in dev_emulator.requests if r.method == "GET"])
        assert before > 0

    async with connect(composition) as modern, modern.listen(resource_subscriptions=[URI]) as stream:
        await anyio.sleep(0.3)
        await modern.call_tool(
            "servicenow_create_incident",
            {
                "instance": "dev",
                "short_description": "Second printer on fire",
                "urgency": "2",
            },
        )
        with anyio.fail_after(10):
            async for event in stream:
                assert event.uri == URI  # type: ignore[union-attr]
                break
