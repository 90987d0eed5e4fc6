"""Tester twenty-one (round 16): a policy rule judges a read's URI as sent, the service reads the
value behind it. A read's template value is checked against its parameter's schema, as a tool's
argument is, and taken in one spelling only (``1``, not ``01``, ``+1`` or ``1.0``), so a deny of
``openapi://sp/loop/1`` is not read past as ``/loop/01``. F6: a parameter whose name cannot be a
URI template variable (``api-version``, ``user-id``) is served under a legal variable name and
sent under its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from mcp import MCPError
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.models import ORIGIN_KEY
from mcp_providers.plugins import policy
from mcp_providers.plugins.openapi import loading
from mcp_providers.plugins.openapi.document import Operation, Parameter
from mcp_providers.plugins.openapi.providers import _enums
from mcp_providers.plugins.openapi.settings import OpenAPISettings
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

HITS: list[str] = []
"""Every request the service received: its raw path and query."""

OK = {"200": {"description": "ok", "content": {"application/json": {}}}}
UUID = "3f2b9c1e-8d4a-4b7e-9f10-2a6c5d7e8b90"
OTHER = "0f2b9c1e-8d4a-4b7e-9f10-2a6c5d7e8b90"


def _get(op_id: str, *parameters: dict[str, Any]) -> dict[str, Any]:
    return {"get": {"operationId": op_id, "parameters": list(parameters), "responses": OK}}


def _path(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _query(name: str, schema: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": schema, **more}


def _document() -> dict[str, Any]:
    paths = {
        "/loop/{n}": _get("loop", _path("n", {"type": "integer", "minimum": 0})),
        "/flag/{on}": _get("flag", _path("on", {"type": "boolean"})),
        "/price/{p}": _get("price", _path("p", {"type": "number"})),
        "/status/{s}": _get("status", _path("s", {"type": "string", "enum": ["available", "sold"]})),
        "/kind/{k}": _get("kind", _path("k", {"$ref": "#/components/schemas/Kind"})),
        "/things/{id}": _get("thing", _path("id", {"type": "string", "format": "uuid"})),
        "/day/{d}": _get("day", _path("d", {"type": "string", "format": "date"})),
        "/at/{t}": _get("at", _path("t", {"type": "string", "format": "date-time"})),
        "/name/{s}": _get("name", _path("s", {"type": "string"})),
        "/ids/{ids}": _get("ids", _path("ids", {"type": "array", "items": {"type": "integer"}})),
        "/search": _get(
            "search",
            _query("limit", {"type": "integer", "maximum": 50}),
            _query("tag", {"type": "array", "items": {"type": "integer"}, "maxItems": 3}),
            _query("q", {"type": "string"}),
        ),
        "/users/{user-id}": _get(
            "getUser", _path("user-id", {"type": "string"}), _query("api-version", {"type": "string"}, required=True)
        ),
        "/notes/{n}/{id}": {
            "delete": {
                "operationId": "deleteNote",
                "parameters": [_path("n", {"type": "integer"}), _path("id", {"type": "string", "format": "uuid"})],
                "responses": OK,
            }
        },
        "/guarded/{s}": _get("guarded", _path("s", {"type": "string", "pattern": "^(?!admin).*$"})),
        "/clash": _get("clash", _query("a-b", {"type": "string"}), _query("a_b", {"type": "string"})),
        "/dash": _get("dash", _query("-", {"type": "string"})),
        # a format below anyOf/allOf: FastAPI's Optional[UUID], OpenAPI 3.0's allOf: [$ref] (tester twenty-three F1)
        "/any/{id}": _get("anyId", _path("id", {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]})),
        "/all/{id}": _get("allId", _path("id", {"allOf": [{"$ref": "#/components/schemas/Id"}]})),
        "/either/{v}": _get(
            "either",
            _path("v", {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "string", "format": "date"}]}),
        ),
        "/optat": _get("optat", _query("t", {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]})),
    }
    components = {
        "schemas": {"Kind": {"type": "integer", "enum": [1, 2, 3]}, "Id": {"type": "string", "format": "uuid"}}
    }
    return {"openapi": "3.1.0", "info": {"title": "Spell", "version": "1"}, "paths": paths, "components": components}


def _upstream() -> FastAPI:
    api = FastAPI(openapi_url=None)

    @api.get("/openapi.json")
    def document() -> dict[str, Any]:
        return _document()

    @api.api_route("/{rest:path}", methods=["GET", "DELETE"])
    def echo(rest: str, request: Request) -> Response:
        query = request.scope["query_string"].decode()
        HITS.append(request.scope["raw_path"].decode() + (f"?{query}" if query else ""))
        return Response(json.dumps({"ok": True}), media_type="application/json")

    return api


RULES = [
    {"effect": "deny", "actions": ["read"], "targets": ["openapi://sp/loop/1", f"openapi://sp/things/{UUID}"]},
    {"effect": "deny", "actions": ["call"], "targets": [f"openapi://sp/notes/1/{UUID}"]},
]


@pytest.fixture(scope="module")
def spell() -> Iterator[Any]:
    with serving(_upstream()) as origin:
        service = {"name": "sp", "document": f"{origin}/openapi.json", "base_url": f"{origin}/v1", "tool_prefix": ""}
        settings = {"openapi": {"services": [service]}, "policy": {"rules": RULES}}
        yield compose({"openapi": openapi_plugin, "policy": policy}, settings)


async def _refused(app: Any, uri: str) -> tuple[int, str]:
    before = len(HITS)
    async with connect(app) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
    assert HITS[before:] == [], f"{uri} was sent"
    return refused.value.error.code, refused.value.error.message


async def _sent(app: Any, uri: str) -> str:
    before = len(HITS)
    async with connect(app) as client:
        await client.read_resource(uri)
    [hit] = HITS[before:]
    return hit


# 1. Another spelling of a value a rule may name is refused, naming the one to use


@pytest.mark.parametrize(
    ("uri", "use"),
    [
        ("openapi://sp/loop/01", "1"),
        ("openapi://sp/loop/+1", "1"),
        ("openapi://sp/loop/1.0", "1"),
        ("openapi://sp/loop/1e0", "1"),
        ("openapi://sp/loop/-0", "0"),
        ("openapi://sp/loop/1_000", "1000"),
        ("openapi://sp/flag/True", "true"),
        ("openapi://sp/flag/1", "true"),
        ("openapi://sp/flag/no", "false"),
        ("openapi://sp/price/1.50", "1.5"),
        ("openapi://sp/price/2.0", "2"),
        ("openapi://sp/status/Available", "available"),
        ("openapi://sp/kind/02", "2"),
        (f"openapi://sp/things/{OTHER.upper()}", OTHER),
        (f"openapi://sp/things/{OTHER.replace('-', '')}", OTHER),
        (f"openapi://sp/things/%7B{OTHER}%7D", OTHER),
        (f"openapi://sp/things/urn:uuid:{OTHER}", OTHER),
        ("openapi://sp/day/20240105", "2024-01-05"),
        ("openapi://sp/at/2024-01-05T10:00:00%2B00:00", "2024-01-05T10:00:00Z"),
        ("openapi://sp/at/2024-01-05t10:00:00z", "2024-01-05T10:00:00Z"),
        ("openapi://sp/at/2024-01-05T11:00:00.500%2B01:00", "2024-01-05T10:00:00.5Z"),
        ("openapi://sp/ids/1%2C02", "2"),
        ("openapi://sp/search?limit=010", "10"),
        ("openapi://sp/search?tag=1&tag=%2B2", "2"),
        (f"openapi://sp/any/{OTHER.replace('-', '')}", OTHER),
        (f"openapi://sp/any/%7B{OTHER}%7D", OTHER),
        (f"openapi://sp/all/{OTHER.upper()}", OTHER),
        (f"openapi://sp/either/{OTHER.replace('-', '')}", OTHER),
        ("openapi://sp/either/20240105", "2024-01-05"),
        ("openapi://sp/optat?t=2024-01-05T11:00:00%2B01:00", "2024-01-05T10:00:00Z"),
        ("openapi://sp/optat?t=2024-01-05T10:00:00.000Z", "2024-01-05T10:00:00Z"),
        ("openapi://sp/loop/1e%2B16", "10000000000000000"),  # one integer, two texts (tester twenty-three F6)
        ("openapi://sp/loop/1e16", "10000000000000000"),
    ],
)
async def test_another_spelling_of_a_typed_value_is_refused_naming_the_one_to_use(
    spell: Any, uri: str, use: str
) -> None:
    code, message = await _refused(spell, uri)
    assert code == -32602, message
    assert f"is another spelling of {use!r}: use {use!r}" in message, message


async def test_a_deny_of_one_spelling_is_not_read_past_by_another(spell: Any) -> None:
    code, message = await _refused(spell, "openapi://sp/loop/1")
    assert code == -32003, message
    for uri in ("openapi://sp/loop/01", "openapi://sp/loop/%2B1", "openapi://sp/loop/1.0"):
        code, message = await _refused(spell, uri)
        assert code == -32602 and "use '1'" in message, message
    code, message = await _refused(spell, f"openapi://sp/things/{UUID}")
    assert code == -32003, message
    for uri in (f"openapi://sp/things/{UUID.replace('-', '')}", f"openapi://sp/things/%7B{UUID}%7D"):
        code, message = await _refused(spell, uri)
        assert code == -32602 and f"use {UUID!r}" in message, message


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"n": 1.0, "id": UUID}, None),  # a JSON number has one spelling in the path: 1
        ({"n": 1, "id": UUID.replace("-", "")}, f"is another spelling of {UUID!r}: use {UUID!r}"),
        ({"n": 1, "id": f"{{{UUID}}}"}, f"use {UUID!r}"),
        ({"n": 1, "id": "nope"}, "is not a UUID"),
    ],
)
async def test_a_tool_path_value_has_one_spelling_so_a_call_deny_holds(
    spell: Any, arguments: dict[str, Any], said: str | None
) -> None:
    before = len(HITS)
    async with connect(spell) as client:
        if said is None:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("deleteNote", arguments)
            assert refused.value.error.code == -32003, refused.value.error.message
        else:
            called = await client.call_tool("deleteNote", arguments)
            assert called.is_error and said in called.content[0].text, called.content[0].text
    assert HITS[before:] == []


async def test_a_tool_path_value_in_its_one_spelling_is_sent(spell: Any) -> None:
    before = len(HITS)
    async with connect(spell) as client:
        called = await client.call_tool("deleteNote", {"n": 2.0, "id": OTHER})
    assert not called.is_error, called.content
    assert HITS[before:] == [f"/v1/notes/2/{OTHER}"]


# 2. A value the parameter's schema refuses is not sent


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("openapi://sp/loop/-1", "less than the minimum of 0"),
        ("openapi://sp/loop/abc", "'abc' is not of type 'integer'"),
        ("openapi://sp/flag/maybe", "is not of type 'boolean'"),
        ("openapi://sp/status/lost", "is not one of ['available', 'sold']"),
        ("openapi://sp/kind/7", "is not one of [1, 2, 3]"),
        ("openapi://sp/things/not-a-uuid", "is not a UUID"),
        ("openapi://sp/day/2024-02-30", "is not a date"),
        ("openapi://sp/at/2024-01-05T10:00:00", "has no time zone offset"),
        ("openapi://sp/at/yesterday", "is not a date-time"),
        ("openapi://sp/ids/1%2Cx", "is not of type 'integer'"),
        ("openapi://sp/search?limit=51", "greater than the maximum of 50"),
        ("openapi://sp/price/NaN", "is not of type 'number'"),
        ("openapi://sp/search?tag=1&tag=2&tag=3&tag=4", "is too long"),
    ],
)
async def test_a_value_its_schema_refuses_is_not_sent(spell: Any, uri: str, said: str) -> None:
    code, message = await _refused(spell, uri)
    assert code == -32602, message
    assert said in message, message


# 3. The one spelling is sent as it was read


@pytest.mark.parametrize(
    ("uri", "sent"),
    [
        ("openapi://sp/loop/0", "/v1/loop/0"),
        ("openapi://sp/loop/12", "/v1/loop/12"),
        ("openapi://sp/flag/false", "/v1/flag/false"),
        ("openapi://sp/price/1.5", "/v1/price/1.5"),
        ("openapi://sp/price/-3", "/v1/price/-3"),
        ("openapi://sp/status/sold", "/v1/status/sold"),
        ("openapi://sp/kind/3", "/v1/kind/3"),
        (f"openapi://sp/things/{OTHER}", f"/v1/things/{OTHER}"),
        ("openapi://sp/day/2024-01-05", "/v1/day/2024-01-05"),
        ("openapi://sp/at/2024-01-05T10:00:00.5Z", "/v1/at/2024-01-05T10%3A00%3A00.5Z"),
        ("openapi://sp/name/01", "/v1/name/01"),
        ("openapi://sp/ids/1%2C2", "/v1/ids/1%2C2"),
        ("openapi://sp/search?limit=10&tag=1&tag=2&q=007", "/v1/search?limit=10&tag=1&tag=2&q=007"),
        (f"openapi://sp/any/{OTHER}", f"/v1/any/{OTHER}"),
        (f"openapi://sp/all/{OTHER}", f"/v1/all/{OTHER}"),
        ("openapi://sp/either/2024-01-05", "/v1/either/2024-01-05"),
        ("openapi://sp/optat?t=2024-01-05T10:00:00Z", "/v1/optat?t=2024-01-05T10%3A00%3A00Z"),
        ("openapi://sp/loop/10000000000000000", "/v1/loop/10000000000000000"),
    ],
)
async def test_the_canonical_spelling_is_sent(spell: Any, uri: str, sent: str) -> None:
    assert await _sent(spell, uri) == sent


# 4. F6: parameter names that cannot be template variables get ones that can


async def test_a_parameter_named_outside_the_variable_grammar_is_served_under_a_legal_variable(spell: Any) -> None:
    async with connect(spell) as client:
        listed = {t.uri_template: t for t in (await client.list_resource_templates()).resource_templates}
    template = "openapi://sp/users/{user_id}{?api_version}"
    assert template in listed, sorted(listed)
    origin = (listed[template].meta or {})[ORIGIN_KEY]
    assert origin["variables"] == "user_id as user-id, api_version as api-version", origin
    assert "api_version" in (listed[template].description or "")
    hit = await _sent(spell, "openapi://sp/users/u1?api_version=2024-01-01")
    assert hit == "/v1/users/u1?api-version=2024-01-01"


async def test_a_read_naming_the_original_parameter_is_refused_naming_the_variable(spell: Any) -> None:
    code, message = await _refused(spell, "openapi://sp/users/u1?api-version=2024-01-01")
    assert code == -32602 and "api_version" in message, message
    code, message = await _refused(spell, "openapi://sp/users/u1")
    assert code == -32602 and "api_version=" in message, message


def test_two_parameters_that_would_share_a_variable_leave_their_operation_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "spell.json"
    path.write_text(json.dumps(_document()))
    table = OpenAPISettings.model_validate({"services": [{"name": "sp", "document": str(path)}]})
    with caplog.at_level("WARNING", logger="mcp_providers.plugins.openapi"):
        [(_service, operations)] = loading.services(table)
    served = {op.operation_id for op in operations}
    assert "getUser" in served and "clash" not in served and "dash" not in served
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "parameters 'a-b' and 'a_b' would both be the template variable 'a_b'" in logged, logged
    assert "parameter(s) '-' cannot be URI template variables (no letter or digit)" in logged, logged


async def test_a_read_whose_parameter_schema_cannot_be_checked_is_left_out(spell: Any) -> None:
    # As a tool's would be: a pattern not run in linear time (look-around) checks nothing safely.
    async with connect(spell) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert "openapi://sp/loop/{n}" in templates
    assert not any("guarded" in t for t in templates), templates
    [provider] = [d.provider for d in spell.assembly.declared if d.provider.name == "openapi-sp"]
    [left] = [entry for entry in provider.left_out if entry.value == "guarded"]
    assert "is left out: its schema" in left.message, left.message


def test_a_renamed_parameters_completions_are_offered_under_its_variable() -> None:
    choice = Parameter("api-version", "query", True, {"type": "string", "enum": ["2024-01-01", "2025-01-01"]})
    op = Operation("withApiVersion", "GET", "/q", parameters=(choice,))
    assert _enums(op) == {"api_version": ("2024-01-01", "2025-01-01")}


@pytest.mark.parametrize(
    "schema",
    [
        {
            "$ref": "#/$defs/Kind",
            "$defs": {"Kind": {"type": "string", "enum": ["public", "private"]}},
        },  # FastAPI's Enum
        {"allOf": [{"$ref": "#/$defs/Kind"}], "$defs": {"Kind": {"enum": ["public", "private"]}}},  # 3.0's allOf
        {"anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}], "$defs": {"Kind": {"enum": ["public", "private"]}}},
        {"type": "array", "items": {"$ref": "#/$defs/Kind"}, "$defs": {"Kind": {"enum": ["public", "private"]}}},
    ],
)
def test_an_enum_behind_a_ref_or_a_combination_is_offered_to_completion(schema: dict[str, Any]) -> None:
    # tester twenty-five f7: FastAPI writes every Enum parameter as a $ref
    op = Operation("getDoc", "GET", "/docs/{kind}", parameters=(Parameter("kind", "path", True, schema),))
    assert _enums(op) == {"kind": ("public", "private")}


def test_an_alternative_without_an_enum_offers_no_values() -> None:
    schema = {"anyOf": [{"enum": ["a", "b"]}, {"type": "string"}]}  # any string is valid: no closed list
    op = Operation("getDoc", "GET", "/docs/{kind}", parameters=(Parameter("kind", "path", True, schema),))
    assert _enums(op) == {}
