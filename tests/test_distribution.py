"""An installed distribution with one good plugin and one broken plugin per check.

`check` must print one line per problem and exit 1; `serve` must keep serving the good plugins;
`serve --strict` must refuse to start.
"""

from __future__ import annotations

import subprocess
import sys

import mcp_types as types
import pytest
from cli_support import run_cli
from mcp import Client, StdioServerParameters
from prefork import python

from mcp_providers import compose
from mcp_providers.config import Config

pytestmark = pytest.mark.anyio

# plugin -> (status, what its reason or problem line must say)
EXPECTED = {
    "broken_import": "import failed: ModuleNotFoundError",
    "bad_signature": "hook signature does not match the hookspec",
    "raising_hook": "hook register_resource_providers raised RuntimeError: the backend is not configured",
    "relative_uri": "uri-not-absolute: 'relative/path'",
    "uri_is_template": "uri-is-template: 'tpl://items/{id}'",
    "adjacent_variables": "template-invalid: 'adj://{a}{b}'",
    "no_prefix": "no-owned-prefix: 'no-prefix'",
    "outside_prefix": "outside-prefix: 'theirs://x'",
    "overlap_outer": "prefix-overlap: 'ovl://inner/ ~ ovl://'",
    "overlap_inner": "prefix-overlap: 'ovl://inner/ ~ ovl://'",
    "duplicate_uri_a": "duplicate-uri: 'dup://same'",
    "duplicate_uri_b": "duplicate-uri: 'dup://same'",
    "shadow_template": "uri-shadowed-by-template: 'shd://fixed/x'",
    "shadow_fixed": "uri-shadowed-by-template: 'shd://fixed/x'",
    "duplicate_tool_a": "duplicate-tool: 'duplicate_tool'",
    "duplicate_tool_b": "duplicate-tool: 'duplicate_tool'",
    "duplicate_prompt_a": "duplicate-prompt: 'duplicate_prompt'",
    "duplicate_prompt_b": "duplicate-prompt: 'duplicate_prompt'",
    "side_effect": "resource-declares-side-effect: 'fx://counter'",
}


def test_every_broken_plugin_is_rejected_and_the_good_ones_load(with_test_plugins: dict[str, str]) -> None:
    composition = compose(Config())
    status = {r.name: r.status for r in composition.records}
    assert status["good"] == "loaded"
    assert status["ssg_catalog"] == "loaded"
    failures = "\n".join(composition.failures)
    for plugin, text in EXPECTED.items():
        assert status[plugin] == "rejected", plugin
        lines = [line for line in composition.failures if line.startswith(plugin) or f"+ {plugin}:" in line]
        assert any(text in line for line in lines), f"{plugin}: {text!r} not in:\n{failures}"
    served = {e.declaration.uri for e in composition.catalog.resources}
    assert "good://colours" in served and "documcp://ssgs/available" in served
    assert not served & {"relative/path", "dup://same", "ovl://a", "shd://fixed/x", "fx://counter"}


def test_check_prints_one_line_per_problem_and_exits_1(with_test_plugins: dict[str, str]) -> None:
    run = run_cli("check")  # in process (cli_support), the distribution on sys.path; serve below is a process
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[-1].startswith("check failed:")
    for plugin, text in EXPECTED.items():
        assert any(text in line for line in lines), f"{plugin}: {text!r} missing from check output:\n{run.stdout}"
    # Every problem line names the rule, the value and the fix.
    problem_lines = [line for line in lines if ": rejected: " not in line and not line.startswith("check failed")]
    assert problem_lines and all("fix:" in line for line in problem_lines)


async def test_serve_keeps_serving_the_good_plugins(with_test_plugins: dict[str, str]) -> None:
    # A plugin whose import failed could have carried an authorize hook, so serve refuses until the
    # operator leaves it out (test_policy_by_construction); every other fault is served around.
    env = dict(with_test_plugins, MCP_PROVIDERS_DISABLE="broken_import")
    params = StdioServerParameters(
        command=sys.executable, args=[*python()[1:], "-m", "mcp_providers", "serve"], env=env
    )
    async with Client(params, cache=None) as client:
        uris = [r.uri for r in (await client.list_resources()).resources]
        assert "good://colours" in uris and "documcp://ssgs/available" in uris
        assert "dup://same" not in uris
        read = await client.read_resource("good://colours/green")
        assert isinstance(read.contents[0], types.TextResourceContents)
        assert read.contents[0].text == "green is a colour"
        mixed = await client.call_tool("mix", {"a": "red", "b": "blue"})
        assert mixed.structured_content == {"mixed": "red-blue"}
        assert "duplicate_tool" not in [t.name for t in (await client.list_tools()).tools]


def test_serve_strict_refuses_to_start(with_test_plugins: dict[str, str]) -> None:
    run = subprocess.run(
        [*python(), "-m", "mcp_providers", "serve", "--strict"],
        env=with_test_plugins,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 1
    assert "refusing to start (--strict)" in run.stderr
    assert "broken_import: rejected: import failed" in run.stderr
    assert run.stdout == ""


def test_plugins_lists_found_loaded_and_rejected(with_test_plugins: dict[str, str]) -> None:
    import json

    run = subprocess.run(
        [*python(), "-m", "mcp_providers", "plugins", "--json"],
        env=with_test_plugins,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    rows = {row["name"]: row for row in json.loads(run.stdout)["plugins"]}
    assert rows["good"]["status"] == "loaded"
    assert rows["good"]["distribution"] == "mcp-providers-test-plugins"
    assert rows["good"]["providers"] == ["good-colours", "good-mixer", "good-greeting"]
    assert rows["broken_import"]["status"] == "rejected"
    assert "mcp_providers_test_plugins_missing_dependency" in rows["broken_import"]["reason"]
