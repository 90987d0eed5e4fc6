"""Issue 16: side effects are refused while a provider reads, completes, renders a prompt or runs an
effects="none" tool, through any HTTP client, the file system or a process start; refused attempts
reach neither the upstream (a real loopback server counts requests) nor the disk."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import importlib.util
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers import (
    RECEIPT_KEY,
    CompletionRequest,
    Content,
    Freshness,
    Message,
    Prompt,
    PromptArgument,
    PromptProvider,
    ReadRequest,
    Resource,
    ResourceProvider,
    ResourceTemplate,
    ServerSettings,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers import http as core_http
from mcp_providers.testing import check, compose, connect

pytestmark = pytest.mark.anyio

HAS_REQUESTS = importlib.util.find_spec("requests") is not None
HAS_AIOHTTP = importlib.util.find_spec("aiohttp") is not None
HAS_HTTPX = importlib.util.find_spec("httpx") is not None  # plain httpx over httpcore, when installed


@contextlib.contextmanager
def upstream() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on loopback recording ``"METHOD /path"`` for every request it answers."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"access_token": "t"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- the attempts: each takes (upstream URL, work dir) and tries one side effect -------------------


async def _own_async(url: str, _d: Path) -> None:
    async with httpx2.AsyncClient() as c:
        await c.post(f"{url}/httpx2-async", json={})


async def _own_sync(url: str, _d: Path) -> None:
    with httpx2.Client() as c:
        c.post(f"{url}/httpx2-sync")


async def _own_proxy(url: str, _d: Path) -> None:
    async with httpx2.AsyncClient(proxy=url) as c:  # the upstream doubles as a forward proxy here
        await c.delete("http://example.invalid/via-proxy")


async def _own_mounts(url: str, _d: Path) -> None:
    async with httpx2.AsyncClient(mounts={"http://": httpx2.AsyncHTTPTransport(retries=1)}) as c:
        await c.put(f"{url}/mounts")


async def _core_proxy(url: str, _d: Path) -> None:
    async with core_http.client(proxy=url) as c:
        await c.patch("http://example.invalid/core-proxy")


async def _get_with_body(url: str, _d: Path) -> None:
    async with core_http.client() as c:
        await c.request("GET", f"{url}/get-with-body", content=b"delete everything")


async def _urllib(url: str, _d: Path) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{url}/urllib", data=b"x", method="POST"), timeout=5)


async def _http_client(url: str, _d: Path) -> None:
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=5)
    try:
        conn.request("DELETE", "/http-client")
    finally:
        conn.close()


async def _requests(url: str, _d: Path) -> None:
    import requests

    requests.post(f"{url}/requests", data=b"x", timeout=5)


async def _aiohttp(url: str, _d: Path) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as s, s.post(f"{url}/aiohttp", data=b"x") as r:
        await r.read()


async def _aiohttp_request(url: str, _d: Path) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as s, s.request("DELETE", f"{url}/aiohttp-request") as r:
        await r.read()


async def _aiohttp_patch(url: str, _d: Path) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as s:
        response = await s.patch(f"{url}/aiohttp-patch", json={"x": 1})  # awaited, not entered
        await response.read()


async def _plain_httpx(url: str, _d: Path) -> None:
    import httpx

    async with httpx.AsyncClient() as c:
        await c.post(f"{url}/httpx")


async def _spawned_task(url: str, d: Path) -> None:
    await asyncio.create_task(_own_async(url, d))  # the task copies the read's context


async def _to_thread(url: str, d: Path) -> None:
    await anyio.to_thread.run_sync(lambda: anyio.from_thread.run(_urllib, url, d))


async def _write(_u: str, d: Path) -> None:
    (d / "new.txt").write_text("written")


async def _append(_u: str, d: Path) -> None:
    with open(d / "append.txt", "a") as f:
        f.write("more")


async def _truncate(_u: str, d: Path) -> None:
    os.truncate(d / "truncate.txt", 0)


async def _delete(_u: str, d: Path) -> None:
    os.remove(d / "delete.txt")


async def _rename(_u: str, d: Path) -> None:
    os.rename(d / "rename.txt", d / "renamed.txt")


async def _mkdir(_u: str, d: Path) -> None:
    os.mkdir(d / "newdir")


async def _rmdir(_u: str, d: Path) -> None:
    os.rmdir(d / "emptydir")


async def _chmod(_u: str, d: Path) -> None:
    os.chmod(d / "chmod.txt", 0o600)


async def _rmtree(_u: str, d: Path) -> None:
    shutil.rmtree(d / "tree")


async def _subprocess(_u: str, _d: Path) -> None:
    subprocess.run(["true"], check=True)


async def _os_system(_u: str, _d: Path) -> None:
    assert os.system("true") == 0


async def _hardlink(_u: str, d: Path) -> None:
    inside = core_http.in_read_scope() is not None  # an additive tool runs outside any scope
    link = (Path(core_http.scratch_dir()) if inside else d) / "hardlink"
    os.link(d / "victim.txt", link)  # a hard link into the scratch folder would write through
    link.write_text("changed through a hard link")


async def _unix_socket_bind(_u: str, d: Path) -> None:
    with socket.socket(socket.AF_UNIX) as unix:
        unix.bind(str(d / "bound.sock"))  # makes a file: the socket's


async def _mkfifo(_u: str, d: Path) -> None:
    os.mkfifo(d / "fifo")  # no audit event of its own


async def _spawnv_passfds(_u: str, _d: Path) -> None:
    import multiprocessing.util

    multiprocessing.util.spawnv_passfds(b"/bin/true", [b"true"], [])  # _posixsubprocess, no audit event


async def _posix_spawn(_u: str, _d: Path) -> None:
    pid = os.posix_spawn("/bin/true", ["true"], dict(os.environ))
    os.waitpid(pid, 0)


Attempt = Callable[[str, Path], Any]
HTTP_ATTEMPTS: dict[str, Attempt] = {
    "httpx2-async": _own_async,
    "httpx2-sync": _own_sync,
    "httpx2-proxy": _own_proxy,
    "httpx2-mounts": _own_mounts,
    "core-client-proxy": _core_proxy,
    "get-with-body": _get_with_body,
    "urllib": _urllib,
    "http-client": _http_client,
    "spawned-task": _spawned_task,
    "to-thread": _to_thread,
    **({"requests": _requests} if HAS_REQUESTS else {}),
    **(
        {"aiohttp": _aiohttp, "aiohttp-request": _aiohttp_request, "aiohttp-patch": _aiohttp_patch}
        if HAS_AIOHTTP
        else {}
    ),
    **({"httpx": _plain_httpx} if HAS_HTTPX else {}),
}
FILE_ATTEMPTS: dict[str, Attempt] = {
    "write": _write,
    "append": _append,
    "truncate": _truncate,
    "delete": _delete,
    "rename": _rename,
    "mkdir": _mkdir,
    "rmdir": _rmdir,
    "chmod": _chmod,
    "rmtree": _rmtree,
    "hardlink-into-scratch": _hardlink,
    "mkfifo": _mkfifo,
    "unix-socket-bind": _unix_socket_bind,
}
PROCESS_ATTEMPTS: dict[str, Attempt] = {
    "subprocess": _subprocess,
    "os-system": _os_system,
    "posix-spawn": _posix_spawn,
    "spawnv-passfds": _spawnv_passfds,
}
ATTEMPTS = {**HTTP_ATTEMPTS, **FILE_ATTEMPTS, **PROCESS_ATTEMPTS}


def prepare(d: Path) -> None:
    for name in ("append.txt", "truncate.txt", "delete.txt", "rename.txt", "chmod.txt", "victim.txt"):
        (d / name).write_text("original")
        (d / name).chmod(0o644)
    (d / "emptydir").mkdir()
    (d / "tree").mkdir()
    (d / "tree" / "leaf.txt").write_text("leaf")


def snapshot(d: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(d)): (p.stat().st_mode, p.read_bytes() if p.is_file() else b"") for p in sorted(d.rglob("*"))
    }


class Kind(BaseModel):
    kind: str


def attempts_plugin(url: str, work: Path, *, exempt_token: bool = False) -> SimpleNamespace:
    """One provider of each sort whose code tries ``ATTEMPTS[kind]``."""

    class Reads(ResourceProvider):
        name = "attempts"
        prefixes = ("effects://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri=f"effects://try/{k}", name=k) for k in (*ATTEMPTS, "ok", "oauth", "scratch")]

        def templates(self) -> Sequence[ResourceTemplate]:
            return [ResourceTemplate(uri_template="effects://pick/{kind}", name="pick")]

        async def read(self, request: ReadRequest) -> Content:
            kind = request.uri.removeprefix("effects://try/")
            if kind == "oauth":  # an OAuth-style token POST, exempted: it writes no served data
                async with core_http.client(base_url=url) as c:
                    with core_http.exempt("OAuth token request"):
                        token = (await c.post("/oauth/token", data={"grant_type": "client_credentials"})).json()
                    await c.get("/data", headers={"Authorization": f"Bearer {token['access_token']}"})
            elif kind == "scratch":
                (Path(core_http.scratch_dir()) / "unpacked.txt").write_text("fine")
            elif kind != "ok":
                await ATTEMPTS[kind](url, work)
            return Content(text=f"read {kind}")

        async def complete(self, template: ResourceTemplate, request: CompletionRequest) -> Sequence[str]:
            await _write(url, work)
            return ["never"]

    class Tools(ToolProvider):
        name = "attempt-tools"

        def tools(self) -> Sequence[Tool]:
            return [
                Tool(name="try_none", description="Tries one side effect.", input_model=Kind, effects="none"),
                Tool(name="try_additive", description="Tries one side effect.", input_model=Kind, effects="additive"),
            ]

        async def call(self, call: ToolCall) -> ToolResult:
            await ATTEMPTS[call.arguments.kind](url, work)  # type: ignore[attr-defined]
            return ToolResult(text="done")

    class Prompts(PromptProvider):
        name = "attempt-prompts"

        def prompts(self) -> Sequence[Prompt]:
            return [Prompt(name="try", description="Tries a POST.", arguments=(PromptArgument(name="x"),))]

        async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
            await _urllib(url, work)
            return [Message("user", "never")]

    return SimpleNamespace(
        register_resource_providers=hookimpl(lambda: [Reads()]),
        register_tool_providers=hookimpl(lambda: [Tools()]),
        register_prompt_providers=hookimpl(lambda: [Prompts()]),
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    prepare(d)
    return d


def assert_refused(err: MCPError, provider: str, target_key: str, target: str) -> None:
    assert err.code == -32008, err.message
    assert err.data["rule"] == "side-effect-in-resource-read"
    assert err.data["provider"] == provider
    assert err.data[target_key] == target
    assert err.data["attempted"] in err.message
    assert f"provider {provider!r}" in err.message and target in err.message


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_side_effect_in_a_read_is_refused_and_the_server_keeps_serving(mode: str, work: Path) -> None:
    before = snapshot(work)
    with upstream() as (url, seen):
        async with connect(compose({"attempts": attempts_plugin(url, work)}), mode=mode) as client:  # type: ignore[arg-type]
            for kind in ATTEMPTS:
                uri = f"effects://try/{kind}"
                with pytest.raises(MCPError) as err:
                    await client.read_resource(uri)
                assert_refused(err.value, "attempts", "uri", uri)
            ok = await client.read_resource("effects://try/ok")
            assert ok.contents[0].text == "read ok"  # type: ignore[union-attr]
        assert seen == []  # not one request reached the upstream
    assert snapshot(work) == before  # nor the disk
    assert len(ATTEMPTS) >= 22


@pytest.mark.parametrize(
    ("kind", "attempted"),
    [
        ("httpx2-proxy", "a DELETE to http://example.invalid/via-proxy"),
        ("get-with-body", "a GET with a body to http://127.0.0.1:"),
        ("http-client", "a DELETE to http://127.0.0.1:"),
        ("write", "opening "),
        ("rename", "os.rename of "),
        ("rmtree", "shutil.rmtree of "),
        ("unix-socket-bind", "binding a Unix socket at "),
        ("posix-spawn", "starting a process (os.posix_spawn /bin/true"),
    ],
)
async def test_the_error_says_what_was_attempted(kind: str, attempted: str, work: Path) -> None:
    with upstream() as (url, _seen):
        async with connect(compose({"attempts": attempts_plugin(url, work)})) as client:
            with pytest.raises(MCPError) as err:
                await client.read_resource(f"effects://try/{kind}")
    assert err.value.data["attempted"].startswith(attempted)
    assert err.value.message.startswith(f"side-effect-in-resource-read: {attempted}")


async def test_a_tool_declared_effects_none_is_refused_and_an_additive_one_is_not(work: Path) -> None:
    before = snapshot(work)
    with upstream() as (url, seen):
        async with connect(compose({"attempts": attempts_plugin(url, work)})) as client:
            for kind in ATTEMPTS:
                with pytest.raises(MCPError) as err:
                    await client.call_tool("try_none", {"kind": kind})
                assert_refused(err.value, "attempt-tools", "tool", "try_none")
            assert seen == [] and snapshot(work) == before
            for kind in ATTEMPTS:
                result = await client.call_tool("try_additive", {"kind": kind})
                assert not result.is_error, (kind, result.content)
        # Every HTTP attempt arrived (the proxied ones as absolute-form requests), once each.
        assert len(seen) == len(HTTP_ATTEMPTS)
        assert "DELETE http://example.invalid/via-proxy" in seen and "POST /urllib" in seen
    after = snapshot(work)
    assert "new.txt" in after and "newdir" in after and "renamed.txt" in after
    assert "delete.txt" not in after and "emptydir" not in after and "tree" not in after
    assert after["append.txt"][1] == b"originalmore" and after["truncate.txt"][1] == b""


async def test_prompt_render_and_completion_are_in_the_scope(work: Path) -> None:
    with upstream() as (url, seen):
        async with connect(compose({"attempts": attempts_plugin(url, work)})) as client:
            with pytest.raises(MCPError) as err:
                await client.get_prompt("try", {"x": "1"})
            assert_refused(err.value, "attempt-prompts", "prompt", "try")
            ref = {"type": "ref/resource", "uri": "effects://pick/{kind}"}
            with pytest.raises(MCPError) as err:
                await client.complete(ref, {"name": "kind", "value": ""})  # type: ignore[arg-type]
            assert_refused(err.value, "attempts", "ref", "effects://pick/{kind}")
        assert seen == []
    assert not (work / "new.txt").exists()


async def test_an_exempted_token_post_is_logged_and_in_the_receipt(work: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="mcp_providers.sideeffects")
    with upstream() as (url, seen):
        async with connect(compose({"attempts": attempts_plugin(url, work)})) as client:
            result = await client.read_resource("effects://try/oauth")
        host = url.removeprefix("http://")
        assert seen == ["POST /oauth/token", "GET /data"]
    receipt = (result.meta or {})[RECEIPT_KEY]
    assert receipt["exemptions"] == [{"reason": "OAuth token request", "method": "POST", "host": host}]
    assert "violations" not in receipt
    (record,) = [r for r in caplog.records if "exempted" in r.getMessage()]
    assert record.levelno == logging.INFO
    assert "'attempts'" in record.getMessage() and "effects://try/oauth" in record.getMessage()


async def test_warn_mode_serves_the_read_and_records_the_violation(work: Path, caplog) -> None:
    server = ServerSettings(side_effects={"attempts": "warn"})
    with upstream() as (url, seen):
        async with connect(compose({"attempts": attempts_plugin(url, work)}, server=server)) as client:
            post = await client.read_resource("effects://try/urllib")
            write = await client.read_resource("effects://try/write")
        assert seen == ["POST /urllib"]
    assert (work / "new.txt").read_text() == "written"
    (violation,) = (post.meta or {})[RECEIPT_KEY]["violations"]
    assert violation["category"] == "http" and violation["refused"] is False
    assert violation["attempted"].startswith("a POST to http://127.0.0.1:")
    (violation,) = (write.meta or {})[RECEIPT_KEY]["violations"]
    assert violation["category"] == "file" and violation["paths"] == [str((work / "new.txt").resolve())]
    assert any(r.levelno == logging.WARNING and "warn mode" in r.getMessage() for r in caplog.records)


async def test_files_under_the_scratch_directory_may_be_written(work: Path) -> None:
    with upstream() as (url, _seen):
        async with connect(compose({"attempts": attempts_plugin(url, work)})) as client:
            result = await client.read_resource("effects://try/scratch")
    assert result.contents[0].text == "read scratch"  # type: ignore[union-attr]
    assert "violations" not in (result.meta or {})[RECEIPT_KEY]


# -- what is and is not in the read's context -----------------------------------------------------


def background_plugin(url: str) -> SimpleNamespace:
    class Background(ResourceProvider):
        name = "background"
        prefixes = ("bg://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri=f"bg://{n}", name=n) for n in ("while-writing", "spawn", "spawned-outcome")]

        @contextlib.asynccontextmanager
        async def lifespan(self) -> AsyncIterator[None]:
            self.go, self.done, self.outcome = anyio.Event(), anyio.Event(), ""
            async with core_http.client(base_url=url) as self.http, anyio.create_task_group() as tg:
                tg.start_soon(self._writer)  # started outside any read
                yield
                tg.cancel_scope.cancel()

        async def _writer(self) -> None:
            await self.go.wait()
            self.outcome = str((await self.http.post("/from-lifespan")).status_code)
            self.done.set()

        async def read(self, request: ReadRequest) -> Content:
            if request.uri == "bg://while-writing":
                self.go.set()
                await self.done.wait()  # the lifespan task writes while this read runs
                return Content(text=self.outcome)
            if request.uri == "bg://spawn":  # a task started inside the read that outlives it
                self.spawned = asyncio.get_running_loop().create_task(self.http.post("/from-spawned"))
                return Content(text="spawned")
            try:
                await self.spawned
            except Exception as exc:
                return Content(text=f"{type(exc).__name__}: {exc}")
            return Content(text="the spawned task wrote")

    return SimpleNamespace(register_resource_providers=hookimpl(lambda: [Background()]))


async def test_a_lifespan_task_may_write_during_a_read_but_a_task_the_read_spawned_may_not() -> None:
    with upstream() as (url, seen):
        async with connect(compose({"background": background_plugin(url)})) as client:
            during = await client.read_resource("bg://while-writing")
            assert during.contents[0].text == "200"  # type: ignore[union-attr]
            await client.read_resource("bg://spawn")
            outcome = await client.read_resource("bg://spawned-outcome")
        assert seen == ["POST /from-lifespan"]
    text = outcome.contents[0].text  # type: ignore[union-attr]
    assert text.startswith("SideEffectRefused: side-effect-in-resource-read: a POST to")
    assert "reading bg://spawn;" in text


@contextlib.asynccontextmanager
async def forward_proxy() -> AsyncIterator[tuple[str, list[str]]]:
    """A real plain-HTTP forward proxy on loopback (asyncio) recording ``"METHOD absolute-URL"``."""
    seen: list[str] = []

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ")
            seen.append(f"{method} {target}")
            headers = [h for h in lines[1:] if h and not h.lower().startswith(("connection:", "proxy-", "keep-alive"))]
            length = next((int(h.split(":", 1)[1]) for h in headers if h.lower().startswith("content-length:")), 0)
            body = await reader.readexactly(length)
            split = urllib.parse.urlsplit(target)
            up_reader, up_writer = await asyncio.open_connection(split.hostname, split.port or 80)
            path = split.path + (f"?{split.query}" if split.query else "")
            head = "\r\n".join([f"{method} {path or '/'} {version}", *headers, "Connection: close", "", ""])
            up_writer.write(head.encode("latin-1") + body)
            await up_writer.drain()
            writer.write(await up_reader.read())  # the upstream closes after one answer
            up_writer.close()
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", seen
    finally:
        server.close()
        await server.wait_closed()


def env_proxy_plugin(url: str) -> SimpleNamespace:
    class ViaProxy(ResourceProvider):
        name = "via-proxy"
        prefixes = ("proxied://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="proxied://get", name="get"), Resource(uri="proxied://post", name="post")]

        @contextlib.asynccontextmanager
        async def lifespan(self) -> AsyncIterator[None]:
            async with core_http.client(base_url=url) as self.http:  # trust_env: HTTP_PROXY applies
                yield

        async def read(self, request: ReadRequest) -> Content:
            if request.uri == "proxied://post":
                await self.http.post("/via-env", json={})
            return Content(text=(await self.http.get("/via-env")).text)

    return SimpleNamespace(register_resource_providers=hookimpl(lambda: [ViaProxy()]))


async def test_an_environment_proxy_is_honoured_and_stays_guarded(monkeypatch) -> None:
    for name in ("http_proxy", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with upstream() as (url, seen):
        async with forward_proxy() as (proxy, proxied):
            monkeypatch.setenv("HTTP_PROXY", proxy)
            async with connect(compose({"via-proxy": env_proxy_plugin(url)})) as client:
                await client.read_resource("proxied://get")
                with pytest.raises(MCPError) as err:
                    await client.read_resource("proxied://post")
                assert err.value.data["attempted"] == f"a POST to {url}/via-env"
            assert proxied == [f"GET {url}/via-env"]  # the GET went through the proxy; the POST nowhere
            assert seen == ["GET /via-env"]
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            async with core_http.client() as direct:
                await direct.get(f"{url}/direct")
            assert proxied == [f"GET {url}/via-env"]  # NO_PROXY honoured
        assert seen == ["GET /via-env", "GET /direct"]


async def test_lazy_imports_may_cache_bytecode_and_logging_may_open_its_file(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "lazy_in_read.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    monkeypatch.setattr("sys.pycache_prefix", None)  # the cache beside the source (PEP 3147), not under a prefix
    logger = logging.getLogger("tests.side_effects.delayed")
    handler = logging.FileHandler(tmp_path / "plugin.log", delay=True)  # opened on the first record
    logger.addHandler(handler)

    class Lazy(ResourceProvider):
        name = "lazy"
        prefixes = ("lazy://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="lazy://value", name="value")]

        async def read(self, request: ReadRequest) -> Content:
            import lazy_in_read  # type: ignore[import-not-found]

            logger.warning("read %s", request.uri)
            return Content(text=str(lazy_in_read.VALUE))

    try:
        plugin = SimpleNamespace(register_resource_providers=hookimpl(lambda: [Lazy()]))
        async with connect(compose({"lazy": plugin})) as client:
            result = await client.read_resource("lazy://value")
    finally:
        logger.removeHandler(handler)
        handler.close()
        monkeypatch.delitem(__import__("sys").modules, "lazy_in_read", raising=False)
    assert result.contents[0].text == "42"  # type: ignore[union-attr]
    assert [p.suffix for p in (tmp_path / "__pycache__").iterdir()] == [".pyc"]
    assert (tmp_path / "plugin.log").read_text() == "read lazy://value\n"


async def test_check_reports_a_static_read_that_writes(tmp_path: Path) -> None:
    target = tmp_path / "cache.json"

    class Caching(ResourceProvider):
        name = "caching"
        prefixes = ("cached://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="cached://doc", name="doc", freshness=Freshness.static())]

        async def read(self, request: ReadRequest) -> Content:
            target.write_text("{}")  # a cache written next to the data: a side effect of reading
            return Content(text="{}")

    plugin = SimpleNamespace(register_resource_providers=hookimpl(lambda: [Caching()]))
    (problem,) = await check(compose({"caching": plugin}))
    assert problem.startswith(f"caching: side-effect-in-resource-read: 'cached://doc': opening {target} for writing")
    assert "fix: do writes in a tool" in problem
    assert not target.exists()


HTTP_LIBRARY_IMPORTED_AFTER_INSTALL = """
import json, socket, sys, threading
from mcp_providers import _sideeffects
_sideeffects.install()
before = sorted(m for m in ("httpcore2", "h11", "trio") if m in sys.modules)
import httpx2  # the SDK's client; httpcore2 comes with its first client
listener = socket.create_server(("127.0.0.1", 0))
threading.Thread(target=lambda: listener.accept(), daemon=True).start()
url = "http://127.0.0.1:%d/x" % listener.getsockname()[1]
try:
    with _sideeffects.side_effect_scope(provider="p", plugin="plugin", target="mem://x"):
        with httpx2.Client() as client:
            client.post(url, content=b"x")
    refused = None
except _sideeffects.SideEffectRefused as exc:
    refused = str(exc)
import httpcore2
guarded = lambda method: getattr(method, "__mcp_providers_guarded__", False)
print(json.dumps({"before": before, "refused": refused, "pool": guarded(httpcore2.ConnectionPool.handle_request),
                  "h11": guarded(httpcore2.AsyncHTTP11Connection.handle_async_request)}))
"""


def test_an_http_library_imported_after_install_is_guarded_when_it_is_imported() -> None:
    """install() no longer imports httpcore2 to patch it (a tenth of a second of every start-up):
    the patch runs when the library is first imported, before the import statement returns."""
    done = subprocess.run(
        [sys.executable, "-c", HTTP_LIBRARY_IMPORTED_AFTER_INSTALL], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"] == []
    assert seen["pool"] is True and seen["h11"] is True
    assert seen["refused"] is not None and "a POST to http://127.0.0.1:" in seen["refused"]


def test_a_failed_httpcore2_patch_fails_install_and_an_optional_one_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """httpcore2 carries every httpx2 client (the SDK's too): if it cannot be guarded, installing
    the scope fails, as it did when install() imported it; an optional library's failure is logged."""
    import httpcore2  # imported: each call patches now, and no patch is left waiting for an import

    from mcp_providers import _sideeffects
    from mcp_providers._sideeffects import imports

    assert sys.modules["httpcore2"] is httpcore2

    def broken(module: object) -> None:
        raise RuntimeError("cannot patch")

    with pytest.raises(RuntimeError, match="cannot patch"):
        imports.patch_on_import("httpcore2", broken, optional=False)  # imported here: patched now
    with caplog.at_level(logging.WARNING, logger=_sideeffects.log.name):
        imports.patch_on_import("httpcore2", broken)
    assert "could not guard httpcore2 against side effects in reads" in caplog.text


BROKEN_HTTPCORE2_PATCH = """
from mcp_providers import _sideeffects
from mcp_providers._sideeffects import levels
def broken(module):
    raise RuntimeError("cannot patch")
levels.patch_httpcore = broken
_sideeffects.install()
try:
    import httpcore2
except RuntimeError as exc:
    print("import refused:", exc)
else:
    print("imported unguarded")
"""


def test_httpcore2_that_cannot_be_guarded_cannot_be_imported_after_install() -> None:
    done = subprocess.run([sys.executable, "-c", BROKEN_HTTPCORE2_PATCH], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "import refused: cannot patch"


@pytest.mark.skipif(not HAS_AIOHTTP, reason="aiohttp is not installed")
async def test_aiohttp_is_refused_at_its_public_request_methods_before_a_request_is_made() -> None:
    import aiohttp

    from mcp_providers import SideEffectRefused
    from mcp_providers._sideeffects import side_effect_scope

    url = "http://127.0.0.1:9/aiohttp"
    async with aiohttp.ClientSession() as session:
        calls: dict[str, Callable[[], Any]] = {
            "post": lambda: session.post(url, data=b"x"),
            "put": lambda: session.put(url, data=b"x"),
            "patch": lambda: session.patch(url, json={"x": 1}),
            "delete": lambda: session.delete(url),
            "request": lambda: session.request("DELETE", url),
            "get-with-body": lambda: session.get(url, data=b"x"),
        }
        with side_effect_scope(provider="p", plugin="q", target="x://y"):
            for name, call in calls.items():
                with pytest.raises(SideEffectRefused, match=r"127\.0\.0\.1:9/aiohttp"):
                    call()  # at the call itself: no request object, nothing sent
                    pytest.fail(f"{name} was not refused")
