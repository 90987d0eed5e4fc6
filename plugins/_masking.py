"""Masking the secrets a plugin holds for a remote service out of text that came from it.

A remote service (an upstream MCP server, an OpenAPI service) may quote what it was sent: an
error saying ``rejected credential Bearer abc...``, a tool result echoing its environment. Such
text reaches the client, the model and the logs, so every secret this server holds for that
service is replaced by :data:`MASK` first: the values of the variables its settings name
(``auth.token_env``, ``env``, a client secret), and every credential the broker handed for it.
Anything shaped like an ``Authorization`` value (``Bearer``/``Basic`` and a token) is masked too,
whoever's it is.

Example::

    secrets = Secrets()
    secrets.add(os.environ["REMOTE_TOKEN"])
    secrets.masked("401: token hu-static-123456 rejected")   # "401: token [redacted] rejected"
"""

from __future__ import annotations

import json
import re
from typing import Any, Final
from urllib.parse import quote, quote_plus

MASK: Final = "[redacted]"
MIN_SECRET_CHARS: Final = 6
"""Shorter values of variables that need not be secrets (an upstream's ``env``: ``1``, ``true``,
a port) are not masked: masking them would garble any text while hiding nothing worth hiding."""
_AUTHORIZATION = re.compile(r"(?i)\b(bearer|basic)(\s+)(?=[A-Za-z._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}")
"""A scheme and a token (8 or more token characters, at least one not a letter: ``a basic
approach`` is prose)."""


def _spellings(value: str) -> set[str]:
    """``value`` as written and URL-encoded every common way: every reserved character, or ``/``
    kept (``quote``'s default), or form-encoded (``+`` for a space), each in upper- and lower-case hex."""
    encoded = {quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="/")}
    lower = {re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), e) for e in encoded}
    return {value, *encoded, *lower}


class Secrets:
    """The secret values held for one service (longest first, so a secret holding another is
    masked whole). Values added with ``handed`` (credentials a broker handed, one per caller and
    expiry) are kept up to :attr:`HANDED_KEPT`, oldest dropped; configured ones are always kept."""

    HANDED_KEPT = 256

    __slots__ = ("_handed", "_held", "_values")

    def __init__(self) -> None:
        self._held: list[str] = []
        self._handed: dict[str, None] = {}  # insertion-ordered: the oldest is dropped first
        self._values: list[str] = []

    def add(self, value: str | None, *, minimum: int = 1, handed: bool = False) -> None:
        """Mask ``value`` from now on; ignored when shorter than ``minimum`` characters (a credential:
        1; a value that may not be secret at all: :data:`MIN_SECRET_CHARS`)."""
        if not value or len(value) < minimum or value in self._held or value in self._handed:
            return
        if handed:
            self._handed[value] = None
            if len(self._handed) > self.HANDED_KEPT:
                del self._handed[next(iter(self._handed))]
        else:
            self._held.append(value)
        spellings = {v for held in (*self._held, *self._handed) for v in _spellings(held)}
        self._values = sorted(spellings, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._values)

    def found_in(self, text: str) -> bool:
        """Whether ``text`` holds a held secret (as written, URL-encoded or JSON-escaped)."""
        return any(v in text or json.dumps(v, ensure_ascii=False)[1:-1] in text for v in self._values)

    def masked_data(self, data: Any) -> Any:
        """``data`` (parsed JSON) with :meth:`masked` applied to every string in it, keys included."""
        if isinstance(data, str):
            return self.masked(data)
        if isinstance(data, list):
            return [self.masked_data(item) for item in data]
        if isinstance(data, dict):
            return {self.masked(k): self.masked_data(v) for k, v in data.items()}
        return data

    def masked(self, text: str) -> str:
        """``text`` with every held secret, and every ``Bearer``/``Basic`` token, replaced by
        :data:`MASK`."""
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return _AUTHORIZATION.sub(rf"\1\2{MASK}", text)
