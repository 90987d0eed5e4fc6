"""``MCP_PROVIDERS_TRACE_PLUGINS=1`` shows every hook call through pluggy's tracer, on stderr only."""

from __future__ import annotations

import json
import os
import subprocess

from prefork import python


def _plugins_json(trace: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    if trace:
        env["MCP_PROVIDERS_TRACE_PLUGINS"] = "1"
    return subprocess.run(
        [*python(), "-m", "mcp_providers", "plugins", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_tracing_shows_each_plugins_hook_calls_on_stderr() -> None:
    traced, plain = _plugins_json(trace=True), _plugins_json(trace=False)
    assert traced.returncode == plain.returncode == 0, traced.stderr
    assert json.loads(traced.stdout) == json.loads(plain.stdout)  # stdout stays machine-readable
    for hook in ("settings_model", "register_resource_providers", "register_tool_providers"):
        assert f"{hook} [hook]" in traced.stderr, traced.stderr[:2000]
    assert "[hook]" not in plain.stderr
