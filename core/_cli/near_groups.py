"""Entry points declared in a near miss of the plugin groups (``mcp-providers``, ``mcp_provider``,
``MCP_Providers`` ...): discovery reads only the exact groups, so such a plugin is simply absent
from ``plugins`` and ``check``. Both commands warn about each one, naming the group found and the
right one (:func:`near_misses`).

Only ``check`` and ``plugins`` scan every installed distribution's entry points for this; ``serve``
reads its two groups alone and never imports this module, so its start-up is unchanged.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import re
from collections.abc import Iterable
from typing import Any

from mcp_providers._host.declarations import Problem
from mcp_providers._host.groups import GROUPS

RULE = "entry-point-group-near-miss"
SIMILAR = 0.85
"""Least ``difflib`` ratio between two squashed group names that reads as a misspelling
(``mcpprovider`` to ``mcpproviders`` is 0.96; ``mcpservers`` to it is 0.64)."""

_NOT_NAME = re.compile(r"[^a-z0-9]")
_SUFFIX = re.compile(r"(plugins?|entrypoints?)$")


def _squashed(group: str) -> str:
    """``"MCP-Providers.plugins"`` -> ``"mcpproviders"``: case, separators and a trailing kind word gone."""
    squashed = _NOT_NAME.sub("", group.lower())
    return _SUFFIX.sub("", squashed) or squashed


_TARGETS = {_squashed(group): group for group in GROUPS}


def right_group(group: str) -> str | None:
    """The plugin group ``group`` is a near miss of, or ``None`` (an exact group, or another one)."""
    if group in GROUPS:
        return None
    squashed = _squashed(group)
    best, score = None, SIMILAR
    for target, real in _TARGETS.items():
        ratio = 1.0 if squashed == target else difflib.SequenceMatcher(None, squashed, target).ratio()
        if ratio >= score:
            best, score = real, ratio
    return best


def near_misses(distributions: Iterable[Any] | None = None) -> list[Problem]:
    """One problem per entry point in a near-miss group, each distribution once (the first on
    ``sys.path``, as ``importlib.metadata`` reads it); unreadable metadata is skipped (discovery
    warns about it).

    :param distributions: ``importlib.metadata.distributions()`` when ``None``.
    """
    found: list[Problem] = []
    seen: set[str] = set()
    for dist in importlib.metadata.distributions() if distributions is None else distributions:
        try:
            name = dist.metadata["Name"] or "?"
            entry_points = list(dist.entry_points)
        except Exception:  # broken metadata: discovery names it
            continue
        if name in seen:
            continue
        seen.add(name)
        for ep in entry_points:
            real = right_group(ep.group)
            if real is not None:
                found.append(_problem(name, dist, ep, real))
    return sorted(found, key=lambda p: (p.plugins, p.message))


def _problem(name: str, dist: Any, ep: Any, real: str) -> Problem:
    version = getattr(dist, "version", None) or ""
    return Problem(
        (f"{name} {version}".strip(),),
        RULE,
        ep.group,
        f"entry point {ep.name} = {ep.value} is in group {ep.group!r}, which mcp-providers does not read, so "
        f"plugin {ep.name!r} is not found",
        f'declare it in group {real!r} (pyproject.toml: [project.entry-points."{real}"]) and reinstall the package',
    )
