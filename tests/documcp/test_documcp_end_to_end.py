"""Issue 3's "Must show" items, through real MCP clients.

In-memory clients cover both protocol eras (the ``client`` fixture); a stdio client runs against
``mcp-providers serve`` in a subprocess, discovering the plugins through their entry points.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import mcp_types as types
import pytest
import yaml
from cli_support import run_cli
from documcp_support import DOCUMCP_PLUGINS, node_check, read_text
from mcp import Client, MCPError, StdioServerParameters
from prefork import python, start_up_settings

from mcp_providers.plugins.documcp.registry import SSG_IDS
from mcp_providers.plugins.documcp.workflows import ALIASES, WORKFLOW_IDS

pytestmark = pytest.mark.anyio

BAD_URIS = (
    "documcp://templates/unknown-config",
    # DocuMCP routed by the last path segment, so this served the Jekyll template.
    "documcp://templates/x/jekyll-config",
    "documcp://workflows/nope",
)


async def _listed(client: Client) -> list[types.Resource]:
    """Every ``documcp://`` resource, across all pages (other plugins may be installed too)."""
    resources, cursor = [], None
    while True:
        page = await client.list_resources(cursor=cursor)
        resources += [r for r in page.resources if r.uri.startswith("documcp://")]
        cursor = page.next_cursor
        if cursor is None:
            return resources


async def _every_listed_resource_reads(client: Client) -> list[str]:
    listed = await _listed(client)
    uris = [r.uri for r in listed]
    for resource in listed:
        item = await read_text(client, resource.uri)
        assert item.text.strip(), f"{resource.uri} read empty"
        assert item.mime_type == resource.mime_type
        if resource.size is not None:
            assert len(item.text.encode()) == resource.size, resource.uri
    return uris


async def _completions(client: Client) -> dict[str, list[str]]:
    """Each template's variable -> values completed from an empty prefix."""
    templates = (await client.list_resource_templates()).resource_templates
    found = {}
    for template in templates:
        if not template.uri_template.startswith("documcp://"):
            continue
        (variable,) = re.findall(r"\{([A-Za-z_]+)\}", template.uri_template)
        ref = types.ResourceTemplateReference(type="ref/resource", uri=template.uri_template)
        result = await client.complete(ref, {"name": variable, "value": ""})
        found[template.uri_template] = list(result.completion.values)
    return found


async def _bad_uris_are_invalid_params(client: Client) -> None:
    for uri in BAD_URIS:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
        assert caught.value.code == types.INVALID_PARAMS, uri
        assert caught.value.data == {"uri": uri}


async def test_every_listed_resource_reads(client: Client) -> None:
    uris = await _every_listed_resource_reads(client)
    expected = {f"documcp://templates/{i}-config" for i in SSG_IDS} | {
        "documcp://templates/diataxis-structure",
        "documcp://ssgs/available",
        "documcp://workflows/all",
        "documcp://workflows/guidance",
        "documcp://workflows/quick-setup",
        "documcp://workflows/full-setup",
    }
    assert set(uris) == expected
    assert len(uris) == len(expected)


async def test_every_template_completes_to_the_registry_ids(client: Client) -> None:
    assert await _completions(client) == {
        "documcp://ssgs/{ssg}": list(SSG_IDS),
        "documcp://workflows/{workflowId}": list(WORKFLOW_IDS),
    }
    # Every completed value names something readable through its template.
    for ssg in SSG_IDS:
        assert json.loads((await read_text(client, f"documcp://ssgs/{ssg}")).text)["id"] == ssg
    for workflow in WORKFLOW_IDS:
        assert json.loads((await read_text(client, f"documcp://workflows/{workflow}")).text)["id"] == workflow


async def test_completion_filters_by_prefix(client: Client) -> None:
    ref = types.ResourceTemplateReference(type="ref/resource", uri="documcp://workflows/{workflowId}")
    result = await client.complete(ref, {"name": "workflowId", "value": "d"})
    assert result.completion.values == [w for w in WORKFLOW_IDS if w.startswith("d")]
    assert result.completion.values  # deployment-only and documentation-audit


async def test_unknown_uris_get_invalid_params(client: Client) -> None:
    await _bad_uris_are_invalid_params(client)


async def test_every_config_template_is_valid_in_its_own_format(client: Client, tmp_path: Path) -> None:
    for ssg in SSG_IDS:
        item = await read_text(client, f"documcp://templates/{ssg}-config")
        if item.mime_type == "application/yaml":
            assert isinstance(yaml.safe_load(item.text), dict), ssg
        elif item.mime_type == "application/toml":
            assert tomllib.loads(item.text), ssg
        elif item.mime_type == "text/javascript":
            checked = node_check(item.text, tmp_path, module="export default" in item.text)
            assert checked.returncode == 0, f"{ssg}: {checked.stderr}"
        else:
            pytest.fail(f"{ssg}: unexpected MIME type {item.mime_type!r}")
    structure = json.loads((await read_text(client, "documcp://templates/diataxis-structure")).text)
    assert set(structure["structure"]) == {"tutorials", "how-to-guides", "reference", "explanation"}


async def test_catalog_templates_completions_and_tool_enums_list_the_same_ids(client: Client) -> None:
    catalog = [s["id"] for s in json.loads((await read_text(client, "documcp://ssgs/available")).text)["ssgs"]]
    templated = [
        r.uri.removeprefix("documcp://templates/").removesuffix("-config")
        for r in await _listed(client)
        if r.uri.endswith("-config")
    ]
    completed = (await _completions(client))["documcp://ssgs/{ssg}"]
    tools = {t.name: t for t in (await client.list_tools()).tools}
    generate_enum = tools["generate_config"].input_schema["properties"]["ssg"]["enum"]
    recommend_schema = tools["recommend_ssg"].output_schema
    assert recommend_schema is not None
    recommend_enum = recommend_schema["properties"]["recommended"]["enum"]
    prompt_ref = types.PromptReference(type="ref/prompt", name="setup-documentation")
    prompt_completion = await client.complete(prompt_ref, {"name": "ssg_type", "value": ""})
    prompt_completed = prompt_completion.completion.values

    lists = {
        "catalog": catalog,
        "templates": templated,
        "template completion": completed,
        "generate_config enum": generate_enum,
        "recommend_ssg enum": recommend_enum,
        "prompt completion": prompt_completed,
    }
    assert all(ids == catalog for ids in lists.values()), lists
    assert set(catalog) >= {"jekyll", "hugo", "docusaurus", "mkdocs", "eleventy", "astro", "vitepress"}


async def test_stdio_client_against_mcp_providers_serve() -> None:
    """The installed entry points, served by the real CLI over stdio."""
    params = StdioServerParameters(
        command=sys.executable, args=[*python()[1:], "-m", "mcp_providers", "serve"], env=start_up_settings()
    )
    async with Client(params, cache=None) as client:
        uris = await _every_listed_resource_reads(client)
        assert {f"documcp://templates/{i}-config" for i in SSG_IDS} <= set(uris)
        completions = await _completions(client)
        assert completions["documcp://ssgs/{ssg}"] == list(SSG_IDS)
        assert completions["documcp://workflows/{workflowId}"] == list(WORKFLOW_IDS)
        await _bad_uris_are_invalid_params(client)


def test_mcp_providers_check_passes_for_the_documentation_plugins_alone(tmp_path: Path) -> None:
    config = tmp_path / "documcp.toml"
    config.write_text(f"allow = {json.dumps(list(DOCUMCP_PLUGINS))}\n", encoding="utf-8")
    done = run_cli("check", "--config", str(config))  # in process (cli_support); serve above is a process
    assert done.returncode == 0, done.stdout + done.stderr
    resources = len(SSG_IDS) + 1 + 1 + 2 + len(ALIASES)  # templates, diataxis, available, all/guidance, aliases
    # each workflow's skill: SKILL.md and workflow.json; full setup has every config template and the Diataxis
    # structure, quick setup the structure
    resources += 2 * len(WORKFLOW_IDS) + len(SSG_IDS) + 1 + 1
    assert f"check passed: {len(DOCUMCP_PLUGINS)} plugins served, {resources} resources, 2 templates" in done.stdout
    assert done.stdout.rstrip().endswith(f", {len(WORKFLOW_IDS)} skills")


def test_mcp_providers_check_passes() -> None:
    """``mcp-providers check``: every declaration passes, and static resources read the same twice."""
    done = run_cli("check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check passed" in done.stdout
