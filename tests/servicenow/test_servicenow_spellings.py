"""ServiceNow reads in other spellings of their URIs (issue 24, item 5): the provider routes by
declaration and decoded values, and the instance name (the host) is compared as written."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from mcp import MCPError
from servicenow_support import dev_instance, servicenow_plugin

from mcp_providers.plugins import policy
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.plugins.servicenow.seed import sys_id_for
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "sent",
    ["SERVICENOW://dev/incidents", "servicenow://%64ev/incidents", "ServiceNow://instances", "servicenow://%74ables"],
)
async def test_servicenow_reads_in_other_spellings(
    sent: str, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = compose(
        {"servicenow": servicenow_plugin}, {"servicenow": {"instances": [dev_instance(dev_emulator)]}}
    )
    async with connect(composition) as client:
        got = await client.read_resource(sent)
    assert json.loads(got.contents[0].text)["metadata"]["record_count"] >= 1  # type: ignore[union-attr]


async def test_a_servicenow_instance_name_is_case_sensitive(
    dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    """The host is left as written (custom schemes give it their own meaning): ``DEV`` is not ``dev``,
    and the refusal names only what is configured."""
    composition = compose(
        {"servicenow": servicenow_plugin}, {"servicenow": {"instances": [dev_instance(dev_emulator)]}}
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("servicenow://DEV/incidents")
    assert caught.value.error.code == -32602 and "'DEV'" in caught.value.error.message


# Round 16 (tester twenty-one): a rule judges the URI as sent; no other spelling of a sys_id, a
# record number or an instance reaches the record a rule names. Another spelling is refused before
# anything is sent, naming the one to use.

SET = sys_id_for("dev", "sys_update_set", 0)
DENIED = [f"servicenow://dev/update-sets/{SET}", "servicenow://dev/incidents/INC0010001"]


@pytest.mark.parametrize(
    ("sent", "use"),
    [
        (f"servicenow://dev/update-sets/{SET.upper()}", SET),
        (f"servicenow://dev/update-sets/{SET[:5].upper()}{SET[5:]}", SET),
        ("servicenow://dev/incidents/inc0010001", "INC0010001"),
        ("servicenow://dev/incidents/Inc0010001", "INC0010001"),
        ("servicenow://Dev/incidents", "dev"),
    ],
)
async def test_another_spelling_of_a_servicenow_value_is_refused_naming_the_one_to_use(
    sent: str, use: str, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    for rules in ([], [{"effect": "deny", "actions": ["read"], "targets": DENIED}]):
        composition = compose(
            {"servicenow": servicenow_plugin, "policy": policy},
            {"servicenow": {"instances": [dev_instance(dev_emulator)]}, "policy": {"rules": rules}},
        )
        async with connect(composition) as client:
            with pytest.raises(MCPError) as caught:
                await client.read_resource(sent)
        said = caught.value.error.message
        if not rules:  # with a deny of the canonical value, the policy's readings may refuse first (-32003)
            assert caught.value.error.code == -32602 and f"use {use!r}" in said, said
        assert dev_emulator.requests == [], rules


@pytest.mark.parametrize(
    "sent",
    [f"servicenow://dev/update-sets/%{ord(SET[0]):02x}{SET[1:]}", "servicenow://dev/incidents/%49NC0010001"],
)
async def test_a_percent_escaped_servicenow_value_is_the_value_a_rule_names(
    sent: str, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    rules = [{"effect": "deny", "actions": ["read"], "targets": DENIED}]
    composition = compose(
        {"servicenow": servicenow_plugin, "policy": policy},
        {"servicenow": {"instances": [dev_instance(dev_emulator)]}, "policy": {"rules": rules}},
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(sent)
    assert caught.value.error.code == -32003, caught.value.error.message
    assert dev_emulator.requests == []
