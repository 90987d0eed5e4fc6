"""What ``check`` warns about without failing (:func:`advisories`, :func:`undercut_aggregates`); the
rules that fail are in :mod:`mcp_providers._host.rules`.


Advisories (:func:`advisories`; ``check`` prints them and still passes):

==================================  =================================================================
``output-schema-wrapped``           the output model's schema root is not an object (an array, a
                                    recursive ``$ref``); it is served wrapped as ``{"result": ...}``
``tool-name-client-incompatible``   a spec-valid tool name outside ``^[a-zA-Z0-9_-]{1,64}$``, which
                                    Claude Desktop, GitHub Copilot and the OpenAI API refuse (and
                                    with it the whole tool list)
``uri-not-canonical``               a fixed URI declared in another spelling than its canonical form;
                                    ``read`` gets ``ReadRequest.uri`` canonical, so compare with that
``member-unserved``                 a ``Members`` URI or template that nothing in the composition serves
                                    (a typo would make a filter ask about the wrong URIs)
``context-unannotated``             a decorated function's parameter named ``ctx`` or ``context``,
                                    not annotated: the caller is asked for it as an argument (a
                                    str for a template or prompt; any JSON value for a tool)
``parameter-unannotated``           a decorated tool's, template's or prompt's parameters that
                                    receive a value but have no annotation: a tool's is offered
                                    untyped (its inputSchema says nothing of it, and any JSON value
                                    reaches the function: ``add("1", "2")`` is ``"12"``), a
                                    template's or prompt's gets the text as sent; ``Any`` says so on
                                    purpose
``output-schema-says-nothing``      a decorated tool annotated ``-> Any`` or ``-> object``: its
                                    outputSchema is empty, and a value JSON cannot carry fails
                                    only when the tool is called
``plugin-name-differs``             a decorated ``Plugin("x")`` loaded under another entry-point
                                    name: operators configure ``[plugins.<entry point>]`` while its
                                    providers and skills carry ``x``
``left-out``                        what a provider's source offered but the provider leaves out, as
                                    it reports in its ``left_out`` attribute (items with ``value``,
                                    ``message`` and ``fix``): an upstream MCP server's components
                                    outside its owned prefixes, say
``tool-enum-unlinked``              a tool argument's ``enum`` holds exactly the completion values
                                    of a template's variable, and ``argument_resources`` does not
                                    link it: every caller is shown every value, whatever it may read
``argument-resource-unserved``      a tool's or prompt's argument linked (``argument_resources``,
                                    ``PromptArgument.resource``) to a template nothing here serves: a
                                    rule on the resource it meant never sees a call
``prompt-enum-unlinked``            a decorated prompt's ``Literal``/``Enum`` argument holds exactly
                                    the completion values of a template's variable, not linked by
                                    ``argument_resources``
``aggregate-undercuts-deny``        (:func:`undercut_aggregates`) the policy denies ``read`` on a
                                    member of an aggregate (``Members``) that does not filter its
                                    members, while allowing the aggregate: reading it serves what
                                    the rule refuses
``copy-deny-leaves-original``       (:func:`uncovered_originals`) the policy denies ``read`` on a
                                    copy (a resource whose members are one fixed URI: an alias) while
                                    allowing a resource it copies: the same content stays readable
==================================  =================================================================
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Callable, Mapping, Sequence

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcp_providers._host.collisions import valid_uri
from mcp_providers._host.declarations import Declared, Problem
from mcp_providers._host.output_schemas import RESULT_KEY, UnservableSchema, output_schema
from mcp_providers._host.rules import where_of
from mcp_providers.identity import Principal
from mcp_providers.models import ORIGIN_KEY, Resource, ResourceTemplate, Tool
from mcp_providers.uris import InvalidUri, canonical, canonical_template

CLIENT_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""Tool names every widely used client accepts (Claude Desktop, GitHub Copilot, the OpenAI API)."""


def advisories(declared: Sequence[Declared]) -> list[Problem]:
    """What ``check`` warns about without failing: wrapped output schemas, names clients refuse,
    fixed URIs not declared in canonical form, members nothing serves, what providers left out."""
    found: list[Problem] = _unserved_members(declared) + _renamed_plugins(declared) + _unlinked_enums(declared)
    found += _unserved_links(declared)
    for d in declared:
        for code, value, message, fix in getattr(d.provider, "authoring_advice", ()):  # decorated functions'
            found.append(Problem((d.plugin,), code, value, message, fix))
        for item in getattr(d.provider, "left_out", ()):  # duck-typed: no contract change for one plugin
            if not getattr(item, "unavailable", False):  # the whole source: unavailable_sources says it
                found.append(
                    Problem((d.plugin,), "left-out", item.value, f"{d.provider.name}: {item.message}", item.fix)
                )
        for r in d.resources:
            if valid_uri(r.uri) and canonical(r.uri) != r.uri:
                found.append(
                    Problem(
                        (d.plugin,),
                        "uri-not-canonical",
                        r.uri,
                        f"read() is handed ReadRequest.uri in canonical form, {canonical(r.uri)!r}, not as declared",
                        f"declare it as {canonical(r.uri)!r}",
                    )
                )
        for tool in d.tools:
            if not CLIENT_TOOL_NAME.match(tool.name):
                usable = re.sub(r"[^a-zA-Z0-9_-]", "_", tool.name)[:64]
                found.append(
                    Problem(
                        (d.plugin,),
                        "tool-name-client-incompatible",
                        tool.name,
                        "valid MCP, but Claude Desktop, GitHub Copilot and the OpenAI API accept only tool names "
                        "matching ^[a-zA-Z0-9_-]{1,64}$ and refuse the whole tool list otherwise",
                        _rename_fix(tool, usable),
                    )
                )
            with contextlib.suppress(UnservableSchema):
                if tool.output_model is not None and output_schema(tool.output_model).wrapped:
                    found.append(
                        Problem(
                            (d.plugin,),
                            "output-schema-wrapped",
                            tool.name,
                            f"the JSON Schema root of {tool.output_model.__name__} is not an object (an array or a "
                            f'recursive $ref); it is served as {{"{RESULT_KEY}": ...}} in outputSchema and '
                            "structuredContent",
                            "return an object model (a BaseModel with fields) to serve it unwrapped",
                        )
                    )
    return found


def _completion_variables(declared: Sequence[Declared]) -> dict[frozenset[str], tuple[str, str]]:
    """A template variable's completion values (two or more) -> the template and the variable."""
    variables: dict[frozenset[str], tuple[str, str]] = {}
    for t in (t for d in declared for t in d.templates):
        for variable, values in t.completions.items():
            if len(set(values)) > 1:
                variables.setdefault(frozenset(values), (t.uri_template, variable))
    return variables


def _unlinked_prompt_values(
    declared: Sequence[Declared], variables: Mapping[frozenset[str], tuple[str, str]]
) -> list[Problem]:
    """``prompt-enum-unlinked``: a decorated prompt's ``Literal`` argument holding exactly a template
    variable's completion values, with no ``resource`` (the prompt twin of ``tool-enum-unlinked``)."""
    found: list[Problem] = []
    for d in declared if variables else ():
        values: Mapping[tuple[str, str], tuple[str, ...]] = getattr(d.provider, "argument_values", {})
        for prompt in d.prompts:
            for argument in prompt.arguments:
                linked = variables.get(frozenset(values.get((prompt.name, argument.name), ())))
                if linked is None or argument.resource is not None:
                    continue
                template, variable = linked
                example = template.replace("{" + variable + "}", "{" + argument.name + "}")
                found.append(
                    Problem(
                        (d.plugin,),
                        "prompt-enum-unlinked",
                        f"{prompt.name}.{argument.name}",
                        f"its values are those of {{{variable}}} in {template}, and prompts/get takes every one "
                        "of them from every caller, also those naming a resource the caller may not read",
                        f'link it: @prompt(argument_resources={{"{argument.name}": "{example}"}})',
                    )
                )
    return found


def _unlinked_enums(declared: Sequence[Declared]) -> list[Problem]:
    """``tool-enum-unlinked``: a tool argument offering exactly a template variable's completion
    values (two or more), not linked to a resource by ``Tool.argument_resources``; and
    :func:`_unlinked_prompt_values`."""
    variables = _completion_variables(declared)
    found: list[Problem] = _unlinked_prompt_values(declared, variables)
    for d in declared if variables else ():
        for tool in d.tools:
            try:
                schema = tool.input_model.model_json_schema()
            except Exception:  # an unservable schema is the rules' to report
                continue
            for argument, node in (schema.get("properties") or {}).items():
                linked = variables.get(frozenset(_enum(node, schema.get("$defs") or {})))
                if linked is None or argument in tool.argument_resources:
                    continue
                template, variable = linked
                example = template.replace("{" + variable + "}", "{" + argument + "}")
                found.append(
                    Problem(
                        (d.plugin,),
                        "tool-enum-unlinked",
                        f"{tool.name}.{argument}",
                        f"its values are those of {{{variable}}} in {template}, and tools/list shows every one "
                        "of them to every caller, also those naming a resource the caller may not read",
                        f'link it: argument_resources={{"{argument}": "{example}"}}',
                    )
                )
    return found


def _enum(node: object, defs: Mapping[str, object]) -> list[str]:
    """The string values an argument's schema offers (inline, ``$ref``, ``anyOf``, array ``items``)."""
    if not isinstance(node, dict):
        return []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _enum(defs.get(ref.removeprefix("#/$defs/")), defs)
    if isinstance(node.get("enum"), list):
        return [v for v in node["enum"] if isinstance(v, str)]
    if "items" in node:
        return _enum(node["items"], defs)
    return [v for member in node.get("anyOf") or () for v in _enum(member, defs)]


def _renamed_plugins(declared: Sequence[Declared]) -> list[Problem]:
    """A ``plugin-name-differs`` problem per decorated plugin whose ``Plugin`` name is not its
    entry-point name, dashes and underscores aside (its providers say which in ``authored_as``)."""
    renamed = {
        (d.plugin, authored)
        for d in declared
        if (authored := _authored_as(d)) is not None and _folded(authored) != _folded(d.plugin)
    }
    return [
        Problem(
            (plugin,),
            "plugin-name-differs",
            authored,
            f"Plugin({authored!r}) is loaded under the entry-point name {plugin!r}: operators configure it as "
            f"[plugins.{plugin}] and name it {plugin!r} in allow/deny, while its providers and skills are "
            f"named after {authored!r}",
            f"name one of them after the other: Plugin({plugin!r}), or the entry point {authored!r}",
        )
        for plugin, authored in sorted(renamed)
    ]


def _folded(name: str) -> str:
    return name.replace("-", "_")  # Plugin("ssg-catalog") under ssg_catalog: one name in two spellings


def _authored_as(d: Declared) -> str | None:
    authored = getattr(d.provider, "authored_as", None)  # duck-typed, as authoring_advice
    return authored if isinstance(authored, str) else None


def unavailable_sources(declared: Sequence[Declared]) -> list[Problem]:
    """A ``source-unavailable`` problem per source a provider reports as serving nothing: an item
    of its ``left_out`` whose ``unavailable`` attribute is true (``value`` names the source as the
    operator configured it, ``message`` says why, ``fix`` what to do). Two providers of one source
    (its resources and its tools, say) may both report it: said once."""
    found = [
        Problem((d.plugin,), "source-unavailable", item.value, item.message, item.fix)
        for d in declared
        for item in getattr(d.provider, "left_out", ())
        if getattr(item, "unavailable", False)
    ]
    return list(dict.fromkeys(found))


def unavailable_providers(declared: Sequence[Declared]) -> set[str]:
    """Names of the providers that report their source unavailable (see :func:`unavailable_sources`)."""
    return {
        d.provider.name
        for d in declared
        if any(getattr(item, "unavailable", False) for item in getattr(d.provider, "left_out", ()))
    }


def _rename_fix(tool: Tool, usable: str) -> str:
    """The fix of a tool name clients refuse: the operator's (hide it) and, for a plugin's own tool,
    its author's (rename it). A tool made from a source the operator configured (its declaration
    names it in ``meta[ORIGIN_KEY]``: an upstream's tool, an OpenAPI operation) has no author here."""
    hide = f'hide it with a policy rule denying "list" and "call" on {tool.name!r}'
    if isinstance(tool.meta, Mapping) and ORIGIN_KEY in tool.meta:
        return f"{hide}; it keeps the name the source you configured gives it, which only that source can change"
    return f"{hide}, or turn its plugin off (deny = [...]); its author can rename it, e.g. {usable!r}"


MAX_MEMBER_PROBES = 200
"""The most value bindings :func:`undercut_aggregates` tries per aggregate."""
PROBE_VALUE = "probe"
"""The value a template variable without declared completions is probed with."""


def _unserved_members(declared: Sequence[Declared]) -> list[Problem]:
    """A ``member-unserved`` problem per ``Members`` URI that no declaration serves: not a declared
    template, and (expanded with :data:`PROBE_VALUE`) neither a fixed URI nor a URI of a template."""
    fixed = {canonical(r.uri) for d in declared for r in d.resources if valid_uri(r.uri)}
    templates: dict[str, UriTemplate] = {}
    for d in declared:
        for t in d.templates:
            with contextlib.suppress(InvalidUriTemplate, InvalidUri):
                templates[canonical_template(t.uri_template)] = UriTemplate.parse(canonical_template(t.uri_template))
    found = []
    for d in declared:
        for decl in d.resource_declarations():
            for member in decl.members.uris if decl.members is not None else ():
                if not _served(member, fixed, templates):
                    found.append(
                        Problem(
                            (d.plugin,),
                            "member-unserved",
                            where_of(decl),
                            f"member {member!r} is served by nothing here, so a rule on it guards nothing",
                            "name the URI or template the members are served at (see resources/templates/list)",
                        )
                    )
    return found


def _unserved_links(declared: Sequence[Declared]) -> list[Problem]:
    """An ``argument-resource-unserved`` problem per tool argument (``Tool.argument_resources``) or
    prompt argument (``PromptArgument.resource``) linked to a template nothing here serves."""
    fixed = {canonical(r.uri) for d in declared for r in d.resources if valid_uri(r.uri)}
    templates: dict[str, UriTemplate] = {}
    for d in declared:
        for t in d.templates:
            with contextlib.suppress(InvalidUriTemplate, InvalidUri):
                templates[canonical_template(t.uri_template)] = UriTemplate.parse(canonical_template(t.uri_template))
    links = [
        (d.plugin, f"{t.name}.{argument}", template)
        for d in declared
        for t in d.tools
        for argument, template in t.argument_resources.items()
    ]
    links += [
        (d.plugin, f"{p.name}.{a.name}", a.resource)
        for d in declared
        for p in d.prompts
        for a in p.arguments
        if a.resource
    ]
    return [
        Problem(
            (plugin,),
            "argument-resource-unserved",
            where,
            f"it is linked to {template!r}, which nothing here serves, so a rule on the resource its values "
            "name never sees a call (a typo?)",
            "link it to a template resources/templates/list shows",
        )
        for plugin, where, template in links
        if not _served(template, fixed, templates)
    ]


def _served(member: str, fixed: set[str], templates: Mapping[str, UriTemplate]) -> bool:
    try:
        key = canonical_template(member)
        if key in templates:
            return True
        parsed = UriTemplate.parse(key)
        uri = canonical(parsed.expand({name: PROBE_VALUE for name in parsed.variable_names}))
    except (InvalidUriTemplate, InvalidUri):
        return True  # member-invalid reports it
    return uri in fixed or any(t.match(uri) is not None for t in templates.values())


ReadDenied = Callable[[Principal, str], str | None]
"""``(caller, uri) -> why a read of uri is refused to caller``, or ``None`` when it is allowed
(asked as a read is: ``expand`` on the URI's template, then ``read``)."""


def undercut_aggregates(
    declared: Sequence[Declared], denied: ReadDenied, callers: Sequence[Principal]
) -> list[Problem]:
    """Aggregates that serve what the policy refuses: a resource declaring :class:`Members
    <mcp_providers.models.Members>` without ``filtered=True``, which a caller may read while
    ``read`` on one of its members is denied to that caller.

    Members are enumerated from the declared completions of the aggregate's template and of the
    member templates (a variable with none gets :data:`PROBE_VALUE`), at most
    :data:`MAX_MEMBER_PROBES` bindings per aggregate, each asked for every caller in ``callers``.

    :returns: one ``aggregate-undercuts-deny`` problem per aggregate and member pattern.
    """
    completions: dict[str, Mapping[str, tuple[str, ...]]] = {
        t.uri_template: t.completions for d in declared for t in d.templates
    }
    problems: list[Problem] = []
    for d in declared:
        for decl in d.resource_declarations():
            if decl.members is None or decl.members.filtered:
                continue
            for member in decl.members.uris:
                found = _undercut(decl, member, completions, denied, callers)
                if found is not None:
                    problems.append(
                        Problem(
                            (d.plugin,),
                            "aggregate-undercuts-deny",
                            where_of(decl),
                            f"it gathers {found[1]}, whose read the policy refuses to {found[0].subject!r} "
                            f"({found[2]}), and does not filter its members, so reading it serves what the rule "
                            "refuses",
                            "leave out members the caller may not read (policy.allowed('read', uri)) and declare "
                            f"Members(..., filtered=True), or deny read on {found[3]} too",
                        )
                    )
    return problems


def _undercut(
    decl: Resource | ResourceTemplate,
    member: str,
    completions: Mapping[str, Mapping[str, tuple[str, ...]]],
    denied: ReadDenied,
    callers: Sequence[Principal],
) -> tuple[Principal, str, str, str] | None:
    """The first ``(caller, member URI, why, aggregate URI)`` where the member is denied and the
    aggregate allowed, else ``None``."""
    try:
        own = UriTemplate.parse(where_of(decl))
        other = UriTemplate.parse(member)
    except InvalidUriTemplate:
        return None
    known = {**completions.get(member, {}), **(decl.completions if isinstance(decl, ResourceTemplate) else {})}
    names = list(dict.fromkeys([*own.variable_names, *other.variable_names]))
    values = [known.get(n) or (PROBE_VALUE,) for n in names]
    for combination in itertools.islice(itertools.product(*values), MAX_MEMBER_PROBES):
        binding = dict(zip(names, combination, strict=True))
        aggregate, member_uri = own.expand(binding), other.expand(binding)
        for caller in callers:
            why = denied(caller, member_uri)
            if why is not None and denied(caller, aggregate) is None:
                return caller, member_uri, why, aggregate
    return None


def uncovered_originals(
    declared: Sequence[Declared], denied: ReadDenied, callers: Sequence[Principal]
) -> list[Problem]:
    """Copies denied while what they copy is not: a fixed resource whose :class:`Members
    <mcp_providers.models.Members>` are one fixed URI (an alias; not an index of several, nor a
    skill file, which a rule hides to hide its skill), on which the policy refuses ``read`` to a
    caller in ``callers`` who may read that member, which serves the same content.

    :returns: one ``copy-deny-leaves-original`` problem per alias.
    """
    problems: list[Problem] = []
    for d in declared:
        if d.skills:  # skill files: denying one while its original is open is hiding the skill, by design
            continue
        for decl in d.resource_declarations():
            members = decl.members.uris if decl.members is not None else ()
            if not isinstance(decl, Resource) or len(members) != 1 or "{" in members[0]:  # an alias: one fixed URI
                continue
            found = next(((c, why, m) for c in callers if (why := denied(c, decl.uri)) for m in members
                          if denied(c, m) is None), None)  # fmt: skip
            if found is not None:
                caller, why, member = found
                problems.append(
                    Problem(
                        (d.plugin,),
                        "copy-deny-leaves-original",
                        decl.uri,
                        f"the policy refuses its read to {caller.subject!r} ({why}), but it copies {member}, which "
                        "that caller may still read: the same content",
                        f"deny read on {member} too, or instead",
                    )
                )
    return problems
