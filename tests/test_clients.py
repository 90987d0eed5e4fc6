"""The composed server through real MCP clients: in-memory (both eras), stdio and streamable HTTP."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from prefork import python, start_up_settings

from mcp_providers.plugins.documcp import ssg_catalog
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

DOCUMCP_IDS = {"jekyll", "hugo", "docusaurus", "mkdocs", "eleventy"}


async def _tour(client: Client) -> None:
    listed = await client.list_resources()
    assert "documcp://ssgs/available" in [r.uri for r in listed.resources]
    result = await client.read_resource("documcp://ssgs/available")
    (item,) = result.contents
    assert isinstance(item, types.TextResourceContents)
    assert item.mime_type == "application/json"
    body = json.loads(item.text)
    assert {s["id"] for s in body["ssgs"]} >= DOCUMCP_IDS
    for ssg in body["ssgs"]:
        assert set(ssg) >= {"id", "name", "description", "language", "complexity", "buildSpeed", "ecosystem", "bestFor"}
    templates = await client.list_resource_templates()
    assert "documcp://ssgs/{ssg}" in [t.uri_template for t in templates.resource_templates]
    ref = types.ResourceTemplateReference(type="ref/resource", uri="documcp://ssgs/{ssg}")
    completion = await client.complete(ref, {"name": "ssg", "value": "h"})
    assert "hugo" in completion.completion.values
    assert all(v.startswith("h") for v in completion.completion.values)
    hugo = await client.read_resource("documcp://ssgs/hugo")
    assert json.loads(hugo.contents[0].text)["id"] == "hugo"  # type: ignore[union-attr]
    with pytest.raises(MCPError) as missing:
        await client.read_resource("documcp://ssgs/nope")
    assert missing.value.code == types.INVALID_PARAMS
    assert missing.value.data == {"uri": "documcp://ssgs/nope"}
    with pytest.raises(MCPError) as unknown:
        await client.read_resource("nowhere://at/all")
    assert unknown.value.code == types.INVALID_PARAMS
    assert "No provider serves that scheme; the served schemes are" in unknown.value.message
    assert "documcp://" in unknown.value.message


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_in_memory_client_reads_the_catalog(mode: str) -> None:
    composition = compose({"ssg_catalog": ssg_catalog})
    async with connect(composition, mode=mode) as client:  # type: ignore[arg-type]
        expected = "2026-07-28" if mode == "auto" else "2025-11-25"
        assert client.protocol_version == expected
        await _tour(client)


async def test_stdio_subprocess_serves_the_installed_plugins() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[*python()[1:], "-m", "mcp_providers", "serve"], env=start_up_settings()
    )
    async with Client(params, cache=None) as client:
        await _tour(client)


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _http_server(*extra: str, bind: str = "127.0.0.1") -> Iterator[str]:
    """`serve --http BIND:PORT *extra` as a subprocess; yields its URL on loopback."""
    port = _free_port()
    proc = subprocess.Popen(
        [*python(), "-m", "mcp_providers", "serve", "--http", f"{bind}:{port}", *extra],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        deadline = time.monotonic() + 90  # a loaded 2-core machine has taken 43 s to start one
        while True:
            with contextlib.closing(socket.socket()) as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {proc.stderr.read()}")
            assert time.monotonic() < deadline, "serve --http did not listen within 90 s"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()


@pytest.mark.parametrize("extra", [(), ("--stateless", "--json-response")], ids=["sessions", "stateless"])
async def test_streamable_http_on_loopback(extra: tuple[str, ...]) -> None:
    with _http_server(*extra) as url:
        for mode in ("auto", "legacy"):
            async with Client(url, mode=mode, cache=None) as client:  # type: ignore[arg-type]
                await _tour(client)


async def test_declared_metadata_reaches_the_wire_in_both_eras() -> None:
    from collections.abc import Sequence
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from mcp_providers import (
        Annotations,
        Content,
        ReadRequest,
        Resource,
        ResourceProvider,
        ResourceTemplate,
        hookimpl,
    )

    when = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

    class Meta(ResourceProvider):
        name = "meta"
        prefixes = ("meta://",)

        def resources(self) -> Sequence[Resource]:
            return [
                Resource(
                    uri="meta://a",
                    name="a",
                    title="A title",
                    description="A description",
                    mime_type="text/markdown",
                    size=3,
                    annotations=Annotations(audience=("user",), priority=0.25, last_modified=when),
                )
            ]

        def templates(self) -> Sequence[ResourceTemplate]:
            return [
                ResourceTemplate(
                    uri_template="meta://t/{x}",
                    name="t",
                    title="T",
                    mime_type="text/plain",
                    annotations=Annotations(audience=("assistant",), priority=1.0),
                )
            ]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text="abc")

    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [Meta()]

    composition = compose({"meta": SimpleNamespace(register_resource_providers=register_resource_providers)})
    for mode in ("auto", "legacy"):
        async with connect(composition, mode=mode) as client:  # type: ignore[arg-type]
            (r,) = (await client.list_resources()).resources
            assert (r.name, r.title, r.description, r.mime_type, r.size) == (
                "a",
                "A title",
                "A description",
                "text/markdown",
                3,
            )
            assert r.annotations is not None
            assert r.annotations.audience == ["user"] and r.annotations.priority == 0.25
            assert r.annotations.last_modified == "2026-11-01T12:00:00+00:00"
            (t,) = (await client.list_resource_templates()).resource_templates
            assert (t.title, t.mime_type) == ("T", "text/plain")
            assert t.annotations is not None and t.annotations.audience == ["assistant"]


async def test_wildcard_bind_answers_the_allowed_host_names() -> None:
    import httpx2

    with _http_server("--allow-host", "127.0.0.1", "--stateless", "--json-response", bind="0.0.0.0") as url:
        async with Client(url, mode="legacy", cache=None) as client:
            assert "documcp://ssgs/available" in [r.uri for r in (await client.list_resources()).resources]
        async with httpx2.AsyncClient() as raw:
            other = await raw.post(
                url, headers={"Host": "evil.example"}, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
            )
            assert other.status_code == 421  # a Host header nobody allowed


async def test_allow_host_with_a_bare_name_answers_that_host_on_any_port_and_without_one() -> None:
    import httpx2

    with _http_server("--allow-host", "mcp.example", "--stateless", "--json-response", bind="0.0.0.0") as url:
        port = httpx2.URL(url).port
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        async with httpx2.AsyncClient() as raw:
            for host, status in (("mcp.example", 200), (f"mcp.example:{port}", 200), ("other.example", 421)):
                answer = await raw.post(url, headers={**accept, "Host": host}, json=ping)
                assert answer.status_code == status, (host, answer.status_code, answer.text)
