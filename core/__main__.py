"""``python -m mcp_providers`` and the ``mcp-providers`` script: ``--version`` is answered before the
CLI is imported (importing :mod:`mcp_providers.cli` imports typer, rich and the MCP SDK, about 2 s
of CPU on a 2-CPU machine; the version needs only the installed metadata), and ``serve`` alone or
with its config file only (what an MCP client launches) runs without typer
(:mod:`mcp_providers._cli.stdio`)."""

from __future__ import annotations

import os
import sys

from mcp_providers._cli.version import version_line


def main() -> None:
    """Entry point of the ``mcp-providers`` script and of ``python -m mcp_providers``."""
    if sys.argv[1:] == ["--version"]:
        print(version_line())
        return
    fast = _stdio_serve(sys.argv[1:])
    if fast is not None:
        from mcp_providers._cli.stdio import main as serve_main  # the same functions the typer command runs

        serve_main(*fast)
        return
    from mcp_providers.cli import main as cli_main  # the whole CLI only when a command runs

    cli_main()


def _stdio_serve(args: list[str]) -> tuple[str | None] | None:
    """``(config file or None,)`` when ``args`` is ``serve`` alone or with its config file only
    (``-c FILE``, ``--config FILE``, ``--config=FILE``; what MCP clients launch), which
    :mod:`mcp_providers._cli.stdio` runs without typer; ``None`` for anything else, typer's to parse
    (a ``FILE`` that is empty or starts with ``-`` included)."""
    if not args or args[0] != "serve" or _completion_asked():
        return None
    rest = args[1:]
    if not rest:
        return (None,)
    if len(rest) == 2 and rest[0] in ("-c", "--config"):
        path = rest[1]
    elif len(rest) == 1 and rest[0].startswith("--config="):
        path = rest[0].removeprefix("--config=")
    else:
        return None
    return (path,) if path and not path.startswith("-") else None


def _completion_asked() -> bool:
    """Whether a shell asks for completions (click's ``_PROG_NAME_COMPLETE`` variable): typer answers."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


if __name__ == "__main__":
    main()
