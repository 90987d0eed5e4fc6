"""Checks every declaration before anything is served.

Each failure is a :class:`Problem` naming the plugin, the rule, the offending value and the fix;
``mcp-providers check`` prints one per line. A plugin named in any problem is not served (both
sides of a collision: serving either would be a guess, so the operator decides).

Rules (the ``rule`` string of a Problem):

==================================  =================================================================
``uri-not-absolute``                a fixed URI lacks a scheme (``scheme:...``)
``uri-is-template``                 a fixed URI contains ``{...}``; declare a ResourceTemplate
``template-invalid``                the SDK's strict RFC 6570 parser rejects the template (this
                                    includes adjacent variables such as ``{a}{b}``)
``template-without-variables``      a template with no variable; declare a fixed Resource
``template-explode-unsupported``    ``{/x*}``-style variables; use ``{+x}`` and split in ``read``
``completion-unknown-variable``     completions for a variable the template does not have
``no-owned-prefix``                 a resource provider declares no URI prefix
``prefix-invalid``                  a prefix is not ``scheme://...``
``prefix-overlap``                  two providers' prefixes overlap (one starts with the other)
``outside-prefix``                  a URI or template's literal start lies outside the owner's prefixes
``duplicate-uri``                   the same fixed URI declared twice
``duplicate-template``              the same URI template declared twice
``uri-shadowed-by-template``        a fixed URI that another provider's template also matches
``duplicate-tool``                  the same tool name declared twice
``duplicate-prompt``                the same prompt name declared twice
``duplicate-provider``              two providers with the same name
``resource-declares-side-effect``   a resource declares ``side_effects`` other than ``"none"``
``declaration-failed``              a provider's ``resources()``/``templates()``/``tools()``/``prompts()`` raised
==================================  =================================================================
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcp_providers.discovery import PluginRecord
from mcp_providers.errors import SideEffectRefused
from mcp_providers.models import Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.providers import PromptProvider, ResourceProvider, ToolProvider
from mcp_providers.sideeffects import side_effect_scope

if TYPE_CHECKING:
    from mcp_providers.composition import Composition

__all__ = ["Declared", "Problem", "check", "declare", "literal_start", "static_read_problems"]

D = TypeVar("D")

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True, slots=True)
class Problem:
    """One failed check."""

    plugins: tuple[str, ...]
    """Every plugin involved (two for a collision)."""
    rule: str
    value: str
    """The offending URI, template, prefix or name."""
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{' + '.join(self.plugins)}: {self.rule}: {self.value!r}: {self.message}; fix: {self.fix}"


@dataclass
class Declared:
    """Everything one provider declared, read once."""

    plugin: str
    provider: ResourceProvider | ToolProvider | PromptProvider
    resources: Sequence[Resource] = ()
    templates: Sequence[ResourceTemplate] = ()
    tools: Sequence[Tool] = ()
    prompts: Sequence[Prompt] = ()

    def resource_declarations(self) -> list[Resource | ResourceTemplate]:
        return [*self.resources, *self.templates]


def literal_start(template: str) -> str:
    """The literal text before the first expression: ``"a://x/{id}"`` -> ``"a://x/"``."""
    i = template.find("{")
    return template if i < 0 else template[:i]


def declare(records: Iterable[PluginRecord]) -> tuple[list[Declared], list[Problem]]:
    """Ask every loaded provider for its declarations, once; a provider that raises is a Problem."""
    out: list[Declared] = []
    problems: list[Problem] = []
    for record in records:
        if record.status != "loaded":
            continue
        for provider in record.providers():
            d = Declared(record.name, provider)
            try:
                if isinstance(provider, ResourceProvider):
                    d.resources = _typed(provider.resources(), Resource)
                    d.templates = _typed(provider.templates(), ResourceTemplate)
                elif isinstance(provider, ToolProvider):
                    d.tools = _typed(provider.tools(), Tool)
                else:
                    d.prompts = _typed(provider.prompts(), Prompt)
            except Exception as exc:
                problems.append(
                    Problem(
                        (record.name,),
                        "declaration-failed",
                        provider.name,
                        f"declaring provider {provider.name!r} raised {type(exc).__name__}: {exc}",
                        "return declaration models from resources()/templates()/tools()/prompts()",
                    )
                )
                continue
            out.append(d)
    return out, problems


def _typed(items: Iterable[object], kind: type[D]) -> list[D]:
    out = []
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(f"got {type(item).__name__}, expected {kind.__name__}")
        out.append(item)
    return out


def _check_template(d: Declared, t: ResourceTemplate) -> Iterable[Problem]:
    p = (d.plugin,)
    try:
        parsed = UriTemplate.parse(t.uri_template)
    except InvalidUriTemplate as exc:
        yield Problem(p, "template-invalid", t.uri_template, str(exc), "write an RFC 6570 template, e.g. a://x/{id}")
        return
    if not parsed.variables:
        yield Problem(
            p,
            "template-without-variables",
            t.uri_template,
            "has no {variable}",
            "declare it as a fixed Resource(uri=...)",
        )
    for var in parsed.variables:
        if var.explode:
            yield Problem(
                p,
                "template-explode-unsupported",
                t.uri_template,
                f"variable {var.name!r} explodes",
                "use {+" + var.name + "} and split the value in read()",
            )
    for name in set(t.completions) - set(parsed.variable_names):
        yield Problem(
            p,
            "completion-unknown-variable",
            t.uri_template,
            f"completions for {name!r}",
            f"name one of the template's variables: {', '.join(parsed.variable_names)}",
        )
    if not _SCHEME.match(literal_start(t.uri_template)):
        yield Problem(
            p,
            "uri-not-absolute",
            t.uri_template,
            "does not start with a scheme",
            "start with a literal scheme, e.g. myplugin://",
        )


def check(declared: Sequence[Declared]) -> list[Problem]:
    """Run every rule over every declaration; return the problems (empty when all is well)."""
    problems: list[Problem] = []
    add = problems.append

    # Per-declaration grammar.
    for d in declared:
        for r in d.resources:
            if not _SCHEME.match(r.uri):
                add(
                    Problem(
                        (d.plugin,),
                        "uri-not-absolute",
                        r.uri,
                        "has no scheme",
                        "use an absolute URI such as myplugin://path",
                    )
                )
            if UriTemplate.is_template(r.uri):
                add(
                    Problem(
                        (d.plugin,),
                        "uri-is-template",
                        r.uri,
                        "a fixed URI contains {...}",
                        "declare it as ResourceTemplate(uri_template=...)",
                    )
                )
        for t in d.templates:
            problems.extend(_check_template(d, t))
        for decl in d.resource_declarations():
            if decl.side_effects != "none":
                add(
                    Problem(
                        (d.plugin,),
                        "resource-declares-side-effect",
                        _where(decl),
                        f"declares side_effects={decl.side_effects!r}; resources are read-only",
                        "move the operation to a tool with that effect",
                    )
                )

    # Ownership.
    owners: list[tuple[str, Declared]] = []
    for d in declared:
        if not isinstance(d.provider, ResourceProvider):
            continue
        if not d.provider.prefixes and (d.resources or d.templates):
            add(
                Problem(
                    (d.plugin,),
                    "no-owned-prefix",
                    d.provider.name,
                    "declares no URI prefix",
                    "set prefixes = ('myplugin://',) on the provider",
                )
            )
        for prefix in d.provider.prefixes:
            if not _PREFIX.match(prefix):
                add(
                    Problem(
                        (d.plugin,),
                        "prefix-invalid",
                        prefix,
                        "is not scheme://...",
                        "use a prefix such as myplugin:// or myplugin://area/",
                    )
                )
            owners.append((prefix, d))
        for decl in d.resource_declarations():
            start = decl.uri if isinstance(decl, Resource) else literal_start(decl.uri_template)
            if d.provider.prefixes and not any(start.startswith(px) for px in d.provider.prefixes):
                add(
                    Problem(
                        (d.plugin,),
                        "outside-prefix",
                        _where(decl),
                        f"lies outside provider {d.provider.name!r}'s prefixes {', '.join(d.provider.prefixes)}",
                        "declare the URI under an owned prefix or own its prefix",
                    )
                )
    for i, (a, da) in enumerate(owners):
        for b, db in owners[i + 1 :]:
            if da is not db and (a.startswith(b) or b.startswith(a)):
                add(
                    Problem(
                        (da.plugin, db.plugin),
                        "prefix-overlap",
                        f"{a} ~ {b}",
                        f"providers {da.provider.name!r} and {db.provider.name!r} both own it",
                        "give each provider a prefix of its own",
                    )
                )

    # Collisions.
    _dupes(problems, "duplicate-provider", ((d.provider.name, d) for d in declared))
    _dupes(problems, "duplicate-uri", ((r.uri, d) for d in declared for r in d.resources))
    _dupes(problems, "duplicate-template", ((t.uri_template, d) for d in declared for t in d.templates))
    _dupes(problems, "duplicate-tool", ((t.name, d) for d in declared for t in d.tools))
    _dupes(problems, "duplicate-prompt", ((p.name, d) for d in declared for p in d.prompts))
    parsed = []
    for d in declared:
        for t in d.templates:
            try:
                parsed.append((UriTemplate.parse(t.uri_template), d))
            except InvalidUriTemplate:
                continue
    for d in declared:
        for r in d.resources:
            for tpl, owner in parsed:
                if owner is not d and r.uri.startswith(literal_start(tpl.template)) and tpl.match(r.uri):
                    add(
                        Problem(
                            (d.plugin, owner.plugin),
                            "uri-shadowed-by-template",
                            r.uri,
                            f"provider {owner.provider.name!r}'s template {tpl.template} also matches it",
                            "move the URI or narrow the template",
                        )
                    )
    return problems


def _where(decl: Resource | ResourceTemplate) -> str:
    return decl.uri if isinstance(decl, Resource) else decl.uri_template


def _dupes(problems: list[Problem], rule: str, items: Iterable[tuple[str, Declared]]) -> None:
    seen: dict[str, Declared] = {}
    for key, d in items:
        if key not in seen:
            seen[key] = d
            continue
        first = seen[key]
        problems.append(
            Problem(
                tuple(dict.fromkeys((first.plugin, d.plugin))),
                rule,
                key,
                f"declared by provider {first.provider.name!r} and by {d.provider.name!r}",
                "rename one; the server never picks a winner",
            )
        )


@contextlib.contextmanager
def _captured_stdout(into: list[str]) -> Iterator[None]:
    """Capture what is written to stdout, by ``print`` or straight to file descriptor 1."""
    sys.stdout.flush()
    text = io.StringIO()
    saved = os.dup(1)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 1)
            try:
                with contextlib.redirect_stdout(text):
                    yield
            finally:
                os.dup2(saved, 1)
                sink.seek(0)
                into.append(text.getvalue() + sink.read().decode(errors="replace"))
    finally:
        os.close(saved)


async def static_read_problems(composition: Composition) -> list[str]:
    """Read every fixed resource declared ``static`` twice; report those whose bytes differ.

    Runs inside :meth:`Composition.running` so providers can open their clients. Each read has
    the serving deadline (``server.read_timeout``), so a read that hangs cannot hang ``check``;
    what a read prints to stdout is captured (it would corrupt a stdio MCP stream) and reported.

    Each read runs in the side-effect scope a served read runs in (always enforcing), so a read
    that would write is reported as ``side-effect-in-resource-read`` naming what it attempted.

    :returns: one ``<plugin>: static-read-failed|static-read-timeout|read-printed-to-stdout|
        static-content-changed|side-effect-in-resource-read: ...`` line per problem.
    """
    import hashlib
    from typing import cast

    import anyio

    from mcp_providers.providers import Content, ReadRequest

    deadline = composition.config.server.read_timeout
    problems = []
    async with composition.running():
        for entry in composition.catalog.resources:
            decl: Resource = entry.declaration
            if decl.freshness.kind != "static":
                continue
            digests = []
            printed: list[str] = []
            for _ in range(2):
                scope = side_effect_scope(provider=entry.provider.name, plugin=entry.plugin, target=decl.uri)
                try:
                    with _captured_stdout(printed), anyio.fail_after(deadline), scope as attempts:
                        # object: a plugin may break its contract, and check must say so
                        content = cast(object, await entry.provider.read(ReadRequest(uri=decl.uri, resource=decl)))
                except SideEffectRefused:
                    problems.append(
                        f"{entry.plugin}: side-effect-in-resource-read: {decl.uri!r}: "
                        f"{attempts.violations[0]['attempted'] if attempts.violations else 'a side effect'} was "
                        "refused; fix: do writes in a tool, write files under mcp_providers.http.scratch_dir(), "
                        "or wrap an authentication request in mcp_providers.http.exempt(reason)"
                    )
                    break
                except TimeoutError:
                    problems.append(
                        f"{entry.plugin}: static-read-timeout: {decl.uri!r}: did not finish within {deadline:g} s "
                        "(server.read_timeout); fix: bound the read's I/O with timeouts shorter than the deadline"
                    )
                    break
                except Exception as exc:
                    problems.append(f"{entry.plugin}: static-read-failed: {decl.uri!r}: {type(exc).__name__}: {exc}")
                    break
                if not isinstance(content, Content):
                    problems.append(
                        f"{entry.plugin}: static-read-failed: {decl.uri!r}: read() returned "
                        f"{type(content).__name__}; expected Content"
                    )
                    break
                digests.append(hashlib.sha256(content.data).hexdigest())
            if "".join(printed):
                first = ("".join(printed).strip().splitlines() or [""])[0]
                problems.append(
                    f"{entry.plugin}: read-printed-to-stdout: {decl.uri!r}: read() printed to stdout "
                    f"({first[:60]!r}); over stdio that is the protocol stream; fix: log to stderr "
                    "(the logging module) instead of print()"
                )
            if len(digests) == 2 and digests[0] != digests[1]:
                problems.append(
                    f"{entry.plugin}: static-content-changed: {decl.uri!r}: two reads gave different bytes "
                    f"(sha256 {digests[0][:12]} vs {digests[1][:12]}); fix: declare Freshness.live() or "
                    "a max age, or serve fixed bytes"
                )
    return problems
