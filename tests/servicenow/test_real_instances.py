"""ServiceNow as real instances behave (issue 15), end to end through an MCP client.

Every test runs the composed server against the bundled emulator (a real HTTP server on
loopback) switched into the real-instance behaviour under test: ACL-hidden rows, no
``X-Total-Count``, ``Link`` headers, rate-limit rules, 401 bodies echoing credentials, large
answers. Nothing is mocked in-process.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from prefork import python
from servicenow_support import (
    DEV_PASSWORD,
    DEV_USER,
    ENV,
    compose_servicenow,
    dev_instance,
    prod_instance,
    servicenow_plugin,
)

from mcp_providers.config import ServerSettings
from mcp_providers.plugins import policy
from mcp_providers.plugins.servicenow.emulator import Emulator, main
from mcp_providers.plugins.servicenow.query import Filter, QueryError, build_query, check_value
from mcp_providers.plugins.servicenow.seed import sys_id_for
from mcp_providers.plugins.servicenow.settings import ServiceNowSettings
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

SET_ID = "a" * 32


def ten_row_update_set() -> dict[str, list[dict[str, str]]]:
    """One update set with 10 sys_update_xml rows named row-00 ... row-09, oldest first."""
    rows = [{"sys_id": sys_id_for("t", "xml", i), "update_set": SET_ID, "name": f"row-{i:02d}", "type": "Dictionary",
             "target_name": f"t{i}", "action": "INSERT_OR_UPDATE", "payload": "<x/>",
             "sys_created_on": f"2026-01-01 00:00:{i:02d}"} for i in range(10)]  # fmt: skip
    sets = [{"sys_id": SET_ID, "name": "Ten", "description": "", "state": "in progress", "application": "global",
             "sys_created_on": "2026-01-01 00:00:00", "sys_updated_on": "2026-01-01 00:00:00"}]  # fmt: skip
    return {"sys_update_set": sets, "sys_update_xml": rows, "incident": [], "sys_user": []}


@pytest.fixture
def ten() -> Iterator[Emulator]:
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}, tables=ten_row_update_set()) as emulator:
        emulator.hide("sys_update_xml", sys_id_for("t", "xml", 1), sys_id_for("t", "xml", 6))
        yield emulator


async def read_json(client: Client, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    body: dict[str, Any] = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    return body


def offsets(emulator: Emulator, table: str) -> list[int]:
    return [int(r.query["sysparm_offset"]) for r in emulator.table_requests() if r.path.endswith("/" + table)]


# -- 1. ACL-filtered pages ------------------------------------------------------------------------


async def test_update_set_pages_by_offsets_asked_and_reports_hidden_rows(ten, secrets_env):
    composition = compose_servicenow(dev_instance(ten, update_set_page_size=4))
    async with connect(composition) as client:
        body = await read_json(client, f"servicenow://dev/update-sets/{SET_ID}")
    names = [r["name"] for c in body["data"]["components"] for r in c["records"]]
    assert offsets(ten, "sys_update_xml") == [0, 4, 8]
    assert sorted(names) == sorted(set(names)) and len(names) == 8
    assert "row-01" not in names and "row-06" not in names
    meta = body["metadata"]
    assert (meta["total"], meta["hidden_records"], meta["missing_records"]) == (10, 2, 0)
    assert body["data"]["hidden_records"] == 2 and body["data"]["fetched_records"] == 8


async def test_query_tool_next_offset_skips_by_the_page_asked_for(ten, secrets_env):
    composition = compose_servicenow(dev_instance(ten))
    seen: list[str] = []
    hidden = 0
    args: dict[str, Any] = {"instance": "dev", "table": "sys_update_xml", "limit": 4, "fields": ["name"],
                            "order_by": [{"field": "name"}]}  # fmt: skip
    async with connect(composition) as client:
        offset: int | None = 0
        while offset is not None:
            out = (await client.call_tool("servicenow_query_table", args | {"offset": offset})).structured_content
            assert out is not None
            seen += [r["name"] for r in out["records"]]
            hidden += out["hidden_records"]
            offset = out["next_offset"]
    assert offsets(ten, "sys_update_xml") == [0, 4, 8]
    assert len(seen) == len(set(seen)) == 8 and hidden == 2
    sent = ten.table_requests()[0].query["sysparm_query"]
    assert sent.endswith("ORDERBYsys_id")  # a stable order: sys_id breaks ties


# -- 2. Paging without X-Total-Count --------------------------------------------------------------


async def test_query_tool_follows_the_link_header_when_the_total_is_missing(secrets_env):
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}, default_limit=100) as dev:
        dev.send_total_count = False
        big = max({r["update_set"] for r in dev.records("sys_update_xml")},
                  key=lambda s: sum(r["update_set"] == s for r in dev.records("sys_update_xml")))  # fmt: skip
        args = {"instance": "dev", "table": "sys_update_xml", "limit": 1000, "fields": ["sys_id"],
                "filters": [{"field": "update_set", "value": big}]}  # fmt: skip
        got: list[str] = []
        async with connect(compose_servicenow(dev_instance(dev))) as client:
            offset: int | None = 0
            while offset is not None:
                result = await client.call_tool("servicenow_query_table", args | {"offset": offset})
                out = result.structured_content
                assert out is not None and out["total"] is None
                if offset == 0:
                    assert out["record_count"] == 100 and out["has_more"] is True and out["next_offset"] == 100
                got += [r["sys_id"] for r in out["records"]]
                offset = out["next_offset"]
    assert len(got) == len(set(got)) == 250


# -- 3. Display values ----------------------------------------------------------------------------


async def test_records_hold_value_and_display_value_of_references_and_choices(client, dev_emulator):
    body = await read_json(client, "servicenow://dev/incidents")
    users = {u["sys_id"]: u["name"] for u in dev_emulator.records("sys_user")}
    assigned = [r["assigned_to"] for r in body["data"]]
    assert all(set(a) == {"value", "display_value"} for a in assigned)
    assert any(a["value"] and a["display_value"] == users[a["value"]] for a in assigned)
    assert all(a["display_value"] == "" for a in assigned if a["value"] == "")
    assert all(isinstance(r["state"], dict) and isinstance(r["number"], str) for r in body["data"])
    assert body["metadata"]["record_shape"].startswith("normalised")
    assert "{'" not in json.dumps(body)


async def test_empty_reference_stays_empty(dev_emulator, secrets_env):
    first = dev_emulator.records("incident")[0]
    async with connect(compose_servicenow(dev_instance(dev_emulator))) as client:
        await client.call_tool(
            "servicenow_update_record",
            {"instance": "dev", "table": "incident", "sys_id": first["sys_id"], "values": {"assigned_to": ""}},
        )
        got = await client.call_tool("servicenow_get_record", {"instance": "dev", "table": "incident",
                                                               "sys_id": first["sys_id"]})  # fmt: skip
    assert got.structured_content is not None
    assert got.structured_content["record"]["assigned_to"] == {"value": "", "display_value": ""}


async def test_tool_records_keep_one_shape_whatever_display_value_asks(client):
    shapes = []
    for mode in ("false", "true", "all"):
        result = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "incident", "limit": 3,
                                                                   "display_value": mode})  # fmt: skip
        assert result.structured_content is not None
        records = result.structured_content["records"]
        shapes.append([{k: type(v).__name__ for k, v in r.items()} for r in records])
        assert "{'" not in json.dumps(result.structured_content)
    assert shapes[0] == shapes[1] == shapes[2]
    assert shapes[0][0]["assigned_to"] == "dict" and shapes[0][0]["short_description"] == "str"


# -- 4. Rate limits -------------------------------------------------------------------------------


async def test_one_back_off_per_instance_is_shared_by_concurrent_reads(dev_emulator, secrets_env):
    composition = compose_servicenow(dev_instance(dev_emulator, max_retry_after_seconds=5))
    dev_emulator.rate_limit(2)
    backoff = next(d.provider._pool.backoff for d in composition.declared if hasattr(d.provider, "_pool"))
    async with connect(composition) as client, anyio.create_task_group() as group:
        group.start_soon(client.read_resource, "servicenow://dev/incidents/INC0010001")
        # Not only answered 429 but held: the client has read the answer (a loaded machine lets the
        # other reads start in between, and each would then find out with its own 429).
        while not any(r.status == 429 for r in dev_emulator.table_requests()) or not await backoff.remaining("dev"):
            await anyio.sleep(0.01)
        for number in range(2, 6):
            group.start_soon(client.read_resource, f"servicenow://dev/incidents/INC001000{number}")
    statuses = [r.status for r in dev_emulator.table_requests()]
    assert statuses.count(429) == 1 and statuses.count(200) == 5 and len(statuses) == 6


async def test_exhausted_rate_limit_says_how_long_to_wait(dev_emulator, secrets_env):
    # the 429 holds the instance's back-off for min(Retry-After, cap): the tool call below waits it out
    composition = compose_servicenow(dev_instance(dev_emulator, max_retries=0, max_retry_after_seconds=1))
    dev_emulator.rate_limit(30)
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("servicenow://dev/incidents")
        assert "wait 30 s" in caught.value.message
        result = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "incident"})
    assert result.is_error and "wait" in result.content[0].text  # type: ignore[union-attr]


# -- 5. Secrets -----------------------------------------------------------------------------------


URL_TOKEN = "tok-SECRET-0b8e"


@pytest.mark.parametrize("verb", [["check"], ["plugins"], ["plugins", "--json"], ["serve"]])
def test_a_token_in_the_instance_url_is_never_echoed(tmp_path: Path, verb: list[str]) -> None:
    config = tmp_path / "mcp-providers.toml"
    config.write_text(f"""
[[plugins.servicenow.instances]]
name = "dev"
url = "https://dev.example.com/?token={URL_TOKEN}&x=1"
auth = {{ type = "basic", username = "u", password_env = "SN_UNSET_FOR_TEST" }}
""")
    run = subprocess.run([*python(), "-m", "mcp_providers", *verb, "--config", str(config)],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    output = run.stdout + run.stderr
    assert "servicenow" in output and ("must not have a query" in output or verb == ["plugins"]), output
    assert URL_TOKEN not in output


async def test_credentials_echoed_by_a_401_body_are_redacted_everywhere(dev_emulator, prod_emulator, secrets_env,
                                                                       tmp_path, caplog):  # fmt: skip
    caplog.set_level(logging.DEBUG)
    audit = tmp_path / "audit.jsonl"
    composition = compose({"servicenow": servicenow_plugin},
                          {"servicenow": {"instances": [dev_instance(dev_emulator), prod_instance(prod_emulator)]}},
                          server=ServerSettings(audit_log=audit))  # fmt: skip
    dev_emulator.echo_authorization = prod_emulator.echo_authorization = True
    seen: list[str] = []
    async with connect(composition) as client:
        await client.read_resource("servicenow://prod/incidents")  # a bearer token is issued
        for emulator, instance in ((dev_emulator, "dev"), (prod_emulator, "prod")):
            emulator.fail_next(2, status=401)
            with pytest.raises(MCPError) as caught:
                await client.read_resource(f"servicenow://{instance}/incidents")
            assert "Rejected request headers" in caught.value.message
            seen.append(caught.value.message + json.dumps(caught.value.error.data))
            emulator.fail_next(2, status=401)
            tool = await client.call_tool("servicenow_query_table", {"instance": instance, "table": "incident"})
            assert tool.is_error
            seen.append(tool.model_dump_json())
    seen += [audit.read_text(), caplog.text]
    basic = base64.b64encode(f"{DEV_USER}:{DEV_PASSWORD}".encode()).decode()
    secrets = [*ENV.values(), basic, *prod_emulator.issued_tokens()]
    assert prod_emulator.issued_tokens()
    leaks = [s for s in secrets for text in seen if s in text]
    assert leaks == []


# -- 6. Tool failures -----------------------------------------------------------------------------


FAULTS: dict[str, dict[str, Any]] = {
    "timeout": {"status": None, "delay_seconds": 2},
    "500": {"status": 500},
    "429 after retries": {"times": 2, "status": 429, "retry_after": "0"},
    "bad JSON": {"status": None, "malformed": True},
    "truncated": {"status": None, "truncated": True},
}


@pytest.mark.parametrize("fault", [*FAULTS, "refused connection"])
async def test_every_upstream_failure_in_a_tool_is_an_error_result(dev_emulator, secrets_env, fault):
    url = dev_emulator.base_url
    if fault == "refused connection":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    composition = compose_servicenow(dev_instance(dev_emulator, url=url, timeout_seconds=0.5, max_retries=1))
    if fault in FAULTS:
        dev_emulator.fail_next(**FAULTS[fault])
    async with connect(composition) as client:
        result = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "incident"})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "instance 'dev': query of incident" in text and "Traceback" not in text
    assert DEV_PASSWORD not in text


# -- 7. Dot-walking past table rules --------------------------------------------------------------


def deny_users(dev: Emulator) -> Any:
    rules = {"rules": [{"effect": "deny", "actions": ["read"], "targets": ["servicenow://dev/sys_user"],
                        "reason": "no user data"}]}  # fmt: skip
    return compose({"servicenow": servicenow_plugin, "policy": policy},
                   {"servicenow": {"instances": [dev_instance(dev)]}, "policy": rules})  # fmt: skip


@pytest.mark.parametrize("args", [
    {"fields": ["number", "caller_id.email"]},
    {"filters": [{"field": "caller_id.email", "operator": "STARTSWITH", "value": "a"}]},
    {"order_by": [{"field": "assigned_to.name"}]},
    {"filters": [{"field": "assignment_group.manager.email", "operator": "ISNOTEMPTY"}]},
])  # fmt: skip
async def test_dot_walks_are_authorized_against_the_table_they_reach(dev_emulator, secrets_env, args):
    before = len(dev_emulator.table_requests())
    async with connect(deny_users(dev_emulator)) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "incident", **args})
        assert caught.value.code == -32003 and "servicenow://dev/sys_user" in caught.value.message
        allowed = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "incident",
                                                                    "fields": ["assignment_group.name"]})  # fmt: skip
        assert not allowed.is_error
    assert len(dev_emulator.table_requests()) == before + 1  # the denied calls sent nothing


async def test_an_unknown_dot_walk_is_refused(client):
    result = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "incident",
                                                               "fields": ["u_custom_ref.name"]})  # fmt: skip
    assert result.is_error
    assert "u_custom_ref" in result.content[0].text and "not a known reference" in result.content[0].text  # type: ignore[union-attr]


# -- 8. Whole bodies before the budget ------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_large_answer_is_refused_while_streaming(secrets_env, chunked):
    rows = [{"sys_id": sys_id_for("big", "xml", i), "update_set": SET_ID, "name": f"n{i}", "payload": "x" * 100_000}
            for i in range(60)]  # fmt: skip
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}, tables={"sys_update_xml": rows}) as dev:
        dev.stream_answers = chunked
        composition = compose_servicenow(dev_instance(dev, max_response_bytes=1_000_000))
        async with connect(composition) as client:
            result = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "sys_update_xml",
                                                                       "limit": 60, "fields": ["payload"]})  # fmt: skip
            small = await client.call_tool("servicenow_query_table", {"instance": "dev", "table": "sys_update_xml",
                                                                      "limit": 60, "fields": ["name"]})  # fmt: skip
    assert result.is_error and not small.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "max_response_bytes = 1000000" in text
    if chunked:  # no Content-Length: read until the budget is passed, then stop
        read = int(text.split("stopped after ")[1].split(" bytes")[0])
        assert 1_000_000 < read < 1_300_000  # not all 6 MB
    else:  # the declared length is over the budget: refused before reading the body
        assert "the answer declares 12" in text  # 6 MB of payloads, twice with display_value=all


# -- 10. The emulator is fast (no timing asserted: the cause is checked) --------------------------


def test_emulator_answers_with_nodelay_sockets(dev_emulator: Emulator) -> None:
    assert dev_emulator._socket is not None and dev_emulator._socket.proto == socket.IPPROTO_TCP


def test_emulator_runs_alone_and_prints_a_working_config(capsys: pytest.CaptureFixture[str]) -> None:
    import tomllib

    stop = threading.Event()
    thread = threading.Thread(target=main, args=([], stop))
    thread.start()
    out = ""
    try:
        for _ in range(1000):
            out += capsys.readouterr().out
            if "client_secret_env" in out:
                break
            stop.wait(0.01)
    finally:
        stop.set()
        thread.join(10)
    toml = out[out.index("[[plugins.servicenow.instances]]") :]
    settings = ServiceNowSettings.model_validate(tomllib.loads(toml)["plugins"]["servicenow"])
    assert settings.names == ["dev", "prod"] and out.startswith("dev: http://127.0.0.1:")


# -- 11. Smaller ones -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["javascript:gs.getUserID()", "JavaScript:x", " javascript :x", "java script:x",
                                   "\u200bjavascript:x", "x javascript:y", "JAVAscript\u00a0:1"])  # fmt: skip
def test_javascript_values_are_refused_in_encoded_queries(value: str) -> None:
    with pytest.raises(QueryError, match="javascript:"):
        check_value(value)
    with pytest.raises((QueryError, ValueError)):
        build_query([Filter(field="short_description", value=value)])
    with pytest.raises((QueryError, ValueError)):
        Filter(field="number", operator="IN", value=["INC0010001", value])


async def test_no_instances_declares_no_templates_or_tools(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    composition = compose({"servicenow": servicenow_plugin}, {"servicenow": {}})
    async with connect(composition) as client:
        assert (await client.list_resource_templates()).resource_templates == []
        assert {r.uri for r in (await client.list_resources()).resources} == {
            "servicenow://instances",
            "servicenow://tables",
        }
        with pytest.raises(MCPError, match="Method not found"):  # no tools: no tools capability at all
            await client.list_tools()
    assert "no instances configured" in caplog.text


def test_check_names_an_unset_secret_variable(dev_emulator: Emulator, caplog: pytest.LogCaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("SN_TEST_DEV_PASSWORD", raising=False)
    compose_servicenow(dev_instance(dev_emulator))
    assert "SN_TEST_DEV_PASSWORD" in caplog.text and "is not set" in caplog.text
