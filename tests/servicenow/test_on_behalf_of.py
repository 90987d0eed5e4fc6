"""Per-user access in process: a real MCP client, the composed server, and a multi-user emulator
granting ServiceNow's JWT bearer grant, for two users (alice, bob) of one identity provider.

The emulator's ACLs (``seed.py``): on ``dev`` alice's groups see INC0010001/02/04/07/08/10 of the
active incidents, bob's INC0010001/03/04/07/09/10; INC0010003 and INC0010009 are hidden from
alice, INC0010002 and INC0010008 from bob. The same assertions over HTTP with the real
authorization server are in ``tests/identity/test_servicenow_on_behalf_of.py``.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
from collections.abc import Iterator
from typing import Any, Literal

import anyio
import httpx2
import pytest
import redis
from jwt_support import OBO_CLIENT, OBO_SECRET, key_pair, obo_env, obo_instance
from mcp import Client, MCPError, types
from servicenow_support import DEV_PASSWORD, DEV_USER, compose_servicenow

import mcp_providers.plugins.servicenow as servicenow_plugin
from mcp_providers import RECEIPT_KEY
from mcp_providers._serve.composition import Composition
from mcp_providers.config import ClusterSettings, CredentialsSettings, ServerSettings
from mcp_providers.errors import DENIED
from mcp_providers.identity import LOCAL, Principal
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

ALICE_SEES = ["INC0010001", "INC0010002", "INC0010004", "INC0010007", "INC0010008", "INC0010010"]
BOB_SEES = ["INC0010001", "INC0010003", "INC0010004", "INC0010007", "INC0010009", "INC0010010"]
BOTH_SEE = ["INC0010001", "INC0010004", "INC0010007", "INC0010010"]
HIDDEN_FROM = {"alice": ("INC0010003", "INC0010009"), "bob": ("INC0010002", "INC0010008")}
INCIDENT = types.ResourceTemplateReference(type="ref/resource", uri="servicenow://{instance}/incidents/{number}")
BRIEF = types.PromptReference(type="ref/prompt", name="servicenow-incident-brief")


@pytest.fixture
def issuer() -> str:
    """A fresh issuer per test: the process-wide credential cache never carries a token over."""
    return f"https://idp-{secrets.token_hex(4)}.example.test"


def person(issuer: str, name: str) -> Principal:
    return Principal(name, issuer=issuer, client_id="mcp-client", claims={"email": f"{name}@example.test"})


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    for name, value in {**obo_env(), "SN_TEST_DEV_PASSWORD": DEV_PASSWORD}.items():
        monkeypatch.setenv(name, value)
    grant = {"client_id": OBO_CLIENT, "client_secret": OBO_SECRET, "public_key_pem": key_pair()[1],
             "user_field": "email"}  # fmt: skip
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}, jwt_bearer=grant) as running:
        yield running


@pytest.fixture
def composition(emulator: Emulator) -> Composition:
    return compose_servicenow(obo_instance(emulator.base_url, name="corp"))


def as_(composition: Composition, principal: Principal, mode: Literal["auto", "legacy"] = "auto") -> Any:
    return connect(composition, mode, principal=principal)


async def body(client: Client, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    return dict(json.loads(result.contents[0].text))  # type: ignore[union-attr]


def numbers(records: list[dict[str, Any]]) -> list[str]:
    return sorted(r["number"] for r in records)


async def test_each_user_reads_what_the_instance_lets_them(composition, issuer, emulator):
    for name, sees in (("alice", ALICE_SEES), ("bob", BOB_SEES)):
        async with as_(composition, person(issuer, name)) as client:
            listed = await body(client, "servicenow://corp/incidents")
            assert numbers(listed["data"]) == sees
            assert listed["metadata"]["total"] == len(sees)
            for number in sees:
                one = await body(client, f"servicenow://corp/incidents/{number}")
                assert one["data"]["number"] == number
            for number in HIDDEN_FROM[name]:
                with pytest.raises(MCPError) as hidden:
                    await client.read_resource(f"servicenow://corp/incidents/{number}")
                with pytest.raises(MCPError) as absent:
                    await client.read_resource("servicenow://corp/incidents/INC0099999")
                # a hidden record and a missing one are told apart by nothing but the number
                assert hidden.value.error.message.replace(number, "N") == absent.value.error.message.replace(
                    "INC0099999", "N"
                )
    assert {r.principal for r in emulator.table_requests()} >= {"jwt:mcp-on-behalf/alice", "jwt:mcp-on-behalf/bob"}


async def test_the_receipt_names_the_upstream_identity_never_the_token(composition, issuer, emulator):
    async with as_(composition, person(issuer, "bob")) as client:
        result = await client.read_resource("servicenow://corp/incidents/INC0010003")
    receipt = (result.meta or {})[RECEIPT_KEY]
    assert receipt["upstream"] == {"name": "servicenow:corp", "subject": "bob@example.test", "grant": "jwt_bearer"}
    (token,) = [t for t in emulator.issued_tokens()]
    assert token not in json.dumps(result.model_dump(mode="json"))


async def test_completion_and_prompts_run_as_the_caller(composition, issuer):
    for name, sees in (("alice", ALICE_SEES), ("bob", BOB_SEES)):
        async with as_(composition, person(issuer, name)) as client:
            values = (await client.complete(INCIDENT, {"name": "number", "value": "INC"},
                                            {"instance": "corp"})).completion.values  # fmt: skip
            assert sorted(values) == sees
            prompt_values = (await client.complete(BRIEF, {"name": "number", "value": ""},
                                                   {"instance": "corp"})).completion.values  # fmt: skip
            assert sorted(prompt_values) == sees
            shown = await client.get_prompt("servicenow-incident-brief", {"instance": "corp", "number": sees[1]})
            embedded = shown.messages[1].content
            assert embedded.type == "resource"
            assert json.loads(embedded.resource.text)["data"]["number"] == sees[1]  # type: ignore[union-attr]
            for number in HIDDEN_FROM[name]:
                with pytest.raises(MCPError, match=f"no incident {number}"):
                    await client.get_prompt("servicenow-incident-brief", {"instance": "corp", "number": number})


async def test_tools_run_as_the_caller(composition, issuer, emulator):
    hidden_sys_id = next(r["sys_id"] for r in emulator.records("incident") if r["number"] == "INC0010003")
    async with as_(composition, person(issuer, "alice")) as client:
        result = await client.call_tool("servicenow_query_table", {
            "instance": "corp", "table": "incident", "filters": [{"field": "active", "value": "true"}],
            "fields": ["number"]})  # fmt: skip
        assert result.structured_content is not None
        assert numbers(result.structured_content["records"]) == ALICE_SEES
        assert result.structured_content["total"] == len(ALICE_SEES)
        got = await client.call_tool("servicenow_get_record", {"instance": "corp", "table": "incident",
                                                              "sys_id": hidden_sys_id})  # fmt: skip
        assert got.is_error and "INC0010003" not in got.content[0].text  # type: ignore[union-attr]
        by_number = await client.call_tool("servicenow_add_comment", {"instance": "corp", "number": "INC0010003",
                                                                      "text": "not mine"})  # fmt: skip
        assert by_number.is_error and "no incident record with number INC0010003" in by_number.content[0].text  # type: ignore[union-attr]
    journal = [j for j in emulator.records("sys_journal_field") if j["element_id"] == hidden_sys_id]
    assert journal == []


async def test_an_update_by_alice_is_stamped_alice(composition, issuer, emulator):
    target = next(r for r in emulator.records("incident") if r["number"] == "INC0010002")
    async with as_(composition, person(issuer, "alice")) as client:
        updated = await client.call_tool(
            "servicenow_update_record",
            {"instance": "corp", "table": "incident", "sys_id": target["sys_id"], "values": {"priority": "1"}},
        )
        assert not updated.is_error, updated.content
        note = await client.call_tool(
            "servicenow_add_comment",
            {"instance": "corp", "number": "INC0010002", "text": "Rebooted the router", "kind": "work_note"},
        )
        assert not note.is_error, note.content
    after = next(r for r in emulator.records("incident") if r["sys_id"] == target["sys_id"])
    assert after["priority"] == "1" and after["sys_updated_by"] == "alice"
    (entry,) = [j for j in emulator.records("sys_journal_field") if j["element_id"] == target["sys_id"]]
    assert (entry["element"], entry["value"], entry["sys_created_by"]) == ("work_notes", "Rebooted the router", "alice")


@pytest.mark.parametrize(
    "principal", [LOCAL, Principal("anonymous"), Principal("carol", issuer="https://idp.example.test")]
)  # no email claim
async def test_a_caller_without_a_verified_user_is_refused_and_nothing_is_sent(composition, emulator, principal):
    target = next(r for r in emulator.records("incident") if r["number"] == "INC0010002")
    async with as_(composition, principal) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool(
                "servicenow_update_record",
                {"instance": "corp", "table": "incident", "sys_id": target["sys_id"], "values": {"priority": "1"}},
            )
        assert refused.value.error.code == DENIED
        assert "serves each caller as their own ServiceNow user" in refused.value.error.message
        with pytest.raises(MCPError) as read:
            await client.read_resource("servicenow://corp/incidents")
        assert read.value.error.code == DENIED
        with pytest.raises(MCPError):
            await client.complete(INCIDENT, {"name": "number", "value": ""}, {"instance": "corp"})
    assert emulator.requests == []  # no grant asked, nothing read, nothing written
    assert next(r for r in emulator.records("incident") if r["sys_id"] == target["sys_id"]) == target


async def test_local_user_maps_stdio_to_a_named_user(emulator):
    composition = compose_servicenow(obo_instance(emulator.base_url, name="corp",
                                                  auth={"local_user": "bob@example.test"}))  # fmt: skip
    async with connect(composition) as client:  # LOCAL
        assert numbers((await body(client, "servicenow://corp/incidents"))["data"]) == BOB_SEES


async def test_one_token_request_per_user_for_50_concurrent_reads(composition, issuer, emulator):
    async def reads(principal: Principal, count: int) -> None:
        async with as_(composition, principal) as client, anyio.create_task_group() as group:
            for i in range(count):
                group.start_soon(
                    client.read_resource,
                    f"servicenow://corp/incidents/{ALICE_SEES[i % 4]}"
                    if principal.subject == "alice"
                    else "servicenow://corp/incidents",
                )

    await reads(person(issuer, "alice"), 50)
    assert [r.status for r in emulator.token_requests()] == [200]
    # identical concurrent reads of one caller may be coalesced by the core; every one went as alice
    assert {r.principal for r in emulator.table_requests()} == {"jwt:mcp-on-behalf/alice"}
    await reads(person(issuer, "bob"), 50)
    assert [r.status for r in emulator.token_requests()] == [200, 200]


async def test_a_revoked_token_is_replaced_once(composition, issuer, emulator):
    async with as_(composition, person(issuer, "alice")) as client:
        await body(client, "servicenow://corp/incidents")
        assert emulator.revoke_user_tokens("alice") == 1
        assert numbers((await body(client, "servicenow://corp/incidents"))["data"]) == ALICE_SEES
    assert [r.status for r in emulator.token_requests()] == [200, 200]
    assert [r.status for r in emulator.table_requests()] == [200, 401, 200]


async def test_a_revoked_token_and_a_refused_grant_give_one_clear_error(composition, issuer, emulator):
    alice = next(u for u in emulator.records("sys_user") if u["user_name"] == "alice")
    async with as_(composition, person(issuer, "alice")) as client:
        await body(client, "servicenow://corp/incidents")
        # the administrator locks alice out: her account is made inactive, her tokens revoked
        async with httpx2.AsyncClient(base_url=emulator.base_url, auth=(DEV_USER, DEV_PASSWORD)) as admin:
            answer = await admin.patch(f"/api/now/table/sys_user/{alice['sys_id']}", json={"active": "false"})
            assert answer.status_code == 200, answer.text
        emulator.revoke_user_tokens("alice")
        with pytest.raises(MCPError) as refused:
            await client.read_resource("servicenow://corp/incidents")
    message = refused.value.error.message
    assert refused.value.error.code == DENIED
    assert "refused a token for ServiceNow user 'alice@example.test'" in message and "HTTP 401" in message
    assert [r.status for r in emulator.token_requests()] == [200, 401]  # exactly one refresh, refused
    for secret in (OBO_SECRET, key_pair()[0].splitlines()[1], *emulator.issued_tokens()):
        assert secret not in message


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # 2025-11-25 subscribe
async def test_per_user_instances_are_not_watchable_and_say_why(composition, issuer):
    async with as_(composition, person(issuer, "alice")) as client:
        templates = {t.name: t for t in (await client.list_resource_templates()).resource_templates}
        meta = templates["servicenow-incidents"].meta or {}
        assert meta["io.mcp-providers/servicenow"]["not_subscribable"]["instances"] == ["corp"]
        assert "cannot be watched" in meta["io.mcp-providers/servicenow"]["not_subscribable"]["reason"]
        info = (await body(client, "servicenow://corp/info"))["data"]["instance"]
        assert (info["per_user"], info["subscribable"]) == (True, False)
    async with as_(composition, person(issuer, "alice"), mode="legacy") as legacy:
        with pytest.raises(MCPError, match="cannot be watched"):
            await legacy.subscribe_resource("servicenow://corp/incidents/INC0010001")


async def test_a_second_401_after_a_new_token_is_a_clear_error(composition, issuer, emulator):
    emulator.fail_next(2, status=401, scope="table")
    async with as_(composition, person(issuer, "alice")) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("servicenow://corp/incidents")
    message = refused.value.error.message
    assert "failed with HTTP 401" in message and "a new token of user 'alice@example.test' was refused too" in message
    assert [r.status for r in emulator.token_requests()] == [200, 200]  # the first forgotten, one more obtained
    assert [r.status for r in emulator.table_requests()] == [401, 401]  # retried once, no more


async def test_a_user_unknown_to_the_instance_is_refused_with_the_reason(composition, issuer, emulator):
    stranger = Principal("erin", issuer=issuer, claims={"email": "erin@example.test"})
    async with as_(composition, stranger) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("servicenow://corp/incidents")
        with pytest.raises(MCPError) as tool:
            await client.call_tool("servicenow_query_table", {"instance": "corp", "table": "incident"})
    assert refused.value.error.code == tool.value.error.code == DENIED
    assert "erin@example.test" in tool.value.error.message
    assert "refused a token for ServiceNow user 'erin@example.test'" in refused.value.error.message
    assert emulator.table_requests() == []


async def test_a_per_user_instance_is_never_polled(emulator, caplog: pytest.LogCaptureFixture):
    composition = compose_servicenow(obo_instance(emulator.base_url, name="corp", live_poll=True,
                                                  incidents_poll_seconds=0.05))  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="mcp_providers.plugins.servicenow.live"):
        async with connect(composition) as client:
            await client.list_resources()
            await anyio.sleep(0.3)  # six poll intervals
    assert emulator.requests == []
    assert "polling" not in caplog.text  # no poller ran (it would fail: there is no caller to act for)


@pytest.mark.slow
async def test_two_replicas_on_redis_ask_one_token_per_user_and_keep_nothing_readable(
    emulator, issuer, redis_server, monkeypatch: pytest.MonkeyPatch
):
    deployment_key = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
    monkeypatch.setenv("SN_TEST_CREDENTIALS_KEY", deployment_key)
    cluster = ClusterSettings(redis_url=redis_server.url, key_prefix=f"obo{secrets.token_hex(4)}")
    server = ServerSettings(credentials=CredentialsSettings(key_env="SN_TEST_CREDENTIALS_KEY"))
    table = {"servicenow": {"instances": [obo_instance(emulator.base_url, name="corp")]}}
    one, two = (compose({"servicenow": servicenow_plugin}, table, server=server, cluster=cluster) for _ in range(2))
    for name in ("alice", "bob"):
        who = person(issuer, name)
        async with as_(one, who) as first, as_(two, who) as second, anyio.create_task_group() as group:
            for i in range(25):
                group.start_soon(first.read_resource, f"servicenow://corp/incidents/{BOTH_SEE[i % 4]}")
                group.start_soon(second.read_resource, f"servicenow://corp/incidents/{BOTH_SEE[(i + 1) % 4]}")
    assert [r.status for r in emulator.token_requests()] == [200, 200]  # one per user across both replicas
    with redis.Redis.from_url(redis_server.url) as r:
        blob = b"".join(k + (r.get(k) if r.type(k) == b"string" else r.dump(k) or b"")
                        for k in r.keys(f"{cluster.key_prefix}:*"))  # fmt: skip
    for plain in (*emulator.issued_tokens(), "alice@example.test", "bob@example.test", "servicenow:corp", OBO_SECRET):
        assert plain.encode() not in blob, plain
        assert base64.b64encode(plain.encode()) not in blob, plain
