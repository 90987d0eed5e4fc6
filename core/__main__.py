"""``python -m mcp_providers`` and the ``mcp-providers`` script: ``--version`` is answered before the
CLI is imported (importing :mod:`mcp_providers.cli` imports typer, rich and the MCP SDK, about 2 s
of CPU on a 2-CPU machine; the version needs only the installed metadata), and a bare ``serve``
(what an MCP client launches) runs without typer (:mod:`mcp_providers._cli.stdio`)."""

from __future__ import annotations

import os
import sys

from mcp_providers._cli.version import version_line


def main() -> None:
    """Entry point of the ``mcp-providers`` script and of ``python -m mcp_providers``."""
    if sys.argv[1:] == ["--version"]:
        print(version_line())
        return
    if sys.argv[1:] == ["serve"] and not _completion_asked():
        from mcp_providers._cli.stdio import main as serve_main  # the same functions the typer command runs

        serve_main()
        return
    from mcp_providers.cli import main as cli_main  # the whole CLI only when a command runs

    cli_main()


def _completion_asked() -> bool:
    """Whether a shell asks for completions (click's ``_PROG_NAME_COMPLETE`` variable): typer answers."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


if __name__ == "__main__":
    main()
