"""End to end: MCP client -> composed server -> HTTP -> Table API emulators on 127.0.0.1."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from servicenow_support import (
    DEV_PASSWORD,
    DEV_USER,
    PROD_CLIENT,
    SECRETS,
    compose_servicenow,
    dev_instance,
    prod_instance,
)

from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import assert_check_passes, connect

pytestmark = pytest.mark.anyio

INCIDENT_TEMPLATE = "servicenow://{instance}/incidents/{number}"


async def read_json(client: Client, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    assert len(result.contents) == 1
    content = result.contents[0]
    assert content.mime_type == "application/json"
    body: dict[str, Any] = json.loads(content.text)  # type: ignore[union-attr]
    assert set(body) == {"metadata", "data"}
    assert {"timestamp", "instance", "description", "record_count", "total", "has_more"} <= set(body["metadata"])
    return body


def update_set_id(emulator: Emulator, size: int) -> str:
    """sys_id of the seeded update set with ``size`` records."""
    counts: dict[str, int] = {}
    for record in emulator.records("sys_update_xml"):
        counts[record["update_set"]] = counts.get(record["update_set"], 0) + 1
    return next(sys_id for sys_id, count in counts.items() if count == size)


# -- catalog -------------------------------------------------------------------------------------


async def test_composition_passes_checks_and_lists_resources_templates_and_tools(composition, client):
    assert_check_passes(composition)
    resources = {r.uri for r in (await client.list_resources()).resources}
    assert resources == {"servicenow://instances", "servicenow://tables"}
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert templates == {
        "servicenow://{instance}/info", "servicenow://{instance}/incidents", INCIDENT_TEMPLATE,
        "servicenow://{instance}/update-sets", "servicenow://{instance}/update-sets/{sys_id}",
        "servicenow://{instance}/problems", "servicenow://{instance}/change-requests",
    }  # fmt: skip
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {
        "servicenow_query_table", "servicenow_get_record", "servicenow_create_incident",
        "servicenow_update_record", "servicenow_add_comment", "servicenow_resolve_incident",
    }  # fmt: skip
    hints = {name: (t.annotations.read_only_hint, t.annotations.destructive_hint) for name, t in tools.items()}
    assert hints == {
        "servicenow_query_table": (True, False), "servicenow_get_record": (True, False),
        "servicenow_create_incident": (False, False), "servicenow_add_comment": (False, False),
        "servicenow_update_record": (False, True), "servicenow_resolve_incident": (False, True),
    }  # fmt: skip
    assert all(t.output_schema is not None for t in tools.values())


async def test_completion_offers_configured_instances(client):
    from mcp import types

    ref = types.ResourceTemplateReference(type="ref/resource", uri=INCIDENT_TEMPLATE)
    assert (await client.complete(ref, {"name": "instance", "value": ""})).completion.values == ["dev", "prod"]
    assert (await client.complete(ref, {"name": "instance", "value": "P"})).completion.values == ["prod"]


# -- resources -----------------------------------------------------------------------------------


async def test_instances_and_tables_need_no_request_and_hold_no_secret(client, dev_emulator, prod_emulator):
    instances = await read_json(client, "servicenow://instances")
    assert [(i["name"], i["auth_type"]) for i in instances["data"]] == [("dev", "basic"), ("prod", "oauth")]
    assert instances["data"][0]["url"] == dev_emulator.base_url
    tables = await read_json(client, "servicenow://tables")
    assert {t["table"] for t in tables["data"]} >= {"incident", "problem", "change_request", "sys_update_set"}
    assert tables["metadata"]["record_count"] == len(tables["data"])
    info = await read_json(client, "servicenow://prod/info")
    assert info["metadata"]["instance"] == "prod"
    assert info["data"]["instance"]["url"] == prod_emulator.base_url
    assert "servicenow://prod/incidents/{number}" in info["data"]["resources"]
    text = json.dumps([instances, tables, info])
    assert not any(secret in text for secret in SECRETS)
    assert dev_emulator.requests == [] and prod_emulator.requests == []


async def test_incidents_are_active_newest_first_with_total(client, dev_emulator):
    body = await read_json(client, "servicenow://dev/incidents")
    meta, data = body["metadata"], body["data"]
    expected = [r for r in dev_emulator.records("incident") if r["active"] == "true"]
    assert meta["instance"] == "dev" and meta["total"] == len(expected) == meta["record_count"] == len(data)
    assert meta["has_more"] is False
    assert all(r["active"] == "true" and r["short_description"].startswith("[dev]") for r in data)
    created = [r["sys_created_on"] for r in data]
    assert created == sorted(created, reverse=True)
    sent = dev_emulator.table_requests()[-1]
    assert sent.query["sysparm_query"] == "active=true^ORDERBYDESCsys_created_on^ORDERBYsys_id"


async def test_incident_list_reports_more_pages(dev_emulator, prod_emulator, secrets_env):
    composition = compose_servicenow(dev_instance(dev_emulator, page_size=3), prod_instance(prod_emulator))
    async with connect(composition) as client:
        body = await read_json(client, "servicenow://dev/incidents")
    assert body["metadata"]["record_count"] == 3 and body["metadata"]["total"] == 8
    assert body["metadata"]["has_more"] is True


async def test_incident_by_number_comes_from_the_named_instance(client):
    dev = await read_json(client, "servicenow://dev/incidents/INC0010001")
    prod = await read_json(client, "servicenow://prod/incidents/INC0010001")
    assert dev["data"]["number"] == prod["data"]["number"] == "INC0010001"
    assert dev["data"]["short_description"].startswith("[dev]")
    assert prod["data"]["short_description"].startswith("[prod]")
    assert dev["data"]["sys_id"] != prod["data"]["sys_id"]


async def test_missing_incident_is_not_found(client):
    with pytest.raises(MCPError) as caught:
        await client.read_resource("servicenow://dev/incidents/INC0099999")
    assert caught.value.error.code == -32602
    assert "no incident INC0099999 on instance 'dev'" in caught.value.error.message


async def test_update_sets_in_progress(client, prod_emulator):
    body = await read_json(client, "servicenow://prod/update-sets")
    in_progress = [r for r in prod_emulator.records("sys_update_set") if r["state"] == "in progress"]
    assert [r["sys_id"] for r in body["data"]] == [r["sys_id"] for r in in_progress]
    assert all(r["state"] == {"value": "in progress", "display_value": "in progress"} for r in body["data"])


async def test_problems_and_change_requests(client, dev_emulator, prod_emulator):
    problems = await read_json(client, "servicenow://dev/problems")
    assert problems["metadata"]["total"] == sum(r["active"] == "true" for r in dev_emulator.records("problem"))
    assert all(p["number"].startswith("PRB") and p["active"] == "true" for p in problems["data"])
    changes = await read_json(client, "servicenow://prod/change-requests")
    assert changes["metadata"]["total"] == sum(r["active"] == "true" for r in prod_emulator.records("change_request"))
    assert all(c["short_description"].startswith("[prod]") for c in changes["data"])


async def test_update_set_larger_than_a_page_is_returned_complete(client, dev_emulator):
    sys_id = update_set_id(dev_emulator, 250)
    body = await read_json(client, f"servicenow://dev/update-sets/{sys_id}")
    meta, data = body["metadata"], body["data"]
    assert data["update_set"]["sys_id"] == sys_id
    assert meta["total"] == data["total_records"] == data["fetched_records"] == meta["record_count"] == 250
    assert meta["pages"] == 3  # update_set_page_size defaults to 100
    assert data["missing_records"] == 0 and meta["has_more"] is False and meta["shortfall"] is None
    fetched = [r["sys_id"] for c in data["components"] for r in c["records"]]
    expected = {r["sys_id"] for r in dev_emulator.records("sys_update_xml") if r["update_set"] == sys_id}
    assert len(fetched) == 250 and set(fetched) == expected
    counts = {c["type"]: c["count"] for c in data["components"]}
    assert sum(counts.values()) == 250 and counts["Business Rule"] == 42
    offsets = [r.query["sysparm_offset"] for r in dev_emulator.table_requests() if r.path.endswith("/sys_update_xml")]
    assert offsets == ["0", "100", "200"]


async def test_update_set_over_budget_states_exactly_what_is_missing(dev_emulator, prod_emulator, secrets_env):
    composition = compose_servicenow(
        dev_instance(dev_emulator, update_set_page_size=40, update_set_record_budget=130), prod_instance(prod_emulator)
    )
    sys_id = update_set_id(dev_emulator, 250)
    async with connect(composition) as client:
        body = await read_json(client, f"servicenow://dev/update-sets/{sys_id}")
    meta, data = body["metadata"], body["data"]
    assert data["fetched_records"] == 130 and data["total_records"] == 250 and data["missing_records"] == 120
    assert meta["has_more"] is True and meta["pages"] == 4
    assert meta["shortfall"] == (
        "120 of 250 sys_update_xml records were not fetched: the read stops at update_set_record_budget = 130 records"
    )
    assert sum(c["count"] for c in data["components"]) == 130


async def test_unknown_update_set_is_not_found(client):
    with pytest.raises(MCPError) as caught:
        await client.read_resource("servicenow://dev/update-sets/" + "0" * 32)
    assert caught.value.error.code == -32602
    assert "HTTP 404: No Record found" in caught.value.error.message


# -- refusals: validated URI values, no request sent ---------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(
    "uri",
    [
        "servicenow://dev/incidents/INC0010001%5EORactive%3Dtrue",
        "servicenow://dev/incidents/INC0010001^ORactive=true",
        "servicenow://dev/incidents/inc0010001",
        "servicenow://dev/update-sets/8d3296a79e18eaec0a32bb22406eedde%5EORstate%3Dcomplete",
        "servicenow://dev/update-sets/NOT-A-SYS-ID",
    ],
)
async def test_caret_and_malformed_values_are_refused_without_any_request(composition, dev_emulator, prod_emulator,
                                                                          uri, mode):  # fmt: skip
    async with connect(composition, mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.error.code == -32602
    message = caught.value.error.message
    assert "expected" in message and ("number" in message or "sys_id" in message)
    if "^" in message:
        assert "caret" in message
    assert dev_emulator.requests == [] and prod_emulator.requests == []


async def test_unknown_instance_error_lists_configured_names(client, dev_emulator, prod_emulator):
    with pytest.raises(MCPError) as caught:
        await client.read_resource("servicenow://staging/incidents")
    assert caught.value.error.code == -32602
    assert "unknown instance 'staging'; configured instances: dev, prod" in caught.value.error.message
    assert dev_emulator.requests == [] and prod_emulator.requests == []


# -- concurrency across instances -----------------------------------------------------------------


async def test_200_concurrent_reads_alternating_instances_keep_their_own_instance_and_credentials(
    client, dev_emulator, prod_emulator
):
    results: dict[int, tuple[str, dict[str, Any]]] = {}

    async def read(i: int) -> None:
        instance = ("dev", "prod")[i % 2]
        number = f"INC00{10001 + i % 9}"
        results[i] = (instance, await read_json(client, f"servicenow://{instance}/incidents/{number}"))

    async with anyio.create_task_group() as group:
        for i in range(200):
            group.start_soon(read, i)

    assert len(results) == 200
    for instance, body in results.values():
        assert body["metadata"]["instance"] == instance
        assert body["data"]["short_description"].startswith(f"[{instance}]")
    dev_seen = {r.principal for r in dev_emulator.requests}
    prod_seen = {r.principal for r in prod_emulator.requests}
    assert dev_seen == {f"basic:{DEV_USER}"}
    assert prod_seen == {f"oauth:{PROD_CLIENT}"}
    # identical concurrent reads share one upstream request (9 distinct incidents per instance)
    assert 9 <= len(dev_emulator.table_requests()) <= 100 and 9 <= len(prod_emulator.table_requests()) <= 100
    assert all(r.status == 200 for r in dev_emulator.requests + prod_emulator.requests)
    # one token for the whole burst: the OAuth token is cached, not fetched per request
    assert [r.path for r in prod_emulator.requests].count("/oauth_token.do") == 1


# -- faults --------------------------------------------------------------------------------------


async def test_429_with_retry_after_is_retried_and_succeeds(client, dev_emulator):
    dev_emulator.fail_next(status=429, retry_after="1")
    body = await read_json(client, "servicenow://dev/incidents/INC0010002")
    assert body["data"]["number"] == "INC0010002"
    statuses = [r.status for r in dev_emulator.table_requests()]
    assert statuses == [429, 200]


async def test_expired_oauth_token_is_refreshed_once(client, prod_emulator):
    await read_json(client, "servicenow://prod/incidents/INC0010001")
    prod_emulator.expire_tokens()
    body = await read_json(client, "servicenow://prod/incidents/INC0010003")
    assert body["data"]["number"] == "INC0010003"
    log = [(r.path.rsplit("/", 1)[-1], r.status) for r in prod_emulator.requests]
    assert log == [("oauth_token.do", 200), ("incident", 200), ("incident", 401), ("oauth_token.do", 200),
                   ("incident", 200)]  # fmt: skip


async def test_wrong_password_gives_clear_error_without_the_password(dev_emulator, prod_emulator, monkeypatch, caplog):
    monkeypatch.setenv("SN_TEST_DEV_PASSWORD", "wrong-Secret-Value-123")
    monkeypatch.setenv("SN_TEST_PROD_SECRET", "unused")
    caplog.set_level(logging.DEBUG)
    composition = compose_servicenow(dev_instance(dev_emulator), prod_instance(prod_emulator))
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("servicenow://dev/incidents")
    message = caught.value.error.message
    assert caught.value.error.code == -32006
    assert "HTTP 401: User Not Authenticated (Required to provide Auth information)" in message
    assert f"user '{DEV_USER}', password from SN_TEST_DEV_PASSWORD" in message
    everything = message + json.dumps(caught.value.error.data) + caplog.text
    assert "wrong-Secret-Value-123" not in everything and "Authorization" not in everything
    assert [r.status for r in dev_emulator.requests] == [401]


async def test_server_error_becomes_a_clear_mcp_error(client, dev_emulator):
    dev_emulator.fail_next(status=500, message="Transaction cancelled", detail="maximum execution time exceeded")
    with pytest.raises(MCPError) as caught:
        await client.read_resource("servicenow://dev/problems")
    assert caught.value.error.code == -32006
    assert caught.value.error.message == (
        "instance 'dev': query of problem failed with HTTP 500: Transaction cancelled "
        "(maximum execution time exceeded); the instance failed, try again later"
    )


async def test_timeout_becomes_a_clear_mcp_error(dev_emulator, prod_emulator, secrets_env):
    composition = compose_servicenow(dev_instance(dev_emulator, timeout_seconds=0.5), prod_instance(prod_emulator))
    dev_emulator.fail_next(status=None, delay_seconds=1.5)
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("servicenow://dev/problems")
    assert caught.value.error.code == -32006
    assert "instance 'dev': query of problem got no answer within 0.5 s (ReadTimeout)" in caught.value.error.message


# -- tools ---------------------------------------------------------------------------------------


async def test_query_table_with_structured_filters_fields_order_and_paging(client, dev_emulator):
    arguments = {
        "instance": "dev", "table": "incident",
        "filters": [{"field": "active", "value": "true"}, {"field": "priority", "operator": "IN", "value": ["1", "2"]}],
        "fields": ["number", "priority"], "order_by": [{"field": "number", "descending": True}], "limit": 2,
    }  # fmt: skip
    result = await client.call_tool("servicenow_query_table", arguments)
    assert not result.is_error
    out = result.structured_content
    assert out is not None
    expected = sorted((r["number"] for r in dev_emulator.records("incident")
                       if r["active"] == "true" and r["priority"] in ("1", "2")), reverse=True)  # fmt: skip
    assert out["encoded_query"] == "active=true^priorityIN1,2^ORDERBYDESCnumber^ORDERBYsys_id"
    assert [r["number"] for r in out["records"]] == expected[:2]
    assert out["total"] == len(expected) and out["has_more"] is (len(expected) > 2)
    assert set(out["records"][0]) == {"number", "priority"}
    links = [c.uri for c in result.content if c.type == "resource_link"]
    assert links == [f"servicenow://dev/incidents/{n}" for n in expected[:2]]
    arguments["offset"] = out["next_offset"]
    second = await client.call_tool("servicenow_query_table", arguments)
    assert second.structured_content is not None
    assert [r["number"] for r in second.structured_content["records"]] == expected[2:4]


async def test_a_query_runs_as_a_task_for_a_client_that_declares_tasks(composition, client):
    from tasks_support import Created, TasksClient, start, until

    arguments = {"instance": "dev", "table": "incident", "fields": ["number"], "limit": 3}
    plain = await client.call_tool("servicenow_query_table", arguments)
    async with Client(composition.server, cache=None, extensions=[TasksClient()]) as tasks:
        handle = await start(tasks.session, "servicenow_query_table", arguments)
        assert isinstance(handle, Created)  # a query over a large table need not finish within read_timeout
        done = await until(tasks.session, handle.task_id, {"completed", "failed"})
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == plain.structured_content


async def test_query_table_refuses_caret_in_a_filter_value_without_any_request(client, dev_emulator):
    result = await client.call_tool("servicenow_query_table", {
        "instance": "dev", "table": "incident", "filters": [{"field": "number", "value": "INC0010001^ORactive=true"}],
    })  # fmt: skip
    assert result.is_error
    assert "contains '^'" in result.content[0].text  # type: ignore[union-attr]
    assert dev_emulator.requests == []


async def test_get_record_and_unknown_instance(client, prod_emulator):
    record = prod_emulator.records("change_request")[0]
    result = await client.call_tool(
        "servicenow_get_record",
        {"instance": "prod", "table": "change_request", "sys_id": record["sys_id"], "display_value": "true"},
    )
    assert result.structured_content is not None
    assert result.structured_content["record"]["number"] == record["number"]
    assert result.structured_content["uri"] is None
    arguments = {"instance": "qa", "table": "incident", "sys_id": "1" * 32}
    missing = await client.call_tool("servicenow_get_record", arguments)
    assert missing.is_error
    assert "unknown instance 'qa'; configured instances: dev, prod" in missing.content[0].text  # type: ignore[union-attr]


async def test_create_incident_then_read_it_through_its_link(client, prod_emulator):
    result = await client.call_tool(
        "servicenow_create_incident",
        {"instance": "prod", "short_description": "Disk full on app02", "urgency": "1", "impact": "2"},
    )
    out = result.structured_content
    assert out is not None and not result.is_error
    assert out["number"] == "INC0010010" and out["record"]["state"] == {"value": "1", "display_value": "New"}
    (link,) = [c for c in result.content if c.type == "resource_link"]
    assert link.uri == "servicenow://prod/incidents/INC0010010" == out["uri"]
    body = await read_json(client, link.uri)
    assert body["data"]["short_description"] == "Disk full on app02" and body["data"]["urgency"]["value"] == "1"
    post = next(r for r in prod_emulator.requests if r.method == "POST" and r.path.endswith("/incident"))
    assert post.body == {"short_description": "Disk full on app02", "urgency": "1", "impact": "2"}


async def test_update_record_uses_patch_and_changes_only_given_fields(client, dev_emulator):
    before = dev_emulator.records("incident")[1]
    result = await client.call_tool(
        "servicenow_update_record",
        {"instance": "dev", "table": "incident", "sys_id": before["sys_id"], "values": {"priority": "1"}},
    )
    assert not result.is_error
    after = next(r for r in dev_emulator.records("incident") if r["sys_id"] == before["sys_id"])
    assert after["priority"] == "1" and after["short_description"] == before["short_description"]
    methods = [r.method for r in dev_emulator.table_requests()]
    assert methods == ["PATCH"] and "PUT" not in methods
    refused = await client.call_tool(
        "servicenow_update_record",
        {"instance": "dev", "table": "incident", "sys_id": before["sys_id"], "values": {"sys_id": "x"}},
    )
    assert refused.is_error and "sys_ fields are maintained by the instance" in refused.content[0].text  # type: ignore[union-attr]


async def test_add_comment_and_work_note_append_journal_entries(client, dev_emulator):
    comment = await client.call_tool(
        "servicenow_add_comment", {"instance": "dev", "number": "INC0010002", "text": "Looking into it"}
    )
    note = await client.call_tool(
        "servicenow_add_comment",
        {"instance": "dev", "number": "INC0010002", "text": "Restarted the sync job", "kind": "work_note"},
    )
    assert comment.structured_content is not None and note.structured_content is not None
    assert comment.structured_content["field"] == "comments" and note.structured_content["field"] == "work_notes"
    sys_id = comment.structured_content["sys_id"]
    entries = dev_emulator.records("sys_journal_field")
    journal = [(j["element"], j["value"]) for j in entries if j["element_id"] == sys_id]
    assert journal == [("comments", "Looking into it"), ("work_notes", "Restarted the sync job")]
    assert [c.uri for c in note.content if c.type == "resource_link"] == ["servicenow://dev/incidents/INC0010002"]


async def test_resolve_incident_sets_state_six_with_close_fields(client, dev_emulator):
    result = await client.call_tool(
        "servicenow_resolve_incident", {"instance": "dev", "number": "INC0010003", "close_notes": "Replaced the toner"}
    )
    assert result.structured_content is not None and not result.is_error
    record = next(r for r in dev_emulator.records("incident") if r["number"] == "INC0010003")
    assert (record["state"], record["active"], record["close_code"], record["close_notes"]) == (
        "6",
        "false",
        "Solved (Permanently)",
        "Replaced the toner",
    )
    patch = next(r for r in dev_emulator.table_requests() if r.method == "PATCH")
    assert patch.body == {"state": "6", "close_code": "Solved (Permanently)", "close_notes": "Replaced the toner"}
    missing = await client.call_tool(
        "servicenow_resolve_incident", {"instance": "dev", "number": "INC0099999", "close_notes": "n/a"}
    )
    assert missing.is_error and "no incident record with number INC0099999" in missing.content[0].text  # type: ignore[union-attr]


async def test_no_secret_or_token_in_any_result_log_or_emulator_record(client, dev_emulator, prod_emulator, caplog):
    caplog.set_level(logging.DEBUG)
    texts = []
    for uri in ("servicenow://instances", "servicenow://dev/info", "servicenow://prod/incidents",
                "servicenow://dev/update-sets"):  # fmt: skip
        texts.append((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
    prod_emulator.expire_tokens()
    created = await client.call_tool("servicenow_create_incident", {"instance": "prod", "short_description": "x"})
    texts.append(created.model_dump_json())
    dev_emulator.fail_next(status=401)
    with pytest.raises(MCPError) as caught:
        await client.read_resource("servicenow://dev/incidents")
    texts += [caught.value.error.message, json.dumps(caught.value.error.data), caplog.text,
              repr(dev_emulator.requests), repr(prod_emulator.requests)]  # fmt: skip
    haystack = "\n".join(texts)
    tokens = prod_emulator.issued_tokens()
    assert len(tokens) == 2
    for secret in (*SECRETS, DEV_PASSWORD, *tokens):
        assert secret not in haystack
    assert "Bearer" not in haystack and "Basic " not in haystack


async def test_completion_of_number_and_sys_id_comes_from_the_chosen_instance(client, dev_emulator, prod_emulator):
    from mcp import types

    incident = types.ResourceTemplateReference(type="ref/resource", uri=INCIDENT_TEMPLATE)
    prod = {"instance": "prod"}
    got = await client.complete(incident, {"name": "number", "value": "inc001000"}, context_arguments=prod)
    active = sorted(r["number"] for r in prod_emulator.records("incident") if r["active"] == "true")
    assert got.completion.values == [n for n in active if n.startswith("INC001000")]
    assert prod_emulator.table_requests()[-1].query["sysparm_query"] == (
        "active=true^numberSTARTSWITHINC001000^ORDERBYnumber"
    )
    update_set = types.ResourceTemplateReference(
        type="ref/resource", uri="servicenow://{instance}/update-sets/{sys_id}"
    )
    got = await client.complete(update_set, {"name": "sys_id", "value": ""}, context_arguments={"instance": "dev"})
    assert got.completion.values[0] == update_set_id(dev_emulator, 250)  # the most recently updated set
    before = len(dev_emulator.requests) + len(prod_emulator.requests)
    for value in ("INC^OR", "x,y"):
        argument = {"name": "number", "value": value}
        refused = await client.complete(incident, argument, context_arguments={"instance": "dev"})
        assert refused.completion.values == []
    assert len(dev_emulator.requests) + len(prod_emulator.requests) == before


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_both_protocol_eras_read_and_call_with_resource_links(composition, mode):
    async with connect(composition, mode=mode) as client:
        body = await read_json(client, "servicenow://prod/incidents/INC0010004")
        assert body["metadata"]["instance"] == "prod" and body["data"]["number"] == "INC0010004"
        result = await client.call_tool("servicenow_add_comment", {"instance": "prod", "number": "INC0010004",
                                                                   "text": f"seen over {mode}"})  # fmt: skip
        assert not result.is_error and result.structured_content is not None
        assert [c.uri for c in result.content if c.type == "resource_link"] == [
            "servicenow://prod/incidents/INC0010004"
        ]
