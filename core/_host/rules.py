"""Checks every declaration before anything is served.

URIs, prefixes and templates are compared in canonical form (:mod:`mcp_providers.uris`).
Each failure is a :class:`Problem` naming the plugin, the rule, the offending value and the fix;
``mcp-providers check`` prints one per line. A plugin named in any problem is not served (both
sides of a collision: serving either would be a guess, so the operator decides), except that a
*listed* declaration (``meta[ORIGIN_KEY]``: made from an upstream's or an OpenAPI document's
listing) that collides, or that a rule refuses on its own, is left out alone and reported as a
``left-out`` line, its plugin and the other side served (:mod:`mcp_providers._host.collisions`);
and a provider made for one configured source (its ``source``: an upstream server, an OpenAPI
service) whose prefix or provider name is another provider's is left out with that whole source the
same way.

Rules (the ``rule`` string of a Problem):

==================================  =================================================================
``uri-not-absolute``                a fixed URI lacks a scheme (``scheme:...``)
``uri-is-template``                 a fixed URI contains ``{...}``; declare a ResourceTemplate
``uri-invalid``                     a fixed URI, or a template's literal part, has a malformed percent-escape,
                                    a control character, or what no valid URI reaches as written:
                                    whitespace or another character a URI holds only escaped
                                    (``"<>\\^`|``), a ``#``, a ``.`` or ``..`` segment, or (a
                                    template) a ``?`` followed by more path
``template-invalid``                the SDK's strict RFC 6570 parser rejects the template (this
                                    includes adjacent variables such as ``{a}{b}``)
``template-without-variables``      a template with no variable; declare a fixed Resource
``template-explode-unsupported``    ``{/x*}``-style variables; use ``{+x}`` and split in ``read``
``completion-unknown-variable``     completions for a variable the template does not have
``no-owned-prefix``                 a resource provider declares no URI prefix
``prefix-invalid``                  a prefix is not ``scheme://...``
``prefix-overlap``                  two providers' prefixes overlap (one starts with the other); a
                                    configured source's side is left out alone instead
``outside-prefix``                  a URI or template's literal start lies outside the owner's prefixes
``duplicate-uri``                   the same fixed URI declared twice
``duplicate-template``              the same URI template declared twice
``uri-shadowed-by-template``        a fixed URI that another provider's template also matches
``template-unreachable``            two templates of one provider match exactly the same URIs (one
                                    shape, names aside); otherwise the most specific one answers
``duplicate-tool``                  the same tool name declared twice
``duplicate-prompt``                the same prompt name declared twice
``duplicate-provider``              two providers with the same name; a configured source's side
                                    is left out alone instead
``resource-declares-side-effect``   a resource declares ``side_effects`` other than ``"none"``
``prompt-argument-resource``        a prompt argument's ``resource`` is not a template of that argument
``tool-argument-resource``          a tool's ``argument_resources`` names no argument of it, or a
                                    template that is not one of that argument
``member-invalid``                  a ``Members`` URI is neither an absolute URI nor an RFC 6570 template
``icon-invalid``                    an icon's ``src`` is not an ``https:`` URL or a ``data:`` URI of a
                                    base64 image of its media type, its ``mime_type`` is not an image
                                    type, or a size is not ``WxH``/``any``
``declaration-failed``              a provider's ``resources()``/``templates()``/``tools()``/``prompts()`` raised
``output-schema-unservable``        a tool's input or output model has no JSON Schema (pydantic cannot
                                    describe it); only that tool is left out, the plugin is served
==================================  =================================================================

Advisories, which ``check`` prints and still passes, are in :mod:`mcp_providers._host.advisories`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Sequence

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcp_providers._host.collisions import (
    Collisions,
    between,
    collisions,
    duplicate_providers,
    listed,
    prefix_clash,
    valid_uri,
)
from mcp_providers._host.declarations import Declared, Problem
from mcp_providers._host.output_schemas import servable
from mcp_providers._host.specificity import unreachable
from mcp_providers.models import Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.providers import ResourceProvider
from mcp_providers.uris import (
    SCHEME,
    canonical,
    literal_start,
    template_problems,
    uri_problems,
)

_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


TOOL_RULES = frozenset({"output-schema-unservable"})
"""Rules whose problem leaves out one tool, not its plugin."""


def _check_template(d: Declared, t: ResourceTemplate) -> Iterable[Problem]:
    p = (d.plugin,)
    problems = template_problems(t.uri_template)
    for rule, what, fix in problems:
        yield Problem(p, rule, t.uri_template, what, fix)
    if any(rule in ("template-invalid", "uri-invalid") for rule, _, _ in problems):
        return
    variables = UriTemplate.parse(t.uri_template).variable_names
    for name in set(t.completions) - set(variables):
        yield Problem(
            p,
            "completion-unknown-variable",
            t.uri_template,
            f"completions for {name!r}",
            f"name one of the template's variables: {', '.join(variables)}",
        )


def check(
    declared: Sequence[Declared], refused: Iterable[str] = ()
) -> tuple[list[Problem], list[Problem], list[Declared]]:
    """Run every rule over every declaration; return the problems (empty when all is well), the
    ``left-out`` lines of the listed declarations a rule would refuse or that collided
    (:mod:`~mcp_providers._host.collisions`: each was taken out of its :class:`Declared` alone, its
    plugin is served) and of the configured sources whose prefix or provider name another
    provider has, and ``declared`` without those sources' providers (what the other rules saw).

    Sources and listed declarations are judged against what is served: a plugin a problem refuses
    serves nothing, so once one is found the rules run again without its providers, until no new
    plugin is refused (a source under a refused plugin's prefix is then served, as when that plugin
    was refused earlier, for its settings). The problems of every round are returned.

    :param refused: plugins refused before the checks (a provider failed to declare): their
        providers are not judged, nor judged against.

    Cost grows with the number of declarations times the number of distinct prefix lengths, never
    with the square of the providers (prefixes are compared sorted, URIs against an index); a round
    more per round of newly refused plugins that had left something out.
    """
    out = set(refused)
    problems: list[Problem] = []
    while True:
        # copies: a round takes left-out declarations out of its Declared, which a later round must still see
        found, left_out, kept = _round([copy.copy(d) for d in declared if d.plugin not in out])
        problems += [p for p in found if p not in problems]
        newly = {name for p in found if p.rule not in TOOL_RULES for name in p.plugins} - out
        if not newly or not left_out:  # nothing refused that a source or a listing made way for
            return problems, left_out, [d for d in kept if d.plugin not in newly]
        out |= newly


def _round(declared: Sequence[Declared]) -> tuple[list[Problem], list[Problem], list[Declared]]:
    """One round of :func:`check` over ``declared`` (changed in place: left-out declarations go)."""
    found = Collisions()
    problems = _overlaps(declared, found)  # first: a source left out whole is not checked further
    duplicate_providers(found.kept(declared), found)  # then one making a provider of another's name
    declared = found.kept(declared)
    for d in declared:
        problems += _provider_faults(d)
        owned = _owned(d.provider)
        every: list[Resource | ResourceTemplate | Tool | Prompt] = [*d.resources, *d.templates, *d.tools, *d.prompts]
        for decl in every:
            faults = list(_faults(d, decl, owned))
            if faults and listed(decl):  # its source's listing, not the plugin, is at fault: it alone goes
                found.leave_out(d, decl, faults)
                continue
            problems += faults
            if isinstance(decl, Tool) and any(f.rule in TOOL_RULES for f in faults):
                d.tools = [t for t in d.tools if t is not decl]  # left out alone: the plugin's other tools serve
    collisions(declared, found)
    unreachable(declared, found)
    return problems + found.problems, found.lines(), declared


def _faults(d: Declared, decl: Resource | ResourceTemplate | Tool | Prompt, owned: list[str]) -> Iterable[Problem]:
    """What the rules refuse in one declaration (grammar, ownership, side effects, icons, schemas)."""
    if isinstance(decl, Tool):
        yield from _check_tool(d, decl)
        yield from _check_icons(d, f"tool {decl.name}", decl)
        if (unservable := servable(d, decl)) is not None:
            yield unservable
        return
    if isinstance(decl, Prompt):
        yield from _check_prompt(d, decl)
        yield from _check_icons(d, f"prompt {decl.name}", decl)
        return
    if isinstance(decl, Resource):
        for rule, what, fix in uri_problems(decl.uri):
            yield Problem((d.plugin,), rule, decl.uri, what, fix)
    else:
        yield from _check_template(d, decl)
    for member in decl.members.uris if decl.members is not None else ():
        yield from _check_member(d, decl, member)
    if decl.side_effects != "none":
        yield Problem(
            (d.plugin,),
            "resource-declares-side-effect",
            where_of(decl),
            f"declares side_effects={decl.side_effects!r}; resources are read-only",
            "move the operation to a tool with that effect",
        )
    yield from _outside(d, decl, owned)
    yield from _check_icons(d, where_of(decl), decl)


def _check_extensions(d: Declared) -> Iterable[Problem]:
    """``extension-invalid``: an identifier that is not reverse-DNS (the SDK's rule), a method the
    MCP spec defines (it would shadow the server's own), settings that are not JSON."""
    from mcp.shared.extension import validate_extension_identifier
    from mcp_types.methods import SPEC_CLIENT_METHODS

    for e in d.extensions:
        try:
            validate_extension_identifier(e.identifier, owner="extension")
        except TypeError as exc:
            yield _extension_problem(d, e.identifier, str(exc), "use a reverse-DNS identifier like io.example/search")
        try:
            json.dumps(e.settings)
        except (TypeError, ValueError) as exc:
            yield _extension_problem(d, e.identifier, f"settings are not JSON: {exc}", "use str, number, list, dict")
        for m in e.methods:
            if m.name in SPEC_CLIENT_METHODS:
                fix = "name it under the extension's own prefix, e.g. io.example/search"
                yield _extension_problem(d, m.name, "is a method the MCP spec defines; the server serves it", fix)


def _extension_problem(d: Declared, value: str, message: str, fix: str) -> Problem:
    return Problem(
        (d.plugin,), "extension-invalid", value, f"extension of provider {d.provider.name!r}: {message}", fix
    )


def _check_icons(d: Declared, where: str, decl: Resource | ResourceTemplate | Tool | Prompt) -> Iterable[Problem]:
    """``icon-invalid`` for each fault of each icon (:meth:`Icon.problems`), named by the declaration."""
    for i, icon in enumerate(decl.icons):
        for what, fix in icon.problems():
            yield Problem((d.plugin,), "icon-invalid", where, f"icon {i}: {what}", fix)


def _check_member(d: Declared, decl: Resource | ResourceTemplate, member: str) -> Iterable[Problem]:
    try:
        UriTemplate.parse(member)
    except InvalidUriTemplate as exc:
        why = str(exc)
    else:
        if SCHEME.match(literal_start(member)):
            return
        why = "does not start with a scheme"
    yield Problem(
        (d.plugin,),
        "member-invalid",
        where_of(decl),
        f"member {member!r} {why}",
        "name each member by its absolute URI or URI template, e.g. myplugin://things/{id}",
    )


def _argument_template_problem(template: str, argument: str) -> str | None:
    """Why ``template`` is not a template of ``argument`` alone (``None`` when it is)."""
    try:
        names = UriTemplate.parse(template).variable_names
    except InvalidUriTemplate as exc:
        return f"resource template {template!r} {exc}"
    return None if names == [argument] else f"resource template {template!r} has variables {', '.join(names) or 'none'}"


def _check_prompt(d: Declared, prompt: Prompt) -> Iterable[Problem]:
    for arg in prompt.arguments:
        if arg.resource is not None and (why := _argument_template_problem(arg.resource, arg.name)) is not None:
            yield Problem(
                (d.plugin,),
                "prompt-argument-resource",
                f"{prompt.name}.{arg.name}",
                why,
                f"use a template whose only variable is {{{arg.name}}}, e.g. myplugin://things/{{{arg.name}}}",
            )


def _check_tool(d: Declared, tool: Tool) -> Iterable[Problem]:
    """``argument_resources``: each names an argument (as the input schema names it) and a template
    whose only variable is that argument."""
    arguments = {f.alias or name for name, f in tool.input_model.model_fields.items()}
    for argument, template in tool.argument_resources.items():
        why = (
            f"{argument!r} is not an argument of the tool; it takes: {', '.join(sorted(arguments)) or 'none'}"
            if argument not in arguments
            else _argument_template_problem(template, argument)
        )
        if why is not None:
            yield Problem(
                (d.plugin,),
                "tool-argument-resource",
                f"{tool.name}.{argument}",
                why,
                f"link an argument to a template whose only variable is it, e.g. myplugin://things/{{{argument}}}",
            )


def _provider_faults(d: Declared) -> Iterable[Problem]:
    """What the rules refuse in a provider as a whole: its prefixes, its extensions."""
    yield from _check_extensions(d)
    provider = d.provider
    if not isinstance(provider, ResourceProvider):
        return
    p = (d.plugin,)
    if not provider.prefixes and (d.resources or d.templates):
        yield Problem(p, "no-owned-prefix", provider.name, "declares no URI prefix", "set prefixes = ('myplugin://',)")
    for prefix in provider.prefixes:
        if not _PREFIX.match(prefix) or not valid_uri(prefix):
            yield Problem(p, "prefix-invalid", prefix, "is not scheme://...", "use a prefix such as myplugin://area/")


def _owned(provider: object) -> list[str]:
    """A resource provider's valid prefixes in canonical form (the invalid ones are its faults)."""
    prefixes = provider.prefixes if isinstance(provider, ResourceProvider) else ()
    return [canonical(px) for px in prefixes if _PREFIX.match(px) and valid_uri(px)]


def _outside(d: Declared, decl: Resource | ResourceTemplate, owned: list[str]) -> Iterable[Problem]:
    start = decl.uri if isinstance(decl, Resource) else literal_start(decl.uri_template)
    if owned and valid_uri(start) and not canonical(start).startswith(tuple(owned)):
        yield Problem(
            (d.plugin,),
            "outside-prefix",
            where_of(decl),
            f"lies outside provider {d.provider.name!r}'s prefixes {', '.join(getattr(d.provider, 'prefixes', ()))}",
            "declare the URI under an owned prefix or own its prefix",
        )


def _overlaps(declared: Sequence[Declared], found: Collisions) -> list[Problem]:
    """Providers whose prefixes overlap: sorted, a prefix is compared with the chain above it.

    Each pair is reported in declaration order (the plugin listed first comes first). A pair where
    a side was made for a configured source leaves out that source alone (:func:`prefix_clash`);
    any other pair is a problem refusing both plugins."""
    owned = sorted(
        (
            (canonical(px), px, i)
            for i, d in enumerate(declared)
            if isinstance(d.provider, ResourceProvider)
            for px in d.provider.prefixes
            if _PREFIX.match(px) and valid_uri(px)
        ),
        key=lambda item: item[0],
    )
    problems: list[Problem] = []
    chain: list[tuple[str, str, int]] = []
    for item in owned:
        while chain and not item[0].startswith(chain[-1][0]):
            chain.pop()
        for outer in chain:
            if outer[2] != item[2]:
                (_, a, i), (_, b, j) = sorted((outer, item), key=lambda x: x[2])
                da, db = declared[i], declared[j]
                if prefix_clash(found, da, a, db, b):
                    continue
                problems.append(
                    Problem(
                        (da.plugin, db.plugin),
                        "prefix-overlap",
                        f"{a} ~ {b}",
                        f"providers {da.provider.name!r} and {db.provider.name!r} both own it",
                        between("give each provider a prefix of its own", da.plugin, db.plugin),
                    )
                )
        chain.append(item)
    return problems


def where_of(decl: Resource | ResourceTemplate) -> str:
    return decl.uri if isinstance(decl, Resource) else decl.uri_template
