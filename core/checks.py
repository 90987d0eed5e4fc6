"""What a plugin tells ``mcp-providers check`` about its own settings (the
:func:`~mcp_providers.hookspecs.check_composition` hook): the targets the composition serves, and
the advisories a plugin answers with.

A plugin whose settings name targets (a policy's rules, a filter's allow-list) is the only one that
can tell a name nothing serves, which would otherwise pass ``check`` silently::

    from mcp_providers import hookimpl

    @hookimpl
    def check_composition(settings, served):
        from mcp_providers.checks import Advisory  # check only: keep serving's imports lean

        return [
            Advisory("filter-names-nothing", name, f"no tool {name!r} is served", "use one of: ...")
            for name in settings.tools if name not in served.tools
        ]

This module is imported by ``check`` only, never on ``serve``'s path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Advisory", "Callers", "Served"]


@dataclass(frozen=True, slots=True)
class Callers:
    """What the callers of this configuration can carry, as a policy rule's caller conditions read
    it (:class:`~mcp_providers.identity.Principal`). A field that is ``None`` is not known from the
    configuration (an identity provider's tokens may carry any value).

    Without ``[server.auth]`` every caller is ``local`` (stdio, issuer ``local``) or ``anonymous``
    (HTTP, issuer ``""``), with no groups, scopes or claims; with static tokens, the configured
    subjects, groups and scopes; with ``jwt`` or ``introspection``, the configured issuers, and
    groups only with a ``groups_claim``. An embedding host that identifies its callers itself
    (``mount(..., identify=...)``) is not seen here.
    """

    source: str
    """Where callers come from, in words for a message (``"no [server.auth]: every caller is ..."``)."""
    subjects: tuple[str, ...] | None
    issuers: tuple[str, ...] | None
    groups: tuple[str, ...] | None
    """Every group some caller can be in (``()``: none)."""
    scopes: tuple[str, ...] | None
    """Every scope some caller's token can carry (``()``: none)."""
    claims: tuple[str, ...]
    """The claim names a caller's principal can carry (``[server.auth] claims``)."""


@dataclass(frozen=True, slots=True)
class Served:
    """What the composition serves, as the ``authorize`` hook names its targets.

    Every field is a tuple of strings in the order the catalog lists them.
    """

    resources: tuple[str, ...]
    """Fixed resource URIs, canonical (lower-case scheme, one percent-encoding)."""
    templates: tuple[str, ...]
    """URI templates as declared (RFC 6570), the targets of ``expand`` and ``complete``."""
    tools: tuple[str, ...]
    """Tool names, the targets of ``call``."""
    prompts: tuple[str, ...]
    """Prompt names, the targets of ``prompt`` and ``complete``."""
    methods: tuple[str, ...] = ()
    """Extension method names, also the targets of ``call``."""
    prefixes: tuple[str, ...] = ()
    """The URI prefixes the resource providers own, canonical: every URI read is under one."""
    defaults: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Per template (as declared) that has any, its query variables' values when a read leaves
    them out (:attr:`ResourceTemplate.defaults <mcp_providers.models.ResourceTemplate.defaults>`)."""
    callers: Callers | None = None
    """Who can call this configuration (``None``: not known, e.g. a test composing without one)."""


@dataclass(frozen=True, slots=True)
class Advisory:
    """One thing ``check`` warns about (it still passes), printed as
    ``warning: <plugin>: <code>: <value>: <message>; fix: <fix>``.

    :param code: a short kebab-case name of the kind, e.g. ``"policy-target-matches-nothing"``.
    :param value: the setting's value it is about (a pattern, a name), as the operator wrote it.
    :param message: what is wrong, in a sentence.
    :param fix: what would be right.
    :raises TypeError: a field that is not a string.
    """

    code: str
    value: str
    message: str
    fix: str

    def __post_init__(self) -> None:
        for name in ("code", "value", "message", "fix"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Advisory.{name} must be a string, not {type(getattr(self, name)).__name__}")
