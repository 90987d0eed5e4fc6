"""What plugins warn ``check`` about their own settings: the ``check_composition`` hook, asked
with what the composition serves (:func:`plugin_advisories`)."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_providers._host.catalog import Catalog
from mcp_providers._host.declarations import Problem
from mcp_providers._host.hookcalls import call_hook
from mcp_providers._host.isolation import one_line, reraise_interrupt
from mcp_providers._host.records import PluginRecord
from mcp_providers.checks import Advisory, Callers, Served
from mcp_providers.config import AuthConfig
from mcp_providers.identity import LOCAL_ISSUER
from mcp_providers.uris import canonical

HOOK = "check_composition"


def callers(auth: AuthConfig | None) -> Callers:
    """What the callers of a server with ``[server.auth]`` ``auth`` (``None``: none) can carry."""
    local = ("local",)
    if auth is None:
        source = "no [server.auth] is configured: every caller is 'local' (stdio) or 'anonymous' (HTTP)"
        return Callers(source, (*local, "anonymous"), (LOCAL_ISSUER, ""), (), (), ())
    if auth.mode == "static":
        tokens = auth.tokens
        return Callers(
            "[server.auth] accepts static tokens only",
            (*local, *(t.subject for t in tokens)),
            (LOCAL_ISSUER, *auth.principal_issuers),
            tuple(sorted({g for t in tokens for g in t.groups})),
            tuple(sorted({s for t in tokens for s in t.scopes})),
            (),
        )
    groups = None if auth.groups_claim else ()  # no groups_claim: no token's groups are read
    issuers = (LOCAL_ISSUER, *auth.issuers)
    return Callers(f'[server.auth] mode = "{auth.mode}"', None, issuers, groups, None, auth.claims)


def served(catalog: Catalog, auth: AuthConfig | None = None) -> Served:
    """The catalog's targets, as the ``authorize`` hook names them, and who can call them."""
    providers = [e.provider for e in catalog.resources] + [e.provider for e in catalog.templates]
    prefixes = {canonical(p) for provider in providers for p in provider.prefixes}
    return Served(
        resources=tuple(canonical(e.declaration.uri) for e in catalog.resources),
        templates=tuple(e.declaration.uri_template for e in catalog.templates),
        tools=tuple(e.declaration.name for e in catalog.tools),
        prompts=tuple(e.declaration.name for e in catalog.prompts),
        methods=tuple(catalog.extension_methods),
        prefixes=tuple(sorted(prefixes)),
        defaults={
            e.declaration.uri_template: e.declaration.defaults for e in catalog.templates if e.declaration.defaults
        },
        callers=callers(auth),
    )


def plugin_advisories(
    records: Sequence[PluginRecord], catalog: Catalog, auth: AuthConfig | None = None
) -> list[Problem]:
    """Ask every served plugin implementing ``check_composition`` (each alone, on its own manager).

    :param auth: the server's ``[server.auth]`` (``None``: none), which says who can call it.

    :returns: one problem per advisory, and one ``check-composition-failed`` per implementation that
        raised or returned anything but a sequence of :class:`~mcp_providers.checks.Advisory`.
    """
    asking = [r for r in records if r.status == "loaded" and HOOK in r.hooks]
    if not asking:
        return []
    targets = served(catalog, auth)
    found: list[Problem] = []
    for record in asking:
        found += _asked(record, targets)
    return found


def _asked(record: PluginRecord, targets: Served) -> list[Problem]:
    try:
        _, answer = call_hook(record, HOOK, settings=record.settings, served=targets)
    except BaseException as exc:  # a plugin's failure is its own; Ctrl-C still stops check
        reraise_interrupt(exc)
        return [_failed(record, f"raised {one_line(exc)}")]
    items = list(answer) if isinstance(answer, list | tuple) else None
    if answer is not None and (items is None or not all(isinstance(a, Advisory) for a in items)):
        return [_failed(record, f"returned {type(answer).__name__}, not a list of Advisory")]
    return [Problem((record.name,), a.code, a.value, a.message, a.fix) for a in items or ()]


def _failed(record: PluginRecord, what: str) -> Problem:
    return Problem(
        (record.name,),
        "check-composition-failed",
        HOOK,
        f"its hook {what}; what it would have warned about is unknown",
        "return a list of mcp_providers.checks.Advisory (or None) and catch what the check itself may raise",
    )
