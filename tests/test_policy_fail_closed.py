"""A configured policy that is not in force stops the server: authorization fails closed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_support import run_cli
from prefork import python

from mcp_providers import compose, load_config
from mcp_providers.errors import CompositionError

DENY_ALL = '[plugins.policy]\ndefault = "deny"\n'


def serve(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*python(), "-m", "mcp_providers", "serve", "-c", str(config), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("config_text", "expected"),
    [
        # A typo in the rules rejects the plugin: serving without it would allow everything.
        (DENY_ALL + '[[plugins.policy.rules]]\neffect = "allow"\naction = ["list"]\n', "policy plugin rejected"),
        # The selection leaves the policy out although its settings are configured.
        ('allow = ["ssg_catalog"]\n' + DENY_ALL, "policy plugin has [plugins.policy] settings but is off"),
    ],
    ids=["invalid-rules", "deselected"],
)
def test_serve_refuses_when_the_configured_policy_is_not_in_force(
    tmp_path: Path, config_text: str, expected: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(config_text)
    result = serve(config)
    assert result.returncode == 1
    assert "refusing to serve without its authorization policy" in result.stderr
    assert expected in result.stderr
    if config_text.startswith("allow = "):  # the deselected case
        # the warning line keeps its [plugins.policy] (once swallowed as console markup)
        assert "not served: policy: policy plugin has [plugins.policy] settings" in result.stderr
    assert result.stdout == ""
    composition = compose(load_config(config))
    with pytest.raises(CompositionError):
        _ = composition.server
    check = run_cli("check", "-c", str(config))  # in process (cli_support); serve above is the process
    assert check.returncode == 1 and "policy" in check.stdout


def test_a_policy_that_is_deselected_without_settings_is_just_off(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('allow = ["ssg_catalog"]\n')
    composition = compose(load_config(config))
    assert composition.policy_failures == []
    assert composition.server is not None
