"""Item-by-item listing over streamable HTTP (issue 40): the same pages as
``test_upstream_listing_items.py``, sent by a raw JSON-RPC HTTP endpoint (JSON answers, both eras),
so the sieve sits on the HTTP transport's streams as on stdio's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from paged_stdio_upstream import answer
from serve_support import free_port
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from test_upstream_listing_items import ALL_GOOD, ERAS, _all_good, _left, _served

from mcp_providers._host.advisories import unavailable_sources
from mcp_providers.plugins import upstream
from mcp_providers.testing import compose

SPEC: dict[str, Any] = {}


async def _endpoint(request: Request) -> Response:
    if request.method != "POST":
        return Response(status_code=405)
    message = await request.json()
    ident, method = message.get("id"), message.get("method")
    if ident is None:
        return Response(status_code=202)
    result = answer(SPEC, method, message.get("params") or {})
    if isinstance(result, dict) and set(result) == {"error"}:
        return JSONResponse({"jsonrpc": "2.0", "id": ident, "error": result["error"]})
    return JSONResponse({"jsonrpc": "2.0", "id": ident, "result": result})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    app = Starlette(routes=[Route("/mcp", _endpoint, methods=["GET", "POST", "DELETE"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.02)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(10)


def _composed(url: str, era: str, pages: dict[str, Any]) -> Any:
    SPEC.clear()
    SPEC.update({"era": era, "pages": json.loads(json.dumps(pages))})
    server = {"name": "paged", "url": url, "prefixes": ["p://"], "read_timeout": 10}
    return compose({"upstream": upstream}, {"upstream": {"servers": [server]}}, strict=False)  # some fail listing


@pytest.mark.parametrize("era", ERAS)
def test_one_bad_item_per_list_is_left_out_over_http(url: str, era: str) -> None:
    bad = {"resources": [{"name": "x"}], "resourceTemplates": [5], "tools": [{"name": "t"}], "prompts": [[]]}
    c = _composed(url, era, _all_good(**bad))
    assert _served(c) == ALL_GOOD
    left = _left(c)
    assert left["t"].startswith("upstream-paged: tools/list page 1, tools[0] 't' does not parse: inputSchema")
    assert left["x"].startswith("upstream-paged: resources/list page 1, resources[0] 'x' does not parse: uri")
    assert (
        "resources/templates/list page 1, resourceTemplates[0] is an int, not an object"
        in (left["resources/templates/list resourceTemplates[0]"])
    )
    assert "prompts/list page 1, prompts[0] is a list, not an object" in left["prompts/list prompts[0]"]


@pytest.mark.parametrize("era", ERAS)
def test_a_page_that_is_not_an_object_fails_that_upstream_over_http_naming_it(url: str, era: str) -> None:
    c = _composed(url, era, {**_all_good(), "tools/list": [[1]]})
    [gone] = unavailable_sources(c.assembly.declared)
    assert "upstream 'paged' (streamable-http) could not be listed: error -32700: tools/list page 1: " in gone.message
