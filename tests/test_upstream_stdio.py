"""Upstream MCP servers over stdio, composed beside the policy plugin: server-everything and
server-filesystem (npm) and mcp-server-time (package index, 2026-07-28), all real processes.

One composition per module (each upstream is listed once, at composition); each test connects
real in-memory clients to it, which starts the upstream processes once for that test.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from real_parts import upstream_servers
from waiting import await_until

from mcp_providers.config import ServerSettings
from mcp_providers.errors import DENIED, UPSTREAM_ERROR
from mcp_providers.identity import serving_as, transportless
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins import policy, upstream
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

STATIC = "demo://resource/static/document/"
DENIED_DOC = STATIC + "features.md"
DENIED_TEXT = "demo://resource/dynamic/text/13"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope, for the module-scoped runtime below


@pytest.fixture(scope="module")
def composition(tmp_path_factory: pytest.TempPathFactory) -> Any:
    servers = upstream_servers()
    shared = tmp_path_factory.mktemp("shared")
    (shared / "notes.txt").write_text("hello from the filesystem upstream")
    (shared / "big.txt").write_text("x" * 2000)
    settings = {
        "upstream": {
            "servers": [
                {
                    "name": "everything",
                    "command": servers["everything"][0],
                    "args": [*servers["everything"][1:], "stdio"],
                    "prefixes": [STATIC, "demo://resource/dynamic/text/"],
                    "tool_prefix": "ev_",
                    "read_timeout": 20,
                },
                {
                    "name": "files",
                    "command": servers["filesystem"][0],
                    "args": [*servers["filesystem"][1:], str(shared)],
                    "namespace": "files",
                    "tool_prefix": "fs_",
                    "max_bytes": 1024,
                    "effects": {"create_directory": "destructive"},
                },
                {"name": "time", "command": servers["time"][0], "namespace": "clock", "tool_prefix": "time_"},
                {"name": "gone", "command": str(shared / "no-such-server"), "prefixes": ["gone://"]},
            ]
        },
        "policy": {
            "rules": [
                {
                    "effect": "deny",
                    "actions": ["list", "read", "expand", "subscribe"],
                    "targets": [DENIED_DOC, DENIED_TEXT],
                    "reason": "not for you",
                }
            ]
        },
    }
    server = ServerSettings(audit_log=shared / "audit.jsonl")
    # strict=False: "gone" cannot start, which check (and a strict compose) fails on
    return compose({"upstream": upstream, "policy": policy}, settings, server=server, strict=False), shared


@pytest.fixture(scope="module")
async def upstreams(composition: Any) -> Any:
    """The composition with its upstream processes started once for the module's tests."""
    async with composition[0].running():
        yield composition


def test_upstream_components_are_declared_with_origin_and_left_out_reported(composition: Any) -> None:
    from mcp_providers._cli.explore import inventory
    from mcp_providers._host.advisories import advisories

    c, _shared = composition
    assert not c.failures
    catalog = c.catalog
    resources = {e.declaration.uri: e.declaration for e in catalog.resources}
    origin = resources[STATIC + "architecture.md"].meta["io.mcp-providers/origin"]
    assert origin == {"server": "everything", "transport": "stdio", "uri": STATIC + "architecture.md"}
    tools = {e.declaration.name: e.declaration for e in catalog.tools}
    assert tools["ev_echo"].effects == "none"  # readOnlyHint
    assert tools["fs_write_file"].effects == "destructive"  # destructiveHint
    assert tools["ev_toggle-subscriber-updates"].effects == "additive"  # neither
    assert tools["fs_create_directory"].effects == "destructive"  # the operator's override
    assert tools["time_get_current_time"].meta["io.mcp-providers/origin"]["name"] == "get_current_time"
    shown = inventory(c)  # what `mcp-providers inspect --json` prints: each component with its provider
    by_provider = {
        (kind, item["provider"]) for kind in ("resources", "templates", "tools", "prompts") for item in shown[kind]
    }
    assert {
        ("resources", "upstream-everything"),
        ("templates", "upstream-everything"),
        ("tools", "upstream-everything-tools"),
        ("tools", "upstream-files-tools"),
        ("tools", "upstream-time-tools"),
        ("prompts", "upstream-everything-prompts"),
    } <= by_provider
    assert {t["name"]: t["effects"] for t in shown["tools"]}["fs_write_file"] == "destructive"
    left = {p.value: p.message for p in advisories(c.assembly.declared) if p.rule == "left-out"}
    # "gone" serves nothing: source-unavailable
    assert set(left) == {"demo://resource/dynamic/blob/{resourceId}", "simulate-research-query"}
    assert "outside the owned prefixes" in left["demo://resource/dynamic/blob/{resourceId}"]
    # server-everything's task tool (2025-11-25 taskSupport "required": a plain call only fails)
    assert "runs only as a 2025-11-25 task" in left["simulate-research-query"]
    assert "ev_simulate-research-query" not in tools


async def test_upstream_reads_calls_and_prompts_through_the_pipeline_in_both_eras(upstreams: Any) -> None:
    c, shared = upstreams
    async with connect(c, "auto") as modern, connect(c, "legacy") as legacy:
        for client in (modern, legacy):
            read = await client.read_resource(STATIC + "architecture.md")
            assert read.contents[0].text.startswith("# Everything Server")
            receipt = read.meta[RECEIPT_KEY]
            assert receipt["provider"] == "upstream-everything"
            assert receipt["upstream"] == {
                "name": "everything",
                "transport": "stdio",
                "serverInfo": "mcp-servers/everything 2.0.0",
                "grant": "none",
                "uri": STATIC + "architecture.md",
            }
            templated = await client.read_resource("demo://resource/dynamic/text/7")
            assert "7" in templated.contents[0].text
            echoed = await client.call_tool("ev_echo", {"message": "hi"})
            assert not echoed.is_error and "hi" in echoed.content[0].text
        now = await modern.call_tool("time_get_current_time", {"timezone": "UTC"})  # a 2026-07-28 upstream
        assert now.structured_content["timezone"] == "UTC"
        listed = await modern.call_tool("fs_read_text_file", {"path": str(shared / "notes.txt")})
        assert "hello from the filesystem upstream" in json.dumps(listed.structured_content)
        with pytest.raises(MCPError) as oversize:
            await modern.call_tool("fs_read_text_file", {"path": str(shared / "big.txt")})
        assert oversize.value.code == UPSTREAM_ERROR
        assert "upstream 'files' (stdio) answered tools/call read_text_file with" in oversize.value.message
        bad = await modern.call_tool("ev_echo", {"message": 5})  # the upstream's schema, checked here
        assert bad.is_error and "message" in bad.content[0].text
        prompt = await modern.get_prompt("ev_args-prompt", {"city": "Oslo"})
        assert "Oslo" in prompt.messages[0].content.text
        assert now.meta[RECEIPT_KEY]["upstream"]["serverInfo"] == "mcp-time 2026.10.19"
    lines = [json.loads(line) for line in (shared / "audit.jsonl").read_text().splitlines()]
    called = [line for line in lines if line.get("upstream", {}).get("tool") == "get_current_time"]
    assert called and called[0]["upstream"]["name"] == "time"


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # 2025 subscribe
async def test_a_deny_on_an_upstream_uri_holds_for_list_read_expansion_and_subscribe(upstreams: Any) -> None:
    c, _shared = upstreams
    async with connect(c, "legacy") as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        assert STATIC + "architecture.md" in listed and DENIED_DOC not in listed
        for uri in (DENIED_DOC, DENIED_TEXT):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.code == DENIED
        with pytest.raises(MCPError) as refused:
            await client.subscribe_resource(DENIED_DOC)
        assert refused.value.code == DENIED
        await client.read_resource("demo://resource/dynamic/text/12")  # its neighbour is served


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # 2025 subscribe
async def test_upstream_resource_updates_reach_2025_subscribers_and_2026_listeners(upstreams: Any) -> None:
    c, _shared = upstreams
    watched = STATIC + "architecture.md"
    got: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            got.append(str(message.params.uri))
            arrived.set()

    with serving_as(transportless()):
        async with (
            Client(c.server, mode="legacy", cache=None, message_handler=on_message) as legacy,
            Client(c.server, cache=None) as modern,
        ):
            await legacy.subscribe_resource(watched)
            async with modern.listen(resource_subscriptions=[watched]) as events:
                await modern.call_tool("ev_toggle-subscriber-updates", {"enabled": True})  # sends one at once
                with anyio.fail_after(30):
                    event = await events.__anext__()
                    await arrived.wait()
            assert str(event.uri) == watched
            assert got[0] == watched


async def test_an_upstream_that_cannot_start_fails_alone(upstreams: Any) -> None:
    from mcp_providers._host.advisories import unavailable_sources

    c, _shared = upstreams
    unavailable = {p.value: p.message for p in unavailable_sources(c.assembly.declared)}
    assert "could not be listed" in unavailable["gone"]
    assert not c.startup_failures  # the others serve; "gone" declares nothing and keeps trying to connect
    [gone] = [d.provider for d in c.assembly.declared if d.provider.name == "upstream-gone"]
    assert gone.link.patient and gone.link.connected is None


async def test_an_upstream_list_changed_reloads_the_composition(upstreams: Any) -> None:
    from mcp_providers._serve.reload import Reloader

    c, _shared = upstreams  # the module's last test: the reload replaces the upstreams' providers
    reloader = Reloader(c, lambda: c.config, load_entrypoints=False, plugins={"upstream": upstream, "policy": policy})
    attempts: list[Any] = []  # every reload (the upstream may also say tools/list_changed meanwhile)
    reload = reloader.reload

    async def recorded(trigger: str = "api") -> Any:
        attempts.append(attempt := await reload(trigger))
        return attempt

    reloader.reload = recorded  # type: ignore[method-assign]
    before = {d.provider for d in c.assembly.declared if d.plugin == "upstream"}
    said = "upstream 'everything' (stdio) sent notifications/resources/list_changed"
    async with connect(c) as client:
        # the upstream registers a session resource, and says so with notifications/resources/list_changed
        made = await client.call_tool("ev_gzip-file-as-resource", {"name": "n.gz", "data": "data:text/plain,hello"})
        assert not made.is_error
        await await_until(lambda: any(said in a.trigger for a in attempts), "the reload the list_changed asked for")
        [asked] = [a for a in attempts if said in a.trigger]
        # applied; or unchanged when a reload another list_changed asked for had listed it already
        assert asked.outcome in ("applied", "unchanged"), asked
        assert any(a.outcome == "applied" for a in attempts), attempts
        assert not before & {d.provider for d in c.assembly.declared if d.plugin == "upstream"}  # listed anew
        assert (await client.read_resource(STATIC + "architecture.md")).contents[0].text
