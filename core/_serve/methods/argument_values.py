"""Tool arguments whose values name resources (:attr:`Tool.argument_resources
<mcp_providers.models.Tool.argument_resources>`): what ``tools/list`` shows and ``tools/call`` takes.

A linked argument's value ``v`` names the resource at its template expanded with ``v``; the caller
is asked about that URI what a read of it asks (``expand`` on the template serving it, then
``read``: :mod:`~mcp_providers._serve.steps.asking`), as completion values are. So:

- ``tools/list`` shows the argument's ``enum`` (inline, behind a ``$ref``, in ``anyOf``/``oneOf``
  members, an array's ``items``, a tuple's ``prefixItems``, a dict's ``additionalProperties``;
  a ``const`` too) with only the values the caller may read; a
  ``default`` naming a dropped value is dropped, and so is a ``$defs`` entry no longer referenced.
  Without a policy the item is served as built, with one the tool's schema is copied only when a
  value is dropped. Each value's URI and route are worked out once per catalog; the gate is asked
  on every list (an ``authorize`` hook's answer is never kept).
- ``tools/call`` asks about the VALIDATED arguments (after aliases, defaults, ``default_factory``
  and coercion; a validation refusal, ``max_length`` among them, comes first and asks nothing):
  every value the linked field holds, at any depth (list, tuple and set items, dict values, model
  fields), each distinct value once; an integer, a bool or an ``IntEnum`` member names the URI of
  its JSON text. A value the caller may not read is the gate's refusal (``-32003``, on the audit
  line) before the tool runs; one the caller did not send (a default) is refused without naming it.
  Under a policy, a validation problem of a linked argument points at ``tools/list`` instead of
  quoting the message (pydantic's ``Input should be 'a' or 'b'`` names every value).
"""

from __future__ import annotations

import enum
import json
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import mcp_types as types
from mcp.shared.uri_template import UriTemplate
from pydantic import AliasChoices, BaseModel
from pydantic.fields import FieldInfo

from mcp_providers._host.catalog import Catalog, Route
from mcp_providers._serve.steps.asking import require_uri, routed_allowed, served
from mcp_providers._serve.steps.gate import Gate
from mcp_providers.errors import Denied
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
        self._fields: dict[str, dict[str, tuple[str, ...]]] = {
            e.declaration.name: _fields(e.declaration) for e in catalog.tools if e.declaration.argument_resources
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
        ``default`` may repeat one). A value names the URI of its text (:func:`_text`); ``null`` names nothing."""
        seen: dict[str, bool] = {}

        def keep(value: object) -> bool:
            text = _text(value)
            if text is None:
                return True
            if text not in seen:
                seen[text] = routed_allowed(gate, "read", *self._routed(argument, template, text))
            return seen[text]

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

    def gates(self, gate: Gate, tool: Tool) -> bool:
        """Whether a call of ``tool`` by this caller is asked about its linked arguments."""
        return tool.name in self._links and gate.authorizer.active

    def require(self, gate: Gate, tool: Tool, arguments: BaseModel) -> None:
        """Refuse unless the caller may read every resource the linked arguments name: every value
        the validated ``arguments`` hold in a linked field (:func:`_names`), sent or a default.

        :raises mcp_providers.errors.Denied: one of them is refused (the first, recorded); a
            default's refusal names neither its value nor its URI (the caller never saw them).
        """
        links = self._links.get(tool.name)
        if not links or not gate.authorizer.active:
            return
        sent = arguments.model_fields_set
        for argument, template in links.items():
            for field in self._fields[tool.name][argument]:
                asked_by = f"argument {argument} of {tool.name}"
                for named in _names(getattr(arguments, field, None)):
                    uri = template.expand({argument: named})
                    try:
                        require_uri(gate, self._catalog, "read", uri, asked_by=asked_by)
                    except Denied:  # recorded with its URI for the audit line; a default's caller is told less
                        if field in sent:
                            raise
                        raise _default_refused(gate, argument, tool.name) from None


def _default_refused(gate: Gate, argument: str, tool: str) -> Denied:
    """The refusal of a left-out argument whose default names what the caller may not read."""
    return Denied(
        f"permission-denied: the default of argument {argument} of {tool} may not be used by "
        f"{gate.subject}; send a value tools/list offers for it",
        data={"action": "read", "rule": "permission-denied", "by": f"argument {argument} of {tool}"},
    )


def _fields(tool: Tool) -> dict[str, tuple[str, ...]]:
    """Each linked argument -> the model fields it names: by field name, alias, serialization alias
    or any validation alias choice (a ``populate_by_name`` model takes a field under two names)."""
    found: dict[str, tuple[str, ...]] = {}
    for argument in tool.argument_resources:
        found[argument] = tuple(n for n, f in tool.input_model.model_fields.items() if argument in _spellings(n, f))
    return found


def _spellings(name: str, field: FieldInfo) -> set[str]:
    spelled = {name, field.alias, field.serialization_alias}
    given = field.validation_alias
    if isinstance(given, str):
        spelled.add(given)
    elif isinstance(given, AliasChoices):
        spelled.update(c for c in given.choices if isinstance(c, str))
    return {s for s in spelled if s}


def _text(value: object) -> str | None:
    """The text a scalar value names its resource by: a string itself, an ``Enum`` member its
    value's, a bool, an integer or a float its JSON text; ``None`` names nothing. Anything else is
    asked about as its ``str`` (fail closed: a value of another kind is still asked about)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return str(value)


def _names(value: object) -> Iterator[str]:
    """Every distinct text ``value`` holds, in order: itself, or, at any depth, the items of a
    list, tuple, set or frozenset, the values of a mapping, the fields of a model (a dict's keys
    name nothing). Walked without recursion: a model's depth is the caller's."""
    seen: set[str] = set()
    pending: deque[object] = deque([value])
    while pending:
        item = pending.popleft()
        if isinstance(item, BaseModel):
            pending.extend(getattr(item, f) for f in type(item).model_fields)
            pending.extend((item.model_extra or {}).values())
        elif isinstance(item, Mapping):
            pending.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)) and not isinstance(item, enum.Enum):
            pending.extend(item)
        elif (text := _text(item)) is not None and text not in seen:
            seen.add(text)
            yield text


def _narrowed(node: dict[str, Any], keep: Keep, defs: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy of the schema ``node`` with the values ``keep`` refuses dropped, or ``None`` when it
    drops none. A ``$ref`` to ``defs`` is inlined where narrowed (other properties may share it)."""
    out = _values_narrowed(node, keep, defs)
    if out is not None and "default" in out and not all(keep(v) for v in _names(out["default"])):
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
    for key in ("items", "additionalProperties"):  # an array's items, a dict's values
        if isinstance(node.get(key), dict) and (inner := _narrowed(node[key], keep, defs)) is not None:
            out = {**(out or node), key: inner}
    for key in ("anyOf", "oneOf", "prefixItems"):  # prefixItems: a tuple's items, one schema each
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
