"""Masking of every secret the plugin holds, applied to each string that leaves it.

A :class:`Redactor` is fed with the configured secrets (passwords, client secrets, API keys),
derived ones (the ``Basic`` credential in base64), the OAuth and user tokens as they are issued,
and the credential-bearing parts of URLs (user info, values of ``token``/``key``/``secret``-like
query parameters). It masks them by the one rule every plugin follows,
:class:`~mcp_providers.plugins._masking.Secrets`: every spelling an instance may echo a secret in
(HTML-, URL-, form- or JSON-escaped, re-cased, base64, hex...), a text holding one that cannot be
cut out masked whole, a secret or spelling shorter than
:data:`~mcp_providers.plugins._masking.MIN_SECRET_CHARS` not searched for, and ``Basic``/``Bearer``
tokens masked whoever's they are. On top of that it masks what follows ``Authorization:``-style
header names and credential-like keys (``password=``, ``"access_token": ``), known or not, since an
instance may echo credentials the plugin never held (a proxy's, another user's).
"""

from __future__ import annotations

import base64
import re
import threading
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from mcp_providers.plugins._masking import MASK, Secrets

__all__ = ["MASK", "Redactor", "redact_url"]

_CREDENTIAL_PARAM = re.compile(r"pass|secret|token|key|auth|sig|credential|code|session", re.IGNORECASE)
_PATTERNS = (
    # Authorization: <scheme> <credential>, x-sn-apikey: <key>, cookies (as upstreams echo headers)
    re.compile(
        r"(?i)((?:proxy-)?authorization|x-sn-apikey|api[-_]?key|cookie|set-cookie)(\"?\s*[:=]\s*\"?)[^\s\";,]+"
        r"(?:[ \t]+[^\s\";,]+)?"
    ),
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


class Redactor:
    """Masks held secrets (by :class:`~mcp_providers.plugins._masking.Secrets`) and credential
    patterns in text and in JSON-like data.

    Thread-safe (the library-log filter may mask from any thread); secrets may be added at any time
    (each OAuth token when it is issued, each user token as it is used).
    """

    def __init__(self, who: str = "a ServiceNow instance") -> None:
        """:param who: the service named by the warning of a text masked whole."""
        self._secrets = Secrets(who)
        self._lock = threading.RLock()

    def add(self, *secrets: str | None) -> None:
        """Mask each of ``secrets`` from now on (``None``, ``""`` and short ones are skipped, as
        :meth:`Secrets.add <mcp_providers.plugins._masking.Secrets.add>` says)."""
        with self._lock:
            for secret in secrets:
                self._secrets.add(secret)

    def add_issued(self, token: str) -> None:
        """Mask ``token``, a per-user token in use, from now on; only the most recently used
        :attr:`Secrets.HANDED_KEPT <mcp_providers.plugins._masking.Secrets.HANDED_KEPT>` are kept (one
        per active user), so the list never grows without bound."""
        with self._lock:
            self._secrets.add(token, handed=True)

    def add_basic(self, username: str, password: str) -> None:
        """Mask ``password`` and the ``Basic`` credential ``base64(username:password)``."""
        self.add(password, base64.b64encode(f"{username}:{password}".encode()).decode())

    def add_url(self, url: str) -> None:
        """Mask the user info and credential-like query values of ``url``."""
        parts = urlsplit(url)
        password = parts.password and unquote(parts.password)  # what is sent: the user info decoded
        self.add(parts.password, password, parts.username and parts.password and f"{parts.username}:{parts.password}")
        self.add(*(v for k, v in parse_qsl(parts.query) if _CREDENTIAL_PARAM.search(k)))

    def text(self, value: str) -> str:
        """``value`` with every held secret (in any spelling; :data:`MASK` alone when one cannot be
        cut out) and credential pattern replaced by :data:`MASK`."""
        with self._lock:
            value = self._secrets.masked(value)
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
