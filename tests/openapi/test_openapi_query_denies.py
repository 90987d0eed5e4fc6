"""Tester twenty-five, f1 and f4, through the OpenAPI plugin: a deny on a query value holds for the
value's decoded and folded spellings and for its parameters in another order, so a service that
compares owners as an accent- and width-insensitive collation does never serves the denied owner."""

from __future__ import annotations

import json
import tempfile
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from mcp import MCPError
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.plugins import policy
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

SERVED: list[str] = []
"""Every owner the service answered for."""


def _fold(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c)).casefold()


def _service() -> FastAPI:
    api = FastAPI(title="owners", version="1")

    @api.get("/items", operation_id="listItems")
    def list_items(owner: str = "anyone", admin: bool = False) -> dict[str, Any]:
        SERVED.append(owner)
        return {"owner": owner, "secret": "ROOT-SECRET" if _fold(owner) == "root" or admin else "-"}

    return api


@pytest.fixture
def composition() -> Iterator[Any]:
    api = _service()
    with serving(api) as origin, tempfile.NamedTemporaryFile("w", suffix=".json") as document:
        json.dump(api.openapi(), document)
        document.flush()
        rules = [{"effect": "deny", "targets": ["openapi://svc/items?owner=root*", "openapi://svc/items?admin=true*"]}]
        settings = {
            "openapi": {"services": [{"name": "svc", "document": document.name, "base_url": origin}]},
            "policy": {"rules": rules},
        }
        yield compose({"openapi": openapi_plugin, "policy": policy}, settings)


@pytest.mark.parametrize(
    "uri",
    [
        "openapi://svc/items?owner=%EF%BD%92oot",
        "openapi://svc/items?owner=R%C3%B6ot",
        "openapi://svc/items?owner=%2572oot",
        "openapi://svc/items?owner=ro%E2%80%8Bot",
        "openapi://svc/items?owner=bob&admin=true",
    ],
)
async def test_no_spelling_of_a_denied_query_value_reaches_the_service(composition: Any, uri: str) -> None:
    SERVED.clear()
    async with connect(composition) as client:
        spared = await client.read_resource("openapi://svc/items?owner=alice")
        assert "ROOT-SECRET" not in spared.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        assert "permission-denied" in refused.value.error.message
    assert SERVED == ["alice"]
