"""Issue 42 (build 8): the server log's level and format, from the command line or ``[server]``.

A real ``serve --http`` process; the ``SIGTERM`` it is stopped with logs one warning (the streams it
ended), a line to look at without waiting on a timer.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from prefork import python
from serve_support import free_port

pytestmark = [pytest.mark.slow]

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _serve_and_stop(config: Path, *flags: str) -> list[str]:
    """Serve ``config`` over HTTP, stop it with SIGTERM once it listens; its stderr lines."""
    port = free_port()
    proc = subprocess.Popen([*python(), "-m", "mcp_providers", "serve", "--config", str(config), "--http",
                             f"127.0.0.1:{port}", *flags], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stderr is not None
    lines = []
    with proc.stderr:
        for line in proc.stderr:  # the process's own account of itself, in order
            lines.append(line.rstrip("\n"))
            if "serving MCP on" in line:  # listening; uvicorn has its signal handlers once it answers
                _answers(port)
                proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    return lines


def _answers(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                return
        except OSError:
            assert time.monotonic() < deadline, "serve --http never answered /healthz"
            time.sleep(0.05)


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text('allow = ["workflows"]\n\n[server]\nlog_level = "info"\nlog_format = "json"\n')
    return path


def test_server_log_format_json_gives_one_object_a_line_with_a_utc_time(tmp_path: Path) -> None:
    lines = _serve_and_stop(_config(tmp_path))
    records = [json.loads(line) for line in lines if line.startswith("{")]
    (stopping,) = [r for r in records if r["message"].startswith("stopping:")]
    assert stopping["level"] == "WARNING" and stopping["logger"] == "mcp_providers.serve"
    assert all(TIME.match(r["time"]) for r in records), records
    assert not [line for line in lines if line.startswith(("WARNING", "INFO"))]  # no line left in the old form


def test_the_command_line_wins_over_the_config_level_and_format(tmp_path: Path) -> None:
    lines = _serve_and_stop(_config(tmp_path), "--log-level", "error", "--log-format", "text")
    assert not [line for line in lines if "stopping:" in line], lines  # a warning, under --log-level error
    assert not [line for line in lines if line.startswith("{")]
    warned = _serve_and_stop(_config(tmp_path), "--log-format", "text")  # the config's info level still holds
    (stopping,) = [line for line in warned if "stopping:" in line]
    stamp, level, logger = stopping.split(" ")[:3]
    assert TIME.match(stamp) and level == "WARNING" and logger == "mcp_providers.serve:", stopping


def test_a_log_level_that_does_not_exist_is_refused_naming_the_choices(tmp_path: Path) -> None:
    done = subprocess.run([*python(), "-m", "mcp_providers", "serve", "--log-level", "loud"], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 2 and "debug" in done.stderr and "warning" in done.stderr, done.stderr
