"""Two configured entries of one name cost only themselves (tester nineteen, finding 5): two
``[[plugins.openapi.services]]``, two ``[[plugins.upstream.servers]]`` or two
``[[plugins.servicenow.instances]]`` named alike are both left out, with one ``left-out`` line
naming the entries and what to rename; the plugin's other entries and every other plugin serve.
Before, the plugin's settings were refused, and with them every entry.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prefork import upstream_script
from pydantic import BaseModel

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers import Tool, ToolProvider, ToolResult, hookimpl
from mcp_providers._cli.report import warnings
from mcp_providers._serve.transport.status import facts
from mcp_providers.plugins import servicenow, upstream
from mcp_providers.plugins.openapi.settings import OpenAPISettings
from mcp_providers.plugins.servicenow.settings import ServiceNowSettings
from mcp_providers.plugins.upstream.settings import UpstreamSettings
from mcp_providers.testing import compose

TINY = str(Path(__file__).with_name("tiny_stdio_upstream.py"))
SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "p", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9/v1"}],
    "paths": {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}},
}
SN = {"url": "https://dev12345.service-now.com", "auth": {"type": "basic", "username": "u", "password_env": "SN_PW"}}


def _one_line(composed: Any, plugin: str, name: str, table: str, entries: str) -> str:
    """The one ``left-out`` line, checked as ``check`` prints it and ``/status`` lists it."""
    assert {r.name: r.status for r in composed.records} == {plugin: "loaded"}
    assert not composed.failures, composed.failures
    [line] = composed.assembly.left_out
    said = str(line)
    assert (line.plugins, line.rule, line.value) == ((plugin,), "left-out", name)
    both = "both" if " and " in entries and "," not in entries else "all"
    assert f"duplicate-name: [plugins.{plugin}] {table} entries {entries} are {both} named {name!r}" in said
    assert "neither is served" in said or "none is served" in said
    assert f"fix: give each its own name in [plugins.{plugin}] {table} (entries {entries}), or remove" in said
    assert f"warning: {said}" in warnings(composed)[1]
    assert said in facts(composed, None, None)["left_out"]
    return said


def test_two_openapi_services_of_one_name_leave_out_only_those(tmp_path: Path) -> None:
    document = tmp_path / "spec.json"
    document.write_text(json.dumps(SPEC))
    services = [
        {"name": "pets", "document": str(document)},
        {"name": "good", "document": str(document)},
        {"name": "pets", "document": str(document), "prefix": "pets2://"},
    ]
    composed = compose({"openapi": openapi_plugin}, {"openapi": {"services": services}}, strict=False)
    _one_line(composed, "openapi", "pets", "services", "1 and 3")
    served = {d.provider.name for d in composed.assembly.declared}
    assert served == {"openapi-good", "openapi-good-tools"}
    assert {e.declaration.uri for e in composed.catalog.resources} == {"openapi://good/pets"}


def test_two_upstream_servers_of_one_name_leave_out_only_those() -> None:
    def server(name: str, say: str) -> dict[str, Any]:
        return {"name": name, **upstream_script(TINY, say), "prefixes": [f"{say}://"]}  # forked: the SDK is loaded

    servers = [server("a", "one"), server("a", "two"), server("good", "good"), server("a", "three")]
    composed = compose({"upstream": upstream}, {"upstream": {"servers": servers}}, strict=False)
    _one_line(composed, "upstream", "a", "servers", "1, 2 and 4")
    served = {d.provider.name for d in composed.assembly.declared}
    assert served == {"upstream-good", "upstream-good-tools", "upstream-good-prompts"}


def test_two_servicenow_instances_of_one_name_leave_out_only_those() -> None:
    instances = [{"name": "dev", **SN}, {"name": "prod", **SN}, {"name": "dev", **SN}]
    composed = compose({"servicenow": servicenow}, {"servicenow": {"instances": instances}}, strict=False)
    _one_line(composed, "servicenow", "dev", "instances", "1 and 3")
    [record] = composed.records
    assert record.settings.names == ["prod"]


@pytest.mark.parametrize(
    ("model", "plugin", "table", "entry"),
    [
        (OpenAPISettings, "openapi", "services", {"document": "spec.json"}),
        (UpstreamSettings, "upstream", "servers", {"command": "x", "prefixes": ["x://"]}),
        (ServiceNowSettings, "servicenow", "instances", SN),
    ],
    ids=["openapi", "upstream", "servicenow"],
)
def test_settings_keep_each_name_once_and_say_which_entries_went(
    model: Any, plugin: str, table: str, entry: dict[str, Any]
) -> None:
    names = ["a", "b", "a", "c", "b", "a"]
    settings = model.model_validate({table: [{**entry, "name": n} for n in names]})
    assert [e.name for e in getattr(settings, table)] == ["c"]
    said = [(item.value, item.message) for item in settings.left_out]
    lead, never = f"duplicate-name: [plugins.{plugin}] {table} entries", "the server never picks a winner"
    assert said == [
        ("a", f"{lead} 1, 3 and 6 are all named 'a'; {never}: none is served"),
        ("b", f"{lead} 2 and 5 are both named 'b'; {never}: neither is served"),
    ]
    distinct = model.model_validate({table: [{**entry, "name": n} for n in ("a", "b")]})
    assert [e.name for e in getattr(distinct, table)] == ["a", "b"] and not distinct.left_out


class _Said(BaseModel):
    """Settings whose ``left_out`` holds one well-formed item and one that is not."""

    left_out: list[Any] = [SimpleNamespace(value="v", message="m", fix="f"), SimpleNamespace(value=1, message="m")]


class _Clashing:
    """A plugin with :class:`_Said` settings and the tool ``t`` (which ``clash`` declares too)."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    @hookimpl
    def settings_model(self) -> type[BaseModel]:
        return _Said

    @hookimpl
    def register_tool_providers(self) -> list[ToolProvider]:
        return [_OneTool(self.tool)]


class _OneTool(ToolProvider):
    def __init__(self, tool: str) -> None:
        self.name, self.tool = f"{tool}-tools", tool

    def tools(self) -> list[Tool]:
        return [Tool(name=self.tool, description="d", input_model=BaseModel)]

    async def call(self, call: Any) -> ToolResult:
        return ToolResult(text="x")


def test_settings_left_out_items_are_said_only_when_well_formed_and_their_plugin_served() -> None:
    served = compose({"p": _Clashing("t")}, {"p": {}}, strict=False)
    assert [str(p) for p in served.assembly.left_out] == ["p: left-out: 'v': m; fix: f"]
    refused = compose({"p": _Clashing("t"), "q": _Clashing("t")}, {"p": {}, "q": {}}, strict=False)
    assert {r.name: r.status for r in refused.records} == {"p": "rejected", "q": "rejected"}
    assert not refused.assembly.left_out  # a refused plugin's settings leave nothing out: it serves nothing
