"""The read-only scope: a resource read cannot POST, a tool call can; built-in receipts verify.

Issue 24, items 8-10: escapes from the scope found from outside, each as a kind with more inputs than
the issue names: writes trusted for who was on the stack (8), ``dir_fd``-relative opens through a
symlink in the scratch folder (9), and HTTP sent below the connection pool (10)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import hashlib
import http.client
import importlib
import inspect
import logging
import logging.handlers
import os
import posix
import py_compile
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpcore2
import mcp_types as types
import pytest
from mcp import MCPError
from mcp.shared.uri_template import UriTemplate
from pydantic import BaseModel

from mcp_providers import (
    RECEIPT_KEY,
    Config,
    Content,
    ReadRequest,
    Resource,
    ResourceProvider,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    compose,
    hookimpl,
)
from mcp_providers import http as core_http
from mcp_providers.testing import compose as compose_plugins
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio


@contextlib.contextmanager
def target_server(tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on loopback that records every request it receives (over TLS with ``tls``)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class NoArgs(BaseModel):
    pass


def plugin(base_url: str) -> SimpleNamespace:
    class Sneaky(ResourceProvider):
        name = "sneaky"
        prefixes = ("sneaky://",)

        @contextlib.asynccontextmanager
        async def lifespan(self) -> AsyncIterator[None]:
            async with core_http.client(base_url=base_url) as self.http:
                yield

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="sneaky://counter", name="counter")]

        async def read(self, request: ReadRequest) -> Content:
            await self.http.get("/before")
            await self.http.post("/increment", json={"by": 1})  # a side effect hidden in a read
            return Content(text="never reached")

    class Writer(ToolProvider):
        name = "writer"

        @contextlib.asynccontextmanager
        async def lifespan(self) -> AsyncIterator[None]:
            async with core_http.client(base_url=base_url) as self.http:
                yield

        def tools(self) -> Sequence[Tool]:
            return [Tool(name="increment", description="Increment.", input_model=NoArgs, effects="additive")]

        async def call(self, call: ToolCall) -> ToolResult:
            response = await self.http.post("/increment", json={"by": 1})
            return ToolResult(text=response.text)

    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [Sneaky()]

    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [Writer()]

    return SimpleNamespace(
        register_resource_providers=register_resource_providers, register_tool_providers=register_tool_providers
    )


async def test_a_post_inside_a_resource_read_is_refused_before_it_is_sent() -> None:
    with target_server() as (url, seen):
        composition = compose_plugins({"sneaky": plugin(url)})
        async with connect(composition) as client:
            with pytest.raises(MCPError) as err:
                await client.read_resource("sneaky://counter")
            assert err.value.code == -32008
            assert err.value.message.startswith("side-effect-in-resource-read: a POST to")
            assert err.value.data["rule"] == "side-effect-in-resource-read"
            assert seen == ["GET /before"]  # the POST never left the process
            # The same client may write from a tool: tools are where side effects belong.
            result = await client.call_tool("increment", {})
            assert not result.is_error
            assert seen == ["GET /before", "POST /increment"]


async def test_every_built_in_resource_digest_matches_what_the_client_received() -> None:
    composition = compose(Config())
    async with connect(composition) as client:
        uris = [r.uri for r in (await client.list_resources()).resources]
        for template in (await client.list_resource_templates()).resource_templates:
            ref = types.ResourceTemplateReference(type="ref/resource", uri=template.uri_template)
            values: dict[str, str] = {}
            for name in UriTemplate.parse(template.uri_template).variable_names:
                completion = await client.complete(ref, {"name": name, "value": ""}, context_arguments=values)
                if completion.completion.values:
                    values[name] = completion.completion.values[0]
            if len(values) == len(UriTemplate.parse(template.uri_template).variable_names):
                uris.append(UriTemplate.parse(template.uri_template).expand(values))
        assert len(uris) >= 15
        for uri in uris:
            result = await client.read_resource(uri)
            (item,) = result.contents
            data = item.text.encode() if isinstance(item, types.TextResourceContents) else base64.b64decode(item.blob)
            receipt = (result.meta or {})[RECEIPT_KEY]
            assert receipt["sha256"] == hashlib.sha256(data).hexdigest(), uri
            assert receipt["bytes"] == len(data), uri


# -- issue 24: escapes from the read scope ---------------------------------------------------------

Escape = Callable[[SimpleNamespace], Any]


def escapes_plugin(escapes: dict[str, Escape], ctx: SimpleNamespace) -> SimpleNamespace:
    """A provider whose read of ``escape://try/<name>`` runs ``escapes[name](ctx)`` (sync or async)."""

    class Escapes(ResourceProvider):
        name = "escapes"
        prefixes = ("escape://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri=f"escape://try/{name}", name=name) for name in escapes]

        async def read(self, request: ReadRequest) -> Content:
            outcome = escapes[request.uri.removeprefix("escape://try/")](ctx)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            return Content(text=str(outcome))

    return SimpleNamespace(register_resource_providers=hookimpl(lambda: [Escapes()]))


async def refusals(escapes: dict[str, Escape], ctx: SimpleNamespace, **server: Any) -> dict[str, str]:
    """Read every escape through a real MCP client; ``{name: what the error says was attempted}``
    (``" (on the wire)"`` added when the socket guard caught it), ``"served: <text>"`` for a read
    that was not refused."""
    outcome: dict[str, str] = {}
    async with connect(compose_plugins({"escapes": escapes_plugin(escapes, ctx)}, **server)) as client:
        for name in escapes:
            try:
                result = await client.read_resource(f"escape://try/{name}")
            except MCPError as err:
                assert err.code == -32008, (name, err.message)
                assert err.data["rule"] == "side-effect-in-resource-read"
                wire = err.data.get("layer") == "wire"  # caught below every client, on the socket
                outcome[name] = err.data["attempted"] + (" (on the wire)" if wire else "")
            else:
                outcome[name] = f"served: {result.contents[0].text}"  # type: ignore[union-attr]
    return outcome


# Item 8: trust must come from what is written, never from the frames on the stack.

WRITES_ON_IMPORT = """\
import pathlib, sys
if getattr(sys.modules[__name__], "_loaded", False) or __name__ == "writes_on_first_import":
    pathlib.Path({victim!r}).write_text("overwritten by module code")
_loaded = True
"""

TRUST_ESCAPES: dict[str, Escape] = {
    # named by the issue
    "lazy-import": lambda c: importlib.import_module("writes_on_first_import"),
    "reload": lambda c: importlib.reload(sys.modules["writes_on_reload"]),
    "log-handler-truncates": lambda c: logging.FileHandler(c.victim, mode="w").close(),
    "exec-as-logging": lambda c: exec(f"open({str(c.victim)!r}, 'w')", {"__name__": "logging"}),
    # more of the kind
    "exec-as-import-system": lambda c: exec(f"open({str(c.victim)!r}, 'w')", {"__name__": "importlib._bootstrap"}),
    "py-compile-to-any-path": lambda c: py_compile.compile(str(c.source), cfile=str(c.victim), doraise=True),
    "import-system-writer": lambda c: importlib._bootstrap_external._write_atomic(str(c.victim), b"x"),  # type: ignore[attr-defined]
    "watched-file-handler": lambda c: logging.handlers.WatchedFileHandler(c.victim, mode="w").close(),
    "rotating-handler-made-in-the-read": lambda c: logging.handlers.RotatingFileHandler(c.victim, "w").close(),
    "log-file-reopened-for-truncation": lambda c: open(c.log, "w").close(),  # the configured log, mode "a"
    "bytecode-cache-of-no-source": lambda c: c.fake_pyc.write_bytes(b"not bytecode"),  # a .pyc name is not enough
}


@pytest.fixture
def trust_ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    modules = tmp_path / "modules"
    modules.mkdir()
    for name in ("writes_on_first_import", "writes_on_reload"):
        (modules / f"{name}.py").write_text(WRITES_ON_IMPORT.format(victim=str(victim)))
    monkeypatch.syspath_prepend(str(modules))
    importlib.import_module("writes_on_reload")  # outside any scope: the first run writes nothing
    log_path = tmp_path / "server.log"
    handler = logging.FileHandler(log_path)  # configured before serving, mode "a"
    try:
        fake_pyc = tmp_path / "__pycache__" / f"victim.{sys.implementation.cache_tag}.pyc"
        fake_pyc.parent.mkdir()
        yield SimpleNamespace(victim=victim, source=modules / "writes_on_reload.py", log=log_path, fake_pyc=fake_pyc)
    finally:
        handler.close()
        for name in ("writes_on_first_import", "writes_on_reload"):
            sys.modules.pop(name, None)


async def test_no_frame_on_the_stack_makes_a_write_in_a_read_trusted(trust_ctx: SimpleNamespace) -> None:
    log_before = trust_ctx.log.read_bytes() if trust_ctx.log.exists() else None
    outcome = await refusals(TRUST_ESCAPES, trust_ctx)
    victim = str(trust_ctx.victim.parent.resolve())  # py_compile first makes the folder it writes in
    for name, attempted in outcome.items():
        assert not attempted.startswith("served"), f"{name} wrote during a read: {attempted}"
        target = {"log-file-reopened-for-truncation": trust_ctx.log, "bytecode-cache-of-no-source": trust_ctx.fake_pyc}
        assert str(target.get(name, victim)) in attempted, (name, attempted)
    assert trust_ctx.victim.read_text() == "original" and not trust_ctx.fake_pyc.exists()
    assert (trust_ctx.log.read_bytes() if trust_ctx.log.exists() else None) == log_before


async def test_bytecode_caches_and_configured_log_files_may_still_be_written(tmp_path: Path, monkeypatch) -> None:
    """What legitimately writes during a read, allowed for what it writes: a lazily imported
    module's ``.pyc`` (by path: a PEP 3147 cache of a source that exists), and a log handler made
    before serving, its rotation included (by file: the handler's own, in its own mode)."""
    (tmp_path / "quiet_lazy_module.py").write_text("VALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    monkeypatch.setattr("sys.pycache_prefix", None)  # the cache beside the source (PEP 3147), not under a prefix
    logger = logging.getLogger("tests.read_scope.rotating")
    logger.propagate = False
    handler = logging.handlers.RotatingFileHandler(tmp_path / "app.log", maxBytes=40, backupCount=2, delay=True)
    logger.addHandler(handler)

    def read(_c: SimpleNamespace) -> int:
        module = importlib.import_module("quiet_lazy_module")
        for n in range(4):
            logger.warning("record number %d of a read, long enough to rotate", n)
        return module.VALUE

    try:
        outcome = await refusals({"lazy-and-logging": read}, SimpleNamespace())
    finally:
        logger.removeHandler(handler)
        handler.close()
        sys.modules.pop("quiet_lazy_module", None)
    assert outcome == {"lazy-and-logging": "served: 7"}
    assert [p.suffix for p in (tmp_path / "__pycache__").iterdir()] == [".pyc"]
    assert sorted(p.name for p in tmp_path.glob("app.log*")) == ["app.log", "app.log.1", "app.log.2"]


async def test_sockets_that_make_no_file_may_still_be_bound() -> None:
    """A read may bind what makes no file: a Unix socket's abstract name (Linux ``socket(7)``), an
    autobound one, and a loopback TCP port; only a Unix socket at a path is a new file (refused:
    ``test_side_effects.py``)."""

    def bind(_c: SimpleNamespace) -> str:
        names = []
        for family, address in ((socket.AF_UNIX, f"\0mcp-providers-test-{os.getpid()}"), (socket.AF_UNIX, ""),
                                (socket.AF_INET, ("127.0.0.1", 0))):  # fmt: skip
            with socket.socket(family) as bound:
                bound.bind(address)
                names.append(family.name)
        return " ".join(names)

    outcome = await refusals({"bind": bind}, SimpleNamespace())
    assert outcome == {"bind": "served: AF_UNIX AF_UNIX AF_INET"}


# Item 9: judge where the OS will open, not where the path would land from the working directory.


def _escape_route(ctx: SimpleNamespace) -> tuple[str, int]:
    """Inside the scratch folder, a route out: ``rel`` resolves *from the working directory* ("/")
    to ``<scratch>/victim.txt``, but from the scratch folder's descriptor through a symlink it made
    (``<scratch>/<scratch path> -> work``) to the victim outside."""
    scratch = core_http.scratch_dir()
    inner = scratch.lstrip("/")
    os.makedirs(os.path.join(scratch, os.path.dirname(inner)))
    # The link itself is inside the scratch folder; a read may not make a link out of it (so code
    # with no scope, the host's, makes it here): what is judged is the open through it.
    contextvars.Context().run(os.symlink, ctx.work, os.path.join(scratch, inner))
    return f"{inner}/victim.txt", os.open(scratch, os.O_RDONLY | os.O_DIRECTORY)


def _dir_fd_open(opener: Callable[..., int], *, as_bytes: bool = False) -> Escape:
    def attempt(ctx: SimpleNamespace) -> str:
        rel, fd = _escape_route(ctx)
        path: Any = rel.encode() if as_bytes else rel
        try:
            os.close(opener(path, os.O_WRONLY | os.O_TRUNC, dir_fd=fd))
        finally:
            os.close(fd)
        return "opened"

    return attempt


def _opener_escape(ctx: SimpleNamespace) -> str:
    rel, fd = _escape_route(ctx)
    try:
        with open(rel, "w", opener=lambda p, flags: os.open(p, flags, dir_fd=fd)) as f:
            f.write("overwritten through an opener")
    finally:
        os.close(fd)
    return "opened"


_UNGUARDED_OPEN = [posix.open]
"""``posix.open`` as imported, in a list: no guard is put there."""

DIR_FD_ESCAPES: dict[str, Escape] = {
    "os-open-dir-fd-through-symlink": _dir_fd_open(os.open),  # named by the issue
    "posix-open-dir-fd": _dir_fd_open(posix.open),  # the same call by its posix name (guarded too)
    # the original held where the install's redirect of saved references does not reach (a list):
    # the "open" audit event carries no dir_fd, so the relative path is refused as unknowable
    "unguarded-open-dir-fd": _dir_fd_open(lambda *a, **k: _UNGUARDED_OPEN[0](*a, **k)),
    "os-open-dir-fd-bytes-path": _dir_fd_open(os.open, as_bytes=True),
    "builtin-open-with-dir-fd-opener": _opener_escape,
}


def _write_in_scratch_by_dir_fd(_ctx: SimpleNamespace) -> str:
    fd = os.open(core_http.scratch_dir(), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open("inside.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    finally:
        os.close(fd)
    return "written in the scratch folder"


@pytest.fixture
def dir_fd_ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    work = tmp_path / "work"
    work.mkdir()
    (work / "victim.txt").write_text("original")
    monkeypatch.chdir("/")  # where a relative path would land were the dir_fd ignored
    return SimpleNamespace(work=str(work))


async def test_a_dir_fd_relative_open_is_judged_where_the_os_opens_it(dir_fd_ctx: SimpleNamespace) -> None:
    outcome = await refusals({**DIR_FD_ESCAPES, "dir-fd-inside-scratch": _write_in_scratch_by_dir_fd}, dir_fd_ctx)
    assert outcome.pop("dir-fd-inside-scratch") == "served: written in the scratch folder"
    for name, attempted in outcome.items():
        assert attempted.startswith("opening "), (name, attempted)
    assert Path(dir_fd_ctx.work, "victim.txt").read_text() == "original"


# Item 10: HTTP sent below the connection pool, down to the socket.


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


TIMEOUTS = {"timeout": {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}}  # no hang if a guard is broken


def _bare_httpcore2(ctx: SimpleNamespace) -> int:
    host, port = _host_port(ctx.url)
    with httpcore2.HTTPConnection(httpcore2.Origin(b"http", host.encode(), port)) as conn:
        return conn.request("POST", f"{ctx.url}/bare-connection", content=b"x", extensions=TIMEOUTS).status


async def _bare_async_httpcore2(ctx: SimpleNamespace) -> int:
    host, port = _host_port(ctx.url)
    async with httpcore2.AsyncHTTPConnection(httpcore2.Origin(b"http", host.encode(), port)) as conn:
        return (await conn.request("PUT", f"{ctx.url}/bare-async-connection", extensions=TIMEOUTS)).status


def _bare_http11(ctx: SimpleNamespace) -> int:
    host, port = _host_port(ctx.url)
    stream = httpcore2.SyncBackend().connect_tcp(host, port)
    with httpcore2.HTTP11Connection(httpcore2.Origin(b"http", host.encode(), port), stream) as conn:
        return conn.request("DELETE", f"{ctx.url}/bare-http11", extensions=TIMEOUTS).status


def _http_client_raw(head: bytes) -> Escape:
    def attempt(ctx: SimpleNamespace) -> str:
        conn = http.client.HTTPConnection(*_host_port(ctx.url), timeout=5)
        try:
            conn.connect()
            conn.send(head)
            return conn.sock.recv(100).decode("latin-1")
        finally:
            conn.close()

    return attempt


def _raw_socket(*chunks: bytes) -> Escape:
    def attempt(ctx: SimpleNamespace) -> str:
        with socket.create_connection(_host_port(ctx.url), timeout=5) as sock:
            for chunk in chunks:
                sock.sendall(chunk)
            return sock.recv(100).decode("latin-1")

    return attempt


def _socket_file(ctx: SimpleNamespace) -> str:
    with socket.create_connection(_host_port(ctx.url), timeout=5) as sock, sock.makefile("wb") as f:
        f.write(b"PATCH /makefile HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        f.flush()
        return sock.recv(100).decode("latin-1")


async def _asyncio_stream(ctx: SimpleNamespace) -> str:
    reader, writer = await asyncio.open_connection(*_host_port(ctx.url))
    try:
        writer.write(b"post /asyncio-lowercase HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        return (await reader.read(100)).decode("latin-1")
    finally:
        writer.close()


RAW = b"Host: x\r\nContent-Length: 4\r\n\r\nbody"
WIRE_ESCAPES: dict[str, Escape] = {
    # named by the issue
    "bare-httpcore2-connection": _bare_httpcore2,
    "http-client-raw-get-with-body": _http_client_raw(b"GET /raw-get-body HTTP/1.1\r\n" + RAW),
    "http-client-raw-request": _http_client_raw(b"POST /raw-post HTTP/1.1\r\n" + RAW),
    # more of the kind
    "bare-async-httpcore2-connection": _bare_async_httpcore2,
    "bare-http11-connection": _bare_http11,
    "raw-socket-request-line-split": _raw_socket(b"PO", b"ST /split HTTP/1.1\r\n", b"Host: x\r\n\r\n"),
    "raw-socket-chunked-get": _raw_socket(b"GET /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"),
    "raw-socket-pipelined-after-get": _raw_socket(
        b"GET /first HTTP/1.1\r\nHost: x\r\n\r\nDELETE /second HTTP/1.1\r\n\r\n"
    ),
    "socket-file": _socket_file,
    "asyncio-stream-lowercase-method": _asyncio_stream,
}


async def test_http_below_the_pool_is_refused_however_it_is_sent() -> None:
    safe = {
        "raw-socket-get": _raw_socket(b"GET /raw-get HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        "http-client-get": _http_client_raw(b"GET /http-client-get HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
    }
    with target_server() as (url, seen):
        outcome = await refusals({**WIRE_ESCAPES, **safe}, SimpleNamespace(url=url))
    assert outcome.pop("raw-socket-get").startswith("served: HTTP/1.0 200")
    assert outcome.pop("http-client-get").startswith("served: HTTP/1.0 200")
    for name, attempted in outcome.items():
        assert attempted.startswith("a "), (name, attempted)
    # A bare httpcore2 connection is refused by its own guard, before it connects; the rest on the wire.
    assert outcome["bare-httpcore2-connection"] == f"a POST to {url}/bare-connection"
    assert outcome["bare-async-httpcore2-connection"] == f"a PUT to {url}/bare-async-connection"
    assert outcome["bare-http11-connection"] == f"a DELETE to {url}/bare-http11"
    assert outcome["http-client-raw-get-with-body"] == f"a GET with a body to {url}/raw-get-body (on the wire)"
    assert outcome["raw-socket-request-line-split"] == f"a POST to {url}/split (on the wire)"
    assert outcome["asyncio-stream-lowercase-method"] == f"a POST to {url}/asyncio-lowercase (on the wire)"
    assert seen == ["GET /raw-get", "GET /http-client-get"]  # nothing else reached the server


async def test_a_raw_request_let_through_in_warn_mode_is_recorded_once() -> None:
    from mcp_providers import ServerSettings

    escapes = {"raw": _raw_socket(b"PUT /warned HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")}
    with target_server() as (url, seen):
        composition = compose_plugins(
            {"escapes": escapes_plugin(escapes, SimpleNamespace(url=url))},
            server=ServerSettings(side_effects={"escapes": "warn"}),
        )
        async with connect(composition) as client:
            result = await client.read_resource("escape://try/raw")
    (violation,) = (result.meta or {})[RECEIPT_KEY]["violations"]
    assert violation["attempted"] == f"a PUT to {url}/warned" and violation["refused"] is False
    assert violation["layer"] == "wire"
    assert seen == ["PUT /warned"]


@contextlib.contextmanager
def tls_server(tmp_path: Path) -> Iterator[tuple[str, list[str], ssl.SSLContext]]:
    """``target_server`` over TLS, with a certificate for 127.0.0.1 made by the openssl CLI; yields
    the base URL, the requests seen and a client context that trusts the certificate."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    with target_server(server_context) as (url, seen):
        yield url, seen, ssl.create_default_context(cafile=str(cert))


def _tls_raw(head: bytes) -> Escape:
    def attempt(ctx: SimpleNamespace) -> str:
        host, port = _host_port(ctx.url.replace("https://", "http://"))
        with (
            socket.create_connection((host, port), timeout=5) as raw,
            ctx.tls.wrap_socket(raw, server_hostname=host) as sock,
        ):
            sock.sendall(head)
            return sock.recv(100).decode("latin-1")

    return attempt


def _https_client_raw(ctx: SimpleNamespace) -> str:
    host, port = _host_port(ctx.url.replace("https://", "http://"))
    conn = http.client.HTTPSConnection(host, port, context=ctx.tls, timeout=5)
    try:
        conn.connect()
        conn.send(b"DELETE /https-raw HTTP/1.1\r\nHost: x\r\n\r\n")
        return conn.sock.recv(100).decode("latin-1")
    finally:
        conn.close()


async def _asyncio_tls(ctx: SimpleNamespace) -> str:
    host, port = _host_port(ctx.url.replace("https://", "http://"))
    reader, writer = await asyncio.open_connection(host, port, ssl=ctx.tls)
    try:
        writer.write(b"PUT /asyncio-tls HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")  # through ssl.SSLObject
        await writer.drain()
        return (await reader.read(100)).decode("latin-1")
    finally:
        writer.close()


async def _core_client_tls_get(ctx: SimpleNamespace) -> str:
    async with core_http.client(verify=ctx.tls) as client:
        return (await client.get(f"{ctx.url}/core-client-get")).text


async def test_http_over_tls_is_judged_in_its_plaintext(tmp_path: Path) -> None:
    escapes = {
        "tls-socket-raw": _tls_raw(b"POST /tls-raw HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
        "https-client-raw-send": _https_client_raw,
        "asyncio-tls-stream": _asyncio_tls,
        "tls-socket-get": _tls_raw(b"GET /tls-get HTTP/1.1\r\nHost: x\r\n\r\n"),
        "core-client-get": _core_client_tls_get,  # the project's own client, as a ServiceNow read uses it
    }
    with tls_server(tmp_path) as (url, seen, tls):
        outcome = await refusals(escapes, SimpleNamespace(url=url, tls=tls))
    assert outcome.pop("tls-socket-get").startswith("served: HTTP/1.0 200")
    assert outcome.pop("core-client-get") == "served: ok"
    assert outcome == {
        "tls-socket-raw": f"a POST to {url}/tls-raw (on the wire)",  # ssl.SSLSocket.sendall
        "https-client-raw-send": f"a DELETE to {url}/https-raw (on the wire)",
        "asyncio-tls-stream": "a PUT to https://127.0.0.1/asyncio-tls (on the wire)",  # an SSLObject has no peer
    }
    assert seen == ["GET /tls-get", "GET /core-client-get"]
