"""An OpenAPI service whose document is unreachable or invalid fails alone (``/readyz``,
``/status.json``'s facts), and a configured credential reaches the service while the caller's token never
does, nor does the credential reach receipts or errors; served over real HTTP."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from openapi_support import SEEN, app, free_port, serving
from serve_support import served

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers._serve.transport.status import facts
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

SERVICE_TOKEN = "svc-token-3f9a1c0e5b7d"
QUERY_KEY = "query-key-5d1e7c3b9a20"
PASSWORD = "pass-word-4c8e2a6f1b3d"
CALLER_TOKEN = "caller-token-8e2b6d4a0c1f"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    invalid = tmp_path_factory.mktemp("documents") / "invalid.yaml"
    invalid.write_text("openapi: 3.0.3\ninfo:\n  title: no version\npaths: {}\n")
    patch = pytest.MonkeyPatch()
    patch.setenv("OPENAPI_TEST_SERVICE_TOKEN", SERVICE_TOKEN)
    patch.setenv("OPENAPI_TEST_QUERY_KEY", QUERY_KEY)
    patch.setenv("OPENAPI_TEST_PASSWORD", PASSWORD)
    with serving(app()) as origin:
        services = [
            {"name": "shop", "document": f"{origin}/openapi.json",
             "auth": {"type": "bearer", "token_env": "OPENAPI_TEST_SERVICE_TOKEN"}},
            {"name": "keyed", "document": f"{origin}/openapi.json",
             "auth": {"type": "api_key", "location": "query", "name": "key", "value_env": "OPENAPI_TEST_QUERY_KEY"}},
            {"name": "basic", "document": f"{origin}/openapi.json",
             "auth": {"type": "basic", "username": "robot", "password_env": "OPENAPI_TEST_PASSWORD"}},
            {"name": "gone", "document": f"http://127.0.0.1:{free_port()}/openapi.json", "timeout_seconds": 5},
            {"name": "invalid", "document": str(invalid), "base_url": origin},
        ]  # fmt: skip
        # strict=False: "gone" and "invalid" serve nothing, which check (and a strict compose) fails on
        composed = compose({"openapi": openapi_plugin}, {"openapi": {"services": services}}, strict=False)
        with served(composed, stateless=True, json_response=True) as port:
            yield f"http://127.0.0.1:{port}", composed
    patch.undo()


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        body: dict[str, Any] = json.loads(answer.read())
        return body


def test_a_service_whose_document_fails_fails_alone_in_readyz_and_status(base: tuple[str, Any]) -> None:
    ready = _get(f"{base[0]}/readyz")
    assert ready["status"] == "ready"
    assert {"openapi-gone", "openapi-invalid"} <= set(ready["failed_providers"])
    assert not {"openapi-shop", "openapi-shop-tools"} & set(ready["failed_providers"])
    failed = facts(base[1], None, None)["failed_providers"]  # what /status.json shows
    assert "service 'gone': document 'http://127.0.0.1:" in failed["openapi-gone"]
    assert "could not be fetched (ConnectError" in failed["openapi-gone"]
    assert "is not valid OpenAPI 3.0.3: at info: misses the required property version" in failed["openapi-invalid"]


async def test_the_service_gets_its_credential_never_the_callers_and_nothing_shows_it(base: tuple[str, Any]) -> None:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {CALLER_TOKEN}"}) as http,
        Client(streamable_http_client(f"{base[0]}/mcp", http_client=http), cache=None) as alice,
    ):
        read = await alice.read_resource("openapi://shop/items")
        with pytest.raises(MCPError) as refused:
            await alice.read_resource("openapi://shop/echo")
        with pytest.raises(MCPError) as down:
            await alice.read_resource("openapi://gone/anything")
    sent = [s["headers"].get("authorization") for s in SEEN[-2:]]
    assert sent == [f"Bearer {SERVICE_TOKEN}"] * 2
    receipt = read.meta[RECEIPT_KEY]
    assert receipt["upstream"]["grant"] == "bearer" and receipt["upstream"]["url"].endswith("/items")
    shown = json.dumps(receipt) + refused.value.error.message + json.dumps(refused.value.error.data)
    assert "refused credential Bearer [redacted]" in refused.value.error.message
    assert SERVICE_TOKEN not in shown and CALLER_TOKEN not in shown
    assert "openapi://gone/anything" in down.value.error.message


async def test_a_credential_the_service_echoes_in_a_success_is_masked_too(base: tuple[str, Any]) -> None:
    """Tester, round 8 (second pass): only error texts were masked; a 200 body quoting the
    credential reached the client verbatim."""
    async with Client(streamable_http_client(f"{base[0]}/mcp"), cache=None) as client:
        read = await client.read_resource("openapi://shop/echo?ok=true")
    text = read.contents[0].text  # type: ignore[union-attr]
    assert SEEN[-1]["headers"]["authorization"] == f"Bearer {SERVICE_TOKEN}"
    assert SERVICE_TOKEN not in text and json.loads(text) == {"detail": ["you sent Bearer [redacted]"]}, text


async def test_an_api_key_in_the_query_reaches_the_service_but_never_the_recorded_url(base: tuple[str, Any]) -> None:
    async with Client(streamable_http_client(f"{base[0]}/mcp"), cache=None) as client:
        found = await client.read_resource("openapi://keyed/search?q=ham")
        with pytest.raises(MCPError) as refused:
            await client.read_resource("openapi://keyed/items/404")
    assert SEEN[-2]["query"] == {"q": "ham", "key": QUERY_KEY}
    upstream = found.meta[RECEIPT_KEY]["upstream"]
    assert upstream["url"].endswith("/search?q=ham") and upstream["grant"] == "api_key"
    assert QUERY_KEY not in json.dumps(found.meta) + refused.value.error.message


async def test_a_basic_credential_echoed_by_the_service_is_masked_in_the_error(base: tuple[str, Any]) -> None:
    async with Client(streamable_http_client(f"{base[0]}/mcp"), cache=None) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("openapi://basic/echo")
    sent = base64.b64encode(f"robot:{PASSWORD}".encode()).decode()
    assert SEEN[-1]["headers"]["authorization"] == f"Basic {sent}"
    assert "refused credential Basic [redacted]" in refused.value.error.message
