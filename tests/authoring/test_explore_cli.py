"""``mcp-providers inspect``, ``read`` and ``call`` against a config with plugin sets (issue 39,
must-show 3): their JSON is checked against a schema (``inspect``'s own, the MCP result types' for
``read`` and ``call``), the set decides what is listed, and a read or call goes through the gate
(a policy deny in the config holds for ``read``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import mcp_types as types
import pytest
from cli_support import run_cli
from prefork import python

from mcp_providers._cli.explore import INSPECT_SCHEMA, parse_arguments

CONFIG = """
set = "docs"

[sets.docs]
plugins = ["ssg_catalog", "workflows", "policy"]

[sets.sn]
plugins = ["servicenow"]

[plugins.policy]
rules = [{ effect = "deny", actions = ["read"], targets = ["documcp://ssgs/hugo"] }]
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "sets.toml"
    path.write_text(CONFIG)
    return path


def _json(*args: str) -> tuple[int, Any]:
    done = subprocess.run(
        [*python(), "-m", "mcp_providers", *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_inspect_lists_the_sets_plugins_with_their_origin(config: Path) -> None:
    code, document = _json("inspect", "--config", str(config), "--json")
    assert code == 0
    jsonschema.validate(document, INSPECT_SCHEMA)
    served = {item["plugin"] for kind in ("resources", "templates", "tools") for item in document[kind]}
    assert served == {"ssg_catalog", "workflows"}
    available = next(r for r in document["resources"] if r["uri"] == "documcp://ssgs/available")
    assert available == {
        "plugin": "ssg_catalog",
        "provider": "ssg-catalog",
        "uri": "documcp://ssgs/available",
        "name": "ssgs-available",
        "mimeType": "application/json",
        "description": available["description"],
    }
    assert {t["name"]: t["effects"] for t in document["tools"]} == {"recommend_ssg": "none", "generate_config": "none"}

    code, other = _json("inspect", "--config", str(config), "--set", "sn", "--json")
    assert {r["plugin"] for r in other["resources"]} == {"servicenow"}


def test_read_goes_through_the_pipeline_and_prints_the_result(config: Path) -> None:
    code, result = _json("read", "documcp://ssgs/available", "--config", str(config), "--json")
    assert code == 0
    jsonschema.validate(result, types.ReadResourceResult.model_json_schema(by_alias=True))
    receipt = result["_meta"]["io.mcp-providers/receipt"]
    assert receipt["provider"] == "ssg-catalog"
    assert json.loads(result["contents"][0]["text"])

    code, denied = _json("read", "documcp://ssgs/hugo", "--config", str(config), "--json")
    assert code == 1
    assert denied["error"]["code"] == -32003


def test_call_takes_arguments_and_prints_structured_output(config: Path) -> None:
    code, result = _json(
        "call", "recommend_ssg", "--args-json", '{"project_type": "docs"}', "--config", str(config), "--json"
    )
    jsonschema.validate(result, types.CallToolResult.model_json_schema(by_alias=True))
    assert code == (1 if result.get("isError") else 0)

    code, missing = _json("call", "no_such_tool", "--config", str(config), "--json")
    assert code == 1 and "error" in missing


def test_read_prints_a_panel_and_exits_1_on_an_error(config: Path) -> None:
    shown = run_cli("read", "documcp://ssgs/available", "--config", str(config))
    assert shown.returncode == 0, shown.stderr
    assert "documcp://ssgs/available" in shown.stdout
    refused = run_cli("read", "documcp://nothing/here", "--config", str(config))
    assert refused.returncode == 1
    assert "error -32602" in refused.stdout


def test_inspect_folds_long_names_instead_of_cutting_them(config: Path) -> None:
    shown = run_cli("inspect", "--config", str(config), env={"COLUMNS": "60"})
    assert shown.returncode == 0, shown.stderr
    assert "…" not in shown.stdout
    resources = shown.stdout.split("templates (")[0]
    first_column = "".join(line.split("│")[1].strip() for line in resources.splitlines() if line.startswith("│"))
    for uri in ("documcp://ssgs/available", "documcp://workflows/guidance", "documcp://workflows/full-setup"):
        assert uri in first_column, first_column


@pytest.mark.parametrize(
    ("pairs", "given", "expected"),
    [
        (["query=hugo", "limit=3"], None, {"query": "hugo", "limit": 3}),
        (["query=10"], None, {"query": "10"}),  # the schema says string: stays text
        ([], '{"a": [1, 2]}', {"a": [1, 2]}),
    ],
)
def test_arguments_follow_the_tools_schema(pairs: list[str], given: str | None, expected: dict[str, Any]) -> None:
    schema = {"properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}
    assert parse_arguments(pairs, given, schema) == expected


@pytest.mark.parametrize(
    ("pairs", "given", "said"),
    [
        (["novalue"], None, "KEY=VALUE"),
        ([], "[1]", "--args-json must be a JSON object"),
        ([], "{nope", "--args-json is not JSON"),
    ],
)
def test_malformed_arguments_are_refused_saying_what_is_right(pairs: list[str], given: str | None, said: str) -> None:
    with pytest.raises(ValueError, match=said):  # the option as the user typed it
        parse_arguments(pairs, given)
