"""Every kind of upstream composed beside the built-in plugins in ONE config (issue 40, must-show 1):
server-everything and server-filesystem (npm) and mcp-server-time (package index) as MCP upstreams
over stdio, and the Swagger Petstore (the vendored published document, run against the local server
of ``test_openapi_petstore.py``) as an OpenAPI service, with a policy denying upstream URIs.

- ``check`` passes, no upstream complaining; ``inspect --json`` (a real process) lists every
  component each upstream lists itself (each asked directly here, by an SDK client) with its origin;
- two upstreams on one prefix are refused by ``check``, which exits 1 naming both: two MCP servers
  (the upstream plugin's settings) and an MCP server on the OpenAPI service's prefix (across plugins);
- the policy's denies hold for list, read, template expansion and subscribe, in both eras.

What one upstream plugin does alone (mapping, receipts, restarts) is in ``tests/test_upstream_*.py``
and ``tests/openapi/test_openapi_*.py``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import mcp_types as types
import pytest
from cli_support import run_cli
from mcp import Client, MCPError, StdioServerParameters
from openapi_support import serving
from prefork import python
from real_parts import upstream_servers
from test_openapi_petstore import DOCUMENT, petstore

from mcp_providers import compose as compose_config
from mcp_providers._cli.explore import INSPECT_SCHEMA
from mcp_providers.config import load_config
from mcp_providers.errors import DENIED
from mcp_providers.testing import connect

pytestmark = pytest.mark.slow

STATIC = "demo://resource/static/document/"
DENIED_DOC = STATIC + "features.md"
DENIED_TEXT = "demo://resource/dynamic/text/13"
DENIED_TEMPLATE = "openapi://petstore/pet/{petId}"
ENV = {"MCP_PROVIDERS_CONFIG": None, "COLUMNS": "300"}
MCP_UPSTREAMS = {"everything": "ev_", "files": "fs_", "time": "time_"}
"""Configured name -> tool and prompt prefix of each MCP upstream."""
PLUGINS = (
    "config_templates",
    "documcp_prompts",
    "openapi",
    "policy",
    "servicenow",
    "ssg_catalog",
    "upstream",
    "workflows",
)
"""Every plugin loaded: documcp's four, servicenow and policy built in, and the two upstream plugins."""


def _upstreams(shared: Path) -> dict[str, list[str]]:
    """Configured name -> the MCP upstream's command and arguments."""
    servers = upstream_servers()
    return {
        "everything": [*servers["everything"], "stdio"],
        "files": [*servers["filesystem"], str(shared)],
        "time": servers["time"],
    }


def _table(name: str, argv: list[str], owns: str) -> str:
    return (
        f'[[plugins.upstream.servers]]\nname = "{name}"\ncommand = {json.dumps(argv[0])}\n'
        f"args = {json.dumps(argv[1:])}\n{owns}\ntool_prefix = {json.dumps(MCP_UPSTREAMS.get(name, 'x_'))}\n\n"
    )


def _petstore(origin: str) -> str:
    document = json.dumps(str(DOCUMENT))
    return f'[[plugins.openapi.services]]\nname = "petstore"\ndocument = {document}\nbase_url = "{origin}/v2"\n\n'


POLICY = f"""
[[plugins.policy.rules]]
effect = "deny"
actions = ["list", "read", "subscribe"]
targets = ["{DENIED_DOC}", "{DENIED_TEXT}"]
reason = "not for you"

[[plugins.policy.rules]]
effect = "deny"
actions = ["list", "expand"]
targets = ["{DENIED_TEMPLATE}"]
reason = "pets one by one are private"
"""


@pytest.fixture(scope="module")
def composed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, list[str]], str]]:
    """(the one config, each MCP upstream's command, the Petstore's origin)."""
    folder = tmp_path_factory.mktemp("composed")
    shared = folder / "shared"
    shared.mkdir()  # the folder server-filesystem may serve
    upstreams = _upstreams(shared)
    owns = {
        "everything": 'prefixes = ["demo://resource/"]',
        "files": 'namespace = "files"',
        "time": 'namespace = "clock"',
    }
    with serving(petstore()) as origin:
        config = folder / "mcp-providers.toml"
        text = "".join(_table(name, argv, owns[name]) for name, argv in upstreams.items())
        config.write_text(text + _petstore(origin) + POLICY, encoding="utf-8")
        yield config, upstreams, origin


async def _own_listing(argv: list[str]) -> dict[str, set[str]]:
    """What an MCP server lists itself, asked directly: ``{kind: {uri, template or name}}``, by a
    client announcing elicitation and sampling as mcp-providers' upstream client does (server-everything
    lists its tools that ask only to such a client); less its tools that run only as 2025-11-25 tasks."""

    async def refuse(context: Any, params: Any) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="only listing here")

    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(params, cache=None, elicitation_callback=refuse, sampling_callback=refuse) as client:
        caps = client.server_capabilities
        own: dict[str, set[str]] = {"resources": set(), "templates": set(), "tools": set(), "prompts": set()}
        if caps.resources is not None:
            own["resources"] = {r.uri for r in (await client.list_resources()).resources}
            own["templates"] = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        if caps.tools is not None:
            tools = (await client.list_tools()).tools
            # a 2025-11-25 tool that runs only as a task is left out, saying why (docs/upstreams.md, Tasks)
            own["tools"] = {t.name for t in tools if not (t.execution and t.execution.task_support == "required")}
        if caps.prompts is not None:
            own["prompts"] = {p.name for p in (await client.list_prompts()).prompts}
        return own


async def _own_listings(upstreams: dict[str, list[str]]) -> dict[str, dict[str, set[str]]]:
    found: dict[str, dict[str, set[str]]] = {}

    async def one(name: str) -> None:
        found[name] = await _own_listing(upstreams[name])

    async with anyio.create_task_group() as tg:
        for name in upstreams:
            tg.start_soon(one, name)
    return found


def _served(document: dict[str, Any], server: str) -> dict[str, set[str]]:
    """What ``inspect --json`` lists from the MCP upstream ``server``, by its own names, each
    checked to carry its origin (that upstream, over stdio) and, a tool or prompt, its tool prefix."""
    key = {"resources": "uri", "templates": "uri_template", "tools": "name", "prompts": "name"}
    served: dict[str, set[str]] = {kind: set() for kind in key}
    for kind in key:
        for item in document[kind]:
            origin = item.get("origin") or {}
            if origin.get("server") != server:
                continue
            assert item["plugin"] == "upstream" and item["provider"].startswith(f"upstream-{server}")
            assert origin["transport"] == "stdio"
            if kind in ("tools", "prompts"):
                assert item["name"] == MCP_UPSTREAMS[server] + origin["name"]
            served[kind].add(origin[key[kind]])
    return served


def test_check_passes_and_inspect_lists_every_upstream_component_with_its_origin(composed: Any) -> None:
    config, upstreams, _origin = composed
    inspecting = subprocess.Popen(  # a real process, its upstreams started while this one checks
        [*python(), "-m", "mcp_providers", "inspect", "--json", "-c", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        checked = run_cli("check", "-c", str(config), env=ENV)
        own = anyio.run(_own_listings, upstreams)
        out, errors = inspecting.communicate(timeout=120)
    finally:
        if inspecting.poll() is None:
            inspecting.kill()
            inspecting.communicate()
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "check passed: 8 plugins served" in checked.stdout
    assert "(stdio)" not in checked.stdout + checked.stderr  # no upstream complained (mcp-server-time refused listen)
    assert inspecting.returncode == 0, errors
    document = json.loads(out)
    jsonschema.validate(document, INSPECT_SCHEMA)
    assert {p["name"]: p["status"] for p in document["plugins"]} == dict.fromkeys(PLUGINS, "loaded")
    for name in upstreams:
        assert _served(document, name) == own[name], name
    assert own["time"]["tools"] and own["files"]["tools"] and own["everything"]["prompts"]
    assert own["everything"]["resources"] and own["everything"]["templates"]  # nothing vacuous
    petstore_items = [
        i for kind in ("resources", "templates", "tools") for i in document[kind] if i["plugin"] == "openapi"
    ]
    assert petstore_items and all(i["origin"]["document"] == "Swagger Petstore 1.0.0" for i in petstore_items)
    built_in = [i for i in document["resources"] if i["plugin"] in {"ssg_catalog", "workflows", "servicenow"}]
    assert built_in and not any(i.get("origin") for i in built_in)  # written here: no origin elsewhere


def test_check_leaves_out_two_upstreams_on_one_prefix_and_an_upstream_on_a_services(
    composed: Any, tmp_path: Path
) -> None:
    config, upstreams, origin = composed
    twice = tmp_path / "twice.toml"
    again = _table("again", upstreams["everything"], 'prefixes = ["demo://resource/static/"]')
    twice.write_text(config.read_text() + again, encoding="utf-8")
    left = run_cli("check", "-c", str(twice), env=ENV)  # the two servers are left out, the rest is served
    said = left.stdout + left.stderr
    assert left.returncode == 0, said
    assert "[plugins.upstream] servers \"again\" prefixes: 'demo://resource/static/' overlaps" in said
    assert "[plugins.upstream] servers \"everything\" prefixes: 'demo://resource/' overlaps" in said
    # an MCP server on the OpenAPI service's prefix (it never starts: the prefix alone collides):
    # two configured sources, neither outranks the other, so both are left out and the rest serves
    across = tmp_path / "across.toml"
    shadow = _table("shadow", [str(tmp_path / "absent")], 'prefixes = ["openapi://petstore/"]')
    across.write_text(_petstore(origin) + shadow, encoding="utf-8")
    checked = run_cli("check", "-c", str(across), env=ENV)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said = checked.stdout + checked.stderr
    assert "prefix-overlap: [plugins.openapi] services \"petstore\" prefix: 'openapi://petstore/' overlaps" in said
    assert "prefix-overlap: [plugins.upstream] servers \"shadow\" prefixes: 'openapi://petstore/' overlaps" in said


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # 2025 subscribe
async def test_the_policys_denies_on_upstream_uris_hold_for_list_read_expansion_and_subscribe(composed: Any) -> None:
    config, _upstreams, _origin = composed
    composition = compose_config(load_config(config))
    async with composition.running(), connect(composition, "legacy") as legacy, connect(composition) as modern:
        for client in (legacy, modern):
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            assert STATIC + "architecture.md" in listed and DENIED_DOC not in listed
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert "demo://resource/dynamic/text/{resourceId}" in templates and DENIED_TEMPLATE not in templates
            for uri in (DENIED_DOC, DENIED_TEXT, "openapi://petstore/pet/7"):
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(uri)
                assert refused.value.code == DENIED, uri
            assert (await client.read_resource("demo://resource/dynamic/text/12")).contents[0].text
            assert (await client.read_resource("openapi://petstore/pet/findByStatus?status=available")).contents
        with pytest.raises(MCPError) as refused:
            await legacy.subscribe_resource(DENIED_DOC)
        assert refused.value.code == DENIED
        with pytest.raises(MCPError) as refused:  # a 2026-07-28 listen naming it is refused whole
            async with modern.listen(resource_subscriptions=[STATIC + "architecture.md", DENIED_DOC]):
                pass
        assert refused.value.code == DENIED
