"""Icons on resources, templates, tools, prompts and the server (MCP 2025-11-25 and later).

A real SDK v2 client lists them in 2026-07-28 and 2025-11-25 sessions; a 2025-03-26 or 2024-11-05
session never sees them. A bad icon is an ``icon-invalid`` problem naming the declaration, and
its plugin is not served.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cli_support import run_cli
from pydantic import BaseModel
from wire_support import raw_session

from mcp_providers import (
    Content,
    Icon,
    Message,
    Prompt,
    PromptProvider,
    ReadRequest,
    Resource,
    ResourceProvider,
    ResourceTemplate,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers.config import ServerSettings, load_config
from mcp_providers.errors import ConfigError
from mcp_providers.testing import check, compose, connect

pytestmark = pytest.mark.anyio

SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><circle cx="4" cy="4" r="3"/></svg>'
SVG_URI = "data:image/svg+xml;base64," + base64.b64encode(SVG.encode()).decode()
PNG_BYTES = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PNG_URI = "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()

GOOD = (
    Icon(src=SVG_URI, mime_type="image/svg+xml", sizes=("any",), theme="light"),
    Icon(src=PNG_URI, mime_type="image/png", sizes=("1x1", "48x48")),
    Icon(src="https://example.com/icons/thing-96.webp", mime_type="image/webp", sizes=("96x96",), theme="dark"),
)
WIRE_GOOD = [
    {"src": SVG_URI, "mimeType": "image/svg+xml", "sizes": ["any"], "theme": "light"},
    {"src": PNG_URI, "mimeType": "image/png", "sizes": ["1x1", "48x48"]},
    {"src": "https://example.com/icons/thing-96.webp", "mimeType": "image/webp", "sizes": ["96x96"], "theme": "dark"},
]


class NoArgs(BaseModel):
    pass


class Things(ResourceProvider):
    name = "things"
    prefixes = ("things://",)

    def __init__(self, icons: Sequence[Icon] = GOOD, template_icons: Sequence[Icon] = GOOD) -> None:
        self._icons, self._template_icons = tuple(icons), tuple(template_icons)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="things://all", name="all", icons=self._icons)]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="things://{id}", name="one", icons=self._template_icons)]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="x")


class Act(ToolProvider):
    name = "act"

    def __init__(self, icons: Sequence[Icon] = GOOD) -> None:
        self._icons = tuple(icons)

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="do_thing", description="Does a thing.", input_model=NoArgs, icons=self._icons)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text="done")


class Say(PromptProvider):
    name = "say"

    def __init__(self, icons: Sequence[Icon] = GOOD) -> None:
        self._icons = tuple(icons)

    def prompts(self) -> Sequence[Prompt]:
        return [Prompt(name="greet", description="Greets.", icons=self._icons)]

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        return [Message(role="user", text="hello")]


def plugin(*providers: object) -> Any:
    return SimpleNamespace(
        register_resource_providers=hookimpl(lambda: [p for p in providers if isinstance(p, ResourceProvider)]),
        register_tool_providers=hookimpl(lambda: [p for p in providers if isinstance(p, ToolProvider)]),
        register_prompt_providers=hookimpl(lambda: [p for p in providers if isinstance(p, PromptProvider)]),
    )


SERVER = ServerSettings(icons=(Icon(src=SVG_URI, mime_type="image/svg+xml", sizes=("any",)),))


def _composed() -> Any:
    return compose({"icons": plugin(Things(), Act(), Say())}, server=SERVER)


def _dumped(items: Sequence[Any]) -> list[Any]:
    return [[i.model_dump(by_alias=True, exclude_none=True, mode="json") for i in item.icons or ()] for item in items]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_sdk_client_lists_every_kinds_icons(mode: Any) -> None:
    """``auto`` negotiates 2026-07-28, ``legacy`` the 2025-11-25 handshake: both get every icon."""
    async with connect(_composed(), mode) as client:
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        assert _dumped((await client.list_resources()).resources) == [WIRE_GOOD]
        assert _dumped((await client.list_resource_templates()).resource_templates) == [WIRE_GOOD]
        assert _dumped((await client.list_tools()).tools) == [WIRE_GOOD]
        assert _dumped((await client.list_prompts()).prompts) == [WIRE_GOOD]


async def test_the_server_icons_reach_a_2025_11_25_client() -> None:
    async with connect(_composed(), "legacy") as client:
        assert client.server_info is not None
        assert _dumped([client.server_info]) == [[{"src": SVG_URI, "mimeType": "image/svg+xml", "sizes": ["any"]}]]


async def test_the_server_icons_are_stamped_on_2026_results() -> None:
    async with raw_session(_composed(), "2026-07-28") as (session, _):
        answer = await session.request("tools/list", {"_meta": _envelope()})
    stamp = answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert stamp["icons"] == [{"src": SVG_URI, "mimeType": "image/svg+xml", "sizes": ["any"]}]


def _envelope() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


@pytest.mark.parametrize("version", ["2025-11-25", "2025-03-26", "2024-11-05"])
async def test_icons_reach_only_sessions_whose_version_defines_them(version: str) -> None:
    expected = version >= "2025-11-25"
    async with raw_session(_composed(), version) as (session, init):
        assert ("icons" in init["serverInfo"]) is expected, init["serverInfo"]
        for method, key in [
            ("resources/list", "resources"),
            ("resources/templates/list", "resourceTemplates"),
            ("tools/list", "tools"),
            ("prompts/list", "prompts"),
        ]:
            items = (await session.request(method))["result"][key]
            assert items, method
            for item in items:
                assert ("icons" in item) is expected, f"{method} at {version}: {item}"
                if expected:
                    assert item["icons"] == WIRE_GOOD


async def test_good_icons_pass_the_checks() -> None:
    assert await check(_composed()) == []


BAD: list[tuple[Icon, str, str]] = [
    (Icon(src="http://example.com/i.png"), "has scheme http:, not https: or data:", "use an https: URL"),
    (Icon(src="javascript:alert(1)"), "has scheme javascript:, not https: or data:", "use an https: URL"),
    (Icon(src="icon.png"), "is not a URI", "use an https: URL"),
    (Icon(src="https:///nohost.png"), "has no host", "https://example.com/icon.png"),
    (
        Icon(src="https://example.com/i", mime_type="text/html"),
        "mime_type 'text/html' is not an image type",
        "image/png",
    ),
    (Icon(src=PNG_URI, sizes=("48",)), "size '48' is neither WxH nor 'any'", '("48x48", "96x96")'),
    (Icon(src=PNG_URI, sizes=("0x48",)), "size '0x48' is neither WxH nor 'any'", '("any",)'),
    (Icon(src="data:text/html;base64,PGI+", mime_type=None), "media type 'text/html', not an image", "image/svg+xml"),
    (Icon(src=PNG_URI, mime_type="image/jpeg"), "mime_type 'image/jpeg' differs from the data: URI's", "'image/png'"),
    (Icon(src="data:image/svg+xml," + SVG), "without ;base64", "data:image/svg+xml;base64,<base64>"),
    (Icon(src=PNG_URI[:30] + "!" + PNG_URI[30:]), "base64 payload does not decode", "standard alphabet"),
    (Icon(src="data:image/png;base64," + base64.b64encode(b"GIF89a....").decode()), "not image/png data", "real"),
    (Icon(src="data:image/webp;base64," + base64.b64encode(PNG_BYTES).decode()), "not image/webp data", "webp"),
    (Icon(src="data:image/svg+xml;base64," + base64.b64encode(b"<html/>").decode()), "not an SVG document", "SVG"),
    (
        Icon(src="data:image/svg+xml;base64," + base64.b64encode(b"<svg><script>x()</script></svg>").decode()),
        "SVG carries script",
        "remove the script",
    ),
    (
        Icon(src="data:image/svg+xml;base64," + base64.b64encode(b'<svg onload="x()"/>').decode()),
        "SVG carries script",
        "remove the script",
    ),
    (
        Icon(src="data:image/svg+xml;base64," + base64.b64encode(b'<svg><a href="JavaScript:x()"/></svg>').decode()),
        "SVG carries script",
        "remove the script",
    ),
    (Icon(src="data:image/png"), "without a comma", "data:image/png;base64,"),
]


@pytest.mark.parametrize(("icon", "wrong", "right"), BAD, ids=[i.src[:30] + str(n) for n, (i, _, _) in enumerate(BAD)])
@pytest.mark.parametrize("kind", ["resource", "template", "tool", "prompt"])
async def test_a_bad_icon_is_a_check_error_naming_the_declaration(
    icon: Icon, wrong: str, right: str, kind: str
) -> None:
    bad = (GOOD[0], icon)  # the good one first: the problem says which icon
    providers: dict[str, object] = {
        "resource": Things(icons=bad),
        "template": Things(template_icons=bad),
        "tool": Act(icons=bad),
        "prompt": Say(icons=bad),
    }
    composition = compose({"icons": plugin(providers[kind])}, strict=False)
    named = {"resource": "'things://all'", "template": "'things://{id}'", "tool": "'tool do_thing'"}
    lines = [line for line in await check(composition) if "icon-invalid" in line]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"icons: icon-invalid: {named.get(kind, repr('prompt greet'))}: icon 1: "), lines[0]
    assert wrong in lines[0] and "; fix: " in lines[0] and right in lines[0].split("; fix: ")[1], lines[0]
    assert composition.records[0].status == "rejected"


async def test_a_bad_icon_leaves_the_other_plugins_served() -> None:
    composition = compose(
        {"bad": plugin(Act(icons=(Icon(src="http://x/i.png"),))), "good": plugin(Say())}, strict=False
    )
    assert {r.name: r.status for r in composition.records} == {"bad": "rejected", "good": "loaded"}
    async with connect(composition) as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]
        assert client.server_capabilities.tools is None  # the bad plugin's tool is not served


def test_a_bad_server_icon_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[server]\nicons = [{ src = "https://example.com/a.png", sizes = ["big"] }]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "icon 0: size 'big' is neither WxH nor 'any'" in str(caught.value), caught.value


def test_server_icons_are_read_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f'[server]\nicons = [{{ src = "{SVG_URI}", mime_type = "image/svg+xml", sizes = ["any"] }}]\n')
    assert load_config(path).server.icons == (Icon(src=SVG_URI, mime_type="image/svg+xml", sizes=("any",)),)


def test_an_icon_is_frozen_and_its_theme_checked() -> None:
    with pytest.raises(ValueError, match="theme"):
        Icon(src=SVG_URI, theme="blue")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="frozen"):
        GOOD[0].src = "x"  # type: ignore[misc]


async def test_every_built_in_declaration_has_a_valid_icon(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_providers import Config
    from mcp_providers import compose as compose_config

    monkeypatch.setenv("ICONS_TEST_SN_PASSWORD", "not-used")
    instance = {"name": "dev", "url": "https://dev.example.com",
                "auth": {"type": "basic", "username": "u", "password_env": "ICONS_TEST_SN_PASSWORD"}}  # fmt: skip
    composition = compose_config(Config(plugins={"servicenow": {"instances": [instance]}}))
    assert composition.failures == []
    declared = {d.plugin: d for d in composition.declared}
    assert {"ssg_catalog", "config_templates", "workflows", "documcp_prompts", "servicenow"} <= set(declared)
    count = 0
    for d in composition.declared:
        for decl in (*d.resources, *d.templates, *d.tools, *d.prompts):
            assert decl.icons, f"{d.plugin}: {decl.name} has no icon"
            assert all(i.src.startswith("data:image/svg+xml;base64,") and not i.problems() for i in decl.icons)
            count += 1
    assert count >= 20, count


def test_the_check_command_prints_the_bad_icon_and_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from mcp_providers import cli

    composition = compose({"icons": plugin(Act(icons=(Icon(src="javascript:alert(1)"),)))}, strict=False)
    monkeypatch.setattr(cli, "_compose", lambda config, strict: composition)
    result = CliRunner().invoke(cli.app, ["check"])
    assert result.exit_code == 1, result.output
    assert (
        "icons: icon-invalid: 'tool do_thing': icon 0: src 'javascript:alert(1)' has scheme javascript:, "
        "not https: or data:; fix: use an https: URL or a data:image/...;base64,... URI"
    ) in result.output, result.output


def test_the_check_command_names_a_bad_server_icon(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[server]\nicons = [{ src = "http://example.com/a.png" }]\n')
    result = run_cli("check", "-c", str(path))  # in process (cli_support)
    assert result.returncode == 1, result
    assert "server.icons" in result.stderr and "has scheme http:, not https: or data:" in result.stderr, result.stderr
    assert "Traceback" not in result.stdout + result.stderr


async def test_icons_cross_into_an_mcpserver() -> None:
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from mcp_providers.embedding import add_to_mcpserver

    mcp = MCPServer("host", log_level="WARNING")
    add_to_mcpserver(mcp, _composed())
    async with Client(mcp, cache=None) as client:
        assert _dumped((await client.list_resources()).resources) == [WIRE_GOOD]
        assert _dumped((await client.list_resource_templates()).resource_templates) == [WIRE_GOOD]
        assert _dumped((await client.list_tools()).tools) == [WIRE_GOOD]
        assert _dumped((await client.list_prompts()).prompts) == [WIRE_GOOD]


def test_from_svg_makes_a_checked_inline_icon() -> None:
    from mcp_providers import Icon

    icon = Icon.from_svg('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"/>', theme="dark")
    assert (icon.mime_type, icon.sizes, icon.theme) == ("image/svg+xml", ("any",), "dark")
    assert icon.src.startswith("data:image/svg+xml;base64,") and icon.problems() == []
    assert Icon.from_svg('<svg onload="alert(1)"/>').problems()  # the content rules still apply
