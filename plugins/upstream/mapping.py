"""An upstream's listed components as this project's declarations, and its URIs both ways.

What the upstream lists (SDK ``mcp_types`` records) becomes the same frozen declarations a
hand-written plugin returns (:class:`~mcp_providers.models.Resource`,
:class:`~mcp_providers.models.ResourceTemplate`, :class:`~mcp_providers.models.Tool`,
:class:`~mcp_providers.models.Prompt`), so the rules, catalog, gate, invoker, evidence, wire and
audit treat them like any other. Each carries its origin in ``meta`` under :data:`ORIGIN_KEY`
(``{"server": "everything", "uri": "demo://resource/1"}``; ``"name"`` for tools and prompts).

A component is left out, with the reason in :attr:`Listing.left_out` (``check`` prints each as a
``left-out`` advisory), when its URI lies outside the owned prefixes or cannot be re-homed under
the namespace, when a rule of ``check`` would refuse it (:mod:`~mcp_providers.plugins.upstream.rules`:
a malformed URI or template, a tool schema that is not an object schema or not JSON Schema, a name
that is not a valid MCP name), when it repeats one listed before (the same URI in canonical form, a
template of the same shape, the same served tool or prompt name: in this upstream, or in one
configured before it, :func:`settle`), when its record does not convert, or when it did not parse
on its own (the listing's ``dropped``: :mod:`~mcp_providers.plugins.upstream.sieve` took it out of
its page, naming the list, page, index and what was wrong). Never the whole upstream, never the
other upstreams. Also reported there: a list cut short (its pages did not end),
a prefix under which the upstream lists nothing, and an ``effects`` override naming a tool the
upstream does not list, or refused.

Tool effects come from the upstream's annotations, with MCP's defaults for absent hints
(``readOnlyHint`` false, ``destructiveHint`` true, ``openWorldHint`` true): ``readOnlyHint`` ->
``none``, else ``destructiveHint: false`` -> ``additive``, else ``destructive`` (the upstream's word
is all there is: it cannot be scoped in this process). A tool said both read-only and
``destructiveHint: true`` is ``destructive``: of two contradicting words, the one that asks for care.
The operator's ``effects`` override them,
except that ``none`` is refused for a tool the upstream says is not read-only. Effects below
``destructive`` that come from the hints alone are a claim: the origin says so
(:data:`~mcp_providers.models.EFFECTS_CLAIM_KEY`) and ``inspect`` shows them as unknown. A tool's
``task_support`` comes from how the upstream offers tasks
(:func:`~mcp_providers.plugins.upstream.tasks.task_support_of`); a 2025-11-25 tool whose listing
says ``taskSupport: "required"`` is left out (it cannot be called through the SDK's client).
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import mcp_types as types
from pydantic import BaseModel, ConfigDict, model_validator

from mcp_providers.models import (
    ORIGIN_KEY,
    Annotations,
    Freshness,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    Tool,
)
from mcp_providers.plugins import _schemas
from mcp_providers.plugins.upstream import rules
from mcp_providers.plugins.upstream.effects import claim_of, effects_of, hint, override_problem
from mcp_providers.plugins.upstream.settings import ServerSettings
from mcp_providers.plugins.upstream.tasks import Offered, task_support_of

__all__ = ["Homes", "LeftOut", "Listing", "declare", "effects_of", "override_problem", "settle"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)
_LEAVE_OUT = "fix it upstream, or leave it out"
_CORE_TASKS = (
    'runs only as a 2025-11-25 task (execution.taskSupport "required"), and a task-augmented tools/call '
    "cannot be sent through the MCP SDK's client, which takes no CreateTaskResult in that era"
)
_CORE_TASKS_FIX = "serve the upstream over 2026-07-28 with the io.modelcontextprotocol/tasks extension, or leave it out"


@dataclass(frozen=True, slots=True)
class LeftOut:
    """One upstream component not served, and why (what ``check`` prints)."""

    value: str
    message: str
    fix: str


class Homes:
    """Where an upstream's URIs are served: unchanged under its ``prefixes``, or re-homed under
    its ``namespace``::

        Homes(prefixes=("demo://",)).served("demo://a/1")      -> "demo://a/1"
        Homes(namespace="files").served("file:///srv/a")       -> "files://file//srv/a"
        Homes(namespace="files").upstream("files://file//srv/a") -> "file:///srv/a"
    """

    __slots__ = ("namespace", "prefixes")

    def __init__(self, *, prefixes: Sequence[str] = (), namespace: str | None = None) -> None:
        self.prefixes, self.namespace = tuple(prefixes), namespace

    def served(self, uri: str) -> str | None:
        """The URI (or a template's text) served for the upstream's ``uri``; ``None``: not servable."""
        if self.namespace is None:
            return uri if any(_starts(uri, p) for p in self.prefixes) else None
        match = _SCHEME.match(uri)
        if match is None or "{" in match[1]:
            return None
        return f"{self.namespace}://{match[1].lower()}/{match[2]}"

    def upstream(self, served: str) -> str:
        """The upstream's own URI for a served one (the inverse of :meth:`served`)."""
        if self.namespace is None:
            return served
        rest = served.split("://", 1)[1]
        scheme, _, tail = rest.partition("/")
        return f"{scheme}://{tail}"

    def why_not(self, uri: str) -> tuple[str, str]:
        """``(message, fix)`` for a URI :meth:`served` refused."""
        if self.namespace is None:
            return (
                f"lies outside the owned prefixes {', '.join(self.prefixes)}",
                "add a prefix that covers it to this upstream's prefixes, or leave it out",
            )
        return ("is not of the form scheme://rest, so it cannot be re-homed", "serve this upstream with prefixes")


def _starts(uri: str, prefix: str) -> bool:
    """``uri`` (or a template's literal start) lies under ``prefix``, compared in canonical form as
    the core's ``outside-prefix`` rule does; spellings that do not canonicalise are compared as
    written (the scheme case-insensitively), and :func:`rules.uri_problem` reports them."""
    start = rules.literal_start(uri)
    try:
        return rules.canonical(start).startswith(rules.canonical(prefix))
    except ValueError:
        scheme, sep, rest = prefix.partition("://")
        u_scheme, u_sep, u_rest = start.partition("://")
        return bool(sep and u_sep) and u_scheme.lower() == scheme.lower() and u_rest.startswith(rest)


class UpstreamArguments(BaseModel):
    """Base of an upstream tool's input (and output) model: the upstream's JSON Schema is its
    schema, and values are checked against it with ``jsonschema`` (any draft the schema names)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    upstream_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    validator: ClassVar[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _against_schema(cls, data: Any) -> Any:
        errors = _schemas.errors(cls.validator, data) if cls.validator else []
        if errors:
            first = errors[0]
            where = "/".join(str(p) for p in first.absolute_path) or "(root)"
            raise ValueError(f"{where}: {first.message[:300]}")
        return data

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.upstream_schema)


def schema_model(name: str, schema: Mapping[str, Any]) -> type[UpstreamArguments]:
    """A model class whose JSON Schema is ``schema`` and which validates against it.

    :raises jsonschema.SchemaError: ``schema`` is not a valid JSON Schema.
    :raises UnsafeSchema: it refers outside itself, loops, or has a pattern not run in linear time
        (:mod:`mcp_providers.plugins._schemas`).
    """
    plain = dict(schema)
    namespace = {"upstream_schema": plain, "validator": _schemas.validator(plain)}  # nothing fetched, linear patterns
    return type(name, (UpstreamArguments,), namespace)


@dataclass
class Listing:
    """What one upstream serves here, as declarations, and what was left out."""

    resources: list[Resource] = field(default_factory=list)
    templates: list[ResourceTemplate] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    tool_names: dict[str, str] = field(default_factory=dict)
    """Served tool name -> the upstream's."""
    prompt_names: dict[str, str] = field(default_factory=dict)
    """Served prompt name -> the upstream's."""
    keys: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per kind, the key the core compares (canonical URI, template shape, served name) -> the
    upstream's own value it was first listed as (to say what a repeat repeats)."""

    def keep(self, kind: str, value: str, make: Callable[[], Any], into: list[Any]) -> None:
        """Append ``make()``; a record that does not convert is left out with the reason."""
        try:
            into.append(make())
        # the upstream's records are untrusted input: whatever one of them raises (a schema too
        # deep to check, an unknown $schema), it costs that component only, never the plugin
        except Exception as exc:
            said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__  # not a meta-schema dump
            # a declaration model's error carries what was wrong in words as a note (pydantic's first line does not)
            said = next((n for n in getattr(exc, "__notes__", ()) if n.startswith("invalid declaration: ")), said)
            self.left_out.append(LeftOut(value, f"{kind} {value!r} does not convert: {said[:300]}", _LEAVE_OUT))

    def first(self, kind: str, key: str, value: str) -> bool:
        """Whether ``key`` is new for ``kind``; a repeat is left out, naming what it repeats."""
        seen = self.keys.setdefault(kind, {})
        if key not in seen:
            seen[key] = value
            return True
        same = "" if seen[key] == value else f" as {seen[key]!r}"
        message = f"{kind} {value!r} repeats one listed before{same}; only the first listed may be served"
        self.left_out.append(LeftOut(value, message, "the upstream should list each once"))
        return False

    def refuse(self, kind: str, value: str, problem: str | None) -> bool:
        """Whether ``problem`` (a rule's verdict) leaves ``value`` out; recorded when it does."""
        if problem is not None:
            self.left_out.append(LeftOut(value, f"{kind} {value!r} {problem}", _LEAVE_OUT))
        return problem is not None


def _annotations(a: types.Annotations | None) -> Annotations | None:
    if a is None:
        return None
    return Annotations(
        audience=tuple(a.audience) if a.audience else None, priority=a.priority, last_modified=a.last_modified
    )


def _origin(server: ServerSettings, **where: str) -> dict[str, Any]:
    return {ORIGIN_KEY: {"server": server.name, "transport": server.transport, **where}}


def declare(
    server: ServerSettings,
    homes: Homes,
    listed: Mapping[str, Sequence[Any]],
    freshness: Freshness,
) -> Listing:
    """Convert what ``server`` listed (``{"resources": [...], "templates": [...], "tools": [...],
    "prompts": [...], "cut": [...], "dropped": [...]}`` of ``mcp_types`` records; ``cut``: ``(list,
    why)`` for each list whose pages did not end; ``dropped``: ``(value, message)`` for each item
    that did not parse) into declarations; never raises for one bad record."""
    out = Listing()
    for what, why in listed.get("cut", ()):
        out.left_out.append(LeftOut(what, f"the rest of {what} is not served: {why}", "fix the upstream's paging"))
    for value, message in listed.get("dropped", ()):
        out.left_out.append(LeftOut(value, message, "fix it upstream; nothing to do unless you need it"))
    _resources(server, homes, listed.get("resources", ()), freshness, out)
    _templates(server, homes, listed.get("templates", ()), out)
    uris = [r.uri for r in listed.get("resources", ())] + [t.uri_template for t in listed.get("templates", ())]
    _idle_prefixes(server, homes, uris, out)
    tools: Sequence[types.Tool] = listed.get("tools", ())
    offers: Any = listed.get("tasks")
    for tool in tools:
        _tool(server, tool, offers, out)
    _unknown_overrides(server, [t.name for t in tools], out)
    for prompt in listed.get("prompts", ()):
        _prompt(server, prompt, out)
    return out


def _resources(
    server: ServerSettings, homes: Homes, records: Sequence[types.Resource], fresh: Freshness, out: Listing
) -> None:
    for r in records:
        served = homes.served(r.uri)
        if served is None:
            out.left_out.append(
                LeftOut(r.uri, f"resource {r.name!r} {homes.why_not(r.uri)[0]}", homes.why_not(r.uri)[1])
            )
            continue
        if out.refuse("resource", r.uri, rules.uri_problem(served)):
            continue
        if not out.first("resource", rules.canonical(served), r.uri):
            continue
        out.keep(
            "resource",
            r.uri,
            lambda r=r, served=served: Resource(  # type: ignore[misc]
                uri=served,
                name=r.name[:128] or "resource",
                title=r.title,
                description=r.description,
                mime_type=r.mime_type,
                size=r.size,
                annotations=_annotations(r.annotations),
                freshness=fresh,
                meta=_origin(server, uri=r.uri),
            ),
            out.resources,
        )


def _templates(server: ServerSettings, homes: Homes, records: Sequence[types.ResourceTemplate], out: Listing) -> None:
    for t in records:
        served = homes.served(t.uri_template)
        if served is None:
            why, fix = homes.why_not(t.uri_template)
            out.left_out.append(LeftOut(t.uri_template, f"template {t.name!r} {why}", fix))
            continue
        if out.refuse("template", t.uri_template, rules.template_problem(served)):
            continue
        # one shape matches exactly the same URIs: the core's duplicate-template and template-unreachable
        if not out.first("template", rules.shape(rules.canonical_template(served)), t.uri_template):
            continue
        out.keep(
            "template",
            t.uri_template,
            lambda t=t, served=served: ResourceTemplate(  # type: ignore[misc]
                uri_template=served,
                name=t.name[:128] or "template",
                title=t.title,
                description=t.description,
                mime_type=t.mime_type,
                annotations=_annotations(t.annotations),
                freshness=Freshness.live(subscribable=False),  # upstream subscriptions are per fixed URI
                meta=_origin(server, uri_template=t.uri_template),
            ),
            out.templates,
        )


def _named(server: ServerSettings, kind: str, name: str, out: Listing) -> str | None:
    served = f"{server.tool_prefix or ''}{name}"
    if not _NAME.match(served):
        out.left_out.append(
            LeftOut(
                name,
                f"{kind} name {served!r} is not a valid MCP name (1-128 of A-Z a-z 0-9 _ . -)",
                "nothing to do unless you need it: the upstream's author can rename it",
            )
        )
        return None
    return served if out.first(kind, served, name) else None


def _tool(server: ServerSettings, tool: types.Tool, offers: Offered, out: Listing) -> None:
    task_support = task_support_of(tool, offers)
    if task_support == "required":
        out.left_out.append(LeftOut(tool.name, f"tool {tool.name!r} {_CORE_TASKS}", _CORE_TASKS_FIX))
        return
    served = _named(server, "tool", tool.name, out)
    if served is None:
        return
    for schema, what in ((tool.input_schema, "inputSchema"), (tool.output_schema, "outputSchema")):
        if out.refuse("tool", tool.name, rules.schema_problem(schema, what)):
            return
    refused = override_problem(tool, server.effects)
    if refused is not None:
        fix = "remove the override, or set the effects the upstream declares"
        out.left_out.append(LeftOut(f"effects.{tool.name}", refused, fix))

    claimed = claim_of(tool, server.effects, server.name)

    def make() -> Tool:
        hints = tool.annotations
        return Tool(
            name=served,
            title=tool.title,
            description=tool.description or tool.title or tool.name,
            input_model=schema_model(f"{served}Input", tool.input_schema),
            output_model=schema_model(f"{served}Output", tool.output_schema) if tool.output_schema else None,
            effects=effects_of(tool, server.effects),
            idempotent=hint(hints, "idempotent_hint", False),
            open_world=hint(hints, "open_world_hint", True),
            meta=_origin(server, name=tool.name, **claimed),
            task_support=task_support,
        )

    before = len(out.tools)
    out.keep("tool", tool.name, make, out.tools)
    if len(out.tools) > before:
        out.tool_names[served] = tool.name


def _idle_prefixes(server: ServerSettings, homes: Homes, listed: Sequence[str], out: Listing) -> None:
    """A configured prefix under which the upstream lists nothing (a typo, most likely, when it
    lists URIs elsewhere) is reported, with the closest path prefix of what it does list."""
    if not listed:
        return  # it lists no resources at all: a prefix is required all the same, nothing to say
    candidates = sorted({u[: i + 1] for u in map(rules.literal_start, listed) for i, c in enumerate(u) if c == "/"})
    for prefix in homes.prefixes:
        if any(_starts(uri, prefix) for uri in listed):
            continue
        close = difflib.get_close_matches(prefix, candidates, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        out.left_out.append(
            LeftOut(
                prefix,
                f"upstream {server.name!r} lists no resource or template under prefix {prefix!r}{hint}",
                "correct the prefix, or remove it",
            )
        )


def _unknown_overrides(server: ServerSettings, listed: Sequence[str], out: Listing) -> None:
    """An ``effects`` key naming no listed tool (a typo, a served name with ``tool_prefix``, a tool
    since removed) is reported, with the closest listed name."""
    for name in sorted(set(server.effects) - set(listed)):
        bare = name.removeprefix(server.tool_prefix or "")
        if server.tool_prefix and bare in listed:
            close = [bare]
        else:
            close = difflib.get_close_matches(name, sorted(set(listed)), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        out.left_out.append(
            LeftOut(
                f"effects.{name}",
                f"upstream {server.name!r} lists no tool {name!r}{hint} (the override does nothing)",
                "name the tool as the upstream lists it (without tool_prefix), or remove the override",
            )
        )


def _prompt(server: ServerSettings, prompt: types.Prompt, out: Listing) -> None:
    served = _named(server, "prompt", prompt.name, out)
    if served is None:
        return

    def make() -> Prompt:
        arguments = tuple(
            PromptArgument(name=a.name, description=a.description, required=bool(a.required))
            for a in prompt.arguments or ()
        )
        return Prompt(
            name=served,
            title=prompt.title,
            description=prompt.description or prompt.title or prompt.name,
            arguments=arguments,
            meta=_origin(server, name=prompt.name),
        )

    before = len(out.prompts)
    out.keep("prompt", prompt.name, make, out.prompts)
    if len(out.prompts) > before:
        out.prompt_names[served] = prompt.name


def settle(listings: Iterable[tuple[str, Listing]]) -> None:
    """Leave out what an upstream serves under a URI, template or name that an upstream
    configured before it already serves (``(name, listing)`` in configuration order): two
    upstreams' tools without a ``tool_prefix`` may share a name, and the core would refuse the
    whole plugin for it. The first one keeps it; the later one's is reported."""
    owners: dict[tuple[str, str], str] = {}
    for name, listing in listings:

        def mine(kind: str, key: str, value: str, name: str = name, listing: Listing = listing) -> bool:
            owner = owners.setdefault((kind, key), name)
            if owner != name:
                message = f"{kind} {key!r} is also served by upstream {owner!r}, configured before it"
                fix = "give one of them a tool_prefix" if kind in ("tool", "prompt") else "give each its own prefix"
                listing.left_out.append(LeftOut(value, message, fix))
            return owner == name

        listing.resources[:] = [r for r in listing.resources if mine("resource", rules.canonical(r.uri), r.uri)]
        listing.templates[:] = [t for t in listing.templates if mine("template", t.uri_template, t.uri_template)]
        listing.tools[:] = [t for t in listing.tools if mine("tool", t.name, listing.tool_names[t.name])]
        listing.prompts[:] = [p for p in listing.prompts if mine("prompt", p.name, listing.prompt_names[p.name])]
        for gone in set(listing.tool_names) - {t.name for t in listing.tools}:
            del listing.tool_names[gone]
        for gone in set(listing.prompt_names) - {p.name for p in listing.prompts}:
            del listing.prompt_names[gone]
