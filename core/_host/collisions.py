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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcp_providers._host.declarations import Declared, Problem
from mcp_providers.models import ORIGIN_KEY, Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.uris import InvalidUri, canonical, canonical_template, literal_start

Declaration = Resource | ResourceTemplate | Tool | Prompt


def listed(decl: object) -> bool:
    """Whether ``decl`` was made from a source's listing (its ``meta`` holds ``ORIGIN_KEY``)."""
    meta = getattr(decl, "meta", None)
    return isinstance(meta, Mapping) and ORIGIN_KEY in meta


def valid_uri(uri: str) -> bool:
    try:
        canonical(uri)
    except InvalidUri:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a collision: the provider's declarations and the declaration (``None``: the
    provider itself, an extension or a method, which no listing makes)."""

    d: Declared
    decl: Declaration | None
    value: str
    """What collides on this side (a name, a canonical URI, a template)."""


@dataclass
class Collisions:
    """What the collision rules found: :attr:`problems` refuse both plugins; :attr:`left_out`
    says which listed declarations were taken out of their :class:`Declared` (their plugins serve)."""

    problems: list[Problem] = field(default_factory=list)
    left_out: list[Problem] = field(default_factory=list)

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
    fix = (
        f"give that source a name prefix or namespace of its own in [plugins.{mine.d.plugin}] (the listing's "
        "names only its source can change), or remove it there"
    )
    plugins = tuple(dict.fromkeys((first.d.plugin, later.d.plugin)))
    return Problem(plugins, "left-out", mine.value, f"{said}; {verdict}", fix)


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
    """Every later side whose :attr:`Side.value` an earlier one has collides with the earliest."""
    seen: dict[str, Side] = {}
    for side in items:
        first = seen.setdefault(side.value, side)
        if first is side:
            continue
        found.clash(
            rule,
            first,
            side,
            f"declared by provider {first.d.provider.name!r} and by {side.d.provider.name!r}",
            between("rename one; the server never picks a winner", first.d.plugin, side.d.plugin),
        )


def collisions(declared: Sequence[Declared], found: Collisions) -> None:
    """The duplicate rules (URIs in canonical form, templates, tools, prompts, providers, extensions
    and their methods) and shadowing, in that order: what one rule left out the next does not see."""
    dupes(found, "duplicate-provider", (Side(d, None, d.provider.name) for d in declared))
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


def between(author_fix: str, a: str, b: str) -> str:
    """The fix of a clash: the authors' and the operator's: between two plugins, serve one of them;
    within one, keep apart the two sources configured for it (two upstream servers, say)."""
    if a == b:
        return (
            f"{author_fix} (its author); when both come from sources configured for {a} (two servers or "
            "services, say), give one of them a prefix or namespace of its own in its settings, or remove one"
        )
    return f'{author_fix} (their authors); or serve only one of them: deny = ["{b}"] or deny = ["{a}"] in the config'
