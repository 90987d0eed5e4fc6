"""The ``mcp-providers`` script's entry: ``--version`` answered before the CLI is imported.

Importing :mod:`mcp_providers.cli` imports typer, rich and the MCP SDK (about 2 s of CPU on a
2-CPU machine); ``mcp-providers --version`` needs only the installed metadata.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version


def version_line() -> str:
    """``mcp-providers <version> (MCP Python SDK mcp <version>, Python <x.y.z>)``, from installed metadata."""

    def of(distribution: str) -> str:
        try:
            return version(distribution)
        except PackageNotFoundError:
            return "unknown"

    python = ".".join(str(part) for part in sys.version_info[:3])
    return f"mcp-providers {of('mcp-providers')} (MCP Python SDK mcp {of('mcp')}, Python {python})"


def main() -> None:
    """Entry point of the ``mcp-providers`` script and of ``python -m mcp_providers``."""
    if sys.argv[1:] == ["--version"]:
        print(version_line())
        return
    from mcp_providers.cli import main as cli_main  # the whole CLI only when a command runs

    cli_main()
