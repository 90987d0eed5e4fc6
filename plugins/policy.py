"""Built-in plugin: allow/deny rules from config, answering the ``authorize`` hook.

::

    [plugins.policy]
    default = "allow"                      # when no rule matches

    [[plugins.policy.rules]]
    effect = "deny"
    subjects = ["*"]                       # shell-style patterns (fnmatch), case-sensitive
    actions = ["read", "expand", "subscribe"]
    targets = ["servicenow://prod/*"]      # URI, URI template, tool name or prompt name patterns
    reason = "production records need an approved client"

Rules are tried in order; the first whose subject, action and target all match decides. With no
rules and ``default = "allow"`` the plugin defers (returns ``None``) so other policies may answer.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp_providers.hookspecs import hookimpl
from mcp_providers.policy import Action, Decision

ACTIONS: tuple[Action, ...] = ("list", "read", "expand", "complete", "subscribe", "call", "prompt")


class Rule(BaseModel):
    """One allow or deny rule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    effect: Literal["allow", "deny"] = Field(description="What a match decides.")
    subjects: tuple[str, ...] = Field(
        default=("*",), description="Subject patterns (fnmatch, case-sensitive): 'local' on stdio, the token's "
        "subject over HTTP with [server.auth], 'anonymous' without it."
    )
    actions: tuple[Action, ...] = Field(
        default=ACTIONS, description="Actions matched: list, read, expand, complete, subscribe, call, prompt."
    )
    targets: tuple[str, ...] = Field(
        default=("*",), min_length=1, description="Target patterns (fnmatch; '*' also matches '/'): URIs in "
        "canonical form (lower-case scheme, decoded once), URI templates (expand), tool or prompt names."
    )
    reason: str = Field(default="", description="Shown to the client in a denial.")


class PolicySettings(BaseModel):
    """The ``[plugins.policy]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: Literal["allow", "deny"] = Field(default="allow", description="The decision when no rule matches.")
    rules: tuple[Rule, ...] = Field(default=(), description="Tried in order; the first match decides.")


def decide(settings: PolicySettings, subject: str, action: Action, target: str) -> Decision | None:
    """The first matching rule's decision, else the default (``None`` for a plain allow)."""
    for number, rule in enumerate(settings.rules, start=1):
        if (
            action in rule.actions
            and any(fnmatchcase(subject, p) for p in rule.subjects)
            and any(fnmatchcase(target, p) for p in rule.targets)
        ):
            why = f"policy rule {number} ({rule.effect})" + (f": {rule.reason}" if rule.reason else "")
            return Decision(rule.effect == "allow", why)
    if settings.default == "deny":
        return Decision(False, f"policy default is deny and no rule allows {action} on {target}")
    return None


@hookimpl
def settings_model() -> type[BaseModel]:
    return PolicySettings


@hookimpl
def authorize(subject: str, action: Action, target: str, settings: PolicySettings | None) -> Decision | None:
    if settings is None or (not settings.rules and settings.default == "allow"):
        return None
    return decide(settings, subject, action, target)
