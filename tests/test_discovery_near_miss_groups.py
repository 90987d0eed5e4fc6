"""A plugin declared in a near miss of the entry-point group (``mcp-providers``, ``mcp_provider``,
``MCP_Providers`` ...) was simply absent from ``plugins`` and ``check`` (tester twenty-one F4): both
now warn, naming the group found and the right one. ``serve`` is unchanged (it never scans for them)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import run_cli
from prefork import python

from mcp_providers._cli.near_groups import near_misses, right_group
from mcp_providers.hookspecs import POLICY_GROUP, PROJECT

SOURCE = """
from mcp_providers.plugin import Plugin

p = Plugin("NAME", prefixes=["SCHEME://"])


@p.resource("SCHEME://a")
def a() -> str:
    return "a"
"""


def _install(site: Path, name: str, group: str) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {name}:p\n")
    (site / f"{name}.py").write_text(SOURCE.replace("NAME", name).replace("SCHEME", name.replace("_", "-")))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    for key in [k for k in os.environ if k.startswith("MCP_PROVIDERS_")]:
        monkeypatch.delenv(key)
    yield root


@pytest.mark.parametrize(
    ("group", "right"),
    [
        ("mcp-providers", PROJECT),
        ("mcp_provider", PROJECT),
        ("mcp-provider", PROJECT),
        ("MCP_Providers", PROJECT),
        ("mcpproviders", PROJECT),
        ("mcp_providers.plugins", PROJECT),
        ("mcp_provders", PROJECT),
        ("mcp-providers.policy", POLICY_GROUP),
        ("mcp_providers_policies", POLICY_GROUP),
    ],
)
def test_a_near_miss_group_is_told_the_right_one(group: str, right: str) -> None:
    assert right_group(group) == right


@pytest.mark.parametrize("group", [PROJECT, POLICY_GROUP, "console_scripts", "pytest11", "mcp", "mcp_servers", "mcpx"])
def test_exact_and_unrelated_groups_are_not_near_misses(group: str) -> None:
    assert right_group(group) is None


def test_near_misses_name_the_distribution_the_group_and_the_right_one(site: Path) -> None:
    _install(site, "t21ng_a", "mcp-providers")
    _install(site, "t21ng_b", "MCP_Provider")
    _install(site, "t21ng_ok", PROJECT)
    found = [str(p) for p in near_misses() if p.plugins[0].startswith("t21ng")]
    assert len(found) == 2, found
    assert found[0].startswith("t21ng_a 0.1: entry-point-group-near-miss: 'mcp-providers': entry point t21ng_a")
    assert all("which mcp-providers does not read" in f and f'[project.entry-points."{PROJECT}"]' in f for f in found)


def test_check_and_plugins_warn_and_the_other_plugins_serve(site: Path) -> None:
    _install(site, "t21ng_c", "mcp-providers")
    _install(site, "t21ng_ok2", PROJECT)
    checked = run_cli("check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    line = next(x for x in checked.stdout.splitlines() if "t21ng_c" in x)
    assert line.startswith("warning: t21ng_c 0.1: entry-point-group-near-miss: 'mcp-providers'"), line
    listed = run_cli("plugins")
    assert "t21ng_ok2" in listed.stdout and "warning: t21ng_c 0.1: entry-point-group-near-miss" in listed.stdout


def test_plugins_json_lists_a_near_miss_under_warnings(site: Path) -> None:
    _install(site, "t21ng_j", "mcp_provider")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    command = [*python(), "-m", "mcp_providers", "plugins", "--json"]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, input="")
    assert run.returncode == 0, run.stderr[-600:]
    warned = [w for w in json.loads(run.stdout)["warnings"] if w.startswith("t21ng_j 0.1:")]
    assert len(warned) == 1 and "group 'mcp_provider'" in warned[0] and "'mcp_providers'" in warned[0], warned
