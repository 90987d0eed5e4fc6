"""`mcp-providers demo` runs the main job end to end on the embedded default."""

from __future__ import annotations

import subprocess

from prefork import python


def test_demo_reads_the_catalog_through_a_real_client() -> None:
    run = subprocess.run(
        [*python(), "-m", "mcp_providers", "demo"],
        capture_output=True,
        text=True,
        timeout=180,
        env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "connected over stdio" in run.stdout
    assert "documcp://ssgs/available" in run.stdout
    assert '"buildSpeed": "very-fast"' in run.stdout  # Hugo's entry, read and pretty-printed
    assert "demo finished" in run.stdout and "failed read" not in run.stdout
