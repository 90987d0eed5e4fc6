"""Authorization vocabulary shared by the ``authorize`` hook and the server.

The policy itself (rules from config) is a plugin; the core only asks the hook at every boundary
and treats "no answer" as allow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Action", "Decision"]

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
