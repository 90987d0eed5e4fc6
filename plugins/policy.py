"""Built-in plugin: allow/deny rules from config, answering the ``authorize`` hook.

::

    [plugins.policy]
    default = "allow"                      # when no rule matches

    [[plugins.policy.rules]]
    effect = "allow"
    groups = ["itil"]                      # the caller is in any of these groups (patterns)
    issuers = ["https://idp.example.com/"] # the token's issuer (patterns; default any)
    actions = ["read", "expand"]
    targets = ["servicenow://prod/*"]      # URI, URI template, tool name or prompt name patterns

    [[plugins.policy.rules]]
    effect = "deny"
    subjects = ["*"]                       # shell-style patterns (fnmatch), case-sensitive
    actions = ["read", "expand", "subscribe"]
    targets = ["servicenow://prod/*"]
    reason = "production records need the itil group"

A deny rule's targets also match what a lenient service reads a target as: folded for case and
Unicode compatibility (unless ``match_case = true``), with ``;`` path parameters, empty segments and
escapes read away, query values decoded and trimmed (see :class:`~mcp_providers.plugins._readings.Readings`);
and a target with a query by its parameters, in any order, among others (``deny x://q?b=true``
refuses ``x://q?n=0&b=true``); a value that may be a list also by its items, split at ``,``, ``|``
and whitespace (``deny x://a?ids=5`` refuses ``x://a?ids=4,5``; ``deny x://a?ids=4,5`` refuses
``x://a?ids=5|4``); each field of a path likewise (``deny x://a/5`` refuses ``x://a/4,5``). An
allow rule's targets match only as given.

A rule matches a caller (:class:`~mcp_providers.identity.Principal`) when every condition it sets
holds: ``subjects`` and ``issuers`` (patterns), ``groups`` (any of them), ``scopes`` (all of them)
and ``claims`` (each named claim equals, or for a list claim contains, one of the values). Rules
are tried in order; the first whose caller, action and target all match decides. With no rules and
``default = "allow"`` the plugin defers (returns ``None``) so other policies may answer.

A subject, a group, a scope and a claim value are each unique only within the issuer that vouched
for them: where ``[server.auth]`` trusts more than one issuer, an ``allow`` rule that names
``subjects``, ``groups``, ``scopes`` or ``claims`` must also name ``issuers`` (``issuers = ["*"]``
says on purpose that any issuer will do); otherwise the settings are refused, and with them
``serve`` (an authorization plugin not in force stops it).
"""

import re
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from mcp_providers.hookspecs import hookimpl
from mcp_providers.identity import Principal, trusted_issuers
from mcp_providers.plugins._readings import Readings, folded, path_reading, pattern_readings, query_matches
from mcp_providers.policy import Action, Decision

if TYPE_CHECKING:
    from mcp_providers.checks import Advisory, Callers, Served

ACTIONS: tuple[Action, ...] = ("list", "read", "expand", "complete", "subscribe", "call", "prompt")


class Rule(BaseModel):
    """One allow or deny rule."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

    effect: Literal["allow", "deny"] = Field(description="What a match decides.")
    subjects: tuple[str, ...] = Field(
        default=("*",),
        description="Subject patterns (fnmatch, case-sensitive): 'local' on stdio, the token's "
        "subject over HTTP with [server.auth], 'anonymous' without it.",
    )
    actions: tuple[Action, ...] = Field(
        default=ACTIONS, description="Actions matched: list, read, expand, complete, subscribe, call, prompt."
    )
    targets: tuple[str, ...] = Field(
        default=("*",),
        min_length=1,
        description="Target patterns (fnmatch; '*' also matches '/'): URIs in "
        "canonical form (lower-case scheme, decoded once), URI templates (expand), tool or prompt names.",
    )
    issuers: tuple[str, ...] = Field(
        default=("*",),
        description="Issuer patterns (fnmatch, case-sensitive): the token's 'iss' exactly as the "
        "identity provider spells it, 'static' for [server.auth] tokens, 'local' on stdio, '' when anonymous.",
    )
    groups: tuple[str, ...] | None = Field(
        default=None,
        description="Group patterns; the caller must be in at least one (from the token's groups "
        "claim, or a static token's groups). Unset: any caller, with or without groups.",
    )
    scopes: tuple[str, ...] | None = Field(
        default=None, description="OAuth scopes the caller's token must all carry. Unset: any."
    )
    claims: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="Claim name -> accepted values: the claim (one of [server.auth] claims) "
        "must equal one of them, or for a list claim contain one. Unset: any.",
    )
    reason: str = Field(default="", description="Shown to the client in a denial.")
    match_case: bool = Field(
        default=False,
        description="A deny rule only: match targets exactly as the patterns spell them. By default a deny "
        "also matches targets that differ in case or by Unicode compatibility (a service may compare names "
        "case-insensitively). Allow rules always match exactly.",
    )

    def matches_target(self, target: str, readings: Readings) -> bool:
        """Whether a target pattern matches ``target``; a deny tries each reading of each pattern
        (:func:`_pattern_readings`) on each of the target's ``readings``, and a pattern with a query
        on its parameters too (:meth:`Readings.query`)."""
        if self.effect == "allow":
            return any(fnmatchcase(target, p) for p in self.targets)
        fold = not self.match_case
        names = readings.folded if fold else readings.plain
        for pattern in self.targets:
            for glob, query in pattern_readings(pattern, fold):
                if any(fnmatchcase(r, glob) for r in names):
                    return True
                if query is not None and query_matches(query, readings.query(fold)):
                    return True
                if any(_overlap(glob, wide) for wide in readings.wide(fold)):
                    return True  # too many list combinations to read one by one: any of them may be meant
        return False

    def vouched_conditions(self) -> list[str]:
        """The caller conditions this rule sets whose values an issuer vouches for."""
        named = ["subjects"] if any(p != "*" for p in self.subjects) else []
        return named + [name for name in ("groups", "scopes", "claims") if getattr(self, name)]

    def matches(self, principal: Principal) -> bool:
        """Whether every caller condition of this rule holds for ``principal``."""
        if not any(fnmatchcase(principal.subject, p) for p in self.subjects):
            return False
        if not any(fnmatchcase(principal.issuer or "", p) for p in self.issuers):
            return False
        if self.groups is not None and not any(fnmatchcase(g, p) for g in principal.groups for p in self.groups):
            return False
        if self.scopes is not None and not set(self.scopes) <= principal.scopes:
            return False
        return all(_claim_matches(principal.claims.get(name), values) for name, values in self.claims.items())


def _claim_matches(claim: object, values: tuple[str, ...]) -> bool:
    if isinstance(claim, list | tuple):
        return any(str(c) in values for c in claim)
    return claim is not None and str(claim) in values


class PolicySettings(BaseModel):
    """The ``[plugins.policy]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: Literal["allow", "deny"] = Field(default="allow", description="The decision when no rule matches.")
    rules: tuple[Rule, ...] = Field(default=(), description="Tried in order; the first match decides.")

    @model_validator(mode="after")
    def _issuer_of_every_grant(self, info: ValidationInfo) -> "PolicySettings":
        """Refuse an allow rule that would grant one issuer's subject, group, scope or claim to
        another issuer's caller of the same name (only known with the server's config)."""
        trusted = trusted_issuers(info.context) or ()
        if len(trusted) < 2:
            return self
        for number, rule in enumerate(self.rules, start=1):
            vouched = rule.vouched_conditions()
            if rule.effect == "allow" and vouched and "issuers" not in rule.model_fields_set:
                raise ValueError(
                    f"rule {number} allows by {', '.join(vouched)} without issuers, and [server.auth] trusts "
                    f"{len(trusted)} issuers: a name is unique only within the issuer that vouched for it, so "
                    f"another issuer's caller of the same name would be allowed too. Add issuers = [{trusted[0]!r}] "
                    '(the issuers meant), or issuers = ["*"] if any trusted issuer will do'
                )
        return self


def decide(settings: PolicySettings, principal: Principal, action: Action, target: str) -> Decision | None:
    """The first matching rule's decision, else the default (``None`` for a plain allow)."""
    readings = Readings(target)
    for number, rule in enumerate(settings.rules, start=1):
        if action in rule.actions and rule.matches_target(target, readings) and rule.matches(principal):
            why = f"policy rule {number} ({rule.effect})" + (f": {rule.reason}" if rule.reason else "")
            return Decision(rule.effect == "allow", why)
    if settings.default == "deny":
        return Decision(False, f"policy default is deny and no rule allows {action} on {target}")
    return None


@hookimpl
def settings_model() -> type[BaseModel]:
    return PolicySettings


@hookimpl
def authorize(action: Action, target: str, settings: PolicySettings | None, principal: Principal) -> Decision | None:
    if settings is None or (not settings.rules and settings.default == "allow"):
        return None
    return decide(settings, principal, action, target)


@hookimpl
def check_composition(settings: PolicySettings | None, served: "Served") -> list["Advisory"]:
    """A rule target matching nothing served, for any of the rule's actions (a deny with a typo
    denies nothing, and nothing else would say so), or one naming a URI whose canonical form it
    does not match; and a rule whose caller conditions no caller of the configuration can meet
    (:func:`_unmet`: a deny on ``groups`` with no ``[server.auth]`` denies nothing)."""
    found: list[Advisory] = []
    for number, rule in enumerate(settings.rules if settings is not None else (), start=1):
        if served.callers is not None and (unmet := _unmet(rule, served.callers)) is not None:
            found.append(_no_caller(number, rule, *unmet, served.callers))
        for pattern in rule.targets:
            if (glob := _uris_of_template(rule, pattern)) is not None:
                found.append(_template_target(number, rule, pattern, glob))
            if (spelled := _spelled_otherwise(rule, pattern, served.templates)) is not None:
                found.append(_template_spelling(number, rule, pattern, spelled))
            found += [_names_default(number, rule, pattern, *named) for named in _defaults_named(rule, pattern, served)]
            if not _reaches(rule, pattern, served):
                found.append(_unmatched(number, rule, pattern, served))
            elif (canon := _canonical_missed(rule, pattern, served.templates)) is not None:
                found.append(_not_canonical(number, rule, pattern, canon))
    return found


_EXPRESSION = re.compile(r"\{[^{}]*\}")
_ON_URIS = frozenset({"read", "subscribe"})
"""Actions asked about the URIs a client names, never about the template they match."""


def _uris_of_template(rule: Rule, pattern: str) -> str | None:
    """The glob matching the URIs of the URI template ``pattern`` (``t25://users/*`` for
    ``t25://users/{uid}``) when ``rule`` names it for ``read`` or ``subscribe``, which are asked
    about those URIs and never match a literal ``{uid}``; ``None`` otherwise, and for a deny that
    also names ``expand``, which every read of the template's URIs is asked first."""
    if "://" not in pattern or not _EXPRESSION.search(pattern) or not _ON_URIS & set(rule.actions):
        return None
    if rule.effect == "deny" and "expand" in rule.actions:
        return None
    return re.sub(r"\*+", "*", _EXPRESSION.sub("*", pattern))


def _template_target(number: int, rule: Rule, pattern: str, glob: str) -> "Advisory":
    from mcp_providers.checks import Advisory

    acts = ", ".join(a for a in rule.actions if a in _ON_URIS)
    also = "; or add expand to its actions: a read of the template's URIs asks expand on it first"
    return Advisory(
        "policy-target-is-template",
        pattern,
        f"rule {number} ({rule.effect}) names a URI template for {acts}, which is asked about the URIs a client "
        f"names ({_EXPRESSION.sub('1', pattern)}), never about the template: for {acts} it "
        f"{'denies' if rule.effect == 'deny' else 'allows'} nothing",
        f"write the glob {glob!r} for its URIs" + (also if rule.effect == "deny" else ""),
    )


_ON_TEMPLATES = frozenset({"expand", "complete", "list"})
"""Actions asked about a URI template as it is declared."""


def _shape(template: str) -> str:
    return _EXPRESSION.sub("{}", template)


def _spelled_otherwise(rule: Rule, pattern: str, templates: tuple[str, ...]) -> str | None:
    """The served template ``pattern`` spells with other expressions (``{id}`` or ``{+uid}`` for
    ``{uid}``: the same literal parts) when ``rule`` names it for an action asked about templates
    as declared and matches no served template; ``None`` otherwise (tester twenty-eight F8)."""
    if not _ON_TEMPLATES & set(rule.actions) or not _EXPRESSION.search(pattern) or pattern in templates:
        return None
    shape = _shape(pattern)
    alike = [t for t in templates if _shape(t) == shape]
    if not alike or any(rule.matches_target(t, Readings(t)) for t in alike):
        return None
    return alike[0]


def _template_spelling(number: int, rule: Rule, pattern: str, template: str) -> "Advisory":
    from mcp_providers.checks import Advisory

    acts = ", ".join(a for a in rule.actions if a in _ON_TEMPLATES)
    return Advisory(
        "policy-target-template-spelling",
        pattern,
        f"rule {number} ({rule.effect}) names a URI template spelled otherwise than the served {template!r}; "
        f"{acts} is asked about the template as declared, so for it the rule "
        f"{'denies' if rule.effect == 'deny' else 'allows'} nothing",
        f"write {template!r}",
    )


_QUERY_EXPRESSION = re.compile(r"\{[?&]([^{}]*)\}")


def _defaults_named(rule: Rule, pattern: str, served: "Served") -> list[tuple[str, str, str]]:
    """``(template, item, instead)`` for each ``name=value`` of ``pattern``'s query (a deny's, on
    URIs) whose value is the default of query variable ``name`` of a served template the pattern
    may reach: a read leaving ``name`` out is served that value, and the deny never meets it (its
    query names an item the read has not); ``instead``: the pattern without the item (tester
    twenty-eight F11)."""
    split = pattern.partition("?") if "://" in pattern and rule.effect == "deny" else ("", "", "")
    if not split[1] or not _ON_URIS & set(rule.actions) or not served.defaults:
        return []
    fold = str if rule.match_case else folded
    found = []
    for template, defaults in served.defaults.items():
        names = {n.split(":")[0].rstrip("*") for e in _QUERY_EXPRESSION.findall(template) for n in e.split(",")}
        base = _QUERY_EXPRESSION.sub("", template)
        if not _overlap(fold(split[0]), fold(_EXPRESSION.sub("*", base))):
            continue
        items = split[2].split("&")
        for item in items:
            name, _, value = item.partition("=")
            default = {fold(n): fold(v) for n, v in defaults.items() if n in names}.get(fold(name))
            if default is not None and default == fold(value):
                rest = "&".join(i for i in items if i != item)
                found.append((template, item, split[0] + (f"?{rest}" if rest else "")))
    return found


def _names_default(number: int, rule: Rule, pattern: str, template: str, item: str, instead: str) -> "Advisory":
    from mcp_providers.checks import Advisory

    name = item.partition("=")[0]
    return Advisory(
        "policy-target-names-default",
        pattern,
        f"rule {number} ({rule.effect}) names {item}, the value {template!r} gives {name} when a read leaves it "
        f"out: such a read is served it, and the rule never meets it (it asks for {name} in the URI)",
        f"write {instead!r}: a rule cannot tell a left-out {name} from another value, so this denies every {name}",
    )


def _canonical_missed(rule: Rule, pattern: str, templates: tuple[str, ...]) -> str | None:
    """The canonical form of the URI ``pattern`` names when ``rule`` does not match it (``%68ugo``
    for ``hugo``: a client asking for ``hugo`` is never denied; ``?b=true&n=1`` for a template
    ``{?n,b}``, whose reads are asked about as ``?n=1&b=true``); ``None`` for a pattern with
    wildcards, not a URI, or one that matches its own canonical form."""
    from mcp_providers.uris import InvalidUri, canonical

    query = pattern.partition("://")[2].partition("?")[2]
    if "://" not in pattern or any(c in pattern for c in "*[") or ("?" in pattern and "=" not in query):
        return None  # a '?' with no 'name=' after it is a wildcard
    try:
        canon = canonical(pattern)
    except InvalidUri:
        return None
    if "?" in canon:
        canon = _in_template_order(canon, templates)
    return None if canon == pattern or rule.matches_target(canon, Readings(canon)) else canon


def _in_template_order(uri: str, templates: tuple[str, ...]) -> str:
    """``uri`` as the catalog routes it: expanded again from the values the first served template
    matching it takes (its query in the template's order, unknown and repeated names dropped);
    ``uri`` itself when no template matches it."""
    from mcp.shared.uri_template import UriTemplate

    from mcp_providers.uris import InvalidUri, canonical, canonical_template, template_problems

    for template in templates:
        if template_problems(template):
            continue
        try:
            parsed = UriTemplate.parse(canonical_template(template))
            values = parsed.match(uri)
            if values is not None:
                return canonical(parsed.expand(values))
        except (InvalidUri, ValueError):
            continue
    return uri


def _reaches(rule: Rule, pattern: str, served: "Served") -> bool:
    """Whether ``pattern`` may match a target of one of ``rule``'s actions. A URI pattern is judged
    against the owned prefixes whatever the action: provider code asks about any URI under its own
    (``policy.require("call", uri)``, ``ToolCall.require``), so only a pattern no served prefix can
    meet (a mistyped scheme or path start) matches nothing for certain. A name is judged against
    the tools and extension methods (``call``), prompts (``prompt``, ``complete``) and URI
    templates (``expand``, ``complete``), each served as is."""
    actions = set(rule.actions)
    fold = folded if rule.effect == "deny" and not rule.match_case else str
    readings = {fold(pattern), fold(path_reading(pattern))}
    globs = [fold(f"{p}*") for p in served.prefixes]
    if any("://" in r for r in readings) and any(_overlap(r, g) for r in readings for g in globs):
        return True
    names = [*served.tools, *served.methods] if actions & {"call", "list"} else []
    names += served.prompts if actions & {"prompt", "complete", "list"} else ()
    names += served.templates if actions & {"expand", "complete", "list"} else ()
    names += served.resources if actions & {"read", "subscribe", "list"} else ()
    return any(fnmatchcase(fold(name), r) for name in names for r in readings)


def _unmet(rule: Rule, callers: "Callers") -> tuple[str, str] | None:
    """The first caller condition of ``rule`` that no caller ``callers`` describes can meet, and
    what would have to be configured for one to, else ``None``."""
    auth = "[server.auth]"
    if callers.subjects is not None and not _any_match(callers.subjects, rule.subjects):
        return "subjects", f"{auth} tokens for these subjects"
    if callers.issuers is not None and not _any_match(callers.issuers, rule.issuers):
        return "issuers", f"{auth} trusting these issuers"
    if rule.groups is not None and callers.groups is not None and not _any_match(callers.groups, rule.groups):
        return "groups", f"{auth} giving callers these groups (a static token's groups, or groups_claim)"
    if rule.scopes is not None and callers.scopes is not None and not set(rule.scopes) <= set(callers.scopes):
        return "scopes", f"{auth} giving callers these scopes (a static token's scopes, or jwt/introspection)"
    if any(name not in callers.claims for name in rule.claims):
        return "claims", f"{auth} claims naming these claims (jwt or introspection)"
    return None


def _any_match(values: tuple[str, ...], patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(v, p) for v in values for p in patterns)


def _no_caller(number: int, rule: Rule, condition: str, needed: str, callers: "Callers") -> "Advisory":
    from mcp_providers.checks import Advisory

    value = getattr(rule, condition)
    shown = ", ".join(f"{k}={list(v)}" for k, v in value.items()) if isinstance(value, dict) else str(list(value))
    effect = "it denies nothing" if rule.effect == "deny" else "it allows nothing"
    return Advisory(
        "policy-caller-matches-nothing",
        shown,
        f"rule {number} ({rule.effect}) matches callers by {condition} {shown}, which no caller of this "
        f"configuration can have ({callers.source}), so {effect}",
        f"configure {needed}, or remove the rule (a host that identifies callers itself, "
        "mount(..., identify=...), is not seen by check)",
    )


def _unmatched(number: int, rule: Rule, pattern: str, served: "Served") -> "Advisory":
    from difflib import get_close_matches

    from mcp_providers.checks import Advisory

    known = [*served.resources, *served.templates, *served.tools, *served.prompts, *served.methods]
    known += [f"{p}*" for p in served.prefixes]
    close = get_close_matches(pattern, known, n=1, cutoff=0.6)
    effect = "it denies nothing" if rule.effect == "deny" else "it allows nothing"
    return Advisory(
        "policy-target-matches-nothing",
        pattern,
        f"rule {number} ({rule.effect}) names a target that nothing served matches for "
        f"{', '.join(rule.actions)}, so {effect}",
        (f"did you mean {close[0]!r}? " if close else "")
        + "correct the pattern (run 'mcp-providers inspect' for the URIs and names served) or remove it",
    )


def _not_canonical(number: int, rule: Rule, pattern: str, canon: str) -> "Advisory":
    from mcp_providers.checks import Advisory

    return Advisory(
        "policy-target-not-canonical",
        pattern,
        f"rule {number} ({rule.effect}) does not match {canon!r}, the canonical form of the URI it names: a URI "
        "is asked about in canonical form (and as the client spelled it only when that differs), so the rule "
        f"{rule.effect}s only a client spelling it this way",
        f"write it as {canon!r}",
    )


def _glob_tokens(pattern: str) -> tuple[str, ...]:
    """fnmatch tokens: ``*``, ``?`` (a ``[...]`` class is read as ``?``: any one character), or
    ``=`` and one literal character."""
    tokens, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        end = pattern.find("]", i + 2) if char == "[" else -1
        if end != -1:
            tokens.append("?")
            i = end + 1
            continue
        tokens.append(char if char in "*?" else f"={char}")
        i += 1
    return tuple(tokens)


def _overlap(a: str, b: str) -> bool:
    """Whether two fnmatch patterns match at least one string in common (``[...]`` read loosely,
    so a doubtful pair overlaps: this finds targets that certainly match nothing)."""
    try:
        return _meet(_glob_tokens(a), _glob_tokens(b))
    except RecursionError:  # patterns of hundreds of characters: doubtful, so they overlap
        return True


@lru_cache(maxsize=1024)
def _meet(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if not a or not b:
        return all(t == "*" for t in a + b)
    if a[0] == "*":
        return _meet(a[1:], b) or _meet(a, b[1:])
    if b[0] == "*":
        return _meet(a, b[1:]) or _meet(a[1:], b)
    return (a[0] == b[0] or "?" in (a[0], b[0])) and _meet(a[1:], b[1:])
