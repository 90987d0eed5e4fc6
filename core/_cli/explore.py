"""``mcp-providers inspect``, ``read`` and ``call``: what a config serves, and one request of it.

``inspect`` lists every resource, template, tool, prompt and skill of the composed catalog with its
plugin, provider, MIME type and effects. ``read`` and ``call`` run one request in this process through the
whole pipeline, exactly as a client's would be served (gate, deadline, side-effect scope, budgets,
receipt, audit), over an in-memory MCP client, and give back the result as the client received it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from mcp import Client, MCPError
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from mcp_providers._host.advisories import advisories
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.sources import unavailable
from mcp_providers.models import EFFECTS_CLAIM_KEY, ORIGIN_KEY, Tool

INSPECT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["plugins", "resources", "templates", "tools", "prompts", "skills"],
    "additionalProperties": False,
    "properties": {
        "not_served": {
            "description": "What the config names that is not served, one line each with why (as check says it)",
            "type": "array",
            "items": {"type": "string"},
        },
        "plugins": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "status"],
                "properties": {
                    "name": {"type": "string"},
                    "status": {"enum": ["loaded", "rejected", "disabled"]},
                    "reason": {"type": ["string", "null"]},
                },
            },
        },
        **{
            kind: {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["plugin", "provider", key, "name"],
                    "properties": {
                        "plugin": {"type": "string"},
                        "provider": {"type": "string"},
                        key: {"type": "string"},
                        "name": {"type": "string"},
                        "mimeType": {"type": ["string", "null"]},
                        "description": {"type": ["string", "null"]},
                        "origin": {"type": ["object", "null"]},
                    },
                },
            }
            for kind, key in (("resources", "uri"), ("templates", "uriTemplate"))
        },
        "prompts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["plugin", "provider", "name", "arguments"],
                "properties": {
                    "plugin": {"type": "string"},
                    "provider": {"type": "string"},
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "arguments": {"type": "array", "items": {"type": "string"}},
                    "origin": {"type": ["object", "null"]},
                },
            },
        },
        "skills": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["plugin", "provider", "uri", "name", "description", "files", "bytes"],
                "properties": {
                    "plugin": {"type": "string"},
                    "provider": {"type": "string"},
                    "uri": {"type": "string"},
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "files": {"type": "integer", "minimum": 1},
                    "bytes": {"type": "integer", "minimum": 0},
                },
            },
        },
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["plugin", "provider", "name", "effects", "inputSchema"],
                "properties": {
                    "plugin": {"type": "string"},
                    "provider": {"type": "string"},
                    "name": {"type": "string"},
                    "effects": {"enum": ["none", "additive", "destructive"]},
                    "effectsClaim": {"type": ["string", "null"]},
                    "idempotent": {"type": "boolean"},
                    "inputSchema": {"type": "object"},
                    "outputSchema": {"type": ["object", "null"]},
                    "description": {"type": "string"},
                    "origin": {"type": ["object", "null"]},
                },
            },
        },
    },
}
"""The JSON Schema of ``inspect --json``'s output (checked by the tests)."""


def inventory(composition: Composition) -> dict[str, Any]:
    """Everything the composition serves, as ``inspect --json`` prints it (see :data:`INSPECT_SCHEMA`)."""
    catalog = composition.catalog
    return {
        "not_served": [
            *unavailable(composition),
            *(str(p) for p in advisories(composition.declared) if p.rule == "left-out"),
            *(str(p) for p in composition.assembly.left_out),
        ],
        "plugins": [{"name": r.name, "status": r.status, "reason": r.reason} for r in composition.records],
        "resources": [
            _item(e.plugin, e.provider.name, "uri", e.declaration.uri, e.declaration) for e in catalog.resources
        ],
        "templates": [
            _item(e.plugin, e.provider.name, "uriTemplate", e.declaration.uri_template, e.declaration)
            for e in catalog.templates
        ],
        "tools": [_tool(e.plugin, e.provider.name, e.declaration) for e in catalog.tools],
        "prompts": [
            {
                "plugin": e.plugin,
                "provider": e.provider.name,
                "name": e.declaration.name,
                "description": e.declaration.description,
                "arguments": [a.name for a in e.declaration.arguments],
                **_origin(e.declaration.meta),
            }
            for e in catalog.prompts
        ],
        "skills": [
            {
                "plugin": e.plugin,
                "provider": e.provider.name,
                "uri": e.declaration.uri,
                "name": e.declaration.name,
                "description": str(e.declaration.frontmatter["description"]),
                "files": len(e.declaration.files),
                "bytes": sum(f.size for f in e.declaration.files),
            }
            for e in catalog.skills
        ],
    }


def _item(plugin: str, provider: str, key: str, value: str, declaration: Any) -> dict[str, Any]:
    return {
        "plugin": plugin,
        "provider": provider,
        key: value,
        "name": declaration.name,
        "mimeType": declaration.mime_type,
        "description": declaration.description,
        **_origin(declaration.meta),
    }


def _origin(meta: dict[str, Any] | None) -> dict[str, Any]:
    """``{"origin": <where a declaration came from, its meta[ORIGIN_KEY]>}``, or nothing for one written here."""
    found = (meta or {}).get(ORIGIN_KEY)
    return {"origin": dict(found)} if isinstance(found, dict) else {}


def _claim(meta: dict[str, Any] | None) -> str | None:
    """What a tool's source claims about its effects (``origin[EFFECTS_CLAIM_KEY]``), or ``None``."""
    claim = _origin(meta).get("origin", {}).get(EFFECTS_CLAIM_KEY)
    return claim if isinstance(claim, str) else None


def _shown_origin(origin: dict[str, Any] | None) -> str | None:
    shown = {k: v for k, v in (origin or {}).items() if k != EFFECTS_CLAIM_KEY}  # the effects cell says it
    return ", ".join(f"{k} {v}" for k, v in shown.items()) if shown else None


def _shown_effects(item: dict[str, Any]) -> str | None:
    """A tool's effects cell: a claim nothing here checks is shown as a claim, never as a fact."""
    claim = item.get("effectsClaim")
    return f"unknown ({claim}; served as {item['effects']})" if claim else item.get("effects")


def _tool(plugin: str, provider: str, tool: Tool) -> dict[str, Any]:
    return {
        "plugin": plugin,
        "provider": provider,
        "name": tool.name,
        "effects": tool.effects,
        "effectsClaim": _claim(tool.meta),
        "idempotent": tool.idempotent,
        "description": tool.description,
        "inputSchema": tool.input_model.model_json_schema(),
        "outputSchema": tool.output_model.model_json_schema() if tool.output_model is not None else None,
        **_origin(tool.meta),
    }


@contextlib.asynccontextmanager
async def _client(composition: Composition) -> AsyncIterator[Client]:
    """An in-memory client of ``composition.server``.

    :raises CompositionError: serving is refused (a policy plugin not in force, required plugins unmet).
    """
    server = composition.server  # refuses before any lifespan starts, as serve does
    async with composition.running(), Client(server, cache=None) as client:
        yield client


def _error(exc: MCPError) -> dict[str, Any]:
    return {"error": {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}}


async def read(composition: Composition, uri: str) -> dict[str, Any]:
    """One ``resources/read`` through the whole pipeline.

    :returns: the result as the client received it (``contents``, ``_meta`` with the receipt), or
        ``{"error": {"code", "message", "data"}}``.
    """
    async with _client(composition) as client:
        try:
            result = await client.read_resource(uri)
        except MCPError as exc:
            return _error(exc)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def call(composition: Composition, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """One ``tools/call`` through the whole pipeline; the result or ``{"error": ...}`` as for :func:`read`."""
    async with _client(composition) as client:
        try:
            result = await client.call_tool(tool, dict(arguments))
        except MCPError as exc:
            return _error(exc)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def parse_arguments(pairs: list[str], as_json: str | None, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``--arg k=v`` pairs and ``--args-json '{...}'`` as one arguments object. A value for a property the
    tool's input ``schema`` types as a string stays text; any other value that reads as JSON (a
    number, ``true``, a list) is taken as JSON, anything else as text.

    :raises ValueError: a pair without ``=``, or ``--args-json`` that is not a JSON object.
    """
    arguments: dict[str, Any] = {}
    if as_json is not None:
        try:
            loaded = json.loads(as_json)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"--args-json is not JSON ({exc.msg} at column {exc.colno}); give an object like '{{\"a\": 1}}'"
            ) from None
        if not isinstance(loaded, dict):
            raise ValueError(f"--args-json must be a JSON object like '{{\"a\": 1}}', not {type(loaded).__name__}")
        arguments.update(loaded)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--arg takes KEY=VALUE, e.g. --arg query=hugo; got {pair!r}")
        declared = ((schema or {}).get("properties") or {}).get(key) or {}
        if declared.get("type") == "string":
            arguments[key] = text
            continue
        try:
            arguments[key] = json.loads(text)
        except json.JSONDecodeError:
            arguments[key] = text
    return arguments


def print_inventory(console: Console, document: dict[str, Any]) -> None:
    """``inspect``'s tables: one per kind; long URIs fold onto more lines instead of being cut."""
    sections = (
        ("resources", ("uri", "name", "mimeType")),
        ("templates", ("uriTemplate", "name", "mimeType")),
        ("tools", ("name", "effects")),
        ("prompts", ("name",)),
        ("skills", ("uri", "name", "files")),
    )
    for section, columns in sections:
        table = Table(title=f"{section} ({len(document[section])})", title_justify="left")
        origins = any(item.get("origin") for item in document[section])  # a column only when something has one
        shown = (*columns, "plugin", "provider", *(("origin",) if origins else ()))
        for column in shown:
            table.add_column(column, overflow="fold")
        for item in document[section]:
            row = {**item, "origin": _shown_origin(item.get("origin"))}
            if section == "tools":
                row["effects"] = _shown_effects(item)
            table.add_row(*(escape(str(row.get(c) or "-")) for c in shown))
        console.print(table)
    for plugin in document["plugins"]:
        if plugin["status"] == "rejected":
            console.print(f"rejected: {plugin['name']}: {plugin['reason']}", markup=False, highlight=False)
    for line in document.get("not_served", ()):
        console.print(f"not served: {line}", markup=False, highlight=False)


def print_result(console: Console, what: str, result: dict[str, Any]) -> int:
    """A read's or call's result in a panel; returns the exit code (1 for an error or ``isError``)."""
    if "error" in result:
        error = result["error"]
        console.print(
            Panel(escape(f"error {error['code']}: {error['message']}"), title=escape(what), border_style="red")
        )
        return 1
    body = json.dumps(result, indent=2, ensure_ascii=False)
    console.print(Panel(escape(body), title=escape(what), title_align="left"))
    return 1 if result.get("isError") else 0
