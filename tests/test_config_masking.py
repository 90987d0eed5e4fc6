"""Config errors never echo a secret: URL user info (even a password with '/'), query values such
as ``?token=``, secret-looking keys, and values under keys the model does not know (a mistyped
``pwd`` or ``passwrd`` is still a password)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from mcp_providers.config import format_validation_error, load_config
from mcp_providers.errors import ConfigError

SECRET = "s3cr3t-VALUE"


class Instance(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: int
    port: int = 0


@pytest.mark.parametrize(
    "table",
    [
        {"url": f"https://host/?token={SECRET}"},
        {"url": f"https://host/api?a=1&access_token={SECRET}#frag"},
        {"url": f"https://user:pa/ss{SECRET}@host/"},
        {"url": f"https://user:{SECRET}@host/"},
        {"url": 1, "pwd": SECRET},
        {"url": 1, "passwrd": SECRET},
        {"url": 1, "bearer": SECRET},
        {"url": 1, "mistyped_field": SECRET},
        {"url": [f"https://a:{SECRET}@h/", f"https://h/?key={SECRET}"]},
    ],
)
def test_secrets_are_never_echoed(table: dict[str, object]) -> None:
    with pytest.raises(ValidationError) as caught:
        Instance.model_validate(table)
    line = format_validation_error(caught.value, "plugins.x")
    assert SECRET not in line, line
    assert "plugins.x." in line  # still says where the problem is


def test_the_field_and_what_is_wrong_are_still_named() -> None:
    with pytest.raises(ValidationError) as caught:
        Instance.model_validate({"url": "https://host/?token=abc", "pwd": "x"})
    line = format_validation_error(caught.value, "plugins.x")
    assert "plugins.x.url" in line and "plugins.x.pwd" in line
    assert "(got a string)" in line and "token" not in line  # a value of the wrong shape: its shape only


@pytest.mark.parametrize("value", ["GITHUB_TOKEN=ghp_ENVSTRINGSECRET", ["GITHUB_TOKEN=ghp_ENVSTRINGSECRET"]])
def test_a_secret_pasted_where_a_table_or_name_belongs_is_not_echoed(value: object) -> None:
    from mcp_providers.plugins.upstream.settings import ServerSettings

    with pytest.raises(ValidationError) as caught:
        ServerSettings.model_validate({"name": "u", "command": "x", "prefixes": ["u://"], "env": value})
    line = format_validation_error(caught.value, "plugins.upstream.servers.0", ServerSettings)
    assert "ghp_" not in line and "plugins.upstream.servers.0.env" in line, line
    assert "(got a string)" in line or "(got a list)" in line or "value hidden" in line, line


def test_a_word_typed_where_a_choice_belongs_is_still_echoed() -> None:
    from mcp_providers.config import ServerSettings

    with pytest.raises(ValidationError) as caught:
        ServerSettings.model_validate({"log_level": "verbos"})
    assert "'verbos'" in format_validation_error(caught.value, "server", ServerSettings)


def test_a_config_file_with_a_mistyped_secret_key(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'[server]\npwd = "{SECRET}"\npage_size = "https://host/?token={SECRET}"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config, environ={})
    assert SECRET not in str(caught.value), caught.value


@pytest.mark.parametrize(("key", "value"), [("audit_logg", "x"), ("page_sise", "t"), ("pwd", "e")])
def test_hiding_a_short_value_leaves_the_message_readable(tmp_path: Path, key: str, value: str) -> None:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(f'[server]\n{key} = "{value}"\n')
    with pytest.raises(ConfigError) as bad:
        load_config(path)
    assert "Extra inputs are not permitted" in str(bad.value)
