"""A GET through the OpenAPI provider against the same GET made directly with httpx (issue 40;
target: at most 1.3x), with the p99 of each.

Run alone: ``uv run python -m benchmarks.upstream_openapi [--quick]``.

The upstream is a Starlette app under uvicorn in a process of its own (``--upstream PORT``) serving
one JSON record and its OpenAPI 3.1 document. In the benchmark process, rounds alternate between:

- ``direct``: ``GET /items/{id}`` with one ``httpx2.AsyncClient`` kept open (connection reused);
- ``through``: ``resources/read`` of ``openapi://bench/items/{id}`` through an in-memory MCP client
  of the composed server (gate, deadline, side-effect scope, budgets, receipt, audit), whose
  provider sends the same GET with its own kept-open client;
- ``hand-written``: the same read of ``raw://items/{id}`` from a minimal hand-written provider
  that sends the same GET with the core's client: what any provider of an HTTP upstream costs
  through the server, so the OpenAPI plugin's own share is ``through`` against it;
- ``sdk floor``: the same GET from a resource template of a plain SDK ``MCPServer`` (no gate,
  receipts, budgets or scope; its tracing middleware off, as ours), read by the same kind of
  in-memory client: what one MCP exchange costs before anything of ours, so ``through`` against it
  is this server's own share.

Each round times ``N`` requests one after the other; the ratio is of the medians over rounds of the
per-request mean, and p99 is over every request of every round.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import anyio

from benchmarks.timing import Emit, median, standalone

N = 200
DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Bench", "version": "1"},
    "paths": {
        "/items/{item_id}": {
            "get": {
                "operationId": "getItem",
                "parameters": [{"name": "item_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok", "content": {"application/json": {}}}},
            }
        }
    },
}
RECORD = b'{"id": "1", "name": "hammer", "price": 9.5, "tags": ["tools", "steel"]}'


def _upstream(port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def item(request: Any) -> Response:
        return Response(RECORD, media_type="application/json")

    async def document(request: Any) -> Response:
        return JSONResponse(DOCUMENT)

    app = Starlette(routes=[Route("/items/{item_id}", item), Route("/openapi.json", document)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def upstream() -> Iterator[str]:
    """The upstream in a process of its own; yields its origin once it answers."""
    import httpx2

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.upstream_openapi", "--upstream", str(port)])
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{origin}/openapi.json", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        yield origin
    finally:
        proc.terminate()
        proc.wait(10)


def _hand_written(origin: str) -> Any:
    """A plugin with one template, ``raw://items/{i}``, read with one GET through the core's client."""
    from mcp_providers import http as core_http
    from mcp_providers.hookspecs import hookimpl
    from mcp_providers.models import ResourceTemplate
    from mcp_providers.providers import Content, ReadRequest, ResourceProvider

    class Raw(ResourceProvider):
        name, prefixes = "raw", ("raw://",)

        def templates(self) -> list[ResourceTemplate]:
            return [ResourceTemplate(uri_template="raw://items/{i}", name="item", mime_type="application/json")]

        @contextlib.asynccontextmanager
        async def lifespan(self) -> Any:
            async with core_http.client(base_url=origin, trust_env=False) as self.http:
                yield

        async def read(self, request: ReadRequest) -> Content:
            answer = await self.http.get(f"/items/{request.params['i']}")
            return Content(text=answer.text)

    class Plugin:
        @hookimpl
        def register_resource_providers(self, settings: Any) -> list[ResourceProvider]:
            return [Raw()]

    return Plugin()


def _sdk_floor(origin: str) -> Any:
    """A plain SDK ``MCPServer`` whose template ``floor://items/{i}`` sends the same GET."""
    import httpx2
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-floor", log_level="WARNING")
    lowlevel = server._lowlevel_server  # without the SDK's tracing middleware, as the composed server runs
    lowlevel.middleware = [m for m in lowlevel.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]
    http = httpx2.AsyncClient(base_url=origin)

    @server.resource("floor://items/{i}", mime_type="application/json")
    async def item(i: str) -> str:
        return (await http.get(f"/items/{i}")).text

    return server, http


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def _measure(origin: str, rounds: int) -> dict[str, list[list[float]]]:
    import httpx2

    import mcp_providers.plugins.openapi as plugin
    from mcp_providers.testing import compose, connect

    settings = {"openapi": {"services": [{"name": "bench", "document": f"{origin}/openapi.json"}]}}
    composed = compose({"openapi": plugin, "raw": _hand_written(origin)}, settings)
    from mcp import Client

    samples: dict[str, list[list[float]]] = {"direct": [], "through": [], "hand-written": [], "sdk floor": []}
    floor_server, floor_http = _sdk_floor(origin)
    async with (
        httpx2.AsyncClient(base_url=origin) as http,
        connect(composed) as client,
        floor_http,
        Client(floor_server, cache=None) as floor,
    ):

        async def direct() -> list[float]:
            out = []
            for i in range(N):
                t0 = time.perf_counter()
                (await http.get(f"/items/{i}")).raise_for_status()
                out.append((time.perf_counter() - t0) * 1000)
            return out

        def reads(prefix: str, reader: Any = client) -> Any:
            async def case() -> list[float]:
                out = []
                for i in range(N):
                    t0 = time.perf_counter()
                    await reader.read_resource(f"{prefix}/items/{i}")
                    out.append((time.perf_counter() - t0) * 1000)
                return out

            return case

        through, hand_written, sdk_floor = reads("openapi://bench"), reads("raw:/"), reads("floor:/", floor)
        for warm in (direct, through, hand_written, sdk_floor):  # connections, caches, first-call imports
            await warm()
        for r in range(rounds):
            cases = [("direct", direct), ("through", through), ("hand-written", hand_written), ("sdk floor", sdk_floor)]
            for name, case in cases if r % 2 == 0 else reversed(cases):
                samples[name].append(await case())
    return samples


def run(rounds: int, emit: Emit) -> None:
    """Time the three cases over ``rounds`` rounds and emit the means, the ratio and the p99s."""
    with upstream() as origin:
        samples = anyio.run(_measure, origin, rounds)
    means = {name: median([sum(r) / len(r) for r in rounds_]) for name, rounds_ in samples.items()}
    ratio = means["through"] / means["direct"]
    verdict = "ok" if ratio <= 1.3 else "over target"
    section = "upstream_openapi"
    emit(section, "GET directly with httpx2", means["direct"], "ms/request")
    emit(section, "same GET as a read through the server", means["through"], "ms/request",
         f"{ratio:.2f}x direct", f"<= 1.3x: {verdict}", vs="GET directly with httpx2")  # fmt: skip
    own = means["through"] / means["hand-written"]
    emit(section, "same GET by a hand-written provider", means["hand-written"], "ms/request",
         f"openapi {own:.2f}x this", vs="same GET as a read through the server")  # fmt: skip
    floor = means["through"] / means["sdk floor"]
    emit(section, "same GET from a plain SDK MCPServer (the floor)", means["sdk floor"], "ms/request",
         f"{means['sdk floor'] / means['direct']:.2f}x direct", f"the server {floor:.2f}x this",
         vs="GET directly with httpx2")  # fmt: skip
    labels = {"direct": "p99 directly", "through": "p99 through the server",
              "hand-written": "p99 hand-written provider", "sdk floor": "p99 plain SDK MCPServer"}  # fmt: skip
    for name, label in labels.items():
        emit(section, label, _p99([s for r in samples[name] for s in r]), "ms")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--upstream":
        _upstream(int(sys.argv[2]))
    else:
        standalone("python -m benchmarks.upstream_openapi", __doc__, run)
