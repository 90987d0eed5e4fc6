"""The two entry-point groups, and which plugin is a policy plugin by construction.

A plugin says what it is by where it is declared (round 4 item 22), never by being imported first:

- ``mcp_providers.policy`` (:data:`~mcp_providers.hookspecs.POLICY_GROUP`): a *policy plugin*. It
  carries authorization whatever happens to it, so one that fails to load at any stage (import
  error, made for another core, rejected hook, invalid settings, failed checks) stops ``serve``;
  one that registers no ``authorize`` implementation is refused, and stops ``serve`` too.
- ``mcp_providers`` (:data:`~mcp_providers.hookspecs.PROJECT`): a *provider plugin*. One that
  fails to load is left out and the others are served, even when its import failed: it cannot be
  a policy. One that defines ``authorize`` anyway (any spelling pluggy would register, or hide) is
  refused and stops ``serve``: its rules would otherwise silently not apply.

Plugins passed directly (tests, embedding) have no group: an object cannot fail to import, so
whether it is a policy plugin is what pluggy would register from it, as before.

A name declared twice (in one group or across both) is rejected; it is a policy plugin when any of
its declarations is in the policy group, or any provider-group one it can import defines
``authorize``.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable

from mcp_providers import hookspecs
from mcp_providers._host.hookscan import AuthorizeScan
from mcp_providers._metadata import usable

GROUPS = (hookspecs.PROJECT, hookspecs.POLICY_GROUP)

DECLARED_POLICY = f"it is declared in the {hookspecs.POLICY_GROUP} entry-point group"
"""The evidence a policy-group plugin could carry authorization: its declaration, whatever it imports."""


def entry_points() -> list[importlib.metadata.EntryPoint]:
    """Every entry point of both groups, sorted by name (``importlib.metadata`` yields each
    distribution once even when it is on ``sys.path`` twice); broken metadata is skipped, warned.

    Both groups come from one pass over the installed distributions: each ``entry_points(group=)``
    call reads and parses every installed ``entry_points.txt`` again (two passes were a tenth of
    discovery with 100 plugin distributions installed)."""
    found: list[importlib.metadata.EntryPoint] = []
    try:
        every = importlib.metadata.entry_points()  # 3.11: SelectableGroups; 3.12+: EntryPoints
        for group in GROUPS:
            found += every.select(group=group)
    except Exception:  # broken metadata somewhere on sys.path: read the others one at a time
        found = []
        for group in GROUPS:
            found += usable(importlib.metadata.distributions(), group)
    return sorted(found, key=lambda ep: (ep.name, ep.group))


def is_policy(group: str | None) -> bool:
    return group == hookspecs.POLICY_GROUP


def group_problem(group: str | None, scan: AuthorizeScan) -> str | None:
    """Why a plugin that imported must be refused for the group it is declared in, or ``None``.

    :param group: its entry point's group, ``None`` for a plugin passed directly.
    :param scan: what pluggy would register from it (:func:`~mcp_providers._host.hookscan.scan_authorize`).
    """
    if is_policy(group) and scan.unreadable is None and not (scan.registered or scan.hidden):
        return (
            f"declared in the {hookspecs.POLICY_GROUP} entry-point group but pluggy registers no authorize "
            f"hookimpl from it; implement authorize, or declare it in the {hookspecs.PROJECT} group"
        )
    if group == hookspecs.PROJECT and scan.evidence is not None:
        return (
            f"defines authorize {scan.evidence.removeprefix('it has an authorize hookimpl ')} but is declared in "
            f"the {hookspecs.PROJECT} entry-point group, where a failed import would leave it out; declare it "
            f'under [project.entry-points."{hookspecs.POLICY_GROUP}"] instead'
        )
    return None


def looked_evidence(group: str | None, look: Callable[[], str | None]) -> str | None:
    """Why a plugin that is not loaded could carry authorization: its declaration for the policy
    group, else what ``look`` (an import and a scan, ``None`` when the import fails) finds."""
    return DECLARED_POLICY if is_policy(group) else look()
