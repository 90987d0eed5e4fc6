"""``mcp-providers plugins --settings``: each field's description and default, factories included."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from prefork import python
from pydantic import BaseModel, Field

from mcp_providers._cli.schemas import settings_schema
from mcp_providers.plugins.policy import PolicySettings
from mcp_providers.plugins.servicenow.settings import ServiceNowSettings


def _defs(schema: dict[str, Any]) -> dict[str, Any]:
    return {name: body["properties"] for name, body in schema.get("$defs", {}).items()}


def test_default_factory_values_are_shown_when_json_can_hold_them() -> None:
    class Made:
        pass

    class Settings(BaseModel):
        tags: list[str] = Field(default_factory=lambda: ["a", "b"])
        table: dict[str, int] = Field(default_factory=dict)
        opaque: object = Field(default_factory=Made)
        plain: int = 3

    properties = settings_schema(Settings)["properties"]
    assert properties["tags"]["default"] == ["a", "b"]
    assert properties["table"]["default"] == {}
    assert "default" not in properties["opaque"]  # not JSON: left out rather than guessed
    assert properties["plain"]["default"] == 3
    assert "default" not in Settings.model_json_schema()["properties"]["tags"]  # what pydantic alone shows


def test_the_policy_rules_show_the_claims_default() -> None:
    rule = _defs(settings_schema(PolicySettings))["Rule"]
    assert rule["claims"]["default"] == {}
    assert rule["claims"]["description"].startswith("Claim name -> accepted values")


def test_servicenow_fields_carry_their_descriptions() -> None:
    instance = _defs(settings_schema(ServiceNowSettings))["InstanceSettings"]
    for name, body in instance.items():
        assert body.get("description"), f"InstanceSettings.{name} has no description"
    assert instance["timeout_seconds"]["default"] == 30.0
    top = settings_schema(ServiceNowSettings)["properties"]["instances"]
    assert top.get("description")


def test_plugins_settings_prints_descriptions_and_defaults() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    result = subprocess.run(
        [*python(), "-m", "mcp_providers", "plugins", "--json", "--settings"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    assert _defs(rows["policy"]["settings_schema"])["Rule"]["claims"]["default"] == {}
    assert _defs(rows["servicenow"]["settings_schema"])["InstanceSettings"]["page_size"]["description"]
