"""The five documentation workflows as skills (issue 44), beside their old resources.

Every workflow in ``workflows.json`` is listed by ``skills/list`` and got by ``skills/get`` on a
2026-07-28 session; each skill's ``SKILL.md`` names the workflow and its steps, its
``workflow.json`` is byte for byte what ``documcp://workflows/<id>`` serves, and each template it
references is what ``documcp://templates/...`` serves. The old URIs keep serving in both eras.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from documcp_support import read_text
from mcp import Client
from pydantic import TypeAdapter

from mcp_providers._serve.composition import Composition
from mcp_providers.plugins.documcp.workflows import ALIASES, WORKFLOW_IDS, content
from mcp_providers.skills import frontmatter_of
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

PREFIX = "skill://documcp/workflows/"


async def _call(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = types.Request[dict[str, Any], str](method=method, params=params)
    result: dict[str, Any] = await client.session.send_request(request, TypeAdapter(dict[str, Any]))  # type: ignore[arg-type]
    return result


async def test_each_workflow_is_a_skill_whose_files_match_the_resources_that_serve_them(
    composition: Composition,
) -> None:
    async with connect(composition) as client:
        listed = (await _call(client, "skills/list", {}))["skills"]
        assert [s["uri"] for s in listed] == [f"{PREFIX}{i}/SKILL.md" for i in WORKFLOW_IDS]
        assert len(WORKFLOW_IDS) == 5
        for entry in listed:
            workflow_id = entry["frontmatter"]["name"]
            workflow = content().workflows[workflow_id]
            assert (await _call(client, "skills/get", {"uri": entry["uri"]}))["skill"] == entry
            assert entry["frontmatter"]["description"].startswith(workflow.description)
            skill_md = (await read_text(client, entry["uri"])).text
            assert frontmatter_of(skill_md.encode()) == entry["frontmatter"]
            assert f"# {workflow.name}" in skill_md
            assert all(f"`{step.tool}`" in skill_md for step in workflow.steps)
            root = entry["uri"].removesuffix("SKILL.md")
            same_as = {root + "workflow.json": f"documcp://workflows/{workflow_id}"}
            for file in entry["resources"]:
                path = file["uri"].removeprefix(root)
                if path.startswith("templates/"):
                    assert f"({path})" in skill_md  # referenced by SKILL.md, relative to the skill's root
                    same_as[file["uri"]] = "documcp://templates/" + path.removeprefix("templates/").split(".")[0]
            assert {f["uri"] for f in entry["resources"]} == {entry["uri"], *same_as}
            for skill_file, resource in same_as.items():
                assert (await read_text(client, skill_file)).text == (await read_text(client, resource)).text
        full = next(s for s in listed if s["frontmatter"]["name"] == "full-documentation-setup")
        assert len(full["resources"]) > 3  # SKILL.md, workflow.json and the templates generate_config fills


async def test_the_old_workflow_uris_still_serve_in_both_eras(client: Client) -> None:
    for workflow_id in WORKFLOW_IDS:
        served = json.loads((await read_text(client, f"documcp://workflows/{workflow_id}")).text)
        assert served["id"] == workflow_id
    for alias, target in ALIASES.items():
        assert json.loads((await read_text(client, f"documcp://workflows/{alias}")).text)["id"] == target
    everything = json.loads((await read_text(client, "documcp://workflows/all")).text)
    assert list(everything["workflows"]) == list(WORKFLOW_IDS)
