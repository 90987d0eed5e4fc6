""":func:`cli_support.run_cli` shows what a process would: a crash as a traceback with exit 1, log
records and warnings on stderr, the environment it was given. Tests that moved from a subprocess
to it rely on this to still fail when a command crashes or logs a secret."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import warnings
from pathlib import Path

import pytest
from cli_support import SERVED, no_serving, run_cli, whole_env
from prefork import python

from mcp_providers.config import load_config


def test_a_command_that_crashes_exits_1_with_the_traceback_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("crashed-7f3a")

    monkeypatch.setattr("mcp_providers._cli.stdio.load_config", crash)
    result = run_cli("check")
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr and "RuntimeError: crashed-7f3a" in result.stderr


def test_log_records_and_warnings_reach_stderr_as_in_a_fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def noisy(*args: object, **kwargs: object) -> object:
        logging.getLogger("mcp_providers.somewhere").warning("logged-51c2")
        logging.getLogger("mcp_providers.somewhere").info("not-shown-at-info")
        warnings.warn("warned-9d0e", DeprecationWarning, stacklevel=1)
        return load_config(None)

    monkeypatch.setattr("mcp_providers._cli.stdio.load_config", noisy)
    result = run_cli("check")
    assert result.returncode == 0, result.stderr
    assert "logged-51c2\n" in result.stderr and "not-shown-at-info" not in result.stderr
    assert "DeprecationWarning: warned-9d0e" in result.stderr
    assert not [h for h in logging.getLogger().handlers if type(h).__name__ == "_StderrNow"]  # removed again


def test_env_is_the_calls_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "absent.toml"
    monkeypatch.delenv("MCP_PROVIDERS_CONFIG", raising=False)
    result = run_cli("check", env={"MCP_PROVIDERS_CONFIG": str(missing)})
    assert result.returncode == 1 and f"config file {missing} does not exist" in result.stderr
    assert "MCP_PROVIDERS_CONFIG" not in os.environ


def test_a_whole_environment_unsets_what_it_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLI_SUPPORT_PROBE", "set")
    changes = whole_env({"PATH": os.environ["PATH"], "ONLY_HERE": "1"})
    assert changes["CLI_SUPPORT_PROBE"] is None and changes["ONLY_HERE"] == "1"
    assert {k for k, v in changes.items() if v is not None} == {"PATH", "ONLY_HERE"}


def test_the_same_check_as_a_process_prints_the_same(tmp_path: Path) -> None:
    """The in-process run is the CLI's: same exit status and the same lines as the subprocess."""
    config = tmp_path / "config.toml"
    config.write_text("[server.auth]\ntokens = []\n")
    process = subprocess.run(
        [*python(), "-m", "mcp_providers", "check", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    in_process = run_cli("check", "-c", str(config))
    assert (in_process.returncode, in_process.stdout, in_process.stderr) == (
        process.returncode,
        process.stdout,
        process.stderr,
    )


def test_serve_that_would_serve_fails_and_leaves_signals_and_logging_as_they_were(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    no_serving(monkeypatch)
    handlers, sighup = list(logging.getLogger().handlers), signal.getsignal(signal.SIGHUP)
    reload_level = logging.getLogger("mcp_providers.reload").level
    result = run_cli("serve", "--http", "127.0.0.1:8000")  # valid: it would go on to serve HTTP
    assert result.returncode == SERVED and "serve went on to serve: it did not refuse" in result.stderr
    assert logging.getLogger().handlers == handlers and signal.getsignal(signal.SIGHUP) == sighup
    assert logging.getLogger("mcp_providers.reload").level == reload_level  # serve sets it to INFO
