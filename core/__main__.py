"""``python -m mcp_providers`` and the ``mcp-providers`` script: ``--version`` is answered before the
CLI is imported (importing :mod:`mcp_providers.cli` imports typer, rich and the MCP SDK, about 2 s
of CPU on a 2-CPU machine; the version needs only the installed metadata)."""

from __future__ import annotations

import sys

from mcp_providers._cli.version import version_line


def main() -> None:
    """Entry point of the ``mcp-providers`` script and of ``python -m mcp_providers``."""
    if sys.argv[1:] == ["--version"]:
        print(version_line())
        return
    from mcp_providers.cli import main as cli_main  # the whole CLI only when a command runs

    cli_main()


if __name__ == "__main__":
    main()
