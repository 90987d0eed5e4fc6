"""Workflows plugin: content, aliases, computed tool availability and model validation."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

import pytest
from documcp_support import read_json
from mcp import Client
from pydantic import ValidationError

from mcp_providers.plugins.documcp.workflows import ALIASES, WORKFLOW_IDS, WorkflowContent, content

pytestmark = pytest.mark.anyio


async def test_all_lists_every_workflow_with_a_computed_summary(client: Client) -> None:
    body = await read_json(client, "documcp://workflows/all")
    assert list(body["workflows"]) == list(WORKFLOW_IDS)
    assert len(WORKFLOW_IDS) == 5
    used = sorted({s["tool"] for w in body["workflows"].values() for s in w["steps"]})
    assert body["metadata"]["toolsUsed"] == used
    assert body["metadata"]["totalWorkflows"] == len(body["workflows"])
    assert set(body["executionGuidance"]) == {"description", "principles", "errorHandling", "customization"}


async def test_aliases_serve_the_same_workflow_as_the_template(client: Client) -> None:
    for alias, target in ALIASES.items():
        by_alias = await read_json(client, f"documcp://workflows/{alias}")
        by_id = await read_json(client, f"documcp://workflows/{target}")
        assert by_alias == by_id
        assert by_alias["id"] == target


async def test_provided_by_this_server_matches_tools_list(client: Client) -> None:
    served = {t.name for t in (await client.list_tools()).tools}
    body = await read_json(client, "documcp://workflows/all")
    steps = [s for w in body["workflows"].values() for s in w["steps"]]
    assert {s["providedByThisServer"] for s in steps} == {True, False}
    for step in steps:
        assert step["providedByThisServer"] == (step["tool"] in served), step["tool"]
    assert body["metadata"]["toolsProvidedByThisServer"] == sorted({s["tool"] for s in steps} & served)


async def test_guidance_rules_name_existing_workflows(client: Client) -> None:
    body = await read_json(client, "documcp://workflows/guidance")
    assert {r["workflow"] for r in body["recommendationRules"]} <= set(WORKFLOW_IDS)
    assert body["recommendationEngine"]


def _raw() -> dict[str, Any]:
    """The authored workflows.json, as the package ships it."""
    text = files("mcp_providers.plugins.documcp").joinpath("workflows.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def test_content_round_trips_through_the_models() -> None:
    assert WorkflowContent.model_validate(_raw()) == content()


def test_a_hand_written_provided_flag_is_rejected() -> None:
    raw = _raw()
    raw["workflows"]["deployment-only"]["steps"][1]["providedByThisServer"] = True
    with pytest.raises(ValidationError, match="providedByThisServer"):
        WorkflowContent.model_validate(raw)


def test_step_of_a_served_tool_must_use_its_argument_names() -> None:
    raw = _raw()
    step = next(s for s in raw["workflows"]["full-documentation-setup"]["steps"] if s["tool"] == "generate_config")
    step["requiredInputs"] = ["ssg", "projectName"]
    with pytest.raises(ValidationError, match=r"\['projectName'\] are not arguments of generate_config"):
        WorkflowContent.model_validate(raw)
    step["requiredInputs"] = ["ssg"]
    with pytest.raises(ValidationError, match=r"generate_config requires \['site_name'\]"):
        WorkflowContent.model_validate(raw)


def test_embedded_values_in_required_inputs_are_rejected() -> None:
    raw = _raw()
    raw["workflows"]["documentation-audit"]["steps"][1]["requiredInputs"] = ["validationType: all"]
    with pytest.raises(ValidationError, match="'validationType: all' is not an argument name"):
        WorkflowContent.model_validate(raw)


def test_rule_naming_an_unknown_workflow_is_rejected() -> None:
    raw = _raw()
    raw["recommendationRules"][0]["workflow"] = "nope"
    with pytest.raises(ValidationError, match="names unknown workflow 'nope'"):
        WorkflowContent.model_validate(raw)
