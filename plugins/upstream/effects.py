"""An upstream tool's effects: from its hints (MCP's defaults for absent ones), or the operator's
``effects`` override, and what of them is only the upstream's claim.

``readOnlyHint`` -> ``none``, else ``destructiveHint: false`` -> ``additive``, else ``destructive``;
a tool said both read-only and ``destructiveHint: true`` is ``destructive`` (of two contradicting
words, the one that asks for care). The override ``none`` is refused for a tool the upstream says
is not read-only. Effects below ``destructive`` that only the hints say are a claim nothing here
checks (:func:`claim_of`): the tool's origin carries it and ``inspect`` shows them as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping

import mcp_types as types

from mcp_providers.models import EFFECTS_CLAIM_KEY, Effects

__all__ = ["claim_of", "effects_of", "hint", "override_problem"]


def hint(hints: types.ToolAnnotations | None, name: str, default: bool) -> bool:
    """A tool hint as the upstream gave it, else MCP's default for it."""
    value = getattr(hints, name, None) if hints is not None else None
    return default if value is None else bool(value)


def override_problem(tool: types.Tool, override: Mapping[str, Effects]) -> str | None:
    """Why the operator's ``effects`` override of ``tool`` is refused, or ``None``: ``none`` for a
    tool the upstream says is not read-only (``readOnlyHint: false``, or ``destructiveHint: true``
    without ``readOnlyHint: true``). Absent hints say nothing, so ``none`` stays the operator's call."""
    if override.get(tool.name) != "none":
        return None
    hints = tool.annotations
    said_writes = hints is not None and (hints.read_only_hint is False or hints.destructive_hint is True)
    said_read_only = hints is not None and hints.read_only_hint and hints.destructive_hint is not True
    if said_read_only or not said_writes:
        return None
    word = "destructive (destructiveHint: true)" if hints and hints.destructive_hint else "not read-only"
    return (
        f"effects of {tool.name!r} cannot be 'none': the upstream declares it {word}, and a read-only tool's "
        f"call would be forwarded as a side-effect exemption; it is served as {effects_of(tool, {})!r}"
    )


_CLAIMS: dict[str, str] = {
    "none": "read-only (readOnlyHint: true)",
    "additive": "not destructive (destructiveHint: false)",
}
"""Effects less than destructive that only the upstream's hints say (nothing here checks them)."""


def effects_of(tool: types.Tool, override: Mapping[str, Effects]) -> Effects:
    """The effects of an upstream tool: the operator's override (unless :func:`override_problem`
    refuses it), else from its annotations with MCP's defaults for absent hints."""
    if tool.name in override and override_problem(tool, override) is None:
        return override[tool.name]
    hints = tool.annotations
    if hint(hints, "read_only_hint", False) and getattr(hints, "destructive_hint", None) is not True:
        return "none"  # read-only, and not also said destructive (the contradiction is read the safe way)
    return "destructive" if hint(hints, "destructive_hint", True) else "additive"


def claim_of(tool: types.Tool, override: Mapping[str, Effects], server: str) -> dict[str, str]:
    """``{EFFECTS_CLAIM_KEY: "upstream '<server>' claims ..."}`` for the tool's origin when its
    effects are below ``destructive`` on the upstream's hints alone, else ``{}`` (the operator's
    override, or the worst case)."""
    trusted = tool.name in override and override_problem(tool, override) is None
    claim = None if trusted else _CLAIMS.get(effects_of(tool, {}))
    return {EFFECTS_CLAIM_KEY: f"upstream {server!r} claims {claim}"} if claim else {}
