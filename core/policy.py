"""Authorization: the vocabulary of the ``authorize`` hook, and the core's way of asking it.

The policy itself is a plugin (the built-in ``policy`` plugin reads rules from config); the core
asks at every boundary through :class:`Authorizer`:

- implementations are asked in pluggy's order, each with its own plugin's settings, and the first
  non-``None`` answer stands (``firstresult``); no answer at all means allow;
- an implementation that raises or returns something other than a :class:`Decision` denies
  (fail closed), with the plugin named in the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Action", "Authorizer", "Decision"]

log = logging.getLogger("mcp_providers.policy")

Action = Literal["list", "read", "expand", "complete", "subscribe", "call", "prompt"]
"""The operations the ``authorize`` hook is asked about."""


@dataclass(frozen=True, slots=True)
class Decision:
    """An answer from the ``authorize`` hook.

    :param allow: ``True`` to permit, ``False`` to refuse.
    :param reason: shown to the client on refusal, e.g. ``"rule 3 denies read on servicenow://prod/*"``.
    """

    allow: bool
    reason: str = ""


ALLOW = Decision(True)


class Authorizer:
    """Asks the installed ``authorize`` implementations, each with its plugin's settings.

    :param impls: ``(plugin name, function, argument names)`` in the order pluggy would call them.
    :param settings: plugin name -> that plugin's settings instance (or ``None``).
    """

    def __init__(
        self, impls: list[tuple[str, Callable[..., Any], tuple[str, ...]]], settings: Mapping[str, Any]
    ) -> None:
        self._impls = impls
        self._settings = settings

    @classmethod
    def from_plugin_manager(cls, pm: Any, settings: Mapping[str, Any]) -> Authorizer:
        # pluggy calls implementations last-registered first.
        impls = [(i.plugin_name, i.function, tuple(i.argnames)) for i in reversed(pm.hook.authorize.get_hookimpls())]
        return cls(impls, settings)

    @property
    def active(self) -> bool:
        """Whether any policy is installed (if not, everything is allowed without asking)."""
        return bool(self._impls)

    def __call__(self, subject: str, action: Action, target: str) -> Decision:
        for plugin, func, argnames in self._impls:
            kwargs = {"subject": subject, "action": action, "target": target, "settings": self._settings.get(plugin)}
            try:
                answer = func(**{name: kwargs[name] for name in argnames})
            except Exception:
                log.exception("authorize hook of plugin %r raised; denying", plugin)
                return Decision(False, f"the authorize hook of plugin {plugin!r} failed")
            if answer is None:
                continue
            if not isinstance(answer, Decision):
                log.error("authorize hook of plugin %r returned %r; denying", plugin, answer)
                return Decision(False, f"the authorize hook of plugin {plugin!r} returned no Decision")
            return answer
        return ALLOW
