"""An OpenAPI service's ``prefix`` that overlaps another plugin's costs only that service (tester
thirteen: service ``wide`` on ``documcp://ssgs/x/`` took down service ``good`` and the SSG catalog
too); and two operations of one service named alike are told the fix that can part them (an
operationId, or ``exclude_operations``), never "give that source a name prefix", which cannot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError
from openapi_support import app, serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.plugins.documcp import ssg_catalog
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

OK = {"200": {"description": "ok", "content": {"application/json": {}}}}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(app()) as served:
        yield served


async def test_a_services_prefix_over_a_plugins_leaves_out_that_service_alone(origin: str) -> None:
    services = [
        {"name": "good", "document": f"{origin}/openapi.json"},
        {"name": "wide", "document": f"{origin}/openapi.json", "prefix": "documcp://ssgs/x/", "tool_prefix": "wide_"},
    ]
    plugins = {"openapi": openapi_plugin, "ssg_catalog": ssg_catalog}
    composed = compose(plugins, {"openapi": {"services": services}}, strict=False)
    assert {r.name: r.status for r in composed.records} == {"openapi": "loaded", "ssg_catalog": "loaded"}
    assert not composed.failures, composed.failures
    assert {d.provider.name for d in composed.assembly.declared} == {
        "openapi-good",
        "openapi-good-tools",
        "ssg-catalog",
    }
    [line] = composed.assembly.left_out
    said = str(line)
    assert line.value == "documcp://ssgs/x/" and set(line.plugins) == {"openapi", "ssg_catalog"}
    assert (
        "prefix-overlap: [plugins.openapi] services \"wide\" prefix: 'documcp://ssgs/x/' overlaps 'documcp://ssgs/' "
        "of provider 'ssg-catalog' (plugin ssg_catalog)" in said
    )
    assert 'fix: give it a prefix of its own in [plugins.openapi] services "wide" prefix' in said
    async with composed.running(), connect(composed) as client:
        item = await client.read_resource("openapi://good/items/1")
        assert json.loads(item.contents[0].text)["name"] == "hammer"  # from the loopback service
        assert (await client.read_resource("documcp://ssgs/available")).contents
        tools = {t.name for t in (await client.list_tools()).tools}
        assert "good_createItem" in tools and "wide_createItem" not in tools
        with pytest.raises(MCPError):
            await client.read_resource("documcp://ssgs/x/items/1")


def _names_document(tmp_path: Path) -> str:
    """POST /a/b and POST /a_b without operationIds (both become tool ``names_post__a_b``), and
    GET /g/{x} and /g/{y} (one URI shape)."""

    def path(name: str) -> dict[str, Any]:
        return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}

    document = {
        "openapi": "3.0.3",
        "info": {"title": "N", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            "/a/b": {"post": {"responses": OK}},
            "/a_b": {"post": {"responses": OK}},
            "/g/{x}": {"get": {"operationId": "g1", "parameters": [path("x")], "responses": OK}},
            "/g/{y}": {"get": {"operationId": "g2", "parameters": [path("y")], "responses": OK}},
        },
    }
    (tmp_path / "n.json").write_text(json.dumps(document))
    return str(tmp_path / "n.json")


def test_two_operations_of_one_service_named_alike_are_told_what_parts_them(tmp_path: Path) -> None:
    service = {"name": "names", "document": _names_document(tmp_path)}
    composed = compose({"openapi": openapi_plugin}, {"openapi": {"services": [service]}}, strict=False)
    assert not composed.failures, composed.failures
    lines = {p.value: str(p) for p in composed.assembly.left_out}
    assert set(lines) == {"names_post__a_b", "openapi://names/g/{x}", "openapi://names/g/{y}"}
    for said in lines.values():
        assert "name prefix or namespace of its own" not in said  # it cannot part two names of one source
        assert 'leave one out with exclude_operations = ["<its operationId>"]' in said
        assert "an operation without an operationId is named <method>_<path>" in said
        assert '[plugins.openapi] services "names"' in said
    tool = lines["names_post__a_b"]  # each side named by where it came from
    assert "operationId='post_/a/b', path='/a/b'" in tool and "operationId='post_/a_b', path='/a_b'" in tool
    # the fix it names works: each pair served once one of it is left out
    fixed = {**service, "exclude_operations": ["post_/a/b", "g2"]}
    composed = compose({"openapi": openapi_plugin}, {"openapi": {"services": [fixed]}})
    assert not composed.assembly.left_out
    assert {e.declaration.name for e in composed.catalog.tools} == {"names_post__a_b"}
    assert {e.declaration.uri_template for e in composed.catalog.templates} == {"openapi://names/g/{x}"}
