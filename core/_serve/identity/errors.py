"""What a verifier raises, and its one log line per refusal."""

from __future__ import annotations

import logging
import math

log = logging.getLogger("mcp_providers.identity")


class IdentityUnavailable(Exception):
    """The token cannot be checked now: the identity provider did not answer usably and nothing
    cached decides it. Answered 503 with ``Retry-After: retry_after`` (whole seconds, at least 1).

    The message names the check and the URL, never the token.
    """

    status = 503
    """The HTTP status the bearer gate answers with."""

    def __init__(self, message: str, retry_after: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


def refused(check: str, **detail: object) -> None:
    """Log one line naming the failed ``check`` (``expired``, ``wrong audience``, ...) and safe
    details (issuer, kid, alg: short, attacker-chosen strings are cut and quoted); never the token."""
    shown = " ".join(f"{k}={_safe(v)}" for k, v in detail.items() if v is not None)
    log.warning("bearer token refused: %s%s", check, f" ({shown})" if shown else "")


def _safe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
