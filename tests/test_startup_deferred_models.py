"""Models ``serve`` does not validate before its first answer are built at first use (issue 43,
fourth pass): pydantic's ``defer_build``. Checked by structure, never by a timing."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

# (module, class): sections and sub-models a bare `serve` leaves absent, and public models it never
# validates. A parent that is built (Config, ServerSettings, each plugin's settings) holds their schemas.
DEFERRED = (
    ("mcp_providers.config.audit", "FileSinkSettings"),
    ("mcp_providers.config.audit", "SyslogSinkSettings"),
    ("mcp_providers.config.audit", "WebhookSinkSettings"),
    ("mcp_providers.config.audit", "OtlpLogsSinkSettings"),
    ("mcp_providers.config.audit", "AuditSettings"),
    ("mcp_providers.config.auth", "TokenConfig"),
    ("mcp_providers.config.auth", "AuthConfig"),
    ("mcp_providers.config.cluster", "ClusterSettings"),
    ("mcp_providers.config.server", "AdminSettings"),
    ("mcp_providers.config.file", "PluginSet"),
    ("mcp_providers.models", "Annotations"),
    ("mcp_providers.models", "ExtensionMethod"),
    ("mcp_providers.models", "Extension"),
    ("mcp_providers.plugins._oauth", "ClientCredentialsAuth"),
    ("mcp_providers.plugins._oauth", "OnBehalfOfAuth"),
    ("mcp_providers.plugins.openapi.settings", "BearerAuth"),
    ("mcp_providers.plugins.openapi.settings", "BasicAuth"),
    ("mcp_providers.plugins.openapi.settings", "ApiKeyAuth"),
    ("mcp_providers.plugins.openapi.settings", "ServiceSettings"),
    ("mcp_providers.plugins.policy", "Rule"),
    ("mcp_providers.plugins.servicenow.auth_settings", "BasicAuth"),
    ("mcp_providers.plugins.servicenow.auth_settings", "OAuthAuth"),
    ("mcp_providers.plugins.servicenow.auth_settings", "ApiKeyAuth"),
    ("mcp_providers.plugins.servicenow.auth_settings", "JwtBearerAuth"),
    ("mcp_providers.plugins.servicenow.query", "Order"),
    ("mcp_providers.plugins.servicenow.settings", "InstanceSettings"),
    ("mcp_providers.plugins.upstream.settings", "BearerAuth"),
    ("mcp_providers.plugins.upstream.settings", "OnBehalfOfAuth"),
    ("mcp_providers.plugins.upstream.settings", "ServerSettings"),
    ("mcp_providers.plugins.documcp.config_templates", "DiataxisSection"),
    ("mcp_providers.plugins.documcp.tools", "Recommendation"),
    ("mcp_providers.plugins.documcp.workflows", "Step"),
)

SERVE_PATH = """
import importlib, json, sys
import mcp_providers._cli.stdio as stdio  # what a bare `serve` runs (mcp_providers.__main__)
composition = stdio.compose_checked(stdio.load(None), strict=False)
stdio.server_of(composition, strict=False)
stdio.reloads(composition, None, None, None)
built = [f"{m}.{n}" for m, n in %r if vars(getattr(importlib.import_module(m), n)).get("__pydantic_complete__")]
print(json.dumps({"served": [r.name for r in composition.records if r.status == "loaded"], "built": built}))
"""


def test_serve_builds_none_of_the_deferred_models(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    done = subprocess.run(
        [sys.executable, "-c", SERVE_PATH % (DEFERRED,)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"servicenow", "openapi", "upstream", "policy"} <= set(found["served"])  # really composed
    assert found["built"] == []


def _model(module: str, name: str) -> type[BaseModel]:
    model = getattr(importlib.import_module(module), name)
    assert isinstance(model, type) and issubclass(model, BaseModel)
    return model


def _outcome(model: type[BaseModel], data: object) -> object:
    """The errors refusing ``data`` (each message in full), or what it validated to."""
    try:
        return model.model_validate(data).model_dump()
    except ValidationError as exc:
        return exc.errors(include_url=False, include_context=False)  # ctx holds exception objects


@pytest.mark.parametrize(("module", "name"), DEFERRED)
def test_a_deferred_model_is_built_at_its_first_use_and_refuses_as_an_eager_one(module: str, name: str) -> None:
    model = _model(module, name)
    assert model.model_config.get("defer_build") is True
    eager = type(name, (model,), {"__module__": module, "model_config": ConfigDict(defer_build=False)})
    assert eager.__pydantic_complete__
    for data in ({}, {"no_such_key_anywhere": 1}, [], {"type": 1.5, "name": [], "url": 7}):
        assert _outcome(model, data) == _outcome(eager, data), data
    assert model.__pydantic_complete__
