"""A policy rule on ServiceNow URIs holds for the tools as it does for resource reads."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from mcp import MCPError
from servicenow_support import dev_instance, prod_instance, servicenow_plugin

from mcp_providers.plugins import policy
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


async def test_a_deny_on_prod_uris_stops_tool_reads_and_writes_on_prod_only(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    rules = {
        "rules": [
            {
                "effect": "deny",
                "actions": ["read", "call"],
                "targets": ["servicenow://prod/*"],
                "reason": "production needs an approved client",
            }
        ]
    }
    composition = compose(
        {"servicenow": servicenow_plugin, "policy": policy},
        {"servicenow": {"instances": [dev_instance(dev_emulator), prod_instance(prod_emulator)]}, "policy": rules},
    )
    prod_before = len(prod_emulator.table_requests())
    async with connect(composition) as client:
        dev = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "incident", "limit": 2})
        assert not dev.is_error and dev.structured_content["instance"] == "dev"  # type: ignore[index]
        with pytest.raises(MCPError) as read:
            await client.call_tool("servicenow_query_table", {"instance": "prod", "table": "incident"})
        assert read.value.code == -32003
        assert "may not read servicenow://prod/incident" in read.value.message
        assert "production needs an approved client" in read.value.message
        with pytest.raises(MCPError) as write:
            await client.call_tool("servicenow_create_incident", {"instance": "prod", "short_description": "x"})
        assert write.value.code == -32003 and "may not call servicenow://prod/incident" in write.value.message
        with pytest.raises(MCPError):
            await client.read_resource("servicenow://prod/incidents")
    assert len(prod_emulator.table_requests()) == prod_before  # nothing reached prod


@pytest.mark.parametrize(
    "uri",
    [
        "servicenow://prod/incidents",
        "servicenow://%70rod/incidents",
        "servicenow://pro%64/info",
        "SERVICENOW://prod/incidents",
        "Servicenow://%70rod/update-sets",
    ],
)
async def test_a_rule_on_prod_holds_however_the_uri_is_spelled(
    uri: str, dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    rules = {"rules": [{"effect": "deny", "targets": ["servicenow://prod/*"]}]}
    composition = compose(
        {"servicenow": servicenow_plugin, "policy": policy},
        {"servicenow": {"instances": [dev_instance(dev_emulator), prod_instance(prod_emulator)]}, "policy": rules},
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as err:
            await client.read_resource(uri)
        assert err.value.code == -32003
        with pytest.raises(MCPError) as watch:
            async with client.listen(resource_subscriptions=[uri]):
                pass
        # the policy is asked first: a caller denied info learns nothing of how it is kept (it is live
        # but announces no change, which a caller who may read it is told)
        assert watch.value.code == -32003
        assert (await client.read_resource("servicenow://dev/incidents")).contents
    assert prod_emulator.table_requests() == []


async def test_completion_offers_nothing_from_a_denied_instance(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    import mcp_types as types

    rules = {"rules": [{"effect": "deny", "targets": ["servicenow://prod/*"]}]}
    composition = compose(
        {"servicenow": servicenow_plugin, "policy": policy},
        {"servicenow": {"instances": [dev_instance(dev_emulator), prod_instance(prod_emulator)]}, "policy": rules},
    )
    ref = types.ResourceTemplateReference(type="ref/resource", uri="servicenow://{instance}/incidents/{number}")
    async with connect(composition) as client:
        instances = await client.complete(ref, {"name": "instance", "value": ""})
        assert instances.completion.values == ["dev"]
        with pytest.raises(MCPError) as err:
            await client.complete(ref, {"name": "number", "value": "INC"}, context_arguments={"instance": "prod"})
        assert err.value.code == -32003
        dev = await client.complete(ref, {"name": "number", "value": "INC"}, context_arguments={"instance": "dev"})
        assert dev.completion.values and all(v.startswith("INC") for v in dev.completion.values)
    assert prod_emulator.table_requests() == []
