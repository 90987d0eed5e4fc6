"""With no instance configured the ServiceNow plugin serves ``servicenow://instances`` and
``servicenow://tables`` and imports none of what only an instance needs (issue 43, fifth pass):
the tools' models and calls (:mod:`.tool_calls`), an instance's reads (:mod:`.reads`), its client
(:mod:`.connect`, :mod:`.instance`, the OAuth flow, the JWT bearer grant), the query builder and
polling (:mod:`.live`). The first instance imports them; what is served is unchanged either way."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mcp_providers.plugins import servicenow
from mcp_providers.plugins.servicenow import tool_calls, tools
from mcp_providers.plugins.servicenow.backoff import LocalBackoff
from mcp_providers.plugins.servicenow.live import SharedBackoff
from mcp_providers.plugins.servicenow.settings import ServiceNowSettings

INSTANCE_ONLY = ("tool_calls", "reads", "connect", "instance", "jwt_bearer", "oauth", "paging", "live", "query",
                 "schema", "seed")  # fmt: skip

UNCONFIGURED = """
import json, sys
from mcp_providers.plugins import servicenow as sn
settings = sn.ServiceNowSettings()
providers = [*sn.register_resource_providers(settings), *sn.register_tool_providers(settings),
             *sn.register_prompt_providers(settings)]
import anyio
async def serve_once():  # what serving does with each before and after its requests
    for provider in providers:
        async with provider.lifespan():
            pass
anyio.run(serve_once)
print(json.dumps({"providers": [type(p).__name__ for p in providers],
                  "imported": sorted(m.rsplit(".", 1)[1] for m in sys.modules
                                     if m.startswith("mcp_providers.plugins.servicenow."))}))
"""


def test_no_instance_imports_nothing_only_an_instance_needs() -> None:
    done = subprocess.run([sys.executable, "-c", UNCONFIGURED], capture_output=True, text=True, check=True, timeout=120)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["providers"] == ["ServiceNowResources", "ServiceNowTools", "ServiceNowPrompts"]
    assert set(found["imported"]) & set(INSTANCE_ONLY) == set()
    assert {"resources", "tools", "prompts", "client", "settings"} <= set(found["imported"])


@pytest.mark.anyio
async def test_no_instance_serves_the_two_resources_and_declares_nothing_else() -> None:
    settings = ServiceNowSettings()
    (resources,) = servicenow.register_resource_providers(settings)
    (tool_provider,) = servicenow.register_tool_providers(settings)
    (prompts,) = servicenow.register_prompt_providers(settings)
    assert [r.uri for r in resources.resources()] == ["servicenow://instances", "servicenow://tables"]
    assert (resources.templates(), tool_provider.tools(), prompts.prompts()) == ([], [], [])
    assert isinstance(settings.pool().backoff, LocalBackoff)  # nothing to share a back-off for
    for provider in (resources, tool_provider, prompts):
        async with provider.lifespan():
            pass


def test_an_instance_declares_the_tools_and_shares_its_back_off() -> None:
    instance = {"name": "dev", "url": "https://dev.example.com",
                "auth": {"type": "basic", "username": "u", "password_env": "SN_TEST_UNSET"}}  # fmt: skip
    settings = ServiceNowSettings.model_validate({"instances": [instance]})
    (resources,) = servicenow.register_resource_providers(settings)
    (tool_provider,) = servicenow.register_tool_providers(settings)
    assert isinstance(settings.pool().backoff, SharedBackoff)
    assert [t.name for t in tool_provider.tools()] == [t.name for t in tool_calls.declared()]
    assert len(tool_provider.tools()) == 6 and len(resources.templates()) == 7


def test_the_tools_models_keep_their_old_names() -> None:
    for name in ("QueryTableIn", "QueryTableOut", "GetRecordIn", "RecordOut", "CreateIncidentIn", "UpdateRecordIn",
                 "AddCommentIn", "CommentOut", "ResolveIncidentIn", "record_uri"):  # fmt: skip
        assert getattr(tools, name) is getattr(tool_calls, name)
    with pytest.raises(AttributeError, match="has no attribute 'authorize'"):
        tools.authorize  # noqa: B018
