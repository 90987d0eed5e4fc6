"""Guards of the OpenAPI plugin found by a tester who had not read the code: settings naming what the
document does not have, parse and validation errors that quoted the document, redirects served as
success, query values (dot-dot, duplicates, unknown names, arrays by style), and a large document's
cost (linear: no test times it; see ``benchmarks/openapi_load.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx2
import pytest
from fastapi import FastAPI, Request, Response
from mcp import MCPError
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers._host.advisories import advisories
from mcp_providers.plugins.openapi import loading, schema, validation
from mcp_providers.plugins.openapi.client import ServiceError
from mcp_providers.plugins.openapi.document import DocumentError, load
from mcp_providers.plugins.openapi.settings import OpenAPISettings
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

SECRET = "sk-live-9f3b2c7d1e"


def _op(op_id: str, tags: list[str], **more: Any) -> dict[str, Any]:
    return {"operationId": op_id, "tags": tags, "responses": {"200": {"description": "ok"}}, **more}


DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Pets", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9"}],
    "tags": [{"name": "declared-only"}],
    "paths": {
        "/pets": {"get": _op("listPets", ["pets"]), "post": _op("addPet", ["pets"])},
        "/pets/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "delete": _op("deletePet", ["admin"]),
            "put": _op("updatePet", ["pets"]),
        },
    },
}


def _loaded(tmp_path: Path, **settings: Any) -> tuple[Any, list[Any]]:
    path = tmp_path / "pets.json"
    path.write_text(json.dumps(DOCUMENT))
    table = OpenAPISettings.model_validate({"services": [{"name": "pets", "document": str(path), **settings}]})
    [(service, operations)] = loading.services(table)
    return service, operations


# 1. Settings that name operations or tags the document does not have


@pytest.mark.parametrize(
    ("setting", "value", "unknown", "closest"),
    [
        ("exclude_operations", ["deletPet"], "deletPet", "deletePet"),
        ("exclude_operations", ["DeletePet"], "DeletePet", "deletePet"),
        ("exclude_tags", ["admn"], "admn", "admin"),
        ("effects", {"addPett": "destructive"}, "addPett", "addPet"),
        ("effects", {"updatepet": "additive"}, "updatepet", "updatePet"),
    ],
)
def test_an_unknown_name_in_an_exclusion_or_effects_refuses_the_service(
    tmp_path: Path, setting: str, value: Any, unknown: str, closest: str
) -> None:
    service, operations = _loaded(tmp_path, **{setting: value})
    assert operations == []  # fail closed: nothing is served, so nothing meant hidden is exposed
    assert service.error is not None
    assert f"{setting} names {unknown!r}" in service.error
    assert f'did you mean "{closest}"?' in service.error


def test_a_refused_service_declares_nothing_while_the_others_serve(tmp_path: Path) -> None:
    path = tmp_path / "pets.json"
    path.write_text(json.dumps(DOCUMENT))
    services = [
        {"name": "typo", "document": str(path), "exclude_operations": ["deletPet"]},
        {"name": "fine", "document": str(path), "exclude_operations": ["deletePet"]},
    ]
    composed = compose({"openapi": openapi_plugin}, {"openapi": {"services": services}}, strict=False)
    tools = {e.declaration.name for e in composed.catalog.tools}
    assert tools == {"fine_addPet", "fine_updatePet"}  # deletePet hidden where named right; typo serves nothing


def test_an_unknown_name_with_nothing_close_says_so(tmp_path: Path) -> None:
    service, _ = _loaded(tmp_path, exclude_operations=["zzzz"])
    assert (
        service.error is not None
        and "no such operationId; its operationIds: addPet, deletePet, listPets, updatePet" in service.error
    )


def test_effects_naming_a_get_operation_is_refused(tmp_path: Path) -> None:
    service, _ = _loaded(tmp_path, effects={"listPets": "destructive"})
    assert service.error is not None and "effects names 'listPets', a GET operation" in service.error


def test_known_names_serve_and_a_declared_tag_no_operation_carries_is_known(tmp_path: Path) -> None:
    service, operations = _loaded(
        tmp_path, exclude_operations=["deletePet"], exclude_tags=["declared-only"], effects={"addPet": "destructive"}
    )
    assert service.error is None
    assert [o.operation_id for o in operations] == ["listPets", "addPet", "updatePet"]


@pytest.mark.parametrize(
    ("setting", "value", "closest"),
    [("include_operations", ["listPet"], "listPets"), ("include_tags", ["pet"], "pets")],
)
def test_an_unknown_name_in_an_inclusion_is_an_advisory_check_lists(
    tmp_path: Path, setting: str, value: list[str], closest: str
) -> None:
    path = tmp_path / "pets.json"
    path.write_text(json.dumps(DOCUMENT))
    service = {"name": "pets", "document": str(path), setting: [*value, closest]}
    composed = compose({"openapi": openapi_plugin}, {"openapi": {"services": [service]}})
    assert composed.catalog.served_count  # fails safe: what the other names select is served
    left = [p for p in advisories(composed.assembly.declared) if p.rule == "left-out"]
    assert [p.value for p in left] == value
    assert f"{setting} names {value[0]!r}" in left[0].message and f'did you mean "{closest}"?' in left[0].message


# 2. Parse and validation errors say where and what kind, never the document's text


@pytest.mark.parametrize(
    ("text", "name", "where"),
    [
        (f"openapi: 3.1.0\ninfo:\n  title: x\n  secret: [{SECRET}\n", "bad.yaml", "(YAML, line 5, column 1)"),
        (f"openapi: 3.1.0\ninfo: {{title: {SECRET}: x}}\n", "colon.yaml", "(YAML, line 2"),
        (f"openapi: 3.1.0\nkey: *{SECRET}\n", "alias.yaml", "(YAML, line 2, column 6)"),
        (f"openapi: 3.1.0\nkey: !{SECRET} x\n", "tag.yaml", "(YAML, line 2"),
        (f'{{"openapi": "3.1.0", "x": "{SECRET}" "y"}}', "bad.json", "(JSON, line 1, column"),
    ],
)
def test_a_parse_error_says_where_and_never_quotes_the_document(
    tmp_path: Path, text: str, name: str, where: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(DocumentError) as refused:
        load(str(tmp_path / name))
    said = str(refused.value)
    assert "is neither JSON nor YAML" in said and where in said, said
    assert SECRET not in said and SECRET[:8] not in said, said


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"info": {"title": "Pets", "version": {"token": SECRET}}}, "at info/version: should be of type string"),
        ({"info": {"title": "Pets"}, "x": 1}, "at info: misses the required property version"),
        ({"paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}, "parameters": [
            {"name": "q", "in": "query", "schema": {"type": "integer", "default": SECRET}}]}}}},
         "should be of type integer"),
        ({"paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}, "parameters": [
            {"name": "q", "in": SECRET}]}}}}, "at paths//a/get/parameters/0"),
        ({"servers": [{"url": 7, "description": SECRET}]}, "at servers/0/url: should be of type string"),
    ],
)  # fmt: skip
def test_a_validation_error_says_where_and_what_was_expected_never_the_value(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    path = tmp_path / "invalid.json"
    path.write_text(json.dumps({**DOCUMENT, **change}))
    with pytest.raises(DocumentError) as refused:
        load(str(path))
    assert said in str(refused.value), str(refused.value)
    assert SECRET not in str(refused.value) and SECRET[:8] not in str(refused.value)


def test_a_document_the_libraries_choke_on_is_named_by_kind_not_by_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def choking(source: str, **options: Any) -> Any:
        raise KeyError(SECRET)  # a library's message quoting the document

    monkeypatch.setattr(loading, "load", choking)
    service, _ = _loaded(tmp_path)
    assert service.error == "service 'pets': its document could not be read (KeyError)"
    assert SECRET not in caplog.text


# 3 and 4. An upstream whose document declares query parameters of every style, and redirects


HITS: list[dict[str, Any]] = []
"""What either upstream received: origin role, method, path and the raw query string."""


def _q(name: str, schema: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": schema, **more}


STRINGS = {"type": "array", "items": {"type": "string"}}
PAIRS = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "string"}}}
QUERIES: dict[str, list[dict[str, Any]]] = {
    "form": [_q("tags", STRINGS), _q("q", {"type": "string"})],
    "flat": [_q("tags", STRINGS, explode=False)],
    "pipe": [_q("tags", STRINGS, style="pipeDelimited")],
    "space": [_q("tags", STRINGS, style="spaceDelimited")],
}
TOOL_QUERIES: dict[str, list[dict[str, Any]]] = {
    **QUERIES,
    "deep": [_q("at", PAIRS, style="deepObject", explode=True)],
    "members": [_q("at", PAIRS)],
    "packed": [_q("at", PAIRS, explode=False)],
}


def _echo_document() -> dict[str, Any]:
    ok = {"200": {"description": "ok", "content": {"application/json": {}}}}
    paths: dict[str, Any] = {f"/q/{kind}": {"get": {"operationId": f"read_{kind}", "parameters": params,
                             "responses": ok}} for kind, params in QUERIES.items()}  # fmt: skip
    for kind, params in TOOL_QUERIES.items():
        paths.setdefault(f"/q/{kind}", {})["post"] = {"operationId": f"call_{kind}", "parameters": params,
                                                      "responses": ok}  # fmt: skip
    paths["/flag/{on}/{ids}"] = {
        "post": {
            "operationId": "setFlag",
            "responses": ok,
            "parameters": [
                {"name": "on", "in": "path", "required": True, "schema": {"type": "boolean"}},
                {"name": "ids", "in": "path", "required": True, "schema": STRINGS},
            ],
        }
    }
    paths["/in/{folder}"] = {
        "get": {
            "operationId": "inFolder",
            "responses": ok,
            "parameters": [
                {"name": "folder", "in": "path", "required": True, "schema": {"type": "string"}},
                _q("v", {"type": "string"}),
            ],
        }
    }
    for name in ("moved", "relative", "unchanged", "nowhere"):
        paths[f"/{name}"] = {"get": {"operationId": name, "responses": ok},
                             "post": {"operationId": f"{name}Post", "responses": ok}}  # fmt: skip
    return {"openapi": "3.1.0", "info": {"title": "Echo", "version": "1"}, "paths": paths}  # fmt: skip


def _upstream(role: str, elsewhere: str = "") -> FastAPI:
    api = FastAPI(openapi_url=None)

    @api.get("/openapi.json")
    def document() -> dict[str, Any]:
        return _echo_document()

    @api.api_route("/{rest:path}", methods=["GET", "POST"])
    def echo(rest: str, request: Request) -> Response:
        HITS.append({"role": role, "method": request.method, "path": "/" + rest,
                     "query": request.scope["query_string"].decode()})  # fmt: skip
        moves = {"moved": (302, f"{elsewhere}/steal?token={SECRET}"), "relative": (307, "/q/form"),
                 "unchanged": (304, None), "nowhere": (301, None)}  # fmt: skip
        if rest in moves:
            status, location = moves[rest]
            return Response(status_code=status, headers={"location": location} if location else {})
        return Response(json.dumps({"query": request.scope["query_string"].decode()}), media_type="application/json")

    return api


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[Any, str]]:
    with serving(_upstream("elsewhere")) as elsewhere, serving(_upstream("service", elsewhere)) as origin:
        service = {"name": "echo", "document": f"{origin}/openapi.json", "base_url": origin}
        yield compose({"openapi": openapi_plugin}, {"openapi": {"services": [service]}}), elsewhere


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("openapi://echo/moved", "answered HTTP 302, a redirect to http://127.0.0.1:"),
        ("openapi://echo/relative", "answered HTTP 307, a redirect within the service"),
        ("openapi://echo/unchanged", "answered HTTP 304, a redirect with no Location"),
        ("openapi://echo/nowhere", "answered HTTP 301, a redirect with no Location"),
    ],
)
async def test_a_redirect_is_an_error_never_followed_nor_served_as_success(echo: Any, uri: str, said: str) -> None:
    composed, elsewhere = echo
    before = len(HITS)
    async with connect(composed) as client:
        with pytest.raises(MCPError) as failed:
            await client.read_resource(uri)
    message = failed.value.error.message
    assert said in message and "redirects are not followed" in message, message
    assert "steal" not in message and SECRET not in message  # the Location's origin only
    assert [h["path"] for h in HITS[before:]] == ["/" + uri.rsplit("/", 1)[1]]  # not followed, not elsewhere
    if uri.endswith("moved"):
        assert elsewhere in message


async def test_a_tool_whose_call_is_redirected_gets_an_error_result(echo: Any) -> None:
    composed, elsewhere = echo
    before = len(HITS)
    async with connect(composed) as client:
        moved = await client.call_tool("echo_movedPost", {})
        relative = await client.call_tool("echo_relativePost", {})
    assert moved.is_error and f"HTTP 302, a redirect to {elsewhere}" in moved.content[0].text
    assert relative.is_error and "HTTP 307" in relative.content[0].text
    assert [h["role"] for h in HITS[before:]] == ["service", "service"]


@pytest.mark.parametrize(("status", "served"), [(101, False), (199, False), (200, True), (204, True), (299, True),
                                                (300, False), (308, False), (399, False), (600, False)])  # fmt: skip
async def test_only_a_2xx_answer_is_success(tmp_path: Path, status: int, served: bool) -> None:
    service, operations = _loaded(tmp_path)
    service._http = httpx2.AsyncClient(
        base_url="http://127.0.0.1:9", transport=httpx2.MockTransport(lambda request: httpx2.Response(status))
    )
    if served:
        assert (await service.send(operations[0], "/pets", query={})).status == status
    else:
        with pytest.raises(ServiceError, match=f"HTTP {status}"):
            await service.send(operations[0], "/pets", query={})
    await service._http.aclose()


@pytest.mark.parametrize("value", ["%2e%2e", "..", "%2E%2E%2F..%2Fetc", "a/../b", "%252e%252e", "."])
async def test_a_dot_dot_query_value_is_sent_as_a_value(echo: Any, value: str) -> None:
    async with connect(echo[0]) as client:
        read = await client.read_resource(f"openapi://echo/q/form?q={value}")
    sent = json.loads(read.contents[0].text)["query"]
    assert unquote(sent) == "q=" + unquote(value)


@pytest.mark.parametrize("folder", ["..", "%2e%2e", "%2E%2e", ".", "a%2Fb", "%252e%252e"])
async def test_a_path_value_of_a_template_with_query_variables_is_still_refused_dot_dot(echo: Any, folder: str) -> None:
    before = len(HITS)
    async with connect(echo[0]) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"openapi://echo/in/{folder}?v=..")
    assert refused.value.error.code == -32602
    assert "the template value folder=" in refused.value.error.message  # the router's refusal, before the plugin's
    assert HITS[before:] == []


@pytest.mark.parametrize(
    "folder",
    [
        "private.",
        "private%2e",
        "private%20",
        "%20private",
        "private...",
        "private%C2%A0",
        "private.%20",
        "private::$DATA",
        "private%E2%80%8B",
        "private%EF%BC%8E",
        "private%E3%80%82",
    ],  # second pass
)
async def test_a_path_value_a_server_would_trim_to_another_name_is_refused_before_sending(
    echo: Any, folder: str
) -> None:
    """Trailing dots and spaces: servers that strip them (Windows, IIS) read ``private`` (tester, round 8)."""
    before = len(HITS)
    async with connect(echo[0]) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"openapi://echo/in/{folder}?v=1")
    assert refused.value.error.code == -32602
    assert "the template value folder=" in refused.value.error.message, refused.value.error.message  # the router's
    assert HITS[before:] == []


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("q=a&q=b", "query parameter 'q' is given 2 times; it takes one value"),
        ("q=a&tag=b", "takes no query parameter 'tag'; did you mean \"tags\"?"),
        ("q=a&zzz=1&yyy=2", "takes no query parameter 'zzz', 'yyy'"),
    ],
)
async def test_a_read_with_an_unknown_or_repeated_query_name_is_refused(echo: Any, query: str, said: str) -> None:
    before = len(HITS)
    async with connect(echo[0]) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"openapi://echo/q/form?{query}")
    assert refused.value.error.code == -32602 and said in refused.value.error.message, refused.value.error.message
    assert HITS[before:] == []


async def test_a_tool_call_with_an_unknown_argument_is_refused_by_its_input_schema(echo: Any) -> None:
    before = len(HITS)
    async with connect(echo[0]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        refused = await client.call_tool("echo_call_form", {"tags": ["a"], "tagz": ["b"]})
    assert tools["echo_call_form"].input_schema["additionalProperties"] is False
    assert refused.is_error and "'tagz' was unexpected" in refused.content[0].text
    assert HITS[before:] == []


@pytest.mark.parametrize(
    ("kind", "query", "sent"),
    [
        ("form", "tags=a%2Cb&tags=c&q=x", "tags=a%2Cb&tags=c&q=x"),  # form, explode: repeated keys
        ("flat", "tags=a%2Cb,c", "tags=a%2Cb,c"),  # form, no explode: one key, comma-delimited
        ("pipe", "tags=a|b", "tags=a|b"),
        ("space", "tags=a%20b", "tags=a%20b"),
    ],
)
async def test_an_array_query_value_is_read_and_sent_by_its_style(echo: Any, kind: str, query: str, sent: str) -> None:
    async with connect(echo[0]) as client:
        read = await client.read_resource(f"openapi://echo/q/{kind}?{query}")
    assert json.loads(read.contents[0].text)["query"] == sent


@pytest.mark.parametrize(
    ("kind", "arguments", "sent"),
    [
        ("form", {"tags": ["a,b", "c"], "q": "x"}, "tags=a%2Cb&tags=c&q=x"),
        ("flat", {"tags": ["a,b", "c"]}, "tags=a%2Cb,c"),
        ("pipe", {"tags": ["a", "b"]}, "tags=a|b"),
        ("space", {"tags": ["a", "b"]}, "tags=a%20b"),
        ("deep", {"at": {"x": 1, "y": "z w"}}, "at[x]=1&at[y]=z%20w"),
        ("members", {"at": {"x": 1, "y": "z"}}, "x=1&y=z"),
        ("packed", {"at": {"x": 1, "y": "z"}}, "at=x,1,y,z"),
    ],
)
async def test_a_tool_sends_array_and_object_query_values_by_their_style(
    echo: Any, kind: str, arguments: dict[str, Any], sent: str
) -> None:
    async with connect(echo[0]) as client:
        called = await client.call_tool(f"echo_call_{kind}", arguments)
    assert not called.is_error, called.content[0].text
    assert unquote(HITS[-1]["query"].replace("%5B", "[").replace("%5D", "]")) == unquote(sent)
    assert HITS[-1]["query"].count("&") == sent.count("&")  # the delimiters as sent, items kept whole


# 5. A large document's cost grows with its size (figures: benchmarks/openapi_load.py, no timing here)


def test_names_of_head_options_and_trace_operations_are_known(tmp_path: Path) -> None:
    head = {"operationId": "headPets", "responses": {"200": {"description": "ok"}}}
    path = tmp_path / "pets.json"
    path.write_text(json.dumps({**DOCUMENT, "paths": {**DOCUMENT["paths"], "/pets": {**DOCUMENT["paths"]["/pets"],
                                                                                       "head": head}}}))  # fmt: skip
    table = OpenAPISettings.model_validate({"services": [{"name": "pets", "document": str(path),
                                                          "exclude_operations": ["headPets"]}]})  # fmt: skip
    [(service, _)] = loading.services(table)
    assert service.error is None


def test_the_validator_keeps_what_it_has_seen_in_sets_and_still_finds_duplicates(tmp_path: Path) -> None:
    linear = validation._BY_VERSION["3.1"](DOCUMENT)
    registry = linear.keyword_validators_registry
    assert isinstance(registry["operation"].operation_ids_registry, validation._Seen)
    assert isinstance(registry["schema"].visited_schema_ids, validation._Seen)
    assert isinstance(registry["schema"].meta_checked_schema_ids, validation._Seen)
    twice = {**DOCUMENT, "paths": {**DOCUMENT["paths"], "/again": {"get": _op("listPets", [])}}}
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(twice))
    with pytest.raises(DocumentError, match="Operation ID 'listPets' for 'get' in '/again' is not unique"):
        load(str(path))


def test_a_schema_shared_by_every_operation_is_converted_and_checked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    real = schema.Converter._check

    def counting(self: schema.Converter, value: Any, what: str) -> None:
        checked.append(what)
        real(self, value, what)

    monkeypatch.setattr(schema.Converter, "_check", counting)
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}
    paths = {f"/p{i}": {"post": {**_op(f"add{i}", []), "requestBody": body}} for i in range(50)}
    pet = {"type": "object", "properties": {"name": {"type": "string"}, "next": {"$ref": "#/components/schemas/Pet"}}}
    path = tmp_path / "many.json"
    path.write_text(json.dumps({**DOCUMENT, "paths": paths, "components": {"schemas": {"Pet": pet}}}))
    document = load(str(path))
    assert len(document.operations) == 50
    assert checked.count("components.schemas.Pet") == 1  # not once per operation
    assert all(op.body is not None and op.body["$defs"]["Pet"] is document.operations[0].body["$defs"]["Pet"]
               for op in document.operations if op.body)  # fmt: skip


def test_a_schema_that_is_not_json_schema_once_converted_is_refused_without_quoting_it() -> None:
    with pytest.raises(schema.UnsupportedSchema) as refused:
        schema.Converter({}, "3.1.0").json_schema({"type": "object", "properties": {"a": {"type": SECRET}}})
    assert str(refused.value) == "the schema is not valid JSON Schema 2020-12 at properties/a/type (anyOf rule)"


def test_a_30_document_validation_remembers_valid_values_and_still_finds_the_one_invalid(tmp_path: Path) -> None:
    meta = validation._BY_VERSION["3.0"]({"openapi": "3.0.3"}).schema_validator
    assert meta.VALIDATORS["$ref"].__qualname__ == "_remembering.<locals>.ref"
    shared = {"name": "id", "in": "query", "schema": {"type": "string"}}
    paths = {f"/p{i}": {"get": {**_op(f"get{i}", []), "parameters": [dict(shared)]}} for i in range(30)}
    paths["/p17"]["get"]["parameters"] = [{**shared, "in": "body"}]  # not a 3.0 location
    path = tmp_path / "thirty.json"
    path.write_text(json.dumps({**DOCUMENT, "openapi": "3.0.3", "paths": paths}))
    with pytest.raises(DocumentError, match="at paths//p17/get/parameters/0"):
        load(str(path))


async def test_a_tool_writes_path_values_in_the_simple_style(echo: Any) -> None:
    async with connect(echo[0]) as client:
        called = await client.call_tool("echo_setFlag", {"on": True, "ids": ["a", "b c"]})
    assert not called.is_error, called.content[0].text
    assert HITS[-1]["path"] == "/flag/true/a,b c"  # not Python's "True" nor "['a', 'b c']"


def test_the_linear_validators_undocumented_names_are_there_in_the_pinned_libraries() -> None:
    assert validation.linear_available()  # a library update that drops one makes validate() fall back


def test_without_those_names_the_librarys_own_validators_check_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

    monkeypatch.setattr(validation, "linear_available", lambda: False)
    monkeypatch.setattr(validation, "_BY_VERSION", {})  # were they asked, this would raise KeyError
    validation.validate(json.loads(json.dumps(DOCUMENT)), DOCUMENT["openapi"])
    broken = {**DOCUMENT, "paths": {"/x": {"get": {"operationId": "x", "responses": "none"}}}}  # not an object
    with pytest.raises(OpenAPIValidationError):
        validation.validate(broken, DOCUMENT["openapi"])


@pytest.mark.parametrize("ids", [["private::$DATA"], ["private\u200b"], ["private\u3002"], ["a%252Fb"]])
async def test_a_tools_path_value_a_server_would_read_as_another_name_is_refused_before_sending(
    echo: Any, ids: list[str]
) -> None:
    """Tools have no router in front of their path values: the plugin asks the router's rule itself."""
    before = len(HITS)
    async with connect(echo[0]) as client:
        called = await client.call_tool("echo_setFlag", {"on": True, "ids": ids})
    assert called.is_error and "is refused" in called.content[0].text, called.content[0].text  # type: ignore[union-attr]
    assert HITS[before:] == []
