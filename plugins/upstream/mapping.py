"""An upstream's listed components as this project's declarations, and its URIs both ways.

What the upstream lists (SDK ``mcp_types`` records) becomes the same frozen declarations a
hand-written plugin returns (:class:`~mcp_providers.models.Resource`,
:class:`~mcp_providers.models.ResourceTemplate`, :class:`~mcp_providers.models.Tool`,
:class:`~mcp_providers.models.Prompt`), so the rules, catalog, gate, invoker, evidence, wire and
audit treat them like any other. Each carries its origin in ``meta`` under :data:`ORIGIN_KEY`
(``{"server": "everything", "uri": "demo://resource/1"}``; ``"name"`` for tools and prompts).

A component is left out, with the reason in :attr:`Listing.left_out` (``check`` prints each), when
its URI lies outside the owned prefixes, its URI cannot be re-homed under the namespace, its name
is not a valid MCP name, or its record does not convert.

Tool effects come from the upstream's annotations unless the operator overrides them:
``readOnlyHint`` -> ``none``, ``destructiveHint`` -> ``destructive``, anything else
``additive`` (the upstream's word is all there is: it cannot be scoped in this process).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jsonschema
import mcp_types as types
from pydantic import BaseModel, ConfigDict, model_validator

from mcp_providers.models import (
    ORIGIN_KEY,
    Annotations,
    Effects,
    Freshness,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    Tool,
)
from mcp_providers.plugins.upstream.settings import ServerSettings

__all__ = ["Homes", "LeftOut", "Listing", "declare", "effects_of"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)


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
    """``uri`` lies under ``prefix``, the scheme compared case-insensitively (as the rules do)."""
    scheme, sep, rest = prefix.partition("://")
    u_scheme, u_sep, u_rest = uri.partition("://")
    return bool(sep and u_sep) and u_scheme.lower() == scheme.lower() and u_rest.startswith(rest)


def effects_of(tool: types.Tool, override: Mapping[str, Effects]) -> Effects:
    """The effects of an upstream tool: the operator's override, else from its annotations."""
    if tool.name in override:
        return override[tool.name]
    hints = tool.annotations
    if hints is not None and hints.read_only_hint:
        return "none"
    if hints is not None and hints.destructive_hint:
        return "destructive"
    return "additive"


class UpstreamArguments(BaseModel):
    """Base of an upstream tool's input (and output) model: the upstream's JSON Schema is its
    schema, and values are checked against it with ``jsonschema`` (any draft the schema names)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    upstream_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    validator: ClassVar[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _against_schema(cls, data: Any) -> Any:
        errors = sorted(cls.validator.iter_errors(data), key=lambda e: list(e.absolute_path)) if cls.validator else []
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
    """
    plain = dict(schema)
    checker = jsonschema.validators.validator_for(plain)
    checker.check_schema(plain)
    namespace = {"upstream_schema": plain, "validator": checker(plain)}
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

    def keep(self, kind: str, value: str, make: Callable[[], Any], into: list[Any]) -> None:
        """Append ``make()``; a record that does not convert is left out with the reason."""
        try:
            into.append(make())
        except (ValueError, TypeError, jsonschema.SchemaError) as exc:
            self.left_out.append(
                LeftOut(value, f"{kind} does not convert: {str(exc)[:300]}", "fix it upstream, or leave it out")
            )


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
    "prompts": [...]}`` of ``mcp_types`` records) into declarations; never raises for one bad record."""
    out = Listing()
    _resources(server, homes, listed.get("resources", ()), freshness, out)
    _templates(server, homes, listed.get("templates", ()), out)
    for tool in listed.get("tools", ()):
        _tool(server, tool, out)
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
            LeftOut(name, f"{kind} name {served!r} is not a valid MCP name (1-128 of A-Z a-z 0-9 _ . -)", "rename it")
        )
        return None
    return served


def _tool(server: ServerSettings, tool: types.Tool, out: Listing) -> None:
    served = _named(server, "tool", tool.name, out)
    if served is None:
        return

    def make() -> Tool:
        hints = tool.annotations
        return Tool(
            name=served,
            title=tool.title,
            description=tool.description or tool.title or tool.name,
            input_model=schema_model(f"{served}Input", tool.input_schema),
            output_model=schema_model(f"{served}Output", tool.output_schema) if tool.output_schema else None,
            effects=effects_of(tool, server.effects),
            idempotent=bool(hints and hints.idempotent_hint),
            open_world=bool(hints and hints.open_world_hint),
            meta=_origin(server, name=tool.name),
        )

    before = len(out.tools)
    out.keep("tool", tool.name, make, out.tools)
    if len(out.tools) > before:
        out.tool_names[served] = tool.name


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
        )

    before = len(out.prompts)
    out.keep("prompt", prompt.name, make, out.prompts)
    if len(out.prompts) > before:
        out.prompt_names[served] = prompt.name
