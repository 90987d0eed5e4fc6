"""Collisions: two declarations of one name, URI or template shape, named on both sides.

Between two declarations a plugin wrote itself, the server never picks a winner: both plugins are
refused (``duplicate-tool`` and the others, see :mod:`mcp_providers._host.rules`), and the operator
decides. A declaration made from a source's listing (its ``meta`` holds
:data:`~mcp_providers.models.ORIGIN_KEY`: an upstream MCP server's component, an OpenAPI
operation) is different: what it is called is not the operator's to write, and it may change while
serving (an upstream's ``list_changed``). So in a collision such a declaration yields: it alone is
left out, its plugin and the other side are served, and a ``left-out`` line names both sides
(``check`` warns, ``/status`` lists it, a reload's warnings name it). Two listed declarations that
collide are both left out: neither listing outranks the other. A listed declaration a rule refuses
on its own (a malformed URI, one outside its provider's prefixes, ...) is left out alone the same
way (:meth:`Collisions.leave_out`). A line reads::

    upstream + workflows: left-out: 'recommend_ssg': duplicate-tool: provider 'upstream-a-tools'
    (plugin upstream) lists it, and provider 'documcp-tools' (plugin workflows) declares it; a
    source's listing never displaces a plugin's own declaration: only the listed one is left out;
    fix: give that source a name prefix or namespace of its own in [plugins.upstream] ...

The same holds for the *prefix* of a provider made for one configured source (its ``source`` is a
:class:`~mcp_providers.providers.SourceSetting`: an upstream MCP server's providers, an OpenAPI
service's): the operator chose it, so when it overlaps another provider's prefix, that source alone
is left out (every provider of its plugin with that ``source``), its plugin's other sources and the
other side are served, and the line names both sides and the setting to change
(:func:`prefix_clash`). Two sources that overlap are both left out. Two listed declarations of one
source that collide are named by their origins, and the fix is what the source's
:attr:`~mcp_providers.providers.SourceSetting.rename` says (a prefix cannot part them).

Sources and listed declarations are judged against what is served: a plugin refused on its own
(two plugins' own declarations collide, a provider failed to declare, its settings were refused)
serves nothing, so what made way for it is judged again without it
(:func:`mcp_providers._host.rules.check`), and the order in which it was refused never matters.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcp_providers._holders import Frozen
from mcp_providers._host.declarations import Declared, Problem
from mcp_providers.models import ORIGIN_KEY, Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.providers import SourceSetting
from mcp_providers.uris import InvalidUri, canonical, canonical_template, literal_start

Declaration = Resource | ResourceTemplate | Tool | Prompt


def listed(decl: object) -> bool:
    """Whether ``decl`` was made from a source's listing (its ``meta`` holds ``ORIGIN_KEY``)."""
    meta = getattr(decl, "meta", None)
    return isinstance(meta, Mapping) and ORIGIN_KEY in meta


def source_of(d: Declared) -> SourceSetting | None:
    """The configured source ``d``'s provider was made for, or ``None`` (a plugin's own provider)."""
    source = getattr(d.provider, "source", None)
    return source if isinstance(source, SourceSetting) else None


def valid_uri(uri: str) -> bool:
    try:
        canonical(uri)
    except InvalidUri:
        return False
    return True


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Side(Frozen):
    """One side of a collision: the provider's declarations and the declaration (``None``: the
    provider itself, an extension or a method, which no listing makes)."""

    __slots__ = ("d", "decl", "value")

    d: Declared
    decl: Declaration | None
    value: str
    """What collides on this side (a name, a canonical URI, a template)."""

    def __init__(self, d: Declared, decl: Declaration | None, value: str) -> None:
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "decl", decl)
        object.__setattr__(self, "value", value)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Collisions:
    """What the collision rules found: :attr:`problems` refuse both plugins; :attr:`left_out`
    says which listed declarations were taken out of their :class:`Declared` (their plugins serve)."""

    __slots__ = ("left_out", "problems", "sources")

    problems: list[Problem]
    left_out: list[Problem]
    sources: set[tuple[str, SourceSetting]]
    """``(plugin, source)`` of each configured source left out whole (:func:`prefix_clash`)."""

    def __init__(self) -> None:
        self.problems = []
        self.left_out = []
        self.sources = set()

    def kept(self, declared: Iterable[Declared]) -> list[Declared]:
        """``declared`` without the providers of the sources left out whole."""
        return [d for d in declared if (d.plugin, source_of(d)) not in self.sources]

    def clash(self, rule: str, first: Side, later: Side, message: str, fix: str) -> None:
        """``first`` and ``later`` collide under ``rule``; when neither side is listed, a problem
        (valued ``first.value``: both plugins refused) says ``message`` and ``fix``, else each listed
        side is left out alone."""
        if not listed(first.decl) and not listed(later.decl):
            plugins = tuple(dict.fromkeys((first.d.plugin, later.d.plugin)))
            self.problems.append(Problem(plugins, rule, first.value, message, fix))
            return
        for mine, other in ((first, later), (later, first)):
            if listed(mine.decl):
                _drop(mine.d, mine.decl)
                self.left_out.append(_left_out(rule, first, later, mine, other))

    def leave_out(self, d: Declared, decl: Declaration, faults: Sequence[Problem]) -> None:
        """Listed ``decl`` has ``faults`` a rule would refuse it for: it alone is left out."""
        _drop(d, decl)
        for f in faults:
            message = f"{f.rule}: provider {d.provider.name!r} (plugin {d.plugin}) lists it: {f.message}"
            self.left_out.append(Problem((d.plugin,), "left-out", f.value, message, f.fix))

    def lines(self) -> list[Problem]:
        """:attr:`left_out`, each said once (a name listed three times meets the first twice)."""
        return list(dict.fromkeys(self.left_out))


def _left_out(rule: str, first: Side, later: Side, mine: Side, other: Side) -> Problem:
    if mine.d is other.d and mine.value == other.value:
        said = f"{rule}: {_who(mine)} lists it twice"
    else:
        said = f"{rule}: {_who(mine)} {_what(mine, other)}, and {_who(other)} {_what(other, mine)}"
    if listed(other.decl):
        verdict = "both come from listings, and the server never picks a winner: neither is served"
    else:
        verdict = "a source's listing never displaces a plugin's own declaration: only the listed one is left out"
    source = source_of(mine.d)
    if listed(other.decl) and (mine.d is other.d or (source is not None and source_of(other.d) == source)):
        origins = _origins(mine, other)
        said += f" ({origins})" if origins else ""
        fix = _alike_fix(mine.d.plugin, source)
    else:
        fix = (
            f"give that source a name prefix or namespace of its own in [plugins.{mine.d.plugin}] (the listing's "
            "names only its source can change), or remove it there"
        )
    plugins = tuple(dict.fromkeys((first.d.plugin, later.d.plugin)))
    return Problem(plugins, "left-out", mine.value, f"{said}; {verdict}", fix)


def _alike_fix(plugin: str, source: SourceSetting | None) -> str:
    """The fix when one source names two of its items alike: no prefix or namespace parts them."""
    where = f"[plugins.{plugin}] {source.entry}" if source is not None else f"[plugins.{plugin}]"
    if source is not None and source.rename:
        return f"{source.rename} ({where}); a prefix or namespace cannot tell them apart"
    return (
        "only that source can rename one of them (a prefix or namespace cannot tell them apart); "
        f"or remove it from {where}"
    )


def _origins(mine: Side, other: Side) -> str:
    """Where each side came from, by the origin entries in which they differ (``meta[ORIGIN_KEY]``),
    e.g. ``from operationId='post_/a/b', path='/a/b'; and from operationId='post_/a_b', path='/a_b'``."""
    a, b = (_origin(s.decl) for s in (mine, other))
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    if not keys:
        return ""
    said = [", ".join(f"{k}={str(o.get(k))[:80]!r}" for k in keys if k in o) for o in (a, b)]
    return f"from {said[0]}; and from {said[1]}"


def _origin(decl: object) -> Mapping[str, object]:
    origin = getattr(decl, "meta", None) or {}
    found = origin.get(ORIGIN_KEY) if isinstance(origin, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _who(side: Side) -> str:
    return f"provider {side.d.provider.name!r} (plugin {side.d.plugin})"


def _what(side: Side, other: Side) -> str:
    verb = "lists" if listed(side.decl) else "declares"
    return f"{verb} it" if side.value == other.value else f"{verb} {side.value}"


def _drop(d: Declared, decl: object) -> None:
    """Take ``decl`` (by identity) out of what ``d`` serves."""
    if isinstance(decl, Tool):
        d.tools = [t for t in d.tools if t is not decl]
    elif isinstance(decl, Prompt):
        d.prompts = [p for p in d.prompts if p is not decl]
    elif isinstance(decl, ResourceTemplate):
        d.templates = [t for t in d.templates if t is not decl]
    elif isinstance(decl, Resource):
        d.resources = [r for r in d.resources if r is not decl]


def dupes(found: Collisions, rule: str, items: Iterable[Side]) -> None:
    """Sides of one :attr:`Side.value` collide with the earliest side a plugin declared itself (the
    earliest listed one when none is): a listed side left out never stands in for the others, so two
    plugins' own declarations behind a listed one are still judged (both plugins refused). Each
    pair is passed to :meth:`Collisions.clash` in the order the sides came."""
    groups: dict[str, list[Side]] = {}
    for side in items:
        groups.setdefault(side.value, []).append(side)
    for sides in groups.values():
        if len(sides) < 2:
            continue
        anchor = next((s for s in sides if not listed(s.decl)), sides[0])
        at = sides.index(anchor)
        for i, side in enumerate(sides):
            if side is anchor:
                continue
            first, later = (anchor, side) if at < i else (side, anchor)
            found.clash(
                rule,
                first,
                later,
                f"declared by provider {first.d.provider.name!r} and by {later.d.provider.name!r}",
                between("rename one; the server never picks a winner", first.d.plugin, later.d.plugin),
            )


def duplicate_providers(declared: Sequence[Declared], found: Collisions) -> None:
    """Two providers of one name. When either was made for a configured source (:func:`source_of`),
    each such source is left out whole, with a ``left-out`` line naming another side and the entry
    to rename (the operator named it: ``a`` and ``a-tools`` both make ``upstream-a-tools``); the
    plugins' own providers of that name are still judged among themselves: two of them refuse both
    plugins (``duplicate-provider``), whatever sources share the name."""
    by_name: dict[str, list[Declared]] = {}
    for d in declared:
        by_name.setdefault(d.provider.name, []).append(d)
    for name, sides in by_name.items():
        if len(sides) < 2:
            continue
        sources = [(d, source) for d in sides if (source := source_of(d)) is not None]
        for one, source in sources:
            found.sources.add((one.plugin, source))
            other = next(d for d in sides if d is not one)
            verdict = (
                "a configured source never displaces another provider: only that source is left out"
                if source_of(other) is None
                else "both are configured sources, and the server never picks a winner: neither is served"
            )
            said = f"{_maker(one)} makes a provider named {name!r}, as {_maker(other)} does"
            fix = f"give {source.entry} another name in [plugins.{one.plugin}], or remove it there"
            plugins = tuple(dict.fromkeys((one.plugin, other.plugin)))
            found.left_out.append(Problem(plugins, "left-out", name, f"duplicate-provider: {said}; {verdict}", fix))
        own = [Side(d, None, name) for d in sides if source_of(d) is None]
        dupes(found, "duplicate-provider", own)


def _maker(d: Declared) -> str:
    source = source_of(d)
    return f"[plugins.{d.plugin}] {source.entry}" if source is not None else f"plugin {d.plugin}"


def collisions(declared: Sequence[Declared], found: Collisions) -> None:
    """The duplicate rules (URIs in canonical form, templates, tools, prompts, extensions and their
    methods) and shadowing, in that order: what one rule left out the next does not see (providers
    of one name were judged before, :func:`duplicate_providers`)."""
    uris = (Side(d, r, canonical(r.uri)) for d in declared for r in d.resources if valid_uri(r.uri))
    dupes(found, "duplicate-uri", uris)
    dupes(found, "duplicate-template", (Side(d, t, t.uri_template) for d in declared for t in d.templates))
    dupes(found, "duplicate-tool", (Side(d, t, t.name) for d in declared for t in d.tools))
    dupes(found, "duplicate-prompt", (Side(d, p, p.name) for d in declared for p in d.prompts))
    dupes(found, "duplicate-extension", (Side(d, None, e.identifier) for d in declared for e in d.extensions))
    methods = (Side(d, None, m.name) for d in declared for e in d.extensions for m in e.methods)
    dupes(found, "duplicate-method", methods)
    shadowing(declared, found)


def shadowing(declared: Sequence[Declared], found: Collisions) -> None:
    """Fixed URIs that another provider's template also matches (templates indexed by literal start)."""
    by_start: dict[str, list[tuple[UriTemplate, ResourceTemplate, Declared]]] = {}
    for d in declared:
        for t in d.templates:
            with contextlib.suppress(InvalidUriTemplate, InvalidUri):
                parsed = UriTemplate.parse(canonical_template(t.uri_template))
                by_start.setdefault(literal_start(parsed.template), []).append((parsed, t, d))
    lengths = sorted({len(s) for s in by_start})
    for d in declared:
        for r in list(d.resources):
            if not valid_uri(r.uri):
                continue
            uri = canonical(r.uri)
            for n in lengths:
                for tpl, t, owner in by_start.get(uri[:n], ()) if n <= len(uri) else ():
                    if owner is not d and tpl.match(uri) is not None:
                        found.clash(
                            "uri-shadowed-by-template",
                            Side(d, r, r.uri),
                            Side(owner, t, t.uri_template),
                            f"provider {owner.provider.name!r}'s template {tpl.template} also matches it",
                            "move the URI or narrow the template",
                        )


def prefix_clash(found: Collisions, first: Declared, a: str, later: Declared, b: str) -> bool:
    """Prefix ``a`` of ``first`` and ``b`` of ``later`` overlap. When either provider was made for a
    configured source (:func:`source_of`), each such source is left out whole with a ``left-out``
    line naming both sides and the setting to change, and ``True`` is returned; otherwise nothing
    is recorded and ``False`` is returned (both plugins are refused, the caller's problem)."""
    sides = ((first, a, later, b), (later, b, first, a))
    mine = [(d, source, px, other, opx) for d, px, other, opx in sides if (source := source_of(d)) is not None]
    for d, source, px, other, opx in mine:
        found.sources.add((d.plugin, source))
        where = _prefix_setting(d.plugin, source)
        them = _owner(other, opx)
        if len(mine) == 2:
            verdict = "both are configured sources, and the server never picks a winner: neither is served"
        else:
            verdict = "a configured source's prefix never displaces another provider's: only that source is left out"
        message = f"prefix-overlap: {where}: {px!r} overlaps {them}; {verdict}"
        fix = (
            f"give it a prefix of its own in {where} (neither a start of {opx!r} nor under it), "
            f"or remove {source.entry} from [plugins.{d.plugin}]"
        )
        plugins = tuple(dict.fromkeys((first.plugin, later.plugin)))
        found.left_out.append(Problem(plugins, "left-out", px, message, fix))
    return bool(mine)


def _prefix_setting(plugin: str, source: SourceSetting) -> str:
    """Where an operator sets that source's prefix, e.g. ``[plugins.upstream] servers "bad" prefixes``."""
    return f"[plugins.{plugin}] {source.entry} {source.prefix_setting}"


def _owner(d: Declared, prefix: str) -> str:
    source = source_of(d)
    if source is not None:
        return f"{prefix!r} of {_prefix_setting(d.plugin, source)}"
    return f"{prefix!r} of provider {d.provider.name!r} (plugin {d.plugin})"


def between(author_fix: str, a: str, b: str) -> str:
    """The fix of a clash between two plugins' own declarations, for whoever can act: the operator
    serves one of them (``deny`` the other); their authors change their declarations. Within one
    plugin, its author's fix, and the operator's when the two come from sources configured for it."""
    if a == b:
        return (
            f"{author_fix} (its author); when both come from sources configured for {a} (two servers or "
            "services, say), give one of them a prefix or namespace of its own in its settings, or remove one"
        )
    return (
        f'serve only one of them: deny = ["{b}"] or deny = ["{a}"] in the config (the operator); or '
        f"{author_fix} (their authors)"
    )
