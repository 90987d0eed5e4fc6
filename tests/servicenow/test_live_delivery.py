"""Issue 14, part 1: every ServiceNow resource declared watchable delivers its changes.

- a live source takes its first snapshot when the server starts (no lost first interval);
- the plugin publishes after its own writes, and the poller's diff publishes changes made
  elsewhere, for the incident by number, problems, change requests and update sets;
- what is not watchable is refused with a clear error, and the lists say what can be watched.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from servicenow_support import DEV_PASSWORD, DEV_USER, compose_servicenow, dev_instance

from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import connect

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),  # 2025-11-25 subscribe
]


def _sys_id(emulator: Emulator, table: str, **match: str) -> str:
    for row in emulator.records(table):
        if all(row.get(k) == v for k, v in match.items()):
            return str(row["sys_id"])
    raise AssertionError(f"no {table} row matching {match}")


def _patch_out_of_band(emulator: Emulator, table: str, sys_id: str, values: dict[str, str]) -> None:
    """A change made on the instance by someone else (not through this server)."""
    token = base64.b64encode(f"{DEV_USER}:{DEV_PASSWORD}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(f"{emulator.base_url}/api/now/table/{table}/{sys_id}", method="PATCH",
                                     data=json.dumps(values).encode(), headers=headers)  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


class _Updates:
    def __init__(self) -> None:
        self.uris: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(message.params.uri)

    async def wait_for(self, uri: str, seconds: float) -> None:
        with anyio.fail_after(seconds):
            while uri not in self.uris:
                await anyio.sleep(0.02)


async def test_a_change_before_the_first_interval_is_reported(
    dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = compose_servicenow(dev_instance(dev_emulator, live_poll=True, incidents_poll_seconds=1.0))
    updates = _Updates()
    async with Client(composition.server, mode="legacy", cache=None, message_handler=updates) as legacy:
        await legacy.subscribe_resource("servicenow://dev/incidents")
        await anyio.sleep(0.2)  # the server has started, well inside the first interval
        sys_id = _sys_id(dev_emulator, "incident", number="INC0010001")
        _patch_out_of_band(dev_emulator, "incident", sys_id, {"short_description": "changed elsewhere"})
        await updates.wait_for("servicenow://dev/incidents", 1.0 + 1.5)


async def test_an_incident_by_number_is_published_after_the_plugins_own_write(
    dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = compose_servicenow(dev_instance(dev_emulator))  # polls every 60 s: only the write publishes
    uri = "servicenow://dev/incidents/INC0010001"
    sys_id = _sys_id(dev_emulator, "incident", number="INC0010001")
    updates = _Updates()
    async with Client(composition.server, mode="legacy", cache=None, message_handler=updates) as legacy:
        await legacy.subscribe_resource(uri)
        result = await legacy.call_tool("servicenow_update_record", {
            "instance": "dev", "table": "incident", "sys_id": sys_id, "values": {"short_description": "edited"},
        })  # fmt: skip
        assert not result.is_error, result.content
        await updates.wait_for(uri, 2)

    async with connect(composition) as modern, modern.listen(resource_subscriptions=[uri]) as stream:
        await modern.call_tool("servicenow_add_comment", {"instance": "dev", "number": "INC0010001", "text": "hi"})
        with anyio.fail_after(2):
            async for event in stream:
                assert event.uri == uri  # type: ignore[union-attr]
                break


@pytest.mark.parametrize(
    ("table", "uri", "values"),
    [
        ("problem", "servicenow://dev/problems", {"short_description": "root cause moved"}),
        ("change_request", "servicenow://dev/change-requests", {"short_description": "window moved"}),
        ("sys_update_set", "servicenow://dev/update-sets", {"description": "renamed elsewhere"}),
    ],
)
async def test_the_poller_publishes_changes_made_elsewhere_to_every_live_list(
    dev_emulator: Emulator, secrets_env: Mapping[str, str], table: str, uri: str, values: dict[str, str]
) -> None:
    composition = compose_servicenow(dev_instance(dev_emulator, live_poll=True, incidents_poll_seconds=0.2))
    match = {"state": "in progress"} if table == "sys_update_set" else {"active": "true"}
    sys_id = _sys_id(dev_emulator, table, **match)
    watched = [uri] + ([f"servicenow://dev/update-sets/{sys_id}"] if table == "sys_update_set" else [])
    updates = _Updates()
    async with Client(composition.server, mode="legacy", cache=None, message_handler=updates) as legacy:
        for each in watched:
            await legacy.subscribe_resource(each)
        await anyio.sleep(0.3)
        _patch_out_of_band(dev_emulator, table, sys_id, values)
        for each in watched:
            await updates.wait_for(each, 0.2 + 2.5)


async def test_a_problem_is_published_after_the_plugins_own_write(
    dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = compose_servicenow(dev_instance(dev_emulator))
    sys_id = _sys_id(dev_emulator, "problem", active="true")
    updates = _Updates()
    async with Client(composition.server, mode="legacy", cache=None, message_handler=updates) as legacy:
        await legacy.subscribe_resource("servicenow://dev/problems")
        result = await legacy.call_tool("servicenow_add_comment", {
            "instance": "dev", "table": "problem", "sys_id": sys_id, "text": "seen again",
        })  # fmt: skip
        assert not result.is_error, result.content
        await updates.wait_for("servicenow://dev/problems", 2)


async def test_what_cannot_be_watched_is_refused_and_lists_say_what_can(
    dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = compose_servicenow(dev_instance(dev_emulator))
    async with Client(composition.server, mode="legacy", cache=None) as legacy:
        with pytest.raises(MCPError) as err:
            await legacy.subscribe_resource("servicenow://dev/info")
        assert err.value.code == types.INVALID_PARAMS
        assert "cannot be watched" in err.value.message
        templates = {t.name: t for t in (await legacy.list_resource_templates()).resource_templates}
        assert (templates["servicenow-instance-info"].meta or {}).get("io.mcp-providers/subscribable") is False
        for name in ("servicenow-incidents", "servicenow-incident", "servicenow-problems",
                     "servicenow-change-requests", "servicenow-update-sets", "servicenow-update-set"):  # fmt: skip
            assert (templates[name].meta or {}).get("io.mcp-providers/subscribable") is True, name
