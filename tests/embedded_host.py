"""A host application embedding a composition, run as its own process by ``test_embedded_guards``
(the test suite's process has every guard installed already): prints one JSON object of what it saw.

1. Before ``import mcp_providers``: the process-wide things the library could change are noted
   (socket/TLS send methods, ``os.open``, ``open``, ``http.client``, ``logging.FileHandler``,
   ``sys.meta_path``), and ``gc.disable`` and pydantic's plugin loader are wrapped to record callers.
2. ``mount()`` with the default (``side_effects`` unset): served by uvicorn; each attempt is read
   once; then what changed is compared, with the loop's task factory.
3. A second composition ``mount()``-ed with ``side_effects="enforce"``: the same attempts again.

Each attempt is a resource ``emb://guard/{attempt}`` whose read tries one side effect against a
loopback HTTP server that records what reaches it (``reached``), or the disk.
"""

from __future__ import annotations

import _io
import _posixshmem
import asyncio
import builtins
import concurrent.futures
import ctypes
import gc
import http.client
import io
import json
import logging
import os
import posix
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pydantic.plugin._loader as pydantic_loader

WATCHED: dict[str, Callable[[], Any]] = {
    "socket.socket.send": lambda: socket.socket.send,
    "socket.socket.sendall": lambda: socket.socket.sendall,
    "ssl.SSLSocket.write": lambda: ssl.SSLSocket.write,
    "ssl.SSLObject.write": lambda: ssl.SSLObject.write,
    "os.open": lambda: os.open,
    "os.write": lambda: os.write,
    "builtins.open": lambda: builtins.open,
    "http.client.HTTPConnection.putrequest": lambda: http.client.HTTPConnection.putrequest,
    "logging.FileHandler.__init__": lambda: logging.FileHandler.__init__,
    "threading.Thread.start": lambda: threading.Thread.start,
    "concurrent.futures.ThreadPoolExecutor.submit": lambda: concurrent.futures.ThreadPoolExecutor.submit,
}
originals = {name: get() for name, get in WATCHED.items()}
MODULES = {
    **{"os": os, "posix": posix, "io": io, "_io": _io, "builtins": builtins},  # (_io calls itself "io")
    **{"signal": signal, "sys": sys, "socket": socket, "_posixshmem": _posixshmem},
}
functions = {(m, n): f for m, module in MODULES.items() for n, f in vars(module).items() if callable(f)}
meta_path = list(sys.meta_path)
gc_disabled_by: list[str] = []
loader_called_by: list[str] = []
_disable, _get_plugins = gc.disable, pydantic_loader.get_plugins


def _caller() -> str:
    return str(sys._getframe(2).f_globals.get("__name__"))


def _recording_disable() -> None:
    gc_disabled_by.append(_caller())
    _disable()


def _recording_get_plugins() -> Any:
    loader_called_by.append(_caller())
    return _get_plugins()


gc.disable = _recording_disable
pydantic_loader.get_plugins = _recording_get_plugins

import mcp_providers  # noqa: E402  (the subject: what this import changes)

seen: dict[str, Any] = {
    "gc enabled after import": gc.isenabled(),
    "gc.disable called by": gc_disabled_by,
    "pydantic loader called by mcp_providers": [m for m in loader_called_by if m.startswith("mcp_providers")],
}

import anyio  # noqa: E402
import uvicorn  # noqa: E402
from mcp import Client, MCPError  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from mcp_providers import Content, ReadRequest, ResourceProvider, ResourceTemplate, hookimpl  # noqa: E402
from mcp_providers import http as core_http  # noqa: E402
from mcp_providers.embedding import mount  # noqa: E402

ATTEMPTS = (
    "file",
    "unix-socket-bind",
    "process",
    "signal",
    "native-code",
    "interpreter-limit",
    "framework-client-post",
    "urllib-post",
    "raw-socket-post",
    "thread-file",
)
reached: list[str] = []
scratch = tempfile.mkdtemp(prefix="embedded-host-")
by_threads = tempfile.mkdtemp(prefix="embedded-host-threads-")


class Recorder(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reached.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


upstream = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
threading.Thread(target=upstream.serve_forever, daemon=True).start()
UPSTREAM = f"http://127.0.0.1:{upstream.server_address[1]}"


async def attempt(name: str, tag: str) -> None:
    path = f"/{tag}/{name}"
    if name == "file":
        with open(os.path.join(scratch, f"{tag}.txt"), "w") as out:
            out.write("x")
    elif name == "unix-socket-bind":  # makes a file: the socket's
        with socket.socket(socket.AF_UNIX) as unix:
            unix.bind(os.path.join(scratch, f"{tag}.sock"))
    elif name == "process":
        subprocess.run(["true"], check=True)
    elif name == "signal":  # SIGWINCH: ignored by default, so harmless if it went through
        signal.pthread_kill(threading.get_ident(), signal.SIGWINCH)
    elif name == "native-code":
        ctypes.CDLL(None).getpid()
    elif name == "interpreter-limit":  # no audit event: only the process-wide patch sees it
        sys.setswitchinterval(sys.getswitchinterval())
    elif name == "thread-file":  # a thread the read starts and joins: followed only process-wide
        failed: list[BaseException] = []

        def write() -> None:
            try:
                with open(os.path.join(by_threads, f"{tag}.txt"), "w") as out:
                    out.write("x")
            except BaseException as exc:
                failed.append(exc)

        worker = threading.Thread(target=write)
        worker.start()
        worker.join()
        if failed:
            raise failed[0]
    elif name == "framework-client-post":
        async with core_http.client() as client:
            await client.post(UPSTREAM + path, content=b"x")
    elif name == "urllib-post":
        urllib.request.urlopen(urllib.request.Request(UPSTREAM + path, data=b"x", method="POST"), timeout=10).read()
    else:
        with socket.create_connection(upstream.server_address, timeout=10) as raw:
            raw.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx".encode())
            raw.recv(1024)


class Guarded(ResourceProvider):
    def __init__(self, tag: str) -> None:
        self.name, self.tag = f"guarded-{tag}", tag
        self.prefixes = (f"emb://{tag}/",)

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template=f"emb://{self.tag}/{{attempt}}", name=f"attempt-{self.tag}")]

    async def read(self, request: ReadRequest) -> Content:
        await attempt(request.params["attempt"], self.tag)
        return Content(text="done")


class Plugin:
    def __init__(self, tag: str) -> None:
        self.provider = Guarded(tag)

    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [self.provider]


def functions_changed() -> list[str]:
    """``module.name`` of every function of :data:`MODULES` that is no longer the one it was."""
    return sorted(f"{m}.{n}" for (m, n), f in functions.items() if vars(MODULES[m]).get(n) is not f)


def changed() -> list[str]:
    names = [name for name, get in WATCHED.items() if get() is not originals[name]]
    added = [f"sys.meta_path: {type(f).__module__}.{type(f).__qualname__}" for f in sys.meta_path if f not in meta_path]
    return names + added


async def serve_and_read(tag: str, side_effects: str | None) -> dict[str, Any]:
    """Mount a composition (``side_effects`` as given), read each attempt once over HTTP; what
    each read answered, what changed in the process, and the loop's task factory."""
    app = Starlette()
    composition = mcp_providers.compose(plugins={tag: Plugin(tag)}, load_entrypoints=False)
    if side_effects is None:
        mount(app, composition, "/mcp")
    else:
        mount(app, composition, "/mcp", side_effects=side_effects)  # type: ignore[arg-type]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    answers: dict[str, Any] = {}
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.01)
        try:
            async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
                for name in ATTEMPTS:
                    try:
                        await client.read_resource(f"emb://{tag}/{name}")
                        answers[name] = "served"
                    except MCPError as exc:
                        answers[name] = exc.error.code
            factory = asyncio.get_running_loop().get_task_factory()
        finally:
            server.should_exit = True
    return {
        "answers": answers,
        "changed": changed(),
        "functions changed": functions_changed(),
        "task factory": None if factory is None else bool(getattr(factory, "contains_plugin_tasks", False)),
        "files": sorted(os.listdir(scratch)),
        "thread files": sorted(os.listdir(by_threads)),
    }


async def main() -> None:
    seen["scoped"] = await serve_and_read("scoped", None)
    seen["scoped reached"] = sorted(reached)
    reached.clear()
    seen["enforce"] = await serve_and_read("enforce", "enforce")
    seen["enforce reached"] = sorted(reached)


anyio.run(main)
upstream.shutdown()
print(json.dumps(seen))
