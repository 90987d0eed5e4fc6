"""Tester twenty-eight, F7, through the OpenAPI plugin: a deny on one value of an array parameter
without ``explode`` (``?ids=5``) holds for the array spelled with that value among its items, in
each style (``form``: ``4,5``; ``pipeDelimited``: ``4|5``; ``spaceDelimited``: ``4%205``), so the
service never answers for the denied item."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from mcp import MCPError
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.plugins import policy
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

SERVED: list[str] = []
"""Every account id the service answered for."""


def _service() -> FastAPI:
    api = FastAPI(title="accounts", version="1")

    @api.get("/accounts")
    def accounts(request: Request) -> dict[str, Any]:
        raw = request.query_params.get("ids", "")
        ids = [i for part in raw.replace("|", ",").replace(" ", ",").split(",") if (i := part.strip())]
        SERVED.extend(ids)
        return {"ids": ids, "secret": "ACCOUNT-5-SECRET" if "5" in ids else "-"}

    return api


def _document(style: str) -> dict[str, Any]:
    ids = {"name": "ids", "in": "query", "style": style, "explode": False}
    ids["schema"] = {"type": "array", "items": {"type": "integer"}}
    ok = {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}
    operation = {"operationId": "listAccounts", "parameters": [ids], "responses": {"200": ok}}
    return {"openapi": "3.1.0", "info": {"title": "acct", "version": "1"}, "paths": {"/accounts": {"get": operation}}}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(_service()) as origin:
        yield origin


@pytest.mark.parametrize(
    ("style", "uris"),
    [
        ("form", ["openapi://svc/accounts?ids=4,5", "openapi://svc/accounts?ids=5,4"]),
        ("pipeDelimited", ["openapi://svc/accounts?ids=4|5", "openapi://svc/accounts?ids=4%7C5"]),
        ("spaceDelimited", ["openapi://svc/accounts?ids=4%205", "openapi://svc/accounts?ids=6%205%204"]),
    ],
)
async def test_no_array_holding_a_denied_item_reaches_the_service(origin: str, style: str, uris: list[str]) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as document:
        json.dump(_document(style), document)
        document.flush()
        settings = {
            "openapi": {"services": [{"name": "svc", "document": document.name, "base_url": origin}]},
            "policy": {"rules": [{"effect": "deny", "targets": ["openapi://svc/accounts?ids=5"]}]},
        }
        SERVED.clear()
        async with connect(compose({"openapi": openapi_plugin, "policy": policy}, settings)) as client:
            spared = await client.read_resource("openapi://svc/accounts?ids=4")
            assert "ACCOUNT-5-SECRET" not in spared.contents[0].text  # type: ignore[union-attr]
            for uri in uris:
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(uri)
                assert "permission-denied" in refused.value.error.message, uri
    assert SERVED == ["4"]
