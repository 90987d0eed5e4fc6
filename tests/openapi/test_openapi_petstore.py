"""A published document of a real API, the Swagger Petstore's OpenAPI 3.0 document (vendored in
``data/``, source and licence in ``data/README.md``), run against a small local server implementing
the operations used here, composed beside the built-in plugins; ``check`` and ``inspect`` list
every derived component with its origin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_support import run_cli
from fastapi import FastAPI, HTTPException
from mcp_types import ResourceTemplateReference
from openapi_support import serving

import mcp_providers.plugins.openapi as openapi_plugin
from mcp_providers import compose as compose_config
from mcp_providers._cli.explore import INSPECT_SCHEMA, inventory
from mcp_providers.config import load_config
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

DOCUMENT = Path(__file__).parent / "data" / "petstore.json"
PETS: dict[int, dict[str, Any]] = {7: {"id": 7, "name": "doggie", "photoUrls": [], "status": "available"}}


def petstore() -> FastAPI:
    """The operations of the Petstore this test uses, under ``/v2`` as the document's server says."""
    api = FastAPI()

    @api.get("/v2/pet/findByStatus")
    def by_status(status: str) -> list[dict[str, Any]]:
        return [p for p in PETS.values() if p.get("status") == status]

    @api.get("/v2/pet/{pet_id}")
    def get_pet(pet_id: int) -> dict[str, Any]:
        if pet_id not in PETS:
            raise HTTPException(404, "Pet not found")
        return PETS[pet_id]

    @api.post("/v2/pet")
    def add_pet(pet: dict[str, Any]) -> dict[str, Any]:
        PETS[pet["id"]] = pet
        return pet

    @api.delete("/v2/pet/{pet_id}")
    def delete_pet(pet_id: int) -> dict[str, str]:
        PETS.pop(pet_id, None)
        return {"deleted": str(pet_id)}

    @api.get("/v2/store/inventory")
    def inventory() -> dict[str, int]:
        return {"available": sum(p.get("status") == "available" for p in PETS.values())}

    return api


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(petstore()) as served:
        yield served


def table(origin: str) -> dict[str, Any]:
    return {"services": [{"name": "petstore", "document": str(DOCUMENT), "base_url": f"{origin}/v2"}]}


def test_check_and_inspect_list_every_operation_with_its_origin_beside_the_built_ins(
    origin: str, tmp_path: Path
) -> None:
    config = tmp_path / "mcp-providers.toml"
    config.write_text(f'[[plugins.openapi.services]]\nname = "petstore"\ndocument = "{DOCUMENT}"\n'
                      f'base_url = "{origin}/v2"\n')  # fmt: skip
    env = {"MCP_PROVIDERS_CONFIG": None, "COLUMNS": "300"}
    checked = run_cli("check", "-c", str(config), env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "check passed: 8 plugins served" in checked.stdout  # documcp's four, servicenow, policy, upstream, openapi
    assert "updatePetWithForm (POST /pet/{petId}) left out: its request body has no application/json" in checked.stderr
    assert "uploadFile (POST /pet/{petId}/uploadImage) left out" in checked.stderr
    shown = run_cli("inspect", "-c", str(config), env=env)
    assert shown.returncode == 0, shown.stderr
    assert "origin" in shown.stdout  # the table's column (its cells fold with the terminal's width)
    document = inventory(compose_config(load_config(config), strict=False))  # what inspect --json prints
    items = [i for kind in ("resources", "templates", "tools") for i in document[kind] if i["plugin"] == "openapi"]
    listed = {(i["origin"]["method"], i["origin"]["path"], i["origin"]["operationId"]) for i in items}
    served = json.loads(DOCUMENT.read_text())["paths"]
    expected = {(m.upper(), p, o["operationId"]) for p, item in served.items() for m, o in item.items()}
    expected -= {("POST", "/pet/{petId}", "updatePetWithForm"), ("POST", "/pet/{petId}/uploadImage", "uploadFile")}
    assert listed == expected
    uris = {t["uriTemplate"] for t in document["templates"]}
    assert "openapi://petstore/pet/findByStatus{?status}" in uris
    assert "documcp://ssgs/available" in {r["uri"] for r in document["resources"]}  # the built-ins beside it
    jsonschema.validate(document, INSPECT_SCHEMA)


async def test_reads_and_calls_through_the_published_document(origin: str) -> None:
    composed = compose({"openapi": openapi_plugin}, {"openapi": table(origin)})
    async with connect(composed) as client:
        pet = await client.read_resource("openapi://petstore/pet/7")
        found = await client.read_resource("openapi://petstore/pet/findByStatus?status=available")
        added = await client.call_tool("petstore_addPet", {"body": {"id": 8, "name": "rex", "photoUrls": []}})
        counted = await client.read_resource("openapi://petstore/store/inventory")
        gone = await client.call_tool("petstore_deletePet", {"petId": 8})
        tools = {t.name: t for t in (await client.list_tools()).tools}
        offered = await client.complete(
            ResourceTemplateReference(uri="openapi://petstore/pet/findByStatus{?status}"),
            {"name": "status", "value": "p"},
        )
    assert offered.completion.values == ["pending"]  # the parameter's enum
    assert json.loads(pet.contents[0].text)["name"] == "doggie"
    assert [p["id"] for p in json.loads(found.contents[0].text)] == [7]
    assert not added.is_error and json.loads(added.content[0].text)["name"] == "rex"
    assert json.loads(counted.contents[0].text) == {"available": 1}  # rex has no status
    assert json.loads(gone.content[0].text) == {"deleted": "8"} and 8 not in PETS
    assert tools["petstore_deletePet"].annotations.destructive_hint is True
    assert tools["petstore_addPet"].input_schema["properties"]["body"]["$ref"] == "#/$defs/Pet"
