"""Nothing a plugin writes to fd 1 at import time reaches the protocol stream or ``plugins --json``.

The plugin under test (``tests/distributions/stray_stdout``) starts a child process that prints,
writes to fd 1 directly and prints, all while it is imported; fd 1 must already point at stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from prefork import python
from reliability_support import RawStdio, install_target

pytestmark = pytest.mark.slow

DISTRIBUTION = Path(__file__).parent / "distributions" / "stray_stdout"
STRAY = (b"STRAY-FROM-CHILD", b"STRAY-RAW-WRITE", b"STRAY-PRINT")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("stray-site")
    install_target(DISTRIBUTION, site)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    return env


def test_serve_keeps_import_time_output_off_the_wire(env: dict[str, str], tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    with RawStdio(env, stderr) as peer:
        peer.initialize()
        assert peer.request("ping")["result"] == {}
    assert peer.stray_lines == []
    logged = stderr.read_bytes()
    assert all(marker in logged for marker in STRAY), logged  # the output went to stderr, not lost


def test_plugins_json_is_parseable_despite_import_time_output(env: dict[str, str]) -> None:
    done = subprocess.run(
        [*python(), "-m", "mcp_providers", "plugins", "--json"], env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert "stray" in {p["name"] for p in listed["plugins"]}
    assert all(marker in done.stderr for marker in STRAY)
