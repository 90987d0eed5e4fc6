"""Redaction of every secret the plugin knows, applied to each string that leaves it.

A :class:`Redactor` is fed with the configured secrets (passwords, client secrets, API keys),
derived ones (the ``Basic`` credential in base64), the OAuth tokens as they are issued, and the
credential-bearing parts of URLs (user info, values of ``token``/``key``/``secret``-like query
parameters). :meth:`Redactor.text` replaces each with ``[redacted]``; it also masks anything
after ``Authorization:``-style header names and ``Basic``/``Bearer`` schemes, known or not, since
an upstream may echo credentials the plugin never held (a proxy's, another user's).
"""

from __future__ import annotations

import base64
import re
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from mcp_providers.plugins._masking import MIN_SECRET_CHARS

__all__ = ["MASK", "Redactor", "redact_url"]

MASK = "[redacted]"
_MIN_SECRET = MIN_SECRET_CHARS
"""Shorter values are not redacted: masking every "a" would destroy messages and hide nothing (the
one rule of :data:`~mcp_providers.plugins._masking.MIN_SECRET_CHARS`: a configured secret that
short is refused with the settings, an issued token that short is not masked)."""
_CREDENTIAL_PARAM = re.compile(r"pass|secret|token|key|auth|sig|credential|code|session", re.IGNORECASE)
_PATTERNS = (
    # Authorization: <scheme> <credential>, x-sn-apikey: <key>, cookies (as upstreams echo headers)
    re.compile(
        r"(?i)((?:proxy-)?authorization|x-sn-apikey|api[-_]?key|cookie|set-cookie)(\"?\s*[:=]\s*\"?)[^\s\";,]+"
        r"(?:[ \t]+[^\s\";,]+)?"
    ),
    re.compile(r"(?i)\b(basic|bearer)(\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"(?i)\b(access_token|refresh_token|client_secret|password|api_key|token)(\"?\s*[:=]\s*\"?)[^\s\"&,;]+"),
)


def redact_url(url: str) -> str:
    """``url`` with its user info and the values of credential-like query parameters masked.

    >>> redact_url("https://u:p@x.example.com/?token=abc&q=1")
    'https://[redacted]@x.example.com/?token=[redacted]&q=1'
    """
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    query = "&".join(
        f"{k}={MASK if _CREDENTIAL_PARAM.search(k) else v}" if v or "=" in pair else k
        for pair in parts.query.split("&")
        if pair
        for k, _, v in [pair.partition("=")]
    )
    out = f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else netloc + parts.path
    return out + (f"?{query}" if parts.query else "") + (f"#{MASK}" if parts.fragment else "")


MAX_ISSUED = 4096
"""Per-user tokens a :class:`Redactor` masks at once (the most recently used ones)."""


class Redactor:
    """Masks known secrets and credential patterns in text and in JSON-like data.

    Thread-safe; secrets may be added at any time (e.g. each OAuth token when it is issued).
    """

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._issued: OrderedDict[str, None] = OrderedDict()
        self._known: tuple[str, ...] | None = ()
        """Every secret, longest first (``None``: changed since, sorted again on the next use)."""
        self._lock = threading.Lock()

    def add(self, *secrets: str | None) -> None:
        """Redact each of ``secrets`` (and its URL-encoded form) from now on; short ones are ignored."""
        with self._lock:
            for secret in secrets:
                if secret and len(secret) >= _MIN_SECRET:
                    self._secrets.add(secret)
                    self._secrets.add(unquote(secret))
                    self._known = None

    def add_issued(self, token: str) -> None:
        """Redact ``token``, a per-user token in use, from now on; only the most recent
        :data:`MAX_ISSUED` are kept (one per active user), so the list never grows without bound."""
        if len(token) < _MIN_SECRET:
            return
        with self._lock:
            if token in self._issued:
                self._issued.move_to_end(token)
                return  # the usual case: a token already in use, the set unchanged
            self._issued[token] = None
            while len(self._issued) > MAX_ISSUED:
                self._issued.popitem(last=False)
            self._known = None

    def add_basic(self, username: str, password: str) -> None:
        """Redact ``password`` and the ``Basic`` credential ``base64(username:password)``."""
        self.add(password, base64.b64encode(f"{username}:{password}".encode()).decode())

    def add_url(self, url: str) -> None:
        """Redact the user info and credential-like query values of ``url``."""
        parts = urlsplit(url)
        self.add(parts.password, parts.username and parts.password and f"{parts.username}:{parts.password}")
        self.add(*(v for k, v in parse_qsl(parts.query) if _CREDENTIAL_PARAM.search(k)))

    def text(self, value: str) -> str:
        """``value`` with every known secret and credential pattern replaced by ``[redacted]``."""
        with self._lock:
            if self._known is None:
                self._known = tuple(sorted((*self._secrets, *self._issued), key=len, reverse=True))
            known = self._known
        for secret in known:
            if secret in value:
                value = value.replace(secret, MASK)
        for pattern in _PATTERNS:
            value = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", value)
        return value

    def data(self, value: Any) -> Any:
        """A copy of ``value`` (str, list, tuple, dict, or scalars) with every string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.data(v) for v in value)
        return value
