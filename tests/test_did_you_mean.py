"""A misspelt config key, plugin name or set name keeps its error and gains a "did you mean"."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import run_cli
from pydantic import BaseModel, ConfigDict

from mcp_providers import compose, load_config
from mcp_providers.config import Config, ServerSettings, format_validation_error
from mcp_providers.config import load_config as load
from mcp_providers.errors import ConfigError


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load(path)
    return str(raised.value)


KEYS = {
    "top-level": (
        "alow = []\n",
        "config.alow: Extra inputs are not permitted (value hidden: an unknown key may be "
        'a mistyped secret); did you mean "allow"?',
    ),
    "server": (
        "[server]\npage_sise = 5\n",
        "config.server.page_sise: Extra inputs are not permitted (value hidden: "
        'an unknown key may be a mistyped secret); did you mean "page_size"?',
    ),
    "server.limits": (
        "[server.limits]\ncals = 5\n",
        "config.server.limits.cals: Extra inputs are not permitted "
        '(value hidden: an unknown key may be a mistyped secret); did you mean "calls"?',
    ),
    "server.auth": (
        '[server.auth]\nmode = "jwt"\nissuer = "https://idp.example.com"\naudeince = "x"\n',
        "config.server.auth.audeince: Extra inputs are not permitted (value hidden: an unknown key may "
        'be a mistyped secret); did you mean "audience"?',
    ),
    "server.auth.tokens": (
        '[server.auth]\ntokens = [{subject = "a", token_env = "T", scoeps = []}]\n',
        "config.server.auth.tokens.0.scoeps: Extra inputs are not permitted (value hidden: an "
        'unknown key may be a mistyped secret); did you mean "scopes"?',
    ),
    "cluster": (
        '[cluster]\nredis_url = "redis://x"\nkey_prefix = "p"\nlease_second = 3\n',
        "config.cluster.lease_second: Extra inputs are not permitted (value hidden: an unknown key may be "
        'a mistyped secret); did you mean "lease_seconds"?',
    ),
    "sets": (
        '[sets.docs]\nplugins = []\ndescripton = "x"\n',
        "config.sets.docs.descripton: Extra inputs are not "
        'permitted (value hidden: an unknown key may be a mistyped secret); did you mean "description"?',
    ),
}


@pytest.mark.parametrize(("text", "expected"), KEYS.values(), ids=KEYS.keys())
def test_a_misspelt_key_gets_a_suggestion(tmp_path: Path, text: str, expected: str) -> None:
    assert _error(tmp_path, text) == f"config file {tmp_path / 'config.toml'}: {expected}"


def test_a_key_like_none_gets_no_suggestion(tmp_path: Path) -> None:
    message = _error(tmp_path, "[server]\nzzzzzz = 1\n")
    assert message.endswith(
        "config.server.zzzzzz: Extra inputs are not permitted (value hidden: an unknown key may be a mistyped secret)"
    )


def test_keys_added_later_are_suggested_from_the_model() -> None:
    class Later(BaseModel):
        model_config = ConfigDict(extra="forbid")
        brand_new_setting: int = 0

    class Root(BaseModel):
        model_config = ConfigDict(extra="forbid")
        later: dict[str, Later] = {}

    try:
        Root.model_validate({"later": {"x": {"brand_new_settng": 1}}})
    except Exception as exc:
        line = format_validation_error(exc, "config", Root)  # type: ignore[arg-type]
    assert line.endswith('did you mean "brand_new_setting"?'), line
    assert "page_size" in ServerSettings.model_fields and "server" in Config.model_fields


NAMES = {
    "allow": (
        'allow = ["ssg_catalgo"]\n',
        "the config's allow list names plugin(s) that are not installed: ssg_catalgo",
        'did you mean "ssg_catalog"?',
    ),
    "deny": (
        'deny = ["workflow"]\n',
        "the config's deny list names plugin(s) that are not installed: workflow",
        'did you mean "workflows"?',
    ),
    "plugins-table": (
        "[plugins.servicenwo]\n",
        "the config's [plugins.*] tables names plugin(s) that are not installed: servicenwo",
        'did you mean "servicenow"?',
    ),
    "set-member": (
        'set = "s"\n[sets.s]\nplugins = ["polcy"]\n',
        "plugin set 's' names plugin(s) that are not installed: polcy",
        'did you mean "policy"?',
    ),
    "set-name": (
        'set = "doc"\n[sets.docs]\nplugins = ["policy"]\n',
        "no plugin set 'doc' in the config; sets: docs",
        'did you mean "docs"?',
    ),
}


@pytest.mark.parametrize(("text", "error", "suggestion"), NAMES.values(), ids=NAMES.keys())
def test_a_misspelt_plugin_or_set_name_gets_a_suggestion(
    tmp_path: Path, text: str, error: str, suggestion: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        compose(load_config(path, environ={}))
    message = str(raised.value)
    assert message.startswith(error), message
    assert message.endswith(suggestion), message


@pytest.mark.parametrize(
    ("variable", "value", "suggestion"),
    [
        ("MCP_PROVIDERS_PLUGINS", "policy,ssg_catalgo", '"ssg_catalog"'),
        ("MCP_PROVIDERS_DISABLE", "workflow", '"workflows"'),
    ],
)
def test_a_misspelt_plugin_in_the_environment_gets_a_suggestion(variable: str, value: str, suggestion: str) -> None:
    with pytest.raises(ConfigError) as raised:
        compose(load_config(None, environ={variable: value}))
    assert str(raised.value).startswith(f"${variable} names plugin(s) that are not installed:")
    assert str(raised.value).endswith(f"did you mean {suggestion}?")


def test_set_option_typo_is_answered_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[sets.docs]\nplugins = ["policy"]\n')
    result = run_cli("check", "-c", str(path), "--set", "dosc")  # in process (cli_support)
    assert result.returncode == 1
    assert " ".join(result.stderr.split()) == (
        "error: no plugin set 'dosc' in the config; sets: docs; did you mean \"docs\"?"
    )


def test_each_of_several_misspelt_plugins_is_named_with_its_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('allow = ["polcy", "ssg_catalgo", "zzzzzz"]\n')
    with pytest.raises(ConfigError) as raised:
        compose(load_config(path, environ={}))
    assert str(raised.value).endswith(
        '; did you mean "policy" for "polcy"?; did you mean "ssg_catalog" for "ssg_catalgo"?'
    ), str(raised.value)
