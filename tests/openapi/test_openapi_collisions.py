"""An OpenAPI document's operations are listed declarations (issue 40): one whose tool name a
plugin's own tool has, two GET paths of one shape, a path that makes no servable template, each
costs only those operations; the rest of the service, the other services and the other plugin serve.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.plugins.documcp import workflows
from mcp_providers.testing import compose

OK = {"200": {"description": "ok", "content": {"application/json": {}}}}


def _path(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "T", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9/api"}],
    "paths": {
        "/x/{a}": {"get": {"operationId": "xa", "parameters": [_path("a")], "responses": OK}},
        "/x/{b}": {"get": {"operationId": "xb", "parameters": [_path("b")], "responses": OK}},
        "/ab/{a}{b}": {"get": {"operationId": "adj", "parameters": [_path("a"), _path("b")], "responses": OK}},
        "/fine/{id}": {"get": {"operationId": "fine", "parameters": [_path("id")], "responses": OK}},
        "/rec": {"post": {"operationId": "recommend_ssg", "responses": OK}},
        "/other": {"post": {"operationId": "other", "responses": OK}},
    },
}


def test_colliding_or_unservable_operations_are_left_out_alone(tmp_path: Path) -> None:
    document = tmp_path / "t.json"
    document.write_text(json.dumps(DOCUMENT))
    services = [{"name": "s", "document": str(document), "tool_prefix": ""}]
    composed = compose(
        {"openapi": openapi_plugin, "workflows": workflows}, {"openapi": {"services": services}}, strict=False
    )
    assert {r.name: r.status for r in composed.records} == {"openapi": "loaded", "workflows": "loaded"}
    assert not composed.failures, composed.failures
    tools = {(e.provider.name, e.declaration.name) for e in composed.catalog.tools}
    assert ("documcp-tools", "recommend_ssg") in tools and ("openapi-s-tools", "other") in tools
    assert ("openapi-s-tools", "recommend_ssg") not in tools
    templates = {e.declaration.uri_template for e in composed.catalog.templates}
    assert "openapi://s/fine/{id}" in templates
    assert not templates & {"openapi://s/x/{a}", "openapi://s/x/{b}", "openapi://s/ab/{a}{b}"}
    said = {(p.value, p.message.split(":")[0]) for p in composed.assembly.left_out}
    assert said == {
        ("recommend_ssg", "duplicate-tool"),
        ("openapi://s/x/{a}", "template-unreachable"),
        ("openapi://s/x/{b}", "template-unreachable"),
        ("openapi://s/ab/{a}{b}", "template-invalid"),
    }
