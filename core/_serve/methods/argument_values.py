"""Tool arguments whose values name resources (:attr:`Tool.argument_resources
<mcp_providers.models.Tool.argument_resources>`): what ``tools/list`` shows and ``tools/call`` takes.

A linked argument's value ``v`` names the resource at its template expanded with ``v``; the caller
is asked about that URI what a read of it asks (``expand`` on the template serving it, then
``read``: :mod:`~mcp_providers._serve.steps.asking`), as completion values are. So:

- ``tools/list`` shows the argument's ``enum`` (inline, behind a ``$ref``, in ``anyOf``/``oneOf``
  members or an array's ``items``; a ``const`` too) with only the values the caller may read; a
  ``default`` naming a dropped value is dropped, and so is a ``$defs`` entry no longer referenced.
  Without a policy the item is served as built, with one the tool's schema is copied only when a
  value is dropped. Each value's URI and route are worked out once per catalog; the gate is asked
  on every list (an ``authorize`` hook's answer is never kept).
- ``tools/call`` refuses a string value, or a string item of a list, whose resource the caller may
  not read, and an argument left out whose declared default names one: the gate's refusal
  (``-32003``, on the audit line), before the arguments are validated and the tool runs. Under a
  policy, a validation problem of a linked argument points at ``tools/list`` instead of quoting
  the message (pydantic's ``Input should be 'a' or 'b'`` names every value).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import mcp_types as types
from mcp.shared.uri_template import UriTemplate
from pydantic_core import PydanticUndefined

from mcp_providers._host.catalog import Catalog, Route
from mcp_providers._serve.steps.asking import require_uri, routed_allowed, served
from mcp_providers._serve.steps.gate import Gate
from mcp_providers.models import Tool

Keep = Callable[[object], bool]
"""A value of the argument -> whether the caller may be shown it."""


class LinkedArguments:
    """The tools of one catalog that link arguments to resources, and how each caller sees them."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._routes: dict[tuple[UriTemplate, str, str], tuple[str, Route | None]] = {}
        self._links: dict[str, dict[str, UriTemplate]] = {
            e.declaration.name: {a: UriTemplate.parse(t) for a, t in e.declaration.argument_resources.items()}
            for e in catalog.tools
            if e.declaration.argument_resources
        }

    def shown(self, gate: Gate, tool: types.Tool) -> types.Tool:
        """``tool`` (a ``tools/list`` item) as the caller may see it: each linked argument's values
        narrowed to those it may read; ``tool`` itself when nothing is dropped."""
        links = self._links.get(tool.name)
        if not links or not gate.authorizer.active:
            return tool
        schema = tool.input_schema
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return tool
        given = schema.get("$defs")
        defs: dict[str, Any] = given if isinstance(given, dict) else {}
        narrowed: dict[str, Any] = {}
        for argument, template in links.items():
            node = properties.get(argument)
            keep = self._keeper(gate, argument, template)
            if isinstance(node, dict) and (shown := _narrowed(node, keep, defs)) is not None:
                narrowed[argument] = shown
        if not narrowed:
            return tool
        out = {**schema, "properties": {**properties, **narrowed}}
        if defs:
            kept = _referenced(out, defs)
            out["$defs"] = {k: v for k, v in defs.items() if k in kept}
            if not out["$defs"]:
                del out["$defs"]
        return tool.model_copy(update={"input_schema": out})

    def _keeper(self, gate: Gate, argument: str, template: UriTemplate) -> Keep:
        """Whether the caller may read what a value names; each value asked once (an enum and its
        ``default`` may repeat one). A value that is not a string names nothing."""
        seen: dict[str, bool] = {}

        def keep(value: object) -> bool:
            if not isinstance(value, str):
                return True
            if value not in seen:
                seen[value] = routed_allowed(gate, "read", *self._routed(argument, template, value))
            return seen[value]

        return keep

    def _routed(self, argument: str, template: UriTemplate, value: str) -> tuple[str, Route | None]:
        """The URI ``value`` names and its route, kept: the same for every caller, and the values
        are only those of this catalog's tool schemas (a caller's value is never kept)."""
        key = (template, argument, value)
        found = self._routes.get(key)
        if found is None:
            uri = template.expand({argument: value})
            found = self._routes[key] = (uri, served(self._catalog, uri))
        return found

    def hidden(self, gate: Gate, tool: Tool) -> frozenset[str]:
        """The linked arguments whose validation problems must not name values (under a policy:
        pydantic's and a validator's messages may list every value, a denied one among them)."""
        links = self._links.get(tool.name)
        return frozenset(links) if links and gate.authorizer.active else frozenset()

    def require(self, gate: Gate, tool: Tool, arguments: Mapping[str, Any]) -> None:
        """Refuse unless the caller may read every resource the linked arguments name (a value
        sent, or the declared default of one left out).

        :raises mcp_providers.errors.Denied: one of them is refused (the first, recorded).
        """
        links = self._links.get(tool.name)
        if not links or not gate.authorizer.active:
            return
        for argument, template in links.items():
            value = arguments[argument] if argument in arguments else _default(tool, argument)
            for named in _strings(value):
                uri = template.expand({argument: named})
                require_uri(gate, self._catalog, "read", uri, asked_by=f"argument {argument} of {tool.name}")


def _default(tool: Tool, argument: str) -> object:
    """The declared default of the argument named ``argument`` (its alias), else ``None``."""
    for name, field in tool.input_model.model_fields.items():
        if (field.alias or name) == argument:
            return None if field.default is PydanticUndefined else field.default
    return None


def _strings(value: object) -> Iterator[str]:
    """The string values a value holds: itself, or a list's or tuple's string items; an Enum member's value."""
    items = value if isinstance(value, (list, tuple)) else (value,)
    for item in items:
        plain = getattr(item, "value", item)  # an Enum member as a default
        if isinstance(plain, str):
            yield plain


def _narrowed(node: dict[str, Any], keep: Keep, defs: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy of the schema ``node`` with the values ``keep`` refuses dropped, or ``None`` when it
    drops none. A ``$ref`` to ``defs`` is inlined where narrowed (other properties may share it)."""
    out = _values_narrowed(node, keep, defs)
    if out is not None and "default" in out and not all(keep(v) for v in _strings(out["default"])):
        del out["default"]  # a default naming a dropped value names it too
    return out


def _values_narrowed(node: dict[str, Any], keep: Keep, defs: Mapping[str, Any]) -> dict[str, Any] | None:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        shown = _narrowed(target, keep, defs) if isinstance(target, dict) else None
        return None if shown is None else {**{k: v for k, v in node.items() if k != "$ref"}, **shown}
    out: dict[str, Any] | None = None
    if isinstance(node.get("enum"), list) and not all(keep(v) for v in node["enum"]):
        out = {**node, "enum": [v for v in node["enum"] if keep(v)]}
    if "const" in node and not keep(node["const"]):
        out = {**(out or node), "enum": []}
        del out["const"]
    if isinstance(node.get("items"), dict) and (items := _narrowed(node["items"], keep, defs)) is not None:
        out = {**(out or node), "items": items}
    for key in ("anyOf", "oneOf"):
        members = node.get(key)
        if isinstance(members, list):
            shown_members = [_narrowed(m, keep, defs) if isinstance(m, dict) else None for m in members]
            if any(m is not None for m in shown_members):
                out = {
                    **(out or node),
                    key: [s if s is not None else m for s, m in zip(shown_members, members, strict=True)],
                }
    return out


def _referenced(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> set[str]:
    """The ``$defs`` names reached from ``schema`` outside ``$defs``, and from those, transitively."""
    found: set[str] = set()
    pending = list(_refs({k: v for k, v in schema.items() if k != "$defs"}))
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            pending += _refs(defs.get(name))
    return found


def _refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)
