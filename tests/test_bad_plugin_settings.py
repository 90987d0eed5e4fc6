"""A configured plugin whose ``[plugins.X]`` settings are bad: a provider plugin is left out like
any broken plugin (the others are served), a policy plugin stops ``serve`` (fail closed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_support import run_cli
from prefork import python

from mcp_providers import compose, load_config
from mcp_providers.errors import CompositionError

BAD_PROVIDER = "[plugins.servicenow]\ninstancs = []\n"
"""A typo in a provider plugin's settings (servicenow holds no authorize hookimpl)."""
BAD_POLICY = '[plugins.policy]\ndefault = "maybe"\n'


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    return subprocess.run(
        [*python(), "-m", "mcp_providers", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_a_provider_plugin_with_bad_settings_is_left_out_and_the_rest_served(tmp_path: Path) -> None:
    config = _config(tmp_path, BAD_PROVIDER)
    composition = compose(load_config(config))
    assert composition.policy_failures == []
    assert composition.server is not None
    record = {r.name: r for r in composition.records}["servicenow"]
    assert record.status == "rejected" and record.reason is not None
    assert record.reason.startswith("invalid settings: plugins.servicenow.instancs: Extra inputs are not permitted")
    line = next(f for f in composition.failures if f.startswith("servicenow:"))
    assert line.endswith(
        "; left out and the other plugins served: it is not a policy plugin (no authorize hookimpl)"
    ), line
    assert {r.name for r in composition.records if r.status == "loaded"} >= {"ssg_catalog", "policy"}


def test_serve_starts_without_the_provider_plugin_whose_settings_are_bad(tmp_path: Path) -> None:
    config = _config(tmp_path, BAD_PROVIDER)
    served = cli("serve", "-c", str(config))
    assert served.returncode == 0, served.stderr
    assert "not served: servicenow: rejected: invalid settings: plugins.servicenow.instancs" in served.stderr
    assert "it is not a policy plugin (no authorize hookimpl)" in served.stderr
    assert "policy plugin rejected" not in served.stderr
    assert "refusing" not in served.stderr
    listed = cli("plugins", "--json", "-c", str(config))
    rows = {r["name"]: r for r in json.loads(listed.stdout)["plugins"]}
    assert rows["servicenow"]["status"] == "rejected"
    assert "plugins.servicenow.instancs" in rows["servicenow"]["reason"]
    checked = run_cli("check", "-c", str(config), env={k: None for k in os.environ if k.startswith("MCP_PROVIDERS_")})
    assert checked.returncode == 1
    assert "servicenow: rejected: invalid settings: plugins.servicenow.instancs" in checked.stdout
    strict = cli("serve", "--strict", "-c", str(config))
    assert strict.returncode == 1
    assert "refusing to start (--strict):" in strict.stderr
    assert "servicenow: rejected: invalid settings" in strict.stderr


def test_a_policy_plugin_with_bad_settings_still_stops_serve(tmp_path: Path) -> None:
    config = _config(tmp_path, BAD_POLICY)
    composition = compose(load_config(config))
    with pytest.raises(CompositionError) as refused:
        _ = composition.server
    assert refused.value.problems[0] == "refusing to serve without its authorization policy:"
    assert refused.value.problems[1].startswith(
        "policy: policy plugin rejected (invalid settings: plugins.policy.default"
    )
    assert refused.value.problems[1].endswith(
        "it has an authorize hookimpl (authorize), so its rules would not apply"
    ), refused.value.problems[1]
    served = cli("serve", "-c", str(config))
    assert served.returncode == 1
    assert "policy: policy plugin rejected (invalid settings" in served.stderr
    assert "left out and the other plugins served" not in served.stderr


def test_settings_for_a_plugin_that_takes_none_leave_only_it_out(tmp_path: Path) -> None:
    composition = compose(load_config(_config(tmp_path, "[plugins.ssg_catalog]\nroot = 1\n")))
    assert composition.policy_failures == []
    line = next(f for f in composition.failures if f.startswith("ssg_catalog:"))
    assert "config has [plugins.ssg_catalog] but the plugin takes no settings" in line
    assert "it is not a policy plugin" in line
