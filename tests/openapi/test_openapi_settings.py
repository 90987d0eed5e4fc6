"""The OpenAPI plugin's settings, document loading and selection, without a network: documents are
files, checked by the real validator; and the guards that keep a path value one segment."""

from __future__ import annotations

import json
import logging
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import mcp_providers.plugins.openapi as openapi_plugin
import mcp_providers.plugins.servicenow as servicenow_plugin
from mcp_providers.errors import InvalidParams, UpstreamError
from mcp_providers.plugins.openapi import loading
from mcp_providers.plugins.openapi import settings as settings_module
from mcp_providers.plugins.openapi.client import Service, path_value
from mcp_providers.plugins.openapi.document import DocumentError, load
from mcp_providers.plugins.openapi.providers import OpenAPIResources, selected
from mcp_providers.plugins.openapi.settings import OpenAPISettings, ServiceSettings
from mcp_providers.providers import ReadRequest
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Depot", "version": "7"},
    "servers": [{"url": "http://127.0.0.1:9/api"}],
    "paths": {
        "/boxes/{box}": {
            "parameters": [{"$ref": "#/components/parameters/Box"}],
            "get": {"operationId": "getBox", "tags": ["boxes"], "responses": {"200": {"description": "ok",
                    "content": {"application/xml": {}, "application/json": {}}}}},
            "delete": {"operationId": "dropBox", "tags": ["admin"], "responses": {"204": {"description": "gone"}}},
            "post": {"operationId": "fillBox", "tags": ["boxes"], "requestBody": {"required": True, "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/Fill"}}}},
                "responses": {"200": {"description": "ok"}}},
        },
        "/signed": {"get": {"operationId": "signed", "parameters": [
            {"name": "X-Sig", "in": "header", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok"}}}},
    },
    "components": {
        "parameters": {"Box": {"name": "box", "in": "path", "required": True, "schema": {"type": "string"}}},
        "schemas": {"Fill": {"type": "object", "properties": {"count": {"type": "integer", "nullable": True,
                    "minimum": 0, "exclusiveMinimum": True}}}},
    },
}  # fmt: skip


def write(tmp_path: Path, document: dict[str, Any], name: str = "depot.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def test_the_documented_example_validates() -> None:
    example = re.search(r"Example.*?::\n\n(.*)", settings_module.__doc__ or "", re.S)
    assert example is not None
    table = tomllib.loads(example.group(1).replace("\n    ", "\n"))["plugins"]["openapi"]
    assert OpenAPISettings.model_validate(table).services[0].owned_prefix == "petstore://"


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"token": "s3cret-value"}, "extra"),
        ({"effects": {"fillBox": "none"}}, "cannot be 'none'"),
        ({"document": "http://example.com/api.json"}, "plain http is only allowed on loopback"),
        ({"base_url": "https://user:pw@example.com/"}, "must not carry user info"),
        ({"prefix": "Depot:/"}, "must be a lower-case scheme"),
        ({"name": "Depot"}, "should match pattern"),
    ],
)
def test_bad_settings_say_what_is_wrong_and_never_echo_a_secret(setting: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError) as refused:
        ServiceSettings.model_validate({"name": "depot", "document": "d.json", **setting})
    assert said in str(refused.value)
    assert "s3cret-value" not in str(refused.value) and "pw@" not in str(refused.value)


@pytest.mark.parametrize(
    ("prefix", "said"),
    [
        ("documcp://%73sgs/", "holds '%73', a percent-encoded 's'"),
        ("docs://a%2Fb/", "holds '%2F', a percent-encoded '/'"),
        ("docs://a%zz/", "holds '%', which"),
        ("docs://a b/", "holds ' ', which"),
        ("docs://a?b/", "holds '?', which"),
        ("docs://ünï/", "holds 'ü', which"),
        ("Docs://a/", "has scheme 'Docs', which must be lower case: write 'docs'"),
        ("1docs://a/", "has scheme '1docs', which is no URI scheme"),
        ("docs:/a/", "has no '://' after its scheme"),
        ("docs://a", "does not end in '/'"),
    ],
)
def test_a_prefix_refusal_says_what_is_wrong_with_it(prefix: str, said: str) -> None:
    """Tester 30 (not filed): 'documcp://%73sgs/' was refused with the rule alone, naming nothing."""
    with pytest.raises(ValidationError) as refused:
        ServiceSettings.model_validate({"name": "depot", "document": "d.json", "prefix": prefix})
    assert said in str(refused.value) and "must be a lower-case scheme and '://'" in str(refused.value)


def test_documents_that_cannot_be_served_are_refused_with_the_reason(tmp_path: Path) -> None:
    swagger = write(tmp_path, {"swagger": "2.0", "info": {"title": "x", "version": "1"}, "paths": {}}, "s.json")
    outside = write(tmp_path, {**DOCUMENT, "paths": {"/x": {"get": {"operationId": "x", "responses": {
        "200": {"$ref": "https://elsewhere.example/responses.json#/ok"}}}}}}, "o.json")  # fmt: skip
    dangling = write(tmp_path, {**DOCUMENT, "components": {}}, "d.json")
    (tmp_path / "bad.yaml").write_text("openapi: [unclosed")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9)
    )
    (tmp_path / "laughs.yaml").write_text("openapi: 3.0.3\n" + laughs)
    for source, said in (
        (swagger, "is OpenAPI/Swagger 2.0; 3.0 or 3.1 is needed"),
        (outside, "refers to 'https://elsewhere.example/responses.json#/ok', outside itself"),
        (dangling, "refers to '#/components/parameters/Box', which it does not have"),
        (str(tmp_path / "bad.yaml"), "is neither JSON nor YAML"),
        (str(tmp_path / "laughs.yaml"), "YAML aliases (*name) are refused"),
        (str(tmp_path / "missing.json"), "cannot be read"),
    ):
        with pytest.raises(DocumentError, match=re.escape(said)):
            load(source)


def test_selection_by_tag_and_operation_id_and_what_is_left_out(tmp_path: Path) -> None:
    document = load(write(tmp_path, DOCUMENT))
    settings = ServiceSettings(name="depot", document="x", exclude_tags=("admin",))
    served, left = selected(Service(settings, document, None))
    assert [o.operation_id for o in served] == ["getBox", "fillBox"]
    assert left == [
        "openapi: service 'depot': dropBox (DELETE /boxes/{box}) left out: has one of exclude_tags",
        "openapi: service 'depot': signed (GET /signed) left out: it requires the header parameter 'X-Sig', "
        "which tools do not take",
    ]
    only = ServiceSettings(name="depot", document="x", include_operations=("dropBox",), effects={"dropBox": "additive"})
    assert [o.operation_id for o in selected(Service(only, document, None))[0]] == ["dropBox"]


def test_a_30_document_maps_with_its_schemas_made_json_schema(tmp_path: Path) -> None:
    path = write(tmp_path, DOCUMENT)
    composed = compose(
        {"openapi": openapi_plugin},
        {"openapi": {"services": [{"name": "depot", "document": path, "effects": {"dropBox": "additive"}}]}},
    )
    catalog = composed.catalog
    template = catalog.templates[0].declaration
    assert (template.uri_template, template.mime_type) == ("openapi://depot/boxes/{box}", "application/json")
    tools = {e.declaration.name: e.declaration for e in catalog.tools}
    assert tools["depot_dropBox"].effects == "additive"  # the operator's override of DELETE's destructive
    count = tools["depot_fillBox"].input_model.model_json_schema()["$defs"]["Fill"]["properties"]["count"]
    assert count == {"type": ["integer", "null"], "exclusiveMinimum": 0}
    model = tools["depot_fillBox"].input_model
    with pytest.raises(ValidationError, match="body/count: 0 is less than or equal to the minimum of 0"):
        model.model_validate({"box": "a", "body": {"count": 0}})
    assert model.model_validate({"box": "a", "body": {"count": None}}).model_dump() == {
        "box": "a",
        "body": {"count": None},
    }


def test_a_service_on_another_service_or_plugins_prefix_is_left_out_alone(tmp_path: Path) -> None:
    path = write(tmp_path, DOCUMENT)
    services = [
        {"name": "depot", "document": path},
        {"name": "copy", "document": path, "prefix": "openapi://depot/"},
        {"name": "thief", "document": path, "prefix": "servicenow://"},
    ]
    composed = compose({"openapi": openapi_plugin, "servicenow": servicenow_plugin},
                       {"openapi": {"services": services}}, strict=False)  # fmt: skip
    assert not composed.failures, composed.failures
    said = "\n".join(str(p) for p in composed.assembly.left_out)
    # two services on one prefix: neither outranks the other, both are left out (never one picked)
    assert "services \"depot\" prefix: 'openapi://depot/' overlaps 'openapi://depot/' of [plugins.openapi]" in said
    assert "services \"copy\" prefix: 'openapi://depot/' overlaps 'openapi://depot/' of [plugins.openapi]" in said
    assert "services \"thief\" prefix: 'servicenow://' overlaps 'servicenow://' of provider 'servicenow'" in said
    assert {r.name: r.status for r in composed.records} == {"openapi": "loaded", "servicenow": "loaded"}
    assert {d.plugin for d in composed.assembly.declared} == {"servicenow"}  # the plugin whose prefix was taken


@pytest.mark.parametrize("value", ["", ".", "..", "a/b", "a\\b", "%2F", "%70rivate", "a\x00"])
def test_a_path_value_that_could_name_another_path_is_refused(value: str) -> None:
    with pytest.raises(InvalidParams, match="is refused"):
        path_value("box", value)


async def test_a_read_whose_uri_and_url_differ_is_refused_before_anything_is_sent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    document = load(write(tmp_path, DOCUMENT))
    service = Service(ServiceSettings(name="depot", document="x"), document, None)
    provider = OpenAPIResources(service, selected(service)[0])
    template = provider.templates()[0]
    async with service.opened():
        with pytest.raises(InvalidParams, match="does not name the path requested"):
            await provider.read(ReadRequest(uri="openapi://depot/boxes/public", resource=template,
                                            params={"box": "private"}))  # fmt: skip


def test_an_unset_secret_variable_is_a_warning_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        OpenAPISettings.model_validate({"services": [{"name": "depot", "document": "d.json",
            "auth": {"type": "basic", "username": "u", "password_env": "OPENAPI_TEST_UNSET_PASSWORD"}}]})  # fmt: skip
    assert "environment variable OPENAPI_TEST_UNSET_PASSWORD (from auth.password_env) is not set" in caplog.text


async def test_an_unset_secret_fails_each_request_naming_the_variable_before_anything_is_sent(tmp_path: Path) -> None:
    document = load(write(tmp_path, DOCUMENT))
    auth = {"type": "bearer", "token_env": "OPENAPI_TEST_UNSET_TOKEN"}
    service = Service(ServiceSettings.model_validate({"name": "depot", "document": "x", "auth": auth}), document, None)
    operation = selected(service)[0][0]
    async with service.opened():
        with pytest.raises(
            UpstreamError, match=r"environment variable OPENAPI_TEST_UNSET_TOKEN \(from auth\) is not set"
        ):
            await service.send(operation, "/boxes/a", query={})


def test_a_refused_url_is_shown_with_its_port_and_never_its_user_info() -> None:
    from mcp_providers.plugins.openapi.settings import checked_http_url

    with pytest.raises(ValueError, match=r"'http://api\.example\.com:9/openapi\.json': plain http"):
        checked_http_url("http://api.example.com:9/openapi.json", "document", path=True)
    with pytest.raises(ValueError, match=r"'https://h:8/x' must not carry user info") as caught:
        checked_http_url("https://u:pw@h:8/x", "document", path=True)
    assert "pw" not in str(caught.value)


def test_a_plain_http_server_url_in_the_document_is_refused_unless_on_loopback(tmp_path: Path) -> None:
    remote = load(write(tmp_path, {**DOCUMENT, "servers": [{"url": "http://api.example.com/v1"}]}))
    service = Service(ServiceSettings(name="depot", document="x"), remote, None)
    assert service.error is not None
    assert (
        "the document's server URL 'http://api.example.com/v1': plain http is only allowed on loopback" in service.error
    )
    assert service.error.endswith("; set base_url")
    assert selected(service) == ([], [])  # it declares nothing: no list advertises what fails at every read
    chosen = Service(ServiceSettings(name="depot", document="x", base_url="https://api.example.com/v1"), remote, None)
    assert chosen.error is None and chosen.base_url == "https://api.example.com/v1"


def test_a_document_the_libraries_choke_on_fails_its_service_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, DOCUMENT)
    real = loading.load

    def choking(source: str, **options: Any) -> Any:
        if source.endswith("choke.json"):
            raise RecursionError("maximum recursion depth exceeded")
        return real(source, **options)

    monkeypatch.setattr(loading, "load", choking)
    services = [{"name": "depot", "document": path}, {"name": "choke", "document": str(tmp_path / "choke.json"),
                                                       "base_url": "http://127.0.0.1:9"}]  # fmt: skip
    loaded = dict((s.name, s) for s, _ in loading.services(OpenAPISettings.model_validate({"services": services})))
    # the kind only: a library's message may quote the document
    assert loaded["choke"].error == "service 'choke': its document could not be read (RecursionError)"
    assert loaded["depot"].error is None and loaded["depot"].document is not None


@pytest.mark.parametrize("url_key", ["base_url", "document"])
def test_a_refused_url_is_reported_with_the_services_other_mistakes(url_key: str) -> None:
    """A wrong URL used to be checked before the other fields (a ``before`` validator) and hid
    their errors: the operator fixed one, ran again and met the next."""
    from mcp_providers.config import format_validation_error

    table = {"name": "Depot", "document": "d.json", url_key: "https://user:s3cret-value@example.com/x?y=1"}
    with pytest.raises(ValidationError) as refused:
        ServiceSettings.model_validate(table)
    assert sorted(e["loc"][0] for e in refused.value.errors()) == sorted(["name", url_key])
    shown = format_validation_error(refused.value, "plugins.openapi.services.0", ServiceSettings)
    for text in (str(refused.value), shown):
        assert "s3cret-value" not in text and "must not carry user info" in text and "should match pattern" in text
