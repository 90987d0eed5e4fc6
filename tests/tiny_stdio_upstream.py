"""A tiny stdio MCP server for tests of upstream sources: ``python tiny_stdio_upstream.py NAME [FLAG]``
serves ``NAME://note`` (text ``note of NAME``) and the tool ``echo``; with FLAG, it exits at once
(status 3) while the file FLAG exists, as a server that is down; with ``--bare`` it lists nothing."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer


def main() -> None:
    name, rest = sys.argv[1], sys.argv[2:]
    if any(os.path.exists(flag) for flag in rest if flag != "--bare"):
        sys.exit(3)
    server = MCPServer(name, version="1.0", log_level="WARNING")
    if "--bare" in rest:
        server.run("stdio")
        return

    @server.resource(f"{name}://note", mime_type="text/plain")
    def note() -> str:
        return f"note of {name}"

    @server.tool(description="Say it back.")
    def echo(text: str) -> str:
        return text

    server.run("stdio")


if __name__ == "__main__":
    main()
