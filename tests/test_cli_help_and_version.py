"""``--version``, and help texts shown as written (square brackets are not console markup)."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version
from typing import Any

import prefork
import pytest
import typer
from typer.testing import CliRunner

from mcp_providers.cli import app

COMMAND: Any = typer.main.get_command(app)  # typer's own click group
BRACKETED = re.compile(r"\[[^\]\s]+\]")


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_version_names_the_distribution_and_the_mcp_sdk() -> None:
    result = subprocess.run(
        [*prefork.python(), "-m", "mcp_providers", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    python = ".".join(str(p) for p in sys.version_info[:3])
    assert result.stdout == (
        f"mcp-providers {version('mcp-providers')} (MCP Python SDK mcp {version('mcp')}, Python {python})\n"
    )


def test_workers_help_keeps_its_cluster_section() -> None:
    assert "Serve HTTP from N processes sharing the port; N > 1 needs [cluster]." in _help("serve")


@pytest.mark.parametrize("name", sorted(COMMAND.commands))
def test_every_bracketed_word_in_a_help_text_is_shown(name: str) -> None:
    command = COMMAND.commands[name]
    texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
    shown = _help(name)
    for text in texts:
        for word in BRACKETED.findall(text):
            assert word in shown, f"{name} --help lost {word}: {shown}"


def test_a_bracketed_word_is_checked_by_the_test_above() -> None:
    # the serve command has at least one bracketed help word, so the loop above is not empty
    serve = COMMAND.commands["serve"]
    assert any(BRACKETED.search(getattr(p, "help", None) or "") for p in serve.params)
