"""Guards of the OpenAPI plugin found by a tester who had not read the code: settings naming what the
document does not have, parse and validation errors that quoted the document, redirects served as
success, query values (dot-dot, duplicates, unknown names, arrays by style), and a large document's
cost (linear: no test times it; see ``benchmarks/openapi_load.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers._host.advisories import advisories
from mcp_providers.plugins.openapi import loading
from mcp_providers.plugins.openapi.document import DocumentError, load
from mcp_providers.plugins.openapi.settings import OpenAPISettings
from mcp_providers.testing import compose

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
    def choking(source: str, *, timeout: float = 30.0) -> Any:
        raise KeyError(SECRET)  # a library's message quoting the document

    monkeypatch.setattr(loading, "load", choking)
    service, _ = _loaded(tmp_path)
    assert service.error == "service 'pets': its document could not be read (KeyError)"
    assert SECRET not in caplog.text
