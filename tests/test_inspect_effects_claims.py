"""``inspect`` tells a source's claim about a tool's effects as a claim: an upstream tool that only
says ``readOnlyHint: true`` (or ``destructiveHint: false``), or an OpenAPI operation whose method
suggests ``additive`` (POST), is shown ``unknown (... claims ...)``, since nothing in this process
checks what the remote does. The operator's own ``effects`` setting, and ``destructive`` (the
worst case, assumed), are shown as they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import mcp_types as types
import pytest
from rich.console import Console

import mcp_providers.plugins.openapi as openapi_plugin
import mcp_providers.plugins.upstream as upstream
from mcp_providers._cli.explore import INSPECT_SCHEMA, inventory, print_inventory
from mcp_providers.plugins.upstream import built
from mcp_providers.testing import compose

OBJECT = {"type": "object"}
PETSTORE = Path(__file__).parent / "openapi" / "data" / "petstore.json"


def _tool(name: str, **hints: bool) -> types.Tool:
    annotations = types.ToolAnnotations(**hints) if hints else None
    return types.Tool(name=name, input_schema=OBJECT, annotations=annotations)


def _shown(document: dict[str, Any]) -> dict[str, str]:
    """Each tool's effects cell as ``inspect`` prints it."""
    console = Console(record=True, width=400)
    print_inventory(console, document)
    text = console.export_text()
    rows = {}
    for tool in document["tools"]:
        line = next(li for li in text.splitlines() if f"│ {tool['name']} " in li)
        rows[tool["name"]] = line.split("│")[2].strip()
    return rows


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    listing = {
        "tools": [
            _tool("reads", read_only_hint=True),
            _tool("adds", destructive_hint=False),
            _tool("bare"),
            _tool("trusted"),
        ]
    }
    monkeypatch.setattr(built, "list_at_start", lambda servers: {s.name: listing for s in servers})
    return listing


def test_an_upstream_hint_is_shown_as_a_claim_and_the_operators_word_as_it_is(listed: dict[str, Any]) -> None:
    server = {"name": "remote", "command": "x", "prefixes": ["remote://"], "effects": {"trusted": "none"}}
    document = inventory(compose({"upstream": upstream}, {"upstream": {"servers": [server]}}))
    jsonschema.validate(document, INSPECT_SCHEMA)
    tools = {t["name"]: t for t in document["tools"]}
    assert tools["reads"]["effects"] == "none"  # what the server serves and scopes by is unchanged
    assert tools["reads"]["effectsClaim"] == "upstream 'remote' claims read-only (readOnlyHint: true)"
    assert tools["adds"]["effectsClaim"] == "upstream 'remote' claims not destructive (destructiveHint: false)"
    assert tools["bare"]["effectsClaim"] is None and tools["trusted"]["effectsClaim"] is None
    assert _shown(document) == {
        "reads": "unknown (upstream 'remote' claims read-only (readOnlyHint: true); served as none)",
        "adds": "unknown (upstream 'remote' claims not destructive (destructiveHint: false); served as additive)",
        "bare": "destructive",
        "trusted": "none",
    }


def test_an_openapi_method_is_shown_as_a_claim_unless_the_operator_set_the_effects() -> None:
    service = {"name": "petstore", "document": str(PETSTORE), "base_url": "http://127.0.0.1:9/v2"}
    service["effects"] = {"createUser": "additive"}
    document = inventory(compose({"openapi": openapi_plugin}, {"openapi": {"services": [service]}}))
    jsonschema.validate(document, INSPECT_SCHEMA)
    tools = {t["name"]: t for t in document["tools"]}
    assert tools["petstore_addPet"]["effects"] == "additive"
    claim = "method POST, taken as additive (what the service does is not checked)"
    assert tools["petstore_addPet"]["effectsClaim"] == claim
    shown = _shown(document)
    assert shown["petstore_addPet"].startswith("unknown (method POST, taken as additive"), shown
    assert shown["petstore_deletePet"] == "destructive" and shown["petstore_createUser"] == "additive", shown
