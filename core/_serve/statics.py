"""The static-read check: every fixed resource declared ``static`` is read twice and must not change.

This is the part of ``mcp-providers check`` that runs providers, so it lives with the request-time
code: each read goes through the same invoker (deadline, side-effect scope) as a served read.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator

from mcp_providers._host.advisories import uncovered_originals, undercut_aggregates
from mcp_providers._host.catalog import Entry
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.steps.asking import require_uri
from mcp_providers._serve.steps.gate import Gate
from mcp_providers._serve.steps.invoker import Work
from mcp_providers.errors import Denied, ProviderFailed, ReadTimeout, SideEffectRefused
from mcp_providers.identity import ANONYMOUS, LOCAL, Principal
from mcp_providers.models import Resource
from mcp_providers.policy import Action
from mcp_providers.providers import Content, ReadRequest, ResourceProvider
from mcp_providers.uris import canonical


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

    Runs inside :meth:`Composition.running` so providers can open their clients. Each read runs
    through the serving invoker: the deadline (``server.read_timeout``), so a read that hangs
    cannot hang ``check``, and the side-effect scope. What a read prints to stdout is captured
    (it would corrupt a stdio MCP stream) and reported.

    :returns: one ``<plugin>: static-read-failed|static-read-timeout|read-printed-to-stdout|
        static-content-changed: ...`` line per problem.
    """
    problems = []
    async with composition.running():
        for entry in composition.catalog.resources:
            if entry.declaration.freshness.kind == "static":
                problems += await _read_twice(composition, entry)
    return problems


async def _read_twice(composition: Composition, entry: Entry[Resource, ResourceProvider]) -> list[str]:
    decl = entry.declaration
    where = f"{entry.plugin}: {{rule}}: {decl.uri!r}: "
    work = Work(entry.plugin, entry.provider.name, f"reading {decl.uri}", decl.uri)
    digests: list[str] = []
    printed: list[str] = []
    problems: list[str] = []
    for _ in range(2):
        try:
            with _captured_stdout(printed), _original_errors():
                content: object = await composition.runtime.invoker.run(
                    work, lambda: entry.provider.read(ReadRequest(uri=canonical(decl.uri), resource=decl))
                )
        except SideEffectRefused as exc:
            problems.append(
                where.format(rule="side-effect-in-resource-read")
                + f"{(exc.data or {}).get('attempted', 'a side effect')} "
                "was refused; fix: do writes in a tool, write files under mcp_providers.http.scratch_dir(), or "
                "wrap an authentication request in mcp_providers.http.exempt(reason)"
            )
            break
        except ReadTimeout:
            deadline = composition.config.server.read_timeout
            problems.append(
                where.format(rule="static-read-timeout") + f"did not finish within {deadline:g} s "
                "(server.read_timeout); fix: bound the read's I/O with timeouts shorter than the deadline"
            )
            break
        except Exception as exc:
            problems.append(where.format(rule="static-read-failed") + f"{type(exc).__name__}: {exc}")
            break
        if not isinstance(content, Content):
            problems.append(
                where.format(rule="static-read-failed") + f"read() returned {type(content).__name__}; expected Content"
            )
            break
        digests.append(hashlib.sha256(content.data).hexdigest())
    if "".join(printed):
        first = ("".join(printed).strip().splitlines() or [""])[0]
        problems.append(
            where.format(rule="read-printed-to-stdout") + f"read() printed to stdout ({first[:60]!r}); over stdio "
            "that is the protocol stream; fix: log to stderr (the logging module) instead of print()"
        )
    if len(digests) == 2 and digests[0] != digests[1]:
        problems.append(
            where.format(rule="static-content-changed") + f"two reads gave different bytes (sha256 {digests[0][:12]} "
            f"vs {digests[1][:12]}); fix: declare Freshness.live() or a max age, or serve fixed bytes"
        )
    return problems


@contextlib.contextmanager
def _original_errors() -> Iterator[None]:
    """Let ``check`` report a provider's own exception (the operator runs it; serving hides the text)."""
    try:
        yield
    except ProviderFailed as exc:
        raise (exc.__context__ or exc) from None


def authorize_report(composition: Composition) -> tuple[str | None, list[str]]:
    """What ``check`` says about authorization: the order implementations are asked in (``None``
    when no plugin implements ``authorize``), and a warning line for each implementation that
    allowed every probe (subjects x actions x served targets); that usually means it was written
    for first-answer-wins (before 0.2) rather than any-deny-wins, where an allow overrides nothing."""
    authorizer = composition.runtime.authorizer
    if not authorizer.active:
        return None, []
    order = f"authorize: implementations asked (any deny wins, order never matters): {', '.join(authorizer.order)}"
    probes = _probes(composition)
    warnings = []
    for impl in composition.assembly.authorize:
        answers = [authorizer.ask(impl, s, a, t) for s, a, t in probes]
        if answers and all(d is not None and d.allow for d in answers):
            warnings.append(
                f"{impl.plugin}: authorize-always-allows: 'authorize': it allowed all {len(answers)} probes, and an "
                "allow never overrides another plugin's deny; fix: return None to defer, "
                "or Decision(False, ...) to deny"
            )
    return order, warnings


def _probe_callers() -> tuple[Principal, ...]:
    """Who ``check`` asks about: the stdio caller, an unauthenticated HTTP caller, and one caller
    of an unknown issuer that no rule names (a rule for one named subject is not probed)."""
    probe = Principal("probe-subject", issuer="https://probe.invalid/", groups=frozenset({"probe"}))
    return (LOCAL, ANONYMOUS, probe)


def aggregate_report(composition: Composition) -> list[str]:
    """What ``check`` warns about aggregates: one ``aggregate-undercuts-deny`` line per resource
    declaring unfiltered members where the configured policy refuses a member's read but allows
    the aggregate's (see :func:`~mcp_providers._host.advisories.undercut_aggregates`); none without a policy."""
    authorizer = composition.runtime.authorizer
    if not authorizer.active:
        return []
    catalog = composition.catalog

    def denied(principal: Principal, uri: str) -> str | None:
        gate = Gate(authorizer, principal, max_uri_length=composition.config.server.max_uri_length)
        try:
            require_uri(gate, catalog, "read", uri)
        except Denied:
            return gate.denials[-1].reason or "denied"
        return None

    declared, callers = composition.assembly.declared, _probe_callers()
    found = undercut_aggregates(declared, denied, callers) + uncovered_originals(declared, denied, callers)
    return [str(problem) for problem in found]


def _probes(composition: Composition) -> list[tuple[Principal, Action, str]]:
    catalog = composition.catalog
    targets: list[tuple[Action, str]] = [("read", e.declaration.uri) for e in catalog.resources[:20]]
    targets += [("expand", e.declaration.uri_template) for e in catalog.templates[:20]]
    targets += [("call", e.declaration.name) for e in catalog.tools[:20]]
    targets += [("prompt", e.declaration.name) for e in catalog.prompts[:20]]
    targets += [("list", target) for _, target in targets[:20]]
    return [(p, a, t) for p in _probe_callers() for a, t in targets]
