"""``serve --http`` in a test process: the CLI's HTTP app (``http_app`` with the ops routes) behind
uvicorn with the CLI's limits, on a free loopback port, and raw HTTP/1.1 requests to it."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from prefork import python
from waiting import wait_until

from mcp_providers._serve.composition import Composition
from mcp_providers._serve.transport.http_app import http_app
from mcp_providers._serve.transport.http_policy import transport_policy
from mcp_providers._serve.transport.limits import uvicorn_config
from mcp_providers._serve.transport.ops import ops_routes
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Freshness, Resource, Tool
from mcp_providers.providers import Content, ReadRequest, ResourceProvider, ToolCall, ToolProvider, ToolResult
from mcp_providers.testing import compose

URI = "memo://notes/one"
LIVE = "memo://notes/live"
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


class Notes(ResourceProvider):
    name = "notes"
    prefixes = ("memo://notes/",)

    def resources(self) -> list[Resource]:
        return [Resource(uri=URI, name="one", mime_type="text/plain"),
                Resource(uri=LIVE, name="live", mime_type="text/plain", freshness=Freshness.live())]  # fmt: skip

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="hello")


class Echo(ToolProvider):
    """``echo``: answers with how deep its ``value`` argument nests (any JSON value); ``wait``:
    answers only when cancelled (never, then)."""

    name = "echo"

    def tools(self) -> Sequence[Tool]:
        from pydantic import BaseModel

        class Args(BaseModel):
            value: Any = None

        return [Tool(name="echo", description="How deep value nests.", input_model=Args),
                Tool(name="wait", description="Waits until cancelled.", input_model=Args)]  # fmt: skip

    async def call(self, call: ToolCall) -> ToolResult:
        if call.tool.name == "wait":
            import anyio

            await anyio.sleep_forever()
        return ToolResult(text=str(_depth(call.arguments.value)))


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


class NotesPlugin:
    @hookimpl
    def register_resource_providers(self, settings: Any) -> list[ResourceProvider]:
        return [Notes()]

    @hookimpl
    def register_tool_providers(self, settings: Any) -> list[ToolProvider]:
        return [Echo()]


def composition() -> Composition:
    return compose({"notes": NotesPlugin()})


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(
    composed: Composition | None = None,
    *,
    stateless: bool = False,
    json_response: bool = False,
    event_store: Any = None,
    limits: Any = None,
) -> Iterator[int]:
    """``composed`` served as ``serve --http 127.0.0.1:PORT`` serves it (``limits``: the
    ``[server.limits]`` its session quota reads); yields the port."""
    import uvicorn

    composed = composed or composition()
    app = http_app(
        composed.server,
        stateless=stateless,
        json_response=json_response,
        security=transport_policy("127.0.0.1"),
        routes=ops_routes(composed),
        event_store=event_store,
        limits=limits,
        audit=composed.runtime.audit,
    )
    port = free_port()
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


@contextlib.contextmanager
def serve_process(env: dict[str, str], log: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``mcp-providers serve --http 127.0.0.1:PORT *args`` as a subprocess of its own (stderr into
    ``log``), on a free port; yields its base URL and the process once ``/readyz`` answers 200 (it
    exiting first fails, with its log), and terminates it after."""
    port = free_port()
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [*python(), "-m", "mcp_providers", "serve", "--http", f"127.0.0.1:{port}", *args],
            env=env, stdin=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
            return answer.status == 200
        return False

    try:
        wait_until(ready, "the server answers /readyz 200", alive=proc, log=log, every=0.1)  # round 4 item 25
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def request(
    port: int, method: str, body: bytes = b"", headers: dict[str, str] | list[tuple[str, str]] | None = None,
    path: str = "/mcp", timeout: float = 10,
) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    """One HTTP/1.1 request on a fresh socket, read to the end; (status, headers, body). ``headers``
    as a list of pairs is sent line by line as given (a name may repeat, an empty value is sent)."""
    if isinstance(headers, list):
        given = {k for k, _ in headers}
        defaults = {"host": f"127.0.0.1:{port}", "content-length": str(len(body)), "connection": "close"}
        lines = [*((k, v) for k, v in defaults.items() if k not in given), *headers]
    else:
        hdrs = {"host": f"127.0.0.1:{port}", "content-length": str(len(body)), "connection": "close", **(headers or {})}
        lines = [(k, v) for k, v in hdrs.items() if v]
    raw = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in lines) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw.encode() + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    got = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), got, rest


def post(port: int, message: Any, version: str | None = "2025-11-25", **extra: str) -> tuple[int, dict[str, str], Any]:
    """POST one JSON-RPC message; the body parsed as JSON when it is JSON."""
    headers = {**JSON_HEADERS, **{k.replace("_", "-"): v for k, v in extra.items()}}
    if version is not None:
        headers["mcp-protocol-version"] = version
    status, got, body = request(port, "POST", json.dumps(message).encode(), headers)
    try:
        return status, got, json.loads(body)
    except ValueError:
        return status, got, body


def initialize(port: int, version: str = "2025-11-25") -> str:
    """Open a 2025-era session; its ``Mcp-Session-Id``."""
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    status, headers, _ = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, None)
    assert status == 200, status
    session = headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(port, note, version, mcp_session_id=session)[0] == 202
    return session


def main() -> None:
    """``python tests/serve_support.py``: :func:`composition` served over stdio as ``serve`` does."""
    import anyio

    from mcp_providers._serve.transport.stdio_loop import serve_stdio

    anyio.run(serve_stdio, composition().server)


if __name__ == "__main__":
    main()
