"""Findings of a fresh tester (round 9): a path template whose literal holds '#', '?' or another
character that changes where the URL ends or what it names; a path deny that did not cover the
path's tools; an exploded object query parameter that set other parameters; a delimited array item
holding its delimiter; an unused looping ``$ref`` that made a whole service serve nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from mcp import MCPError
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers.errors import InvalidParams
from mcp_providers.plugins import policy
from mcp_providers.plugins.openapi import loading
from mcp_providers.plugins.openapi.client import same_path
from mcp_providers.plugins.openapi.document import Operation, Parameter, load
from mcp_providers.plugins.openapi.query import encode
from mcp_providers.plugins.openapi.settings import OpenAPISettings
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

HITS: list[dict[str, str]] = []
"""Every request the service received: method, raw path and raw query string."""

OK = {"200": {"description": "ok", "content": {"application/json": {}}}}
TEXT = {"type": "string"}


def _path(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "in": "path", "required": True, "schema": TEXT} for n in names]


def _q(name: str, schema: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": schema, **more}


STRINGS = {"type": "array", "items": TEXT}
MEMBERS = {"type": "object", "additionalProperties": TEXT}
BODY = {"content": {"application/json": {"schema": {"type": "object"}}}}

ODD_PATHS = {  # a literal that changes where the URL ends or what it names -> (its operationId, what is said)
    "/files/{a}#/{b}": ("getHash", "'#'"),
    "/files/{a}?v=1": ("getQuery", "'?'"),
    "/sp ace/{a}": ("getSpace", "whitespace"),
    "/tab\t/{a}": ("getTab", "a control character"),
    "/pct%zz/{a}": ("getPercent", "'%' not followed by two hex digits"),
    "/up/../admin/{a}": ("getDots", "a '.' or '..' segment"),
    "/back\\slash/{a}": ("getBackslash", "'\\\\'"),
    "/wide\u3000/{a}": ("getWide", "whitespace"),
    "/enc/%2e%2E/admin/{a}": ("getEncodedDots", "a '.' or '..' segment (or its escape)"),
    "/enc/a%2Fb/{a}": ("getEncodedSlash", "an escaped '/' or '\\'"),
    "/enc/a%5cb/{a}": ("getEncodedBackslash", "an escaped '/' or '\\'"),
    "/enc/%0A/{a}": ("getEncodedNewline", "an escaped control character"),
    "/enc/%2541/{a}": ("getDoubled", "a double encoding"),
}


def _document() -> dict[str, Any]:
    doc = {"get": {"operationId": "getDoc", "parameters": _path("section", "name"), "responses": OK}}
    doc["put"] = {"operationId": "putDoc", "parameters": _path("section", "name"), "requestBody": BODY,
                  "responses": OK}  # fmt: skip
    doc["delete"] = {"operationId": "deleteDoc", "parameters": _path("section", "name"), "responses": OK}
    paths: dict[str, Any] = {
        "/docs/{section}/{name}": doc,
        "/notes/{id}": {"post": {"operationId": "addNote", "parameters": _path("id"), "responses": OK}},
        "/files/{a}": {"get": {"operationId": "getFile", "parameters": _path("a"), "responses": OK}},
        "/s": {
            "post": {
                "operationId": "styles",
                "responses": OK,
                "parameters": [
                    _q("pipe", STRINGS, style="pipeDelimited", explode=False),
                    _q("space", STRINGS, style="spaceDelimited", explode=False),
                    _q("formx", STRINGS),
                    _q("fobj", MEMBERS),
                    _q("fobj2", MEMBERS),
                    _q("deep", MEMBERS, style="deepObject", explode=True),
                ],
            }
        },
    }
    for path, (op_id, _said) in ODD_PATHS.items():
        names = [part[1:-1] for part in path.replace("#", "/").replace("?", "/").split("/") if part.startswith("{")]
        paths[path] = {"get": {"operationId": op_id, "parameters": _path(*names), "responses": OK}}
    return {"openapi": "3.1.0", "info": {"title": "Echo", "version": "1"}, "paths": paths}


def _upstream() -> FastAPI:
    api = FastAPI(openapi_url=None)

    @api.get("/openapi.json")
    def document() -> dict[str, Any]:
        return _document()

    @api.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "DELETE"])
    def echo(rest: str, request: Request) -> Response:
        query = request.scope["query_string"].decode()
        HITS.append({"method": request.method, "raw": request.scope["raw_path"].decode(), "query": query})
        return Response(json.dumps({"query": query}), media_type="application/json")

    return api


RULES = [
    {
        "effect": "deny",
        "targets": ["openapi://echo/docs/private/*", "openapi://echo/notes/secret", "openapi://echo/files/private"],
    },
    {"effect": "deny", "actions": ["read", "expand"], "targets": ["openapi://echo/docs/readonly/*"]},
]


@pytest.fixture(scope="module")
def echo() -> Iterator[Any]:
    with serving(_upstream()) as origin:
        service = {"name": "echo", "document": f"{origin}/openapi.json", "base_url": f"{origin}/v1", "tool_prefix": ""}
        settings = {"openapi": {"services": [service]}, "policy": {"rules": RULES}}
        yield compose({"openapi": openapi_plugin, "policy": policy}, settings)


# F3. A path literal that changes where the URL ends or what it names leaves its operation out


def test_a_path_literal_that_changes_where_the_url_ends_leaves_that_operation_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(_document()))
    table = OpenAPISettings.model_validate({"services": [{"name": "odd", "document": str(path)}]})
    with caplog.at_level("WARNING", logger="mcp_providers.plugins.openapi"):
        [(_service, operations)] = loading.services(table)
    served = {op.operation_id for op in operations}
    assert {"getFile", "getDoc", "putDoc", "addNote", "styles"} <= served
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for literal, (op_id, said) in ODD_PATHS.items():
        assert op_id not in served, literal
        line = next(line for line in logged.splitlines() if f"{op_id} (GET " in line)
        assert "left out: its path" in line and said in line, line


async def test_a_denied_path_is_not_read_through_a_fragment_or_query_in_a_template(echo: Any) -> None:
    before = len(HITS)
    async with connect(echo) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert "openapi://echo/files/{a}" in templates
        assert not any("#" in t or "?v=1" in t for t in templates), templates
        for uri in ("openapi://echo/files/private#/x", "openapi://echo/files/private"):
            with pytest.raises(MCPError):
                await client.read_resource(uri)
    assert HITS[before:] == []


def test_the_uri_authorized_and_the_url_requested_differ_by_a_fragment_or_a_query() -> None:
    assert same_path("openapi://svc/files/private", "openapi://svc/", "/v1/files/private", "/v1")
    assert not same_path("openapi://svc/files/private#/x", "openapi://svc/", "/v1/files/private", "/v1")
    assert not same_path("openapi://svc/files/a%3Fv=1", "openapi://svc/", "/v1/files/a?v=1", "/v1")  # decoded alike
    assert not same_path("openapi://svc/files/a%23x", "openapi://svc/", "/v1/files/a#x", "/v1")
    assert not same_path("openapi://svc/files/private%23/x", "openapi://svc/", "/v1/files/private", "/v1")
    assert not same_path("openapi://svc/files/private", "openapi://svc/", "/v1/files/private?v=1", "/v1")
    assert not same_path("openapi://svc/files/private", "openapi://svc/", "/v1/files/private#x", "/v1")


async def test_a_path_holding_a_query_is_refused_when_the_request_is_built(echo: Any) -> None:
    # An operation made by hand, as no document can now serve it: the second line of defence.
    [service] = [d.provider.service for d in echo.assembly.declared if d.provider.name == "openapi-echo"]
    op = Operation("odd", "GET", "/files/{a}?v=1", parameters=(Parameter("a", "path", True, TEXT),))
    async with service.opened():
        with pytest.raises(InvalidParams, match="does not name the path requested"):
            await service.send(op, "/files/private?v=1", query={}, gate_uri="openapi://echo/files/private")


# F6. A path deny covers that path's tools


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("putDoc", {"section": "private", "name": "x", "body": {}}),
        ("deleteDoc", {"section": "private", "name": "x"}),
        ("putDoc", {"section": "PRIVATE", "name": "x", "body": {}}),  # the policy's deny readings hold too
        ("addNote", {"id": "secret"}),  # a path no GET template serves
    ],
)
async def test_a_path_deny_covers_the_tools_of_that_path_and_nothing_is_sent(
    echo: Any, tool: str, arguments: dict[str, Any]
) -> None:
    before = len(HITS)
    async with connect(echo) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool(tool, arguments)
    assert refused.value.error.code == -32003, refused.value.error.message
    assert f"tool {tool} may not call openapi://echo/" in refused.value.error.message
    assert HITS[before:] == []


@pytest.mark.parametrize(
    ("tool", "arguments", "raw"),
    [
        ("putDoc", {"section": "public", "name": "x", "body": {}}, "/v1/docs/public/x"),
        ("putDoc", {"section": "readonly", "name": "x", "body": {}}, "/v1/docs/readonly/x"),  # a read-only deny
        ("addNote", {"id": "open"}, "/v1/notes/open"),
    ],
)
async def test_a_tool_of_an_allowed_path_is_sent(echo: Any, tool: str, arguments: dict[str, Any], raw: str) -> None:
    before = len(HITS)
    async with connect(echo) as client:
        called = await client.call_tool(tool, arguments)
    assert not called.is_error, called.content[0].text
    assert [h["raw"] for h in HITS[before:]] == [raw]


# F7. An exploded object sets no other parameter; a delimited item never holds its delimiter


STYLES = Operation(
    "styles",
    "POST",
    "/s",
    parameters=tuple(
        Parameter(*fields)
        for fields in [
            ("pipe", "query", False, STRINGS, None, "pipeDelimited", False),
            ("space", "query", False, STRINGS, None, "spaceDelimited", False),
            ("formx", "query", False, STRINGS, None, "form", True),
            ("fobj", "query", False, MEMBERS, None, "form", True),
            ("fobj2", "query", False, MEMBERS, None, "form", True),
            ("deep", "query", False, MEMBERS, None, "deepObject", True),
        ]
    ),
)


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"fobj": {"formx": "injected"}}, "'formx', the name of another parameter"),
        ({"fobj": {"pipe": "p"}, "pipe": ["q"]}, "'pipe', the name of another parameter"),
        ({"fobj": {"k": "1"}, "fobj2": {"k": "2"}}, "'k' a second time"),
        ({"fobj": {"": "1"}}, "an empty name"),
        ({"space": ["a b", "c"]}, "holds its delimiter ' '"),
        ({"pipe": ["a|b", "c"]}, "holds its delimiter '|'"),
        ({"deep": {"a][b": "x"}}, "may not be empty nor hold '[' or ']'"),
        ({"fobj": {"api_key": "mine"}}, "the name the service's API key is sent under"),
    ],
)
def test_a_query_value_that_would_read_as_another_is_refused(values: dict[str, Any], said: str) -> None:
    with pytest.raises(InvalidParams) as refused:
        encode(STYLES, values, reserved=("api_key",))
    assert said in refused.value.message, refused.value.message


def test_query_values_that_name_only_themselves_are_sent() -> None:
    assert encode(STYLES, {"fobj": {"x": "1"}, "fobj2": {"y": "2"}, "formx": ["a", "a"]}) == "x=1&y=2&formx=a&formx=a"
    assert encode(STYLES, {"space": ["a", "b"], "pipe": ["c,d", "e"]}) == "space=a%20b&pipe=c%2Cd|e"
    assert encode(STYLES, {"deep": {"k": "v w"}}, reserved=("api_key",)) == "deep[k]=v%20w"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"fobj": {"formx": "injected"}}, "the name of another parameter"),
        ({"fobj": {"pipe": "p"}, "pipe": ["q"]}, "the name of another parameter"),
        ({"space": ["a b", "c"]}, "holds its delimiter"),
    ],
)
async def test_a_tool_call_whose_query_would_read_as_another_is_refused_before_sending(
    echo: Any, arguments: dict[str, Any], said: str
) -> None:
    before = len(HITS)
    async with connect(echo) as client:
        called = await client.call_tool("styles", arguments)
    assert called.is_error and said in called.content[0].text, called.content[0].text
    assert HITS[before:] == []


# F8. Only what an operation uses is judged


def _cyclic(used: bool) -> dict[str, Any]:
    ref = {"$ref": "#/components/schemas/A"}
    get = {"operationId": "plain", "responses": OK}
    post = {"operationId": "loops", "responses": OK, "requestBody": {"content": {"application/json": {"schema": ref}}}}
    put = {"operationId": "paramLoops", "responses": OK, "parameters": [{"$ref": "#/components/parameters/P"}]}
    shared = {"parameters": [{"$ref": "#/components/parameters/Q"}], "delete": {"operationId": "sharedLoops",
              "responses": OK}}  # fmt: skip
    return {
        "openapi": "3.1.0",
        "info": {"title": "Cycle", "version": "1"},
        "paths": {
            "/plain": {"get": get, **({"post": post, "put": put} if used else {})},
            **({"/shared": shared} if used else {}),
        },
        "components": {
            "schemas": {"A": {"$ref": "#/components/schemas/B"}, "B": {"$ref": "#/components/schemas/A"}},
            "parameters": {"P": {"$ref": "#/components/parameters/Q"}, "Q": {"$ref": "#/components/parameters/P"}},
        },
    }


def test_an_unused_looping_reference_leaves_the_service_serving(tmp_path: Path) -> None:
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(_cyclic(used=False)))
    assert [op.operation_id for op in load(str(path)).operations] == ["plain"]


def test_a_used_looping_reference_leaves_out_only_its_operation(tmp_path: Path) -> None:
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(_cyclic(used=True)))
    ops = {op.operation_id: op for op in load(str(path)).operations}
    assert ops["plain"].unsupported is None
    for looped in ("loops", "paramLoops", "sharedLoops"):
        assert "references that lead to each other in a loop" in str(ops[looped].unsupported), looped


def _many(count: int) -> dict[str, Any]:
    get = {"parameters": _path("id"), "responses": {"200": {"description": "ok", "content": {"application/json":
           {"schema": {"type": "object"}}}}}}  # fmt: skip
    paths = {f"/p{i}/{{id}}": {"get": {"operationId": f"op{i}", **get}} for i in range(count)}
    return {"openapi": "3.1.0", "info": {"title": "Many", "version": "1"}, "paths": paths}


def test_a_document_over_max_operations_is_refused_before_it_is_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.json"
    path.write_text(json.dumps(_many(12)))
    validated: list[int] = []
    monkeypatch.setattr("mcp_providers.plugins.openapi.document.validate", lambda spec, _v: validated.append(1))
    table = OpenAPISettings.model_validate(
        {"services": [{"name": "many", "document": str(path), "max_operations": 11}]}
    )
    [(service, operations)] = loading.services(table)
    assert operations == [] and validated == []
    assert "has 12 operations, over max_operations = 11" in str(service.error) and "raise max_operations" in str(
        service.error
    )
    table = OpenAPISettings.model_validate(
        {"services": [{"name": "many", "document": str(path), "max_operations": 12}]}
    )
    [(service, operations)] = loading.services(table)
    assert len(operations) == 12 and validated == [1]
    assert (
        OpenAPISettings.model_validate({"services": [{"name": "m", "document": "x"}]}).services[0].max_operations
        == 10_000
    )


def test_a_31_document_is_validated_over_a_registry_crawled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``$dynamicRef`` of the 3.1 meta-schema crawled every known meta-schema again (14 ms, twice
    an operation: three quarters of a large 3.1 document's validation)."""
    from referencing import Registry

    from mcp_providers.plugins.openapi import validation

    validation._crawled("3.1")  # made once per process
    crawls, crawl = [], Registry.crawl
    monkeypatch.setattr(Registry, "crawl", lambda self: crawls.append(1) or crawl(self))
    validation.validate(_many(40), "3.1.0")
    assert len(crawls) <= 2  # not one per operation
    with pytest.raises(OpenAPIValidationError):  # the same checks
        validation.validate({**_many(2), "paths": {"/x": {"get": {"parameters": [{"name": "a"}]}}}}, "3.1.0")
