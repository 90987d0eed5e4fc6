"""A benchmark server process: ``python -m benchmarks.serve KIND [--transport ours|sdk] [--otel] [--http PORT]``.

KIND is ``composed`` (one generated provider through mcp-providers), ``mcpserver`` (the same
resources on a hand-written SDK ``MCPServer``, SDK defaults) or ``echo`` (the floor: a bare Python
process echoing each stdin line to stdout). stdio unless ``--http``, which serves stateless
streamable HTTP with JSON responses on 127.0.0.1:PORT.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def echo() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(line)
        out.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["composed", "mcpserver", "echo"])
    parser.add_argument("--transport", choices=["ours", "sdk"], default="ours")
    parser.add_argument("--otel", action="store_true", help="keep the SDK's tracing middleware (composed)")
    parser.add_argument("--http", type=int, default=None)
    args = parser.parse_args()
    if args.kind == "echo":
        echo()
        return

    import anyio

    from benchmarks import fixtures

    if args.kind == "composed":
        server = fixtures.composed(1, otel=args.otel).server
        http_host: Any = server
    else:
        http_host = fixtures.mcpserver(1)
        server = http_host._lowlevel_server
    if args.http is not None:
        import uvicorn

        app = http_host.streamable_http_app(stateless_http=True, json_response=True)
        uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")
        return
    if args.transport == "sdk":
        from mcp.server.stdio import stdio_server
    else:
        from mcp_providers._serve.stdio import stdio_server  # type: ignore[assignment]

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
