"""The SSG registry and the catalog plugin (``documcp://ssgs/``)."""

from __future__ import annotations

import json

import pytest
from documcp_support import read_text
from mcp import Client
from pydantic import ValidationError

from mcp_providers.plugins.documcp.registry import (
    AVAILABLE_FIELDS,
    SSG,
    SSG_IDS,
    SSGS,
    by_id,
    mime_type,
    require,
    template_uri,
)

pytestmark = pytest.mark.anyio

# DocuMCP's five rows as its src/index.ts serves them (tosin2013/documcp, ADR-010 and HEAD): the
# compatibility contract, so these values are the expectation, not a result computed here.
DOCUMCP_ROWS = {
    "jekyll": ("Jekyll", "ruby", "low", "medium", "mature", ["blogs", "documentation", "simple-sites"]),
    "hugo": ("Hugo", "go", "medium", "very-fast", "mature", ["documentation", "blogs", "large-sites"]),
    "docusaurus": (
        "Docusaurus",
        "javascript",
        "medium",
        "medium",
        "growing",
        ["technical-documentation", "api-docs", "versioned-docs"],
    ),
    "mkdocs": ("MkDocs", "python", "low", "fast", "mature", ["documentation", "technical-docs", "simple-setup"]),
    "eleventy": ("Eleventy", "javascript", "low", "fast", "growing", ["blogs", "documentation", "flexible-sites"]),
}
DOCUMCP_KEYS = ["id", "name", "description", "language", "complexity", "buildSpeed", "ecosystem", "bestFor"]


async def test_available_keeps_documcp_shape_and_rows(client: Client) -> None:
    body = json.loads((await read_text(client, "documcp://ssgs/available")).text)
    assert list(body) == ["ssgs"]
    assert [s["id"] for s in body["ssgs"]] == list(SSG_IDS)
    for entry in body["ssgs"]:
        assert sorted(entry) == sorted(DOCUMCP_KEYS), entry["id"]
    rows = {s["id"]: s for s in body["ssgs"]}
    for ssg_id, (name, language, complexity, speed, ecosystem, best_for) in DOCUMCP_ROWS.items():
        row = rows[ssg_id]
        assert (
            row["name"],
            row["language"],
            row["complexity"],
            row["buildSpeed"],
            row["ecosystem"],
            row["bestFor"],
        ) == (name, language, complexity, speed, ecosystem, best_for)


async def test_one_ssg_carries_the_extra_facts_and_its_template(client: Client) -> None:
    for ssg in SSGS:
        entry = json.loads((await read_text(client, f"documcp://ssgs/{ssg.id}")).text)
        assert entry["configFile"] == ssg.config_file
        assert entry["docsUrl"].startswith("https://")
        assert entry["install"] and entry["build"] and entry["serve"]
        assert entry["templateUri"] == template_uri(ssg)
        assert entry["templateMimeType"] == mime_type(ssg)
        # The template it points at is served.
        await read_text(client, entry["templateUri"])


def test_available_fields_are_the_documcp_ones() -> None:
    aliases = {SSG.model_fields[f].alias or f for f in AVAILABLE_FIELDS}
    assert aliases == set(DOCUMCP_KEYS)


def test_registry_ids_are_unique_and_include_the_planned_additions() -> None:
    assert len(set(SSG_IDS)) == len(SSG_IDS)
    assert {"astro", "vitepress"} <= set(SSG_IDS)
    assert all(by_id(i) is not None and by_id(i).id == i for i in SSG_IDS)  # type: ignore[union-attr]


def test_require_names_the_known_ids() -> None:
    with pytest.raises(ValueError, match=r"unknown SSG 'gatsby'; expected one of: jekyll, hugo"):
        require("gatsby")


def test_registry_rejects_values_outside_the_vocabularies() -> None:
    good = SSGS[0].model_dump(by_alias=True)
    with pytest.raises(ValidationError, match="complexity"):
        SSG.model_validate({**good, "complexity": "trivial"})
    with pytest.raises(ValidationError, match="features"):
        SSG.model_validate({**good, "features": ["search"]})
    with pytest.raises(ValidationError, match="id"):
        SSG.model_validate({**good, "id": "Not An Id"})
