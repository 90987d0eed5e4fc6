"""The OpenAPI plugin against a real FastAPI app serving its own generated document on loopback:
the mapping, reads and calls, custody, the deny on every spelling of a path, and failures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError
from openapi_support import ITEMS, SEEN, app, serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.config import ServerSettings
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins import policy
from mcp_providers.plugins.openapi import document
from mcp_providers.testing import assert_check_passes, compose, connect

pytestmark = pytest.mark.anyio

PRIVATE_DENY = {"effect": "deny", "actions": ["read", "expand"], "targets": ["openapi://shop/files/private/*"]}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(app()) as served:
        yield served


def shop(origin: str, **extra: Any) -> dict[str, Any]:
    return {"services": [{"name": "shop", "document": f"{origin}/openapi.json", **extra}]}


@pytest.fixture(scope="module")
def composed(origin: str) -> Any:
    settings = {"openapi": shop(origin, max_response_bytes=100_000), "policy": {"rules": [PRIVATE_DENY]}}
    return compose({"openapi": openapi_plugin, "policy": policy}, settings, server=ServerSettings(read_timeout=0.5))


async def test_operations_become_resources_templates_and_tools_the_checks_accept(composed: Any) -> None:
    assert_check_passes(composed)  # templates through the SDK's strict parser, prefixes owned
    async with connect(composed) as client:
        resources = {r.uri: r for r in (await client.list_resources()).resources}
        templates = {t.uri_template: t for t in (await client.list_resource_templates()).resource_templates}
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(resources) == {f"openapi://shop/{p}" for p in ("items", "slow", "big", "broken")}
    assert set(templates) == {
        "openapi://shop/items/{item_id}",
        "openapi://shop/search{?q,limit}",
        "openapi://shop/files/{folder}/{name}",
        "openapi://shop/echo{?ok}",
    }
    assert resources["openapi://shop/items"].mime_type == "application/json"
    assert resources["openapi://shop/big"].mime_type == "text/plain"
    hints = {n: (t.annotations.read_only_hint, t.annotations.destructive_hint, t.annotations.idempotent_hint)
             for n, t in tools.items()}  # fmt: skip
    assert hints == {
        "shop_createItem": (False, False, False),
        "shop_replaceItem": (False, True, True),
        "shop_deleteItem": (False, True, True),
    }
    schema = tools["shop_replaceItem"].input_schema
    assert schema["required"] == ["item_id", "body"]
    assert schema["$defs"]["NewItem"]["required"] == ["name", "price"]
    origin = templates["openapi://shop/items/{item_id}"].meta["io.mcp-providers/origin"]
    assert origin == {"service": "shop", "document": "Tools Shop 2.1.0", "operationId": "getItem", "method": "GET",
                      "path": "/items/{item_id}"}  # fmt: skip


async def test_reads_and_calls_reach_the_service_and_receipts_name_it(composed: Any) -> None:
    async with connect(composed) as client:
        one = await client.read_resource("openapi://shop/items/1")
        found = await client.read_resource("openapi://shop/search?q=saw&limit=1")
        made = await client.call_tool("shop_createItem", {"body": {"name": "drill", "price": 50}})
        refused = await client.call_tool("shop_createItem", {"body": {"name": "drill"}})
        taken = await client.call_tool("shop_createItem", {"body": {"name": "hammer", "price": 1}})
        with pytest.raises(
            MCPError, match=r"searchItems needs the query parameter\(s\) q: read openapi://shop/search\?q=\.\.\."
        ):
            await client.read_resource("openapi://shop/search?limit=2")
    assert json.loads(one.contents[0].text) == ITEMS[1]
    assert [i["name"] for i in json.loads(found.contents[0].text)] == ["saw"]
    assert SEEN[-1]["path"] == "/items" and SEEN[-1]["method"] == "POST"  # the refused read sent nothing
    assert json.loads(made.content[0].text)["name"] == "drill"
    assert refused.is_error and "price" in refused.content[0].text
    assert taken.is_error and taken.content[0].text == (
        "shop_createItem failed: service 'shop' (Tools Shop 2.1.0): createItem (POST /items) failed with HTTP 409: "
        '{"detail":"an item named \'hammer\' exists"}'
    )
    upstream = found.meta[RECEIPT_KEY]["upstream"]
    assert upstream["name"] == "openapi:shop" and upstream["service"] == "Tools Shop 2.1.0"
    assert (upstream["operationId"], upstream["method"]) == ("searchItems", "GET")
    assert upstream["url"].endswith("/search?q=saw&limit=1")
    assert made.meta[RECEIPT_KEY]["upstream"]["operationId"] == "createItem"
    assert "authorization" not in SEEN[-1]["headers"]  # no credential configured: none sent


@pytest.mark.parametrize(
    "uri",
    [
        "openapi://shop/files/private/x",
        "openapi://shop/files/PRIVATE/../private/x",
        "openapi://shop/files/public/../private/x",
        "openapi://shop/files/./private/x",
        "openapi://shop/files/%70rivate/x",
        "openapi://shop/files/public%2F..%2Fprivate/x",
        "openapi://shop/files/public%2f..%2fprivate/x",
        "openapi://shop/files/%2e%2e/private/x",
        "openapi://shop/files/public/%2e%2e%2fprivate%2fx",
        "openapi://shop/files/%252e%252e/private",
        "openapi://shop/files/public/..%252Fprivate%252Fx",
        "openapi://shop/files/%2570rivate/x",
        # the names a lenient service reads as private (the policy plugin's deny readings)
        "openapi://shop/files/PRIVATE/x",
        "openapi://shop/files/Private/x",
        "openapi://shop/files/private;v=1/x",
        "openapi://shop/files/private%3Bv=1/x",
        "openapi://shop/files/\uff50rivate/x",
    ],
)
async def test_a_deny_on_private_holds_for_every_spelling(composed: Any, uri: str) -> None:
    before = len(SEEN)
    async with connect(composed) as client:
        with pytest.raises(MCPError):
            await client.read_resource(uri)
    assert SEEN[before:] == []  # refused before anything was sent


async def test_the_allowed_neighbour_of_the_denied_folder_is_read_as_the_gate_saw_it(composed: Any) -> None:
    async with connect(composed) as client:
        result = await client.read_resource("openapi://shop/files/public/x%20y")
    assert json.loads(result.contents[0].text) == {"folder": "public", "name": "x y"}
    assert SEEN[-1]["raw_path"] == "/files/public/x%20y"


async def test_upstream_errors_hangs_and_oversize_answers_are_errors_naming_the_service(composed: Any) -> None:
    async with connect(composed) as client:
        for uri, said in (
            ("openapi://shop/broken", 'HTTP 503: {"detail": "database down"}'),
            ("openapi://shop/items/99", "HTTP 404"),
            ("openapi://shop/big", "over max_response_bytes = 100000"),
        ):
            with pytest.raises(MCPError) as failed:
                await client.read_resource(uri)
            assert "service 'shop' (Tools Shop 2.1.0)" in failed.value.error.message, uri
            assert said in failed.value.error.message, uri
        with pytest.raises(MCPError) as hung:
            await client.read_resource("openapi://shop/slow")
    assert "provider 'openapi-shop' did not finish reading openapi://shop/slow within 0.5 s" in hung.value.error.message


async def test_a_service_slower_than_its_timeout_fails_naming_it_and_the_audit_line_says_what_was_asked(
    origin: str, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    composed = compose({"openapi": openapi_plugin}, {"openapi": shop(origin, timeout_seconds=0.2)},
                       server=ServerSettings(audit_log=audit))  # fmt: skip
    async with connect(composed) as client:
        with pytest.raises(MCPError) as hung:
            await client.read_resource("openapi://shop/slow")
    assert "slow (GET /slow) got no answer within 0.2 s (ReadTimeout)" in hung.value.error.message
    line = json.loads(audit.read_text().splitlines()[-1])
    assert line["operation"] == "resources/read" and line["target"] == "openapi://shop/slow"
    assert line["upstream"] == {"name": "openapi:shop", "subject": "service", "grant": "none",
                                "service": "Tools Shop 2.1.0", "operationId": "slow", "method": "GET",
                                "url": f"{origin}/slow"}  # fmt: skip


def test_a_document_over_the_size_limit_is_refused_from_a_url_or_a_file(
    origin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(document, "MAX_DOCUMENT_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_text(" " * 1001)
    for source in (f"{origin}/openapi.json", str(big)):
        with pytest.raises(document.DocumentError, match="is over 1000 bytes"):
            document.load(source)
