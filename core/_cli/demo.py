"""``mcp-providers demo``: the main job, end to end, on the embedded default.

Starts ``mcp-providers serve`` as a subprocess, connects the SDK's MCP client over stdio, lists
everything and reads a sample of resources (fixed ones, and one expansion of each template using
the server's own completion values), printing them readably. Plugins that need a backend prepare
one through the ``demo_settings`` hook (the ServiceNow plugin starts its emulator).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.shared.uri_template import UriTemplate
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from mcp_providers._host.discovery import discover
from mcp_providers._host.hookcalls import call_hook
from mcp_providers._host.records import PluginRecord
from mcp_providers.config import Config, load_config

log = logging.getLogger("mcp_providers.demo")

_SHOWN_LINES = 24


def _shown(text: str, mime: str | None) -> Syntax:
    if mime and "json" in mime:
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    lines = text.splitlines()
    if len(lines) > _SHOWN_LINES:
        lines = [*lines[:_SHOWN_LINES], f"... {len(lines) - _SHOWN_LINES} more lines not shown"]
    lexer = "json" if mime and "json" in mime else "yaml" if mime and "yaml" in mime else "text"
    return Syntax("\n".join(lines), lexer, word_wrap=True)


async def _tour(console: Console, config_file: Path, samples: int) -> int:
    # The whole environment: demo backends export their (random, throwaway) credentials in it, and
    # the SDK would otherwise pass only a short safe list of variables.
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_providers", "serve", "--config", str(config_file)],
        env=dict(os.environ),
    )
    async with Client(params, cache=None) as client:
        console.rule(f"connected over stdio, protocol {client.protocol_version}")
        resources = await _all(client.list_resources, "resources")
        templates = await _all(client.list_resource_templates, "resource_templates")
        _show_lists(console, resources, templates, await _all(client.list_tools, "tools"))
        prompts = await _all(client.list_prompts, "prompts")
        if prompts:
            console.print(f"{len(prompts)} prompts: " + ", ".join(p.name for p in prompts))
        # A sample of fixed resources, and one expansion per template, up to `samples` reads in all.
        fixed = _round_robin([r.uri for r in resources])
        expanded = [uri for t in templates if (uri := await _expand(client, t.uri_template))]
        share = max(samples - len(expanded), (samples + 1) // 2)
        failures = [uri for uri in (fixed[:share] + expanded)[:samples] if not await _show_read(console, client, uri)]
    console.rule("demo finished" + (f" with {len(failures)} failed read(s)" if failures else ""))
    return 1 if failures else 0


def _show_lists(console: Console, resources: list[Any], templates: list[Any], tools: list[Any]) -> None:
    table = Table(title=f"{len(resources)} resources")
    for col in ("uri", "name", "MIME type", "bytes"):
        table.add_column(col, overflow="fold")
    for r in resources:
        table.add_row(r.uri, r.name, r.mime_type or "", str(r.size or ""))
    console.print(table)
    if templates:
        table = Table(title=f"{len(templates)} resource templates")
        table.add_column("URI template", overflow="fold")
        table.add_column("name", overflow="fold")
        for t in templates:
            table.add_row(t.uri_template, t.name)
        console.print(table)
    if tools:
        table = Table(title=f"{len(tools)} tools")
        for col in ("name", "read-only", "destructive", "description"):
            table.add_column(col, overflow="fold")
        for tool in tools:
            a = tool.annotations
            hints = (str(a.read_only_hint if a else ""), str(a.destructive_hint if a else ""))
            table.add_row(tool.name, *hints, (tool.description or "").split("\n")[0])
        console.print(table)


async def _show_read(console: Console, client: Client, uri: str) -> bool:
    """Read ``uri`` and show it in a panel; ``False`` when the read failed."""
    try:
        result = await client.read_resource(uri)
    except MCPError as exc:
        console.print(Panel(escape(f"error {exc.code}: {exc.message}"), title=escape(uri), border_style="red"))
        return False
    for item in result.contents:
        if isinstance(item, types.TextResourceContents):
            body: Any = _shown(item.text, item.mime_type)
        else:
            body = f"({len(item.blob) * 3 // 4} bytes of {item.mime_type or 'binary data'})"
        title = escape(f"{uri}  [{item.mime_type or 'no MIME type'}]")  # brackets are not markup
        console.print(Panel(body, title=title, title_align="left"))
    return True


def _round_robin(uris: list[str]) -> list[str]:
    """One URI from each area (``scheme://first-segment/``) in turn, so a short sample spans plugins."""
    areas: dict[str, list[str]] = {}
    for uri in uris:
        scheme, _, rest = uri.partition("://")
        areas.setdefault(f"{scheme}://{rest.split('/', 1)[0]}", []).append(uri)
    out: list[str] = []
    while any(areas.values()):
        for queue in areas.values():
            if queue:
                out.append(queue.pop(0))
    return out


async def _all(method: Any, field: str) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        try:
            page = await method(cursor=cursor)
        except MCPError as exc:
            if exc.code == types.METHOD_NOT_FOUND:  # the server has none of these
                return items
            raise
        items += getattr(page, field)
        cursor = page.next_cursor
        if cursor is None:
            return items


async def _expand(client: Client, uri_template: str) -> str | None:
    """One URI for the template, using the server's completion for each variable."""
    values: dict[str, str] = {}
    ref = types.ResourceTemplateReference(type="ref/resource", uri=uri_template)
    for name in UriTemplate.parse(uri_template).variable_names:
        try:
            result = await client.complete(ref, {"name": name, "value": ""}, context_arguments=values or None)
        except MCPError:
            return None
        if not result.completion.values:
            return None
        values[name] = result.completion.values[0]
    return UriTemplate.parse(uri_template).expand(values)


def prepare_backends(stack: contextlib.ExitStack, records: list[PluginRecord], console: Console) -> dict[str, Any]:
    """Enter every loaded plugin's ``demo_settings`` context on ``stack``; the settings tables they
    yield, by plugin name. A plugin whose demo backend fails (``SystemExit`` included) stays on its
    defaults, with one line naming it; only the operator's Ctrl-C stops the demo."""
    tables: dict[str, Any] = {}
    for record in records:
        if record.status != "loaded":
            continue
        try:
            found, manager = call_hook(record, "demo_settings")
            if found and manager is not None:
                tables[record.name] = stack.enter_context(manager)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            log.warning("demo backend of plugin %r failed", record.name, exc_info=exc)  # the text: log only
            console.print(
                f"demo: plugin {record.name} could not prepare its demo backend ({type(exc).__name__}); "
                "it runs on its defaults",
                highlight=False,
                markup=False,
            )
            continue
        if found and manager is not None:
            console.print(f"demo: plugin {record.name} prepared its demo backend", highlight=False)
    return tables


def _raw(path: Path) -> dict[str, Any]:
    """The config file's tables, to pass on to ``serve`` with the demo backends' tables added
    (``load_config`` has read and validated the same file already)."""
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    return dict(data)


def run_demo(
    console: Console, samples: int = 12, config_path: Path | None = None, plugin_set: str | None = None
) -> int:
    """Run the demo; returns the exit code (0 when every read succeeded).

    :param config_path: the operator's config (TOML or JSON); its plugin tables win over the demo
        backends' tables, and everything else in it (selection, sets, server settings) is kept.
    :param plugin_set: the set to serve, as ``--set``.
    :raises ConfigError: the config is invalid.
    """
    config = load_config(config_path, plugin_set=plugin_set) if config_path is not None else Config()
    raw: dict[str, Any] = _raw(config_path) if config_path is not None else {}
    _pm, records = discover(config)
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="mcp-providers-demo-") as tmp:
        tables = prepare_backends(stack, records, console)
        plugins = raw.setdefault("plugins", {})
        for name, table in tables.items():
            plugins.setdefault(name, table)  # the operator's own table wins
        if plugin_set is not None:
            raw["set"] = plugin_set
        config_file = Path(tmp) / "demo-config.json"
        config_file.write_text(json.dumps(raw), encoding="utf-8")
        return anyio.run(_tour, console, config_file, samples)
