"""Custody, authorization and budgets: the seed's six delivery cases and four rejections.

Every case runs through a real MCP client against the composed server; receipts are recomputed
from what the client received.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from custody_fixture import HANDBOOK, REPORT, MutablePolicy, plugin
from mcp import MCPError

from mcp_providers import MAX_AGE_KEY as MAX_AGE_META_KEY
from mcp_providers import RECEIPT_KEY, Resource, ServerSettings
from mcp_providers._serve.steps.custody import STATIC_TTL_MS
from mcp_providers.identity import Principal
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


def served_bytes(item: types.TextResourceContents | types.BlobResourceContents) -> bytes:
    if isinstance(item, types.TextResourceContents):
        return item.text.encode()
    return base64.b64decode(item.blob)


def check_receipt(result: types.ReadResourceResult) -> dict[str, Any]:
    (item,) = result.contents
    receipt: dict[str, Any] = (result.meta or {})[RECEIPT_KEY]
    data = served_bytes(item)
    assert receipt["sha256"] == hashlib.sha256(data).hexdigest()
    assert receipt["bytes"] == len(data)
    assert receipt["uri"] == item.uri and receipt["mimeType"] == item.mime_type
    assert receipt["retrievedAt"].endswith("Z")
    return receipt


@pytest.fixture
def composition() -> Any:
    return compose({"custody": plugin()}, server=ServerSettings(max_embed_bytes=4096))


# -- the six delivery cases --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_listed_handbook_is_read_by_the_application_with_a_receipt(composition: Any, mode: str) -> None:
    async with connect(composition, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.read_resource("kb://handbook/v4")
        receipt = check_receipt(result)
        assert result.contents[0].text == HANDBOOK  # type: ignore[union-attr]
        assert receipt["actor"] == "application" and receipt["operation"] == "resources/read"
        assert receipt["subject"] == "local" and receipt["decision"] == "allowed"
        assert receipt["provider"] == "docs" and receipt["plugin"] == "custody"
        assert receipt["freshness"] == {"kind": "static"} and receipt["sideEffects"] == "none"
        assert receipt["truncation"] is None and "template" not in receipt
        if mode == "auto":  # cache hints exist on the 2026-07-28 wire only
            assert (result.ttl_ms, result.cache_scope) == (STATIC_TTL_MS, "public")


async def test_templated_record_keeps_template_and_decoded_params(composition: Any) -> None:
    async with connect(composition) as client:
        result = await client.read_resource("crm://customer/fixture%2D17")
        receipt = check_receipt(result)
        assert receipt["template"] == "crm://customer/{id}"
        assert receipt["params"] == {"id": "fixture-17"}
        assert json.loads(result.contents[0].text)["id"] == "fixture-17"  # type: ignore[union-attr]


async def test_large_generated_report_becomes_a_link_to_a_real_uri(composition: Any) -> None:
    async with connect(composition) as client:
        result = await client.call_tool("generate_report", {"week": 7})
        links = [b for b in result.content if isinstance(b, types.ResourceLink)]
        assert [link.uri for link in links] == ["report://synthetic/weekly-7"]
        assert links[0].size == len(REPORT.encode())
        assert not [b for b in result.content if isinstance(b, types.EmbeddedResource)]
        receipt = (result.meta or {})[RECEIPT_KEY]
        assert receipt["transforms"] == [
            f"embed-over-budget->resource_link report://synthetic/weekly-7 ({len(REPORT.encode())} bytes)"
        ]
        # The link is real: the application can read it through the normal, authorized path.
        read = await client.read_resource(links[0].uri)
        assert read.contents[0].text == REPORT  # type: ignore[union-attr]


async def test_compact_answer_is_structured_content_with_a_model_receipt(composition: Any) -> None:
    async with connect(composition) as client:
        result = await client.call_tool("risk_score", {"customer": "c-17"})
        assert result.structured_content == {"customer": "c-17", "score": 42}
        receipt = (result.meta or {})[RECEIPT_KEY]
        # The digest covers every content block in order, with the structured content.
        blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
        whole = {"content": blocks, "structuredContent": result.structured_content}
        canonical = json.dumps(whole, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert receipt["sha256"] == hashlib.sha256(canonical).hexdigest()
        assert [b["type"] for b in receipt["blocks"]] == ["text"]
        assert receipt["actor"] == "model" and receipt["operation"] == "tools/call"
        assert receipt["tool"] == "risk_score" and receipt["sideEffects"] == "none"
        assert len(receipt["argumentsHmac"]) == 64  # HMAC-SHA256 under the deployment key (test_audit_hmac)
        assert receipt["argumentsHmac"] != hashlib.sha256(b'{"customer":"c-17"}').hexdigest()
        assert "c-17" not in json.dumps({k: v for k, v in receipt.items() if k != "sha256"})


async def test_state_changing_tool_declares_its_effects_and_embeds_small_evidence(composition: Any) -> None:
    async with connect(composition) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "approve_draft")
        assert tool.annotations is not None
        assert (
            tool.annotations.read_only_hint,
            tool.annotations.destructive_hint,
            tool.annotations.idempotent_hint,
        ) == (False, True, True)
        result = await client.call_tool("approve_draft", {"draft": "d9"})
        receipt = (result.meta or {})[RECEIPT_KEY]
        assert receipt["sideEffects"] == "destructive" and receipt["idempotent"] is True
        (embedded,) = [b for b in result.content if isinstance(b, types.EmbeddedResource)]
        assert embedded.resource.uri == "crm://customer/d9"
        assert [b.uri for b in result.content if isinstance(b, types.ResourceLink)] == ["kb://handbook/v4"]


# resources/subscribe is the 2025-11-25 API, which the client flags as removed in 2026-07-28.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_live_status_is_watched_in_both_eras() -> None:
    fixture = plugin()
    composition = compose({"custody": fixture})
    got: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            got.append(message.params.uri)

    from mcp import Client

    async with Client(composition.server, mode="legacy", cache=None, message_handler=on_message) as legacy:
        await legacy.subscribe_resource("status://service/current")
        await fixture.docs.publisher.resource_updated("status://service/current")
        with anyio.fail_after(5):
            while not got:
                await anyio.sleep(0.01)
        assert got == ["status://service/current"]
        await legacy.unsubscribe_resource("status://service/current")
        with pytest.raises(MCPError) as err:
            await legacy.subscribe_resource("kb://handbook/v4")  # static: not watchable
        assert err.value.code == types.INVALID_PARAMS and "not declare it live" in err.value.message

    async with connect(composition) as modern, modern.listen(resource_subscriptions=["status://service/current"]) as s:
        await fixture.docs.publisher.resource_updated("status://service/current")
        with anyio.fail_after(5):
            async for event in s:
                assert event.uri == "status://service/current"  # type: ignore[union-attr]
                break


# -- the four rejections -----------------------------------------------------------------------


async def test_stale_content_is_refused_when_current_data_is_demanded(composition: Any) -> None:
    async with connect(composition) as client:
        with pytest.raises(MCPError) as err:
            await client.read_resource("status://service/cached", meta={MAX_AGE_META_KEY: 0})  # type: ignore[typeddict-unknown-key]
        assert err.value.code == -32007 and "stale-content" in err.value.message
        assert "up to 300 s old" in err.value.message
        # A max_age provider that says how old its content is may serve a stricter demand.
        fresh = await client.read_resource("status://service/recent", meta={MAX_AGE_META_KEY: 60})  # type: ignore[typeddict-unknown-key]
        assert "asOf" in (fresh.meta or {})[RECEIPT_KEY]
        # Live and static content satisfy any demand.
        await client.read_resource("status://service/current", meta={MAX_AGE_META_KEY: 0})  # type: ignore[typeddict-unknown-key]
        await client.read_resource("kb://handbook/v4", meta={MAX_AGE_META_KEY: 0})  # type: ignore[typeddict-unknown-key]


async def test_permission_denied_read_and_hidden_list_item() -> None:
    policy = MutablePolicy()
    policy.denied |= {("read", "kb://handbook/v4"), ("list", "kb://handbook/v4")}
    composition = compose({"custody": plugin(), "policy": policy})
    async with connect(composition) as client:
        with pytest.raises(MCPError) as err:
            await client.read_resource("kb://handbook/v4")
        assert err.value.code == -32003
        assert "permission-denied" in err.value.message and "test policy denies read" in err.value.message
        uris = [r.uri for r in (await client.list_resources()).resources]
        assert "kb://handbook/v4" not in uris and "report://synthetic/weekly-7" in uris


async def test_embed_over_budget_is_refused_when_the_tool_forbids_a_link(composition: Any) -> None:
    async with connect(composition) as client:
        with pytest.raises(MCPError) as err:
            await client.call_tool("strict_report", {"week": 7})
        assert err.value.code == -32004 and "embed-over-budget" in err.value.message
        # A link to a URI nobody serves is dropped, never left dangling, and the receipt says so.
        dropped = await client.call_tool("bad_link", {"week": 1})
        assert not dropped.is_error
        assert not [b for b in dropped.content if isinstance(b, types.ResourceLink)]
        assert (dropped.meta or {})[RECEIPT_KEY]["transforms"] == [
            "dropped resource_link nowhere://x: not served by this server"
        ]


def test_side_effect_on_a_resource_is_rejected_before_serving() -> None:
    fixture = plugin()
    original = fixture.docs.resources

    def with_mutation() -> list[Resource]:
        return [*original(), Resource(uri="kb://counter", name="counter", side_effects="additive")]

    fixture.docs.resources = with_mutation  # type: ignore[method-assign]
    composition = compose({"custody": fixture}, strict=False)
    assert [p.rule for p in composition.problems] == ["resource-declares-side-effect"]
    assert composition.catalog.resources == []


# -- budgets -----------------------------------------------------------------------------------


async def test_read_budget_is_an_error_or_a_recorded_truncation_never_silent(composition: Any) -> None:
    async with connect(composition) as client:
        with pytest.raises(MCPError) as err:
            await client.read_resource("kb://huge")
        assert err.value.code == -32004
        assert "4000 bytes, over the read budget of 1000 bytes" in err.value.message
        result = await client.read_resource("kb://big")
        receipt = check_receipt(result)
        assert receipt["truncation"] == {
            "originalBytes": 4000,
            "servedBytes": 1000,
            "budget": 1000,
            "reason": "over the read budget; the provider allows truncation",
        }
        assert result.contents[0].text == "é" * 500  # type: ignore[union-attr]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_subscription_delivery_is_denied_after_the_policy_changes() -> None:
    policy = MutablePolicy()
    fixture = plugin()
    composition = compose({"custody": fixture, "policy": policy})
    got: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            got.append(message.params.uri)

    from mcp import Client

    uri = "status://service/current"
    async with Client(composition.server, mode="legacy", cache=None, message_handler=on_message) as legacy:
        await legacy.subscribe_resource(uri)
        await fixture.docs.publisher.resource_updated(uri)
        with anyio.fail_after(5):
            while len(got) < 1:
                await anyio.sleep(0.01)
        policy.denied.add(("subscribe", uri))
        await fixture.docs.publisher.resource_updated(uri)
        await legacy.send_ping()  # a full round trip: anything sent before it has arrived
        assert got == [uri]
        with pytest.raises(MCPError) as err:
            await legacy.subscribe_resource(uri)
        assert err.value.code == -32003

    policy.denied.clear()
    async with connect(composition) as modern:
        async with modern.listen(resource_subscriptions=[uri]) as stream:
            policy.denied.add(("subscribe", uri))
            await fixture.docs.publisher.resource_updated(uri)
            policy.denied.clear()
            await fixture.docs.publisher.resource_updated("status://service/current")
            with anyio.fail_after(5):
                events = []
                async for event in stream:
                    events.append(event)
                    break
            assert len(events) == 1  # the first update was dropped, the second delivered
        policy.denied.add(("subscribe", uri))
        with pytest.raises(MCPError) as denied:
            async with modern.listen(resource_subscriptions=[uri]):
                pass
        assert denied.value.code == -32003


async def test_the_audit_log_records_failed_reads_and_calls_without_content(tmp_path: Any) -> None:
    log = tmp_path / "audit.jsonl"
    composition = compose({"custody": plugin()}, server=ServerSettings(audit_log=log))
    async with connect(composition) as client:
        await client.read_resource("kb://handbook/v4")
        with pytest.raises(MCPError):
            await client.read_resource("kb://huge")
        with pytest.raises(MCPError):
            await client.read_resource("kb://nothing-here")
        failed = await client.call_tool("risk_score", {"customer": 17})  # wrong type: an error result
        assert failed.is_error
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    # Connecting (server/discover or initialize) and listing are audited too; this test is about failures.
    lines = [line for line in lines if line["operation"] not in ("resources/list", "server/discover", "initialize")]
    outcomes = [(line["operation"], line["target"], line["decision"]) for line in lines]
    assert outcomes == [
        ("resources/read", "kb://handbook/v4", "allowed"),
        ("resources/read", "kb://huge", "error"),
        ("resources/read", "kb://nothing-here", "error"),
        ("tools/call", "risk_score", "error"),
    ]
    # The code and kind of the failure, never its message (messages may quote argument values).
    assert lines[1]["reason"] == "-32004: TooLarge"
    assert lines[2]["reason"] == "-32602: NotFound"
    assert lines[3]["reason"] == "the tool returned an error result"  # never the argument values
    assert "Be kind" not in log.read_text()  # never content


def test_now_utc_is_iso_utc_to_the_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_providers._serve.steps import custody

    for ns, text in (
        (1_764_547_200_007_999_999, "2025-12-01T00:00:00.007Z"),
        (1_764_547_200_999_000_000, "2025-12-01T00:00:00.999Z"),
        (1_764_547_261_000_000_000, "2025-12-01T00:01:01.000Z"),
    ):
        monkeypatch.setattr(custody.time, "time_ns", lambda ns=ns: ns)
        assert custody.now_utc() == text


@pytest.mark.parametrize("template", [None, "t://x/{id}"])
@pytest.mark.parametrize("details", [False, True])
def test_read_receipt_is_receipt_key_for_key(
    template: str | None, details: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    from mcp_providers._serve.steps import custody
    from mcp_providers.models import Freshness

    monkeypatch.setattr(custody, "now_utc", lambda: "2025-12-01T00:00:00.000Z")
    freshness = Freshness.max_age(60)
    data = b"some bytes"
    common: dict[str, Any] = {
        "principal": Principal("alice", issuer="static", client_id="alice"),
        "uri": "t://x/1",
        "mime_type": "text/plain",
        "truncation": {"originalBytes": 20, "servedBytes": 10} if details else None,
        "extra": {"canonicalUri": "t://x/1", "exemptions": [{"reason": "auth"}]} if details else None,
        "as_of": datetime(2025, 11, 30, tzinfo=UTC) if details else None,
    }
    params = {"id": "1"} if template else {}
    parts = custody.read_receipt_parts("prov", "plug", "dist", "1.0", template, freshness)
    fast = custody.read_receipt(parts, params=params, size=len(data), sha256=custody.digest(data), **common)
    slow = custody.receipt(
        actor="application",
        operation="resources/read",
        provider="prov",
        plugin="plug",
        distribution="dist",
        version="1.0",
        data=data,
        template=template,
        params=params if template else None,
        freshness=freshness,
        **common,
    )
    assert list(fast.items()) == list(slow.items())
    again = custody.read_receipt(parts, params=params, size=len(data), sha256=custody.digest(data), **common)
    again["freshness"]["kind"] = "changed"
    again["transforms"].append("changed")
    fresh = custody.read_receipt(parts, params=params, size=1, sha256="", **common)
    assert fresh["transforms"] == [] and fresh["freshness"]["kind"] == "max_age"  # nothing shared between reads
