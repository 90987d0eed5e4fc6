"""The catalog: every checked declaration, indexed for routing and listed in a fixed order.

Immutable once built. Precedence and cost of routing a URI:

1. a fixed URI is looked up in a dict (``O(1)``);
2. otherwise the owner is found by prefix: owned prefixes never overlap, so at most one owns the
   URI; it is found with one dict probe per distinct prefix length (``O(#lengths)``, not
   ``O(#providers)``);
3. the owner's templates are tried most specific first, whatever their declaration order
   (:mod:`mcp_providers._host.specificity`: ``res://users/{id}`` before ``res://{kind}/{id}``);
   the first match wins (the checks made sure no other provider's template can match);
4. a matched value holding a ``.``/``..`` segment or a separator where the template has one segment
   is refused (-32602), in every spelling, so the gate and the provider judge the same path.

Example::

    >>> route = catalog.route("documcp://ssgs/hugo", gate.listable)
    >>> route.declaration.uri_template, dict(route.params)
    ('documcp://ssgs/{ssg}', {'ssg': 'hugo'})

List order is deterministic: by plugin name, then provider and declaration order. Pages are cut
by opaque cursors that also carry a fingerprint of the catalog, so a cursor from another
composition is refused instead of silently skipping items.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Generic, TypeVar

from mcp.shared.uri_template import UriTemplate

from mcp_providers._holders import Frozen
from mcp_providers._host.declarations import Declared
from mcp_providers._host.skills import Skill, directories
from mcp_providers._host.specificity import specificity
from mcp_providers.errors import InvalidParams, NotFound
from mcp_providers.models import Extension, Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.providers import ExtensionProvider, PromptProvider, ResourceProvider, ToolProvider
from mcp_providers.uris import InvalidUri, canonical, canonical_template, literal_start, value_problem

T = TypeVar("T")
P = TypeVar("P")


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Entry(Generic[T, P], Frozen):
    """A declaration together with who serves it."""

    __slots__ = ("declaration", "plugin", "provider")

    plugin: str
    provider: P
    declaration: T

    def __init__(self, plugin: str, provider: P, declaration: T) -> None:
        object.__setattr__(self, "plugin", plugin)
        object.__setattr__(self, "provider", provider)
        object.__setattr__(self, "declaration", declaration)


NO_PARAMS: Mapping[str, str] = MappingProxyType({})
"""The params of a fixed URI's route (shared by every read of it, so read-only)."""


# not a dataclass: its methods are not made at start-up (issue 43); nothing compares routes (a fixed
# URI's route is one object, made once), shows them or reads them with fields()
class Route(Frozen):
    """Where a URI goes: the provider, the matched declaration and the decoded template values."""

    __slots__ = ("canonical", "declaration", "params", "plugin", "provider")

    plugin: str
    provider: ResourceProvider
    declaration: Resource | ResourceTemplate
    params: Mapping[str, str]
    canonical: str
    """The URI in canonical form: the fixed URI, or the template expanded from the decoded values
    (lower-case scheme, one percent-encoding). Policies are asked about this form, so
    ``servicenow://%70rod/x`` or ``SERVICENOW://prod/x`` cannot slip past a rule on
    ``servicenow://prod/*``."""

    def __init__(
        self,
        plugin: str,
        provider: ResourceProvider,
        declaration: Resource | ResourceTemplate,
        params: Mapping[str, str],
        canonical: str,
    ) -> None:
        object.__setattr__(self, "plugin", plugin)
        object.__setattr__(self, "provider", provider)
        object.__setattr__(self, "declaration", declaration)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "canonical", canonical)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Page(Generic[T], Frozen):
    __slots__ = ("items", "next_cursor")

    items: Sequence[T]
    next_cursor: str | None

    def __init__(self, items: Sequence[T], next_cursor: str | None) -> None:
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "next_cursor", next_cursor)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class _Compiled(Frozen):
    __slots__ = ("entry", "template")

    entry: Entry[ResourceTemplate, ResourceProvider]
    template: UriTemplate

    def __init__(self, entry: Entry[ResourceTemplate, ResourceProvider], template: UriTemplate) -> None:
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "template", template)


class Catalog:
    """Indexed, ordered declarations of every served provider."""

    def __init__(self, declared: Sequence[Declared]) -> None:
        ordered = sorted(declared, key=lambda d: d.plugin)  # stable: keeps provider order per plugin
        self.resources: list[Entry[Resource, ResourceProvider]] = []
        self.templates: list[Entry[ResourceTemplate, ResourceProvider]] = []
        self.tools: list[Entry[Tool, ToolProvider]] = []
        self.prompts: list[Entry[Prompt, PromptProvider]] = []
        self.extensions: list[Entry[Extension, ExtensionProvider]] = []
        self.skills: list[Entry[Skill, ResourceProvider]] = []
        self._by_prefix: dict[str, tuple[str, ResourceProvider, list[_Compiled]]] = {}
        for d in ordered:
            p = d.provider
            if isinstance(p, ResourceProvider):
                self.resources += [Entry(d.plugin, p, r) for r in d.resources]
                self.skills += [Entry(d.plugin, p, s) for s in d.skills]
                compiled = [
                    _Compiled(Entry(d.plugin, p, t), UriTemplate.parse(canonical_template(t.uri_template)))
                    for t in d.templates
                ]
                self.templates += [c.entry for c in compiled]
                for prefix in map(canonical, p.prefixes):
                    # Each template goes under the owned prefix its literal start lies in.
                    mine = [
                        (i, c) for i, c in enumerate(compiled) if literal_start(c.template.template).startswith(prefix)
                    ]
                    own = [c for _, c in sorted(mine, key=lambda ic: specificity(ic[1].template.template, ic[0]))]
                    self._by_prefix[prefix] = (d.plugin, p, own)
            elif isinstance(p, ToolProvider):
                self.tools += [Entry(d.plugin, p, t) for t in d.tools]
            elif isinstance(p, ExtensionProvider):
                self.extensions += [Entry(d.plugin, p, e) for e in d.extensions]
            else:
                self.prompts += [Entry(d.plugin, p, pr) for pr in d.prompts]
        self._fixed = {
            uri: Route(e.plugin, e.provider, e.declaration, NO_PARAMS, uri)
            for uri, e in ((canonical(e.declaration.uri), e) for e in self.resources)
        }
        """Fixed URIs (canonical) and their routes, made once: a read of one allocates none."""
        self._template_by_string = {e.declaration.uri_template: e for e in self.templates}
        self._tool_by_name = {e.declaration.name: e for e in self.tools}
        self._prompt_by_name = {e.declaration.name: e for e in self.prompts}
        self.extension_methods = {m.name: (e, m) for e in self.extensions for m in e.declaration.methods}
        """Method name -> (the extension's entry, the method declaration)."""
        self._skill_by_uri = {e.declaration.uri: e for e in self.skills}
        fixed = {canonical(e.declaration.uri): e.declaration for e in self.resources}
        self.directories = directories((e.declaration for e in self.skills), fixed)
        """Directory URI -> its direct children, for ``resources/directory/read``."""
        self._prefix_lengths = sorted({len(px) for px in self._by_prefix}, reverse=True)
        self.fingerprint = self._fingerprint()

    # -- lookup ------------------------------------------------------------------------------

    def find(self, uri: str) -> Route | None:
        """Who serves ``uri``, or ``None`` when nothing does or it is malformed (never raises): for
        the server's own lookups, whose not-found message would reach no caller."""
        try:
            return self.route(uri, _everything)
        except (NotFound, InvalidParams):
            return None

    def route(self, uri: str, visible: Callable[[str], bool] | None) -> Route:
        """Find who serves ``uri`` for a caller.

        :param visible: which URIs and templates the caller may list (the gate's ``listable``;
            ``None``: no policy, everything). A not-found message hints only at what passes it, so
            it never reveals what the caller may not see; there is no default, so no caller-facing
            lookup can forget it (:meth:`find` is the lookup of the server's own).

        :raises NotFound: nothing serves it; the message names the closest owned prefix or the
            owner's templates, and ``data`` is ``{"uri": uri}``.
        :raises InvalidParams: the URI has a malformed percent-escape or escapes that are not UTF-8.
        """
        fixed = self._fixed.get(uri)
        if fixed is not None:  # a key is canonical, so uri is too: nothing to normalise
            return fixed
        requested = uri
        try:
            uri = canonical(uri)
        except InvalidUri as exc:
            raise InvalidParams(
                f"Invalid URI {_shown(requested)}: {exc}; percent-encode with %XX (two hex digits) over UTF-8",
                data={"uri": requested},
            ) from None
        fixed = self._fixed.get(uri)
        if fixed is not None:
            return fixed
        owner = self._owner(uri)
        if owner is None:
            hint = self._closest_hint(uri, visible or _everything)
            raise NotFound(f"Unknown resource: {_shown(requested)}. {hint}", data={"uri": requested})
        _plugin, provider, compiled = owner
        for c in compiled:
            if not uri.startswith(literal_start(c.template.template)):
                continue
            values = c.template.match(uri)
            if values is not None:
                params = _as_strings(values)
                _refuse_traversal(c, params, requested, visible or _everything)
                return Route(
                    c.entry.plugin, provider, c.entry.declaration, params, canonical(c.template.expand(params))
                )
        shapes = [s for s in self._shapes(provider) if (visible or _everything)(s)][:10]
        if not shapes:  # nothing there the caller may list: say no more than that
            raise NotFound(f"Unknown resource: {_shown(requested)}.", data={"uri": requested})
        raise NotFound(
            f"Unknown resource: {_shown(requested)}. It lies under a prefix provider {provider.name!r} owns, but "
            f"matches none of its resources; it serves: {', '.join(shapes)}",
            data={"uri": requested},
        )

    def _owner(self, uri: str) -> tuple[str, ResourceProvider, list[_Compiled]] | None:
        for length in self._prefix_lengths:
            found = self._by_prefix.get(uri[:length])
            if found is not None:
                return found
        return None

    def _shapes(self, provider: ResourceProvider) -> list[str]:
        """The templates and fixed URIs ``provider`` serves, as declared."""
        templates = [e.declaration.uri_template for e in self.templates if e.provider is provider]
        return templates + [e.declaration.uri for e in self.resources if e.provider is provider]

    def _closest_hint(self, uri: str, visible: Callable[[str], bool]) -> str:
        shown = [px for px, (_, p, _) in self._by_prefix.items() if any(visible(s) for s in self._shapes(p))]
        if not shown:
            return "This server serves no resources you may list."
        scheme = uri.partition(":")[0].lower() + "://"
        same_scheme = [px for px in shown if px.lower().startswith(scheme)]
        if not same_scheme:
            schemes = sorted({px.partition("://")[0] + "://" for px in shown})
            return f"No provider serves that scheme; the served schemes are {', '.join(schemes)}"
        best = max(same_scheme, key=lambda px: (_common(px, uri), -len(px)))
        return f"The closest owned prefix is {best!r} (provider {self._by_prefix[best][1].name!r})."

    def template(self, uri_template: str) -> Entry[ResourceTemplate, ResourceProvider] | None:
        return self._template_by_string.get(uri_template)

    def skill(self, uri: str) -> Entry[Skill, ResourceProvider] | None:
        """The skill whose ``SKILL.md`` is at ``uri`` (canonical form), or ``None``."""
        return self._skill_by_uri.get(uri)

    def tool(self, name: str) -> Entry[Tool, ToolProvider] | None:
        return self._tool_by_name.get(name)

    def prompt(self, name: str) -> Entry[Prompt, PromptProvider] | None:
        return self._prompt_by_name.get(name)

    # -- pagination --------------------------------------------------------------------------

    def page(self, kind: str, items: Sequence[T], cursor: str | None, size: int) -> Page[T]:
        """Cut one page of ``items``; ``kind`` keeps cursors of one list from working on another.

        :raises InvalidParams: the cursor was not minted by this catalog for this list.
        """
        start = 0 if cursor is None else self._decode(kind, cursor)
        end = start + size
        return Page(items[start:end], self._encode(kind, end) if end < len(items) else None)

    def _encode(self, kind: str, offset: int) -> str:
        raw = json.dumps([kind, offset, self.fingerprint], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def _decode(self, kind: str, cursor: str) -> int:
        invalid = InvalidParams(f"Invalid cursor {cursor[:64]!r}: pass a nextCursor this server returned")
        if len(cursor) > MAX_CURSOR_CHARS:  # ours are short: a longer one is refused unparsed
            raise invalid
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            got_kind, offset, fingerprint = json.loads(raw)
        except (binascii.Error, ValueError, TypeError):
            raise invalid from None
        if got_kind != kind or fingerprint != self.fingerprint or not isinstance(offset, int) or offset < 0:
            raise InvalidParams(
                f"Invalid cursor {cursor[:64]!r}: it was not issued for this {kind} list by this server, "
                "or the list changed since (a reload); list again without a cursor"
            )
        return offset

    @property
    def served_count(self) -> int:
        """How many resources, templates, tools and prompts are served."""
        return len(self.resources) + len(self.templates) + len(self.tools) + len(self.prompts)

    def _fingerprint(self) -> str:
        h = hashlib.sha256()
        for e in self.resources:
            h.update(e.declaration.uri.encode() + b"\0")
        for t in self.templates:
            h.update(t.declaration.uri_template.encode() + b"\0")
        for tool in self.tools:
            h.update(tool.declaration.name.encode() + b"\0")
        for prompt in self.prompts:
            h.update(prompt.declaration.name.encode() + b"\0")
        return h.hexdigest()[:12]


_MULTI_SEGMENT = frozenset({"+", "#", "?", "&"})
"""Operators whose values may hold ``/`` (RFC 6570 sections 3.2.3-3.2.4, 3.2.8-3.2.9)."""
_QUERY = frozenset({"?", "&"})
"""Operators whose values are query values (RFC 6570 sections 3.2.8-3.2.9): see
:attr:`~mcp_providers.models.ResourceTemplate.opaque_query`."""


def _refuse_traversal(
    compiled: _Compiled, params: Mapping[str, str], requested: str, visible: Callable[[str], bool]
) -> None:
    """Refuse a match whose values the gate and the provider could read as different paths.

    :param visible: whether the caller may list the template (the message names it only then).
    :raises InvalidParams: a value holds a dot segment, a NUL, a leading separator, or (a
        single-segment variable) any separator; see :func:`~mcp_providers.uris.value_problem`.
        A query variable of a template declaring ``opaque_query`` is refused only for a NUL.
    """
    opaque = compiled.entry.declaration.opaque_query
    for var in compiled.template.variables:
        value = params.get(var.name)
        if value is None:
            continue
        if opaque and var.operator in _QUERY:  # never a path: a dot segment means nothing there
            problem = "holds a NUL character" if "\x00" in value else None
        else:
            problem = value_problem(value, single_segment=var.operator not in _MULTI_SEGMENT)
        if problem is not None:
            template = compiled.entry.declaration.uri_template
            where = f" of {template}" if visible(template) else ""
            raise InvalidParams(
                f"Invalid URI {_shown(requested)}: the template value {var.name}={_shown(value)!r}{where} "
                f"{problem}; name the resource by its own path, "
                "without '.' or '..' segments, and percent-encoded separators only where the template allows them",
                data={"uri": requested, "variable": var.name},
            )


def _everything(_target: str) -> bool:
    return True


def _as_strings(values: Mapping[str, str | list[str]]) -> dict[str, str]:
    # The checks refuse exploded variables, so every value is a string.
    return {k: v if isinstance(v, str) else "/".join(v) for k, v in values.items()}


MAX_CURSOR_CHARS = 256
"""The longest cursor parsed (this catalog mints about 60 characters: list kind, offset, a
12-character fingerprint); a longer one is -32602 before any decoding, so a cursor's JSON nests at
most 192 levels, far inside the parser's recursion limit: a deep cursor once raised RecursionError,
answered -32603 with a traceback (round 4 item 13)."""

SHOWN_URI_CHARS = 200
"""How much of a URI an error message quotes; ``data.uri`` carries all of it."""


def _shown(uri: str) -> str:
    """``uri``, or its first :data:`SHOWN_URI_CHARS` characters and its length (hostile input is long)."""
    if len(uri) <= SHOWN_URI_CHARS:
        return uri
    return f"{uri[:SHOWN_URI_CHARS]}... ({len(uri)} characters)"


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
