"""A benchmark server process: ``python -m benchmarks.serve KIND [--transport ours|sdk] [--otel] [--http PORT]``.

KIND is ``composed`` (one generated provider through mcp-providers), ``mcpserver`` (the same
resources on a hand-written SDK ``MCPServer``, SDK defaults) or ``echo`` (the floor: a bare Python
process echoing each stdin line to stdout). stdio unless ``--http``, which serves stateless
streamable HTTP with JSON responses on 127.0.0.1:PORT, every KIND under the same uvicorn settings
(those of ``serve --http``); with ``--http``, ``echo`` is the HTTP floor: a raw ASGI endpoint
answering every request with one fixed JSON-RPC result. ``--jwt ISSUER`` puts ``composed`` behind
``[server.auth] mode = "jwt"`` (``benchmarks.identity``). ``--otel`` puts the SDK's
``OpenTelemetryMiddleware`` back into ``composed``; ``--no-otel`` takes it out of ``mcpserver``
(the anchors' fair pairs). ``sdkfloor`` (``--http`` only) is ``composed``'s transport and the SDK's
runner around :func:`benchmarks.fixtures.sdk_floor`'s handler, which does no work: the rate any
handler inside the SDK's runner behind this transport can at most reach.
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


FLOOR_BODY = (
    b'{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"bench://p0/r3","mimeType":"application/json",'
    b'"text":"{\\"uri\\": \\"bench://p0/r3\\", \\"items\\": [1, 2, 3]}"}]}}'
)


async def floor_app(scope: Any, receive: Any, send: Any) -> None:
    """The HTTP floor: read the request body, answer one fixed JSON body."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(FLOOR_BODY)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": FLOOR_BODY})


def app_of(kind: str, port: int, jwt_issuer: str | None = None, *, otel: bool = False, no_otel: bool = False) -> Any:
    """The ASGI app ``http`` serves for ``kind`` on ``port`` (before uvicorn's own layers)."""
    from benchmarks import fixtures
    from mcp_providers._serve.transport.auth import http_auth
    from mcp_providers._serve.transport.http_app import http_app
    from mcp_providers._serve.transport.http_policy import transport_policy
    from mcp_providers.config import AuthConfig

    if kind == "echo":
        return floor_app
    if kind == "composed":
        # --jwt ISSUER: [server.auth] mode = "jwt" against that issuer (benchmarks.identity).
        auth = None if jwt_issuer is None else AuthConfig(mode="jwt", issuer=jwt_issuer)
        return http_app(
            fixtures.composed(1, otel=otel).server,
            stateless=True,
            json_response=True,
            security=transport_policy("127.0.0.1"),
            auth=http_auth(auth, f"http://127.0.0.1:{port}/mcp"),
        )
    if kind == "sdkfloor":  # this transport and the SDK's runner around a handler that does no work
        return http_app(
            fixtures.sdk_floor(),
            stateless=True,
            json_response=True,
            security=transport_policy("127.0.0.1"),
            auth=http_auth(None, f"http://127.0.0.1:{port}/mcp"),
        )
    return fixtures.mcpserver(1, otel=not no_otel).streamable_http_app(stateless_http=True, json_response=True)


def http(kind: str, port: int, jwt_issuer: str | None = None, *, otel: bool = False, no_otel: bool = False) -> None:
    import uvicorn

    from mcp_providers._serve.transport.limits import uvicorn_config

    app = app_of(kind, port, jwt_issuer, otel=otel, no_otel=no_otel)
    uvicorn.Server(uvicorn_config(app, "127.0.0.1", port)).run()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["composed", "mcpserver", "echo", "sdkfloor"])
    parser.add_argument("--transport", choices=["ours", "sdk"], default="ours")
    parser.add_argument("--otel", action="store_true", help="keep the SDK's tracing middleware (composed)")
    parser.add_argument("--no-otel", action="store_true", help="remove the SDK's tracing middleware (mcpserver)")
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--jwt", default=None, metavar="ISSUER", help="composed over HTTP: JWT bearer auth")
    args = parser.parse_args()
    if args.kind == "echo" and args.http is None:
        echo()
        return
    if args.http is not None:
        http(args.kind, args.http, args.jwt, otel=args.otel, no_otel=args.no_otel)
        return

    import anyio

    from benchmarks import fixtures

    if args.kind == "composed":
        server = fixtures.composed(1, otel=args.otel).server
    else:
        server = fixtures.mcpserver(1, otel=not args.no_otel)._lowlevel_server
    from mcp.server.stdio import stdio_server

    from mcp_providers._serve.transport.stdio_loop import serve_stdio

    async def run() -> None:
        if args.transport == "ours":  # what `mcp-providers serve` runs over stdio
            await serve_stdio(server)
            return
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
