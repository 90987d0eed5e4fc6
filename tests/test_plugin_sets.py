"""Plugin selection: named sets, allow/deny, the environment overrides, and the reasons shown.

The installed built-in plugins (ssg_catalog, workflows, config_templates, servicenow, ...) are the
subjects, found through their entry points exactly as an operator's would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import no_serving, run_cli
from mcp import Client, StdioServerParameters
from prefork import python

from mcp_providers import compose
from mcp_providers.config import load_config
from mcp_providers.errors import ConfigError

pytestmark = pytest.mark.anyio

SETS = """
set = "docs"

[sets.docs]
plugins = ["ssg_catalog", "workflows"]
description = "documentation resources"

[sets.snow]
plugins = ["servicenow"]

[sets.typo]
plugins = ["ssg_catalog", "not_installed_plugin"]
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(SETS)
    return path


def _selection(path: Path, *, extra: str = "", plugin_set: str | None = None, **environ: str) -> dict[str, str]:
    if extra:
        path.write_text(extra + "\n" + path.read_text())
    config = load_config(path, plugin_set=plugin_set, environ=environ)
    return {r.name: r.selection for r in compose(config).records}


def _on(selection: dict[str, str]) -> set[str]:
    return {name for name, why in selection.items() if why.startswith("on:")}


def test_the_files_set_serves_only_its_plugins(config_file: Path) -> None:
    selection = _selection(config_file)
    assert _on(selection) == {"ssg_catalog", "workflows"}
    assert selection["ssg_catalog"] == "on: in plugin set 'docs'"
    assert selection["servicenow"] == "off: not in plugin set 'docs' (ssg_catalog, workflows)"


def test_set_option_overrides_the_files_set(config_file: Path) -> None:
    selection = _selection(config_file, plugin_set="snow")
    assert _on(selection) == {"servicenow"}
    assert selection["ssg_catalog"] == "off: not in plugin set 'snow' (servicenow)"


def test_set_and_allow_must_both_name_a_plugin(config_file: Path) -> None:
    selection = _selection(config_file, extra='allow = ["workflows", "servicenow"]')
    assert _on(selection) == {"workflows"}
    assert selection["workflows"] == "on: in plugin set 'docs' and in the config's allow list"
    assert selection["ssg_catalog"].startswith("off: not in the config's allow list")
    assert selection["servicenow"].startswith("off: not in plugin set 'docs'")


def test_deny_wins_over_the_set(config_file: Path) -> None:
    selection = _selection(config_file, extra='deny = ["workflows"]')
    assert _on(selection) == {"ssg_catalog"}
    assert selection["workflows"] == "off: in the config's deny list"


def test_env_plugins_replaces_the_set_and_allow(config_file: Path) -> None:
    selection = _selection(
        config_file, extra='allow = ["ssg_catalog"]', MCP_PROVIDERS_PLUGINS="servicenow, config_templates"
    )
    assert _on(selection) == {"servicenow", "config_templates"}
    assert selection["servicenow"] == "on: listed in $MCP_PROVIDERS_PLUGINS"
    assert selection["ssg_catalog"] == "off: not listed in $MCP_PROVIDERS_PLUGINS (servicenow, config_templates)"


def test_env_disable_wins_over_everything(config_file: Path) -> None:
    selection = _selection(
        config_file, MCP_PROVIDERS_PLUGINS="ssg_catalog,workflows", MCP_PROVIDERS_DISABLE="workflows"
    )
    assert _on(selection) == {"ssg_catalog"}
    assert selection["workflows"] == "off: listed in $MCP_PROVIDERS_DISABLE"


def test_no_selection_serves_every_installed_plugin(tmp_path: Path) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("")
    selection = _selection(path)
    assert {"ssg_catalog", "workflows", "servicenow"} <= _on(selection)
    assert selection["ssg_catalog"] == "on: every installed plugin (no set, allow list or override)"


def test_a_set_naming_a_plugin_that_is_not_installed_is_an_error(config_file: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"plugin set 'typo' names plugin\(s\) that are not installed: not_installed_plugin; installed: ",
    ):
        compose(load_config(config_file, plugin_set="typo", environ={}))


def test_an_unknown_set_is_an_error_listing_the_sets(config_file: Path) -> None:
    with pytest.raises(ConfigError, match=r"no plugin set 'nope' in the config; sets: docs, snow, typo"):
        compose(load_config(config_file, plugin_set="nope", environ={}))


@pytest.mark.parametrize("variable", ["MCP_PROVIDERS_PLUGINS", "MCP_PROVIDERS_DISABLE"])
def test_an_override_naming_a_plugin_that_is_not_installed_is_an_error(config_file: Path, variable: str) -> None:
    config = load_config(config_file, environ={variable: "ssg_catalog,ghost"})
    with pytest.raises(ConfigError, match=rf"\${variable} names plugin\(s\) that are not installed: ghost"):
        compose(config)


def test_the_file_may_not_set_the_environment_fields(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('env_plugins = ["ssg_catalog"]\n')
    with pytest.raises(ConfigError, match=r"env_plugins comes from \$MCP_PROVIDERS_PLUGINS; use allow/deny or a set"):
        load_config(path, environ={})


def test_a_set_without_plugins_is_a_clear_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[sets.docs]\ndescription = "no plugins key"\n')
    with pytest.raises(ConfigError, match=r"config.sets.docs.plugins: Field required"):
        load_config(path, environ={})


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    full_env.update(env or {})
    return subprocess.run(
        [*python(), "-m", "mcp_providers", *args], capture_output=True, text=True, timeout=120, env=full_env
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--set", "typo"], {}, "plugin set 'typo' names plugin(s) that are not installed: not_installed_plugin"),
        (["--set", "nope"], {}, "no plugin set 'nope' in the config; sets: docs, snow, typo"),
        (
            [],
            {"MCP_PROVIDERS_PLUGINS": "ghost"},
            "$MCP_PROVIDERS_PLUGINS names plugin(s) that are not installed: ghost",
        ),
    ],
    ids=["set-names-missing-plugin", "unknown-set", "env-names-missing-plugin"],
)
@pytest.mark.parametrize("command", ["plugins", "check", "serve"])
def test_cli_exits_1_with_the_error(
    config_file: Path, command: str, args: list[str], env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process (cli_support): the error comes from reading the config, before anything is served.
    no_serving(monkeypatch)
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("MCP_PROVIDERS_")}
    run = run_cli(command, "--config", str(config_file), *args, env={**unset, **env})
    assert run.returncode == 1, run.stdout + run.stderr
    assert message in " ".join(run.stderr.split())


@pytest.mark.slow
def test_plugins_json_shows_why_and_the_settings_schema(config_file: Path) -> None:
    run = _cli("plugins", "--config", str(config_file), "--set", "snow", "--json", "--settings")
    assert run.returncode == 0, run.stderr
    rows = {row["name"]: row for row in json.loads(run.stdout)["plugins"]}
    assert rows["servicenow"]["selection"] == "on: in plugin set 'snow'"
    schema = rows["servicenow"]["settings_schema"]
    assert schema["type"] == "object" and "properties" in schema
    assert rows["ssg_catalog"]["status"] == "disabled"
    assert rows["ssg_catalog"]["selection"] == "off: not in plugin set 'snow' (servicenow)"
    assert rows["ssg_catalog"]["settings_schema"] is None


@pytest.mark.slow
def test_plugins_table_shows_the_rule(config_file: Path) -> None:
    run = _cli("plugins", "--config", str(config_file), "--settings", env={"COLUMNS": "250"})
    assert run.returncode == 0, run.stderr
    assert "on: in plugin set 'docs'" in run.stdout
    assert "off: not in plugin set 'docs' (ssg_catalog, workflows)" in run.stdout
    assert "settings of servicenow ([plugins.servicenow]):" in run.stdout


@pytest.mark.slow
async def test_serve_with_a_set_serves_only_that_set(config_file: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=[*python()[1:], "-m", "mcp_providers", "serve", "--config", str(config_file), "--set", "docs"],
        env=env,
    )
    async with Client(params, cache=None) as client:
        uris = [r.uri for r in (await client.list_resources()).resources]
        served = ("documcp://ssgs/", "documcp://workflows/", "skill://documcp/workflows/")  # workflows' skills too
        assert uris and all(u.startswith(served) for u in uris)
        tools = [t.name for t in (await client.list_tools()).tools]
        assert not any(name.startswith("servicenow") for name in tools)


def test_a_plugin_both_allowed_and_denied_is_named_when_nothing_is_served(tmp_path: Path) -> None:
    """Tester seventeen: ``allow = ["workflows", "policy"]`` with ``deny = ["workflows"]`` said only
    "nothing is served"; the line now names the plugin the selection asked for and why it is off."""
    config = tmp_path / "both.toml"
    config.write_text('allow = ["workflows", "policy"]\ndeny = ["workflows"]\n', encoding="utf-8")
    checked = run_cli("check", "-c", str(config))
    said = checked.stdout + checked.stderr
    assert checked.returncode == 1, said
    assert "nothing is served" in said
    assert "workflows off: in the config's deny list (and in the config's allow list: deny wins)" in said
    assert "ssg_catalog off" not in said  # the plugins nothing asked for are not listed
