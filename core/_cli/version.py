"""The version line ``mcp-providers --version`` prints, from installed metadata only."""

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
