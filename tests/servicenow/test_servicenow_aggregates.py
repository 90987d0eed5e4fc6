"""ServiceNow lists leave out the records the caller may not read on their own (issue 24, item 3).

``{instance}/incidents`` lists an incident only if ``{instance}/incidents/{number}`` is readable,
``{instance}/update-sets`` an update set only if ``{instance}/update-sets/{sys_id}`` is, and
``servicenow://instances`` an instance only if its ``info`` is; counts and refusals follow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from mcp import MCPError
from servicenow_support import dev_instance, prod_instance, servicenow_plugin

from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins import policy
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


def _compose(dev: Emulator, prod: Emulator, *denied: str) -> Any:
    rules = [{"effect": "deny", "actions": ["read"], "targets": list(denied)}] if denied else []
    return compose(
        {"servicenow": servicenow_plugin, "policy": policy},
        {"servicenow": {"instances": [dev_instance(dev), prod_instance(prod)]}, "policy": {"rules": rules}},
    )


async def _body(composition: Any, uri: str) -> tuple[dict[str, Any], str]:
    async with connect(composition) as client:
        result = await client.read_resource(uri)
    text = result.contents[0].text  # type: ignore[union-attr]
    return json.loads(text), text + json.dumps((result.meta or {})[RECEIPT_KEY])


async def test_the_incident_list_leaves_out_an_incident_the_caller_may_not_read(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    before, _ = await _body(_compose(dev_emulator, prod_emulator), "servicenow://dev/incidents")
    numbers = [r["number"] for r in before["data"]]
    secret = numbers[0]
    after, seen = await _body(
        _compose(dev_emulator, prod_emulator, f"servicenow://dev/incidents/{secret}"), "servicenow://dev/incidents"
    )
    assert [r["number"] for r in after["data"]] == numbers[1:]
    assert secret not in seen  # neither the records nor the receipt name it
    assert after["metadata"]["record_count"] == before["metadata"]["record_count"] - 1
    assert after["metadata"]["total"] == before["metadata"]["total"] - 1
    prod_before, _ = await _body(_compose(dev_emulator, prod_emulator), "servicenow://prod/incidents")
    prod_after, _ = await _body(
        _compose(dev_emulator, prod_emulator, f"servicenow://dev/incidents/{secret}"), "servicenow://prod/incidents"
    )
    assert [r["number"] for r in prod_after["data"]] == [r["number"] for r in prod_before["data"]]  # dev's rule only


async def test_a_wildcard_rule_on_incident_records_empties_the_list_but_not_other_lists(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = _compose(dev_emulator, prod_emulator, "servicenow://dev/incidents/*")
    incidents, _ = await _body(composition, "SERVICENOW://dev/incidents")
    assert incidents["data"] == [] and incidents["metadata"]["record_count"] == 0
    problems, _ = await _body(composition, "servicenow://dev/problems")
    assert problems["data"]  # no problem is served on its own: nothing to leave out


async def test_the_update_set_list_leaves_out_an_update_set_the_caller_may_not_read(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    before, _ = await _body(_compose(dev_emulator, prod_emulator), "servicenow://dev/update-sets")
    ids = [r["sys_id"] for r in before["data"]]
    assert ids
    after, seen = await _body(
        _compose(dev_emulator, prod_emulator, f"servicenow://dev/update-sets/{ids[0]}"), "servicenow://dev/update-sets"
    )
    assert [r["sys_id"] for r in after["data"]] == ids[1:] and ids[0] not in seen


async def test_the_instance_list_and_refusals_name_no_instance_the_caller_may_not_read(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    before, _ = await _body(_compose(dev_emulator, prod_emulator), "servicenow://instances")
    assert [i["name"] for i in before["data"]] == ["dev", "prod"]
    composition = _compose(dev_emulator, prod_emulator, "servicenow://prod/*")
    after, seen = await _body(composition, "servicenow://instances")
    assert [i["name"] for i in after["data"]] == ["dev"]
    assert prod_emulator.base_url not in seen
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("servicenow://staging/incidents")
    assert "configured instances: dev" in caught.value.error.message
    assert "prod" not in caught.value.error.message and "prod" not in json.dumps(caught.value.error.data)


@pytest.mark.parametrize("fields", [[], ["short_description"]], ids=["all-fields", "without-number"])
async def test_the_query_tool_leaves_out_and_get_record_refuses_an_incident_the_caller_may_not_read(
    fields: list[str], dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    query = {"instance": "dev", "table": "incident", "fields": fields, "limit": 100}
    async with connect(_compose(dev_emulator, prod_emulator)) as client:
        everything = await client.call_tool("servicenow_query_table", {**query, "fields": ["number", "sys_id"]})
    first = everything.structured_content["records"][0]  # type: ignore[index]
    secret, secret_id = first["number"], first["sys_id"]
    composition = _compose(dev_emulator, prod_emulator, f"servicenow://dev/incidents/{secret}")
    async with connect(composition) as client:
        result = await client.call_tool("servicenow_query_table", query)
        out = result.structured_content or {}
        assert not result.is_error and out["record_count"] == len(everything.structured_content["records"]) - 1  # type: ignore[index]
        assert secret not in json.dumps(out) and secret not in str(result.content)
        if fields:  # the number was fetched to ask about the record, not returned
            assert all(set(r) == {"short_description"} for r in out["records"])
        with pytest.raises(MCPError) as caught:
            await client.call_tool(
                "servicenow_get_record", {"instance": "dev", "table": "incident", "sys_id": secret_id, "fields": fields}
            )
        assert caught.value.error.code == -32003
        other = everything.structured_content["records"][1]["sys_id"]  # type: ignore[index]
        got = await client.call_tool("servicenow_get_record", {"instance": "dev", "table": "incident", "sys_id": other})
        assert not got.is_error


def test_the_servicenow_lists_declare_served_members_and_check_is_quiet_about_them(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    from mcp_providers._host.advisories import advisories
    from mcp_providers._serve.statics import aggregate_report

    composition = _compose(dev_emulator, prod_emulator, "servicenow://prod/*", "servicenow://dev/incidents/*")
    members = {e.declaration.name: e.declaration.members for e in composition.catalog.templates}
    assert members["servicenow-incidents"] is not None and members["servicenow-incidents"].filtered
    assert [p for p in advisories(composition.assembly.declared) if p.rule == "member-unserved"] == []
    assert aggregate_report(composition) == []


async def test_number_completion_offers_no_incident_the_caller_may_not_read(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    import mcp_types as types

    ref = types.ResourceTemplateReference(type="ref/resource", uri="servicenow://{instance}/incidents/{number}")
    argument, context = {"name": "number", "value": "INC"}, {"instance": "dev"}
    async with connect(_compose(dev_emulator, prod_emulator)) as client:
        offered = (await client.complete(ref, argument, context_arguments=context)).completion.values
    secret = offered[0]
    composition = _compose(dev_emulator, prod_emulator, f"servicenow://dev/incidents/{secret}")
    async with connect(composition) as client:
        after = (await client.complete(ref, argument, context_arguments=context)).completion.values
    assert after == [v for v in offered if v != secret]
    denied_template = compose(
        {"servicenow": servicenow_plugin, "policy": policy},
        {
            "servicenow": {"instances": [dev_instance(dev_emulator), prod_instance(prod_emulator)]},
            "policy": {"rules": [{"effect": "deny", "actions": ["expand"], "targets": [ref.uri]}]},
        },
    )
    async with connect(denied_template) as client:  # the chosen scope is a URI of the denied template
        with pytest.raises(MCPError) as caught:
            await client.complete(ref, argument, context_arguments=context)
    assert caught.value.error.code == -32003 and f"expand on {ref.uri}" in caught.value.error.message
