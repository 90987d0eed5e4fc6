"""Masking the secrets a plugin holds for a remote service out of text that came from it.

A remote service (an upstream MCP server, an OpenAPI service) may quote what it was sent: an
error saying ``rejected credential Bearer abc...``, a tool result echoing its environment. Such
text reaches the client, the model and the logs, so every secret this server holds for that
service is replaced by :data:`MASK` first: the values of the variables its settings name
(``auth.token_env``, ``env``, a client secret), and every credential the broker handed for it.
Anything shaped like an ``Authorization`` value (``Bearer``/``Basic`` and a token) is masked too,
whoever's it is.

A secret is found as written, upper- or lower-cased, URL-encoded (every common way),
JSON-escaped, hex-encoded, and base64-encoded (standard or URL-safe alphabet), alone or inside a
longer encoded text. Every spelling of every held secret is searched for in one pass of an
Aho-Corasick automaton (``ahocorasick-rs``), so a message costs about the same with one secret held
as with hundreds (``benchmarks/masking.py``).

Example::

    secrets = Secrets()
    secrets.add(os.environ["REMOTE_TOKEN"])
    secrets.masked("401: token hu-static-123456 rejected")   # "401: token [redacted] rejected"

The libraries a plugin sends with log too, before any of this sees what they log: httpx2 each
request's URL at INFO (an API key sent in the query with it), httpcore2 each answer's headers at
DEBUG (a credential a service echoes, a ``Set-Cookie``), the SDK's client each message's body at
DEBUG (what an upstream echoed, before the sieve masks it). While a plugin holds secrets for a
service it enters :func:`library_logs_masked`, which masks every secret held, by every plugin
inside it, in each record of :data:`LIBRARY_LOGGERS` (message and traceback); it changes nothing
else of a record, and is removed when the last plugin leaves.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final
from urllib.parse import quote, quote_plus

MASK: Final = "[redacted]"
MIN_SECRET_CHARS: Final = 6
"""Shorter values of variables that need not be secrets (an upstream's ``env``: ``1``, ``true``,
a port) are not masked: masking them would garble any text while hiding nothing worth hiding."""
MIN_ENCODED_CHARS: Final = 8
"""A run of base64 text shorter than this is not searched for: too short to tell from any other."""
_AUTHORIZATION = re.compile(r"(?i)\b(bearer|basic)(\s+)(?=[A-Za-z._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}")
"""A scheme and a token (8 or more token characters, at least one not a letter: ``a basic
approach`` is prose)."""


def _url_spellings(value: str) -> set[str]:
    """``value`` URL-encoded every common way: every reserved character, or ``/`` kept (``quote``'s
    default), or form-encoded (``+`` for a space), each in upper- and lower-case hex."""
    encoded = {quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="/")}
    lower = {re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), e) for e in encoded}
    return encoded | lower


def _base64_spellings(raw: bytes) -> set[str]:
    """``raw`` base64-encoded alone (with and without padding) and, for each of the three places it
    may start at inside a longer encoded text, the run of characters made only of its own bytes
    (standard and URL-safe alphabets)."""
    runs: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + raw).decode()
        first, last = -(-shift // 3), (shift + len(raw)) // 3  # the 3-byte groups that are all raw's
        runs.add(encoded[4 * first : 4 * last])
    whole = base64.b64encode(raw).decode()
    runs |= {whole, whole.rstrip("=")}
    urlsafe = {r.replace("+", "-").replace("/", "_") for r in runs}
    return {r for r in runs | urlsafe if len(r) >= MIN_ENCODED_CHARS}


def _spellings(value: str) -> set[str]:
    """Every spelling of ``value`` searched for (see the module docstring)."""
    raw = value.encode()
    cased = {value, value.upper(), value.lower()}
    hexed = binascii.hexlify(raw).decode()
    return cased | _url_spellings(value) | _base64_spellings(raw) | {hexed, hexed.upper()}


class _Literals:
    """Finds any of a set of strings, leftmost and longest first, in one linear pass."""

    __slots__ = ("_automaton",)

    def __init__(self, values: Iterable[str]) -> None:
        from ahocorasick_rs import AhoCorasick, MatchKind  # once a secret is held: serve's start-up does not pay

        self._automaton = AhoCorasick(list(values), matchkind=MatchKind.LeftmostLongest)

    def search(self, text: str) -> bool:
        return bool(self._automaton.find_matches_as_indexes(text))

    def sub(self, text: str) -> str:
        found = self._automaton.find_matches_as_indexes(text)
        if not found:
            return text
        kept: list[str] = []
        at = 0
        for _pattern, start, end in found:
            kept += (text[at:start], MASK)
            at = end
        kept.append(text[at:])
        return "".join(kept)


class Secrets:
    """The secret values held for one service (a secret holding another is masked whole). Values
    added with ``handed`` (credentials a broker handed, one per caller and expiry) are kept up to
    :attr:`HANDED_KEPT`, oldest dropped; configured ones are always kept."""

    HANDED_KEPT = 256

    __slots__ = ("_handed", "_held", "_literals")

    def __init__(self) -> None:
        self._held: dict[str, frozenset[str]] = {}  # each secret's spellings, made once
        self._handed: dict[str, frozenset[str]] = {}  # insertion-ordered: the oldest is dropped first
        self._literals: _Literals | None = None
        """Every spelling of every secret, JSON-escaped too: made when next needed after a change."""

    def add(self, value: str | None, *, minimum: int = 1, handed: bool = False) -> None:
        """Mask ``value`` from now on; ignored when shorter than ``minimum`` characters (a credential:
        1; a value that may not be secret at all: :data:`MIN_SECRET_CHARS`)."""
        if not value or len(value) < minimum or value in self._held or value in self._handed:
            return
        spellings = _spellings(value)
        spellings |= {json.dumps(v, ensure_ascii=False)[1:-1] for v in spellings}
        if handed:
            self._handed[value] = frozenset(spellings)
            if len(self._handed) > self.HANDED_KEPT:
                del self._handed[next(iter(self._handed))]
        else:
            self._held[value] = frozenset(spellings)
        self._literals = None

    def _search(self) -> _Literals | None:
        if self._literals is None and (self._held or self._handed):
            self._literals = _Literals({v for held in (self._held, self._handed) for s in held.values() for v in s})
        return self._literals

    def __bool__(self) -> bool:
        return bool(self._held or self._handed)

    def found_in(self, text: str) -> bool:
        """Whether ``text`` holds a held secret, in any spelling masked (JSON-escaped ones too)."""
        literals = self._search()
        return literals is not None and literals.search(text)

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
        literals = self._search()
        if literals is not None:
            text = literals.sub(text)
        folded = text.casefold()  # what (?i) matches: a cheap test before the regex's slower pass
        if "bearer" not in folded and "basic" not in folded:
            return text
        return _AUTHORIZATION.sub(rf"\1\2{MASK}", text)


LIBRARY_LOGGERS: Final = ("httpx", "httpx2", "httpcore", "httpcore2", "mcp.client", "mcp.shared", "mcp.os")
"""The loggers (each with every logger below it) of libraries that log URLs, headers or message
bodies of what a plugin sends and receives."""


class _LibraryLogMask(logging.Filter):
    """Masks, in a record of a library's logger, every secret the plugins inside
    :func:`library_logs_masked` hold (its message and its traceback; nothing else changes)."""

    def __init__(self) -> None:
        super().__init__()
        self.maskers: list[Callable[[str], str]] = []
        self.loggers: list[logging.Logger] = []

    def masked(self, text: str) -> str:
        for masker in list(self.maskers):
            text = masker(text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            said = record.getMessage()
        except Exception:  # a record whose arguments do not fit its message: its message alone
            said = str(record.msg)
        record.msg, record.args = self.masked(said), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = self.masked(record.exc_text or logging.Formatter().formatException(record.exc_info))
            record.exc_info = None  # a formatter would render it again, unmasked: exc_text is kept
        if record.stack_info:
            record.stack_info = self.masked(record.stack_info)
        return True

    def attach(self) -> None:
        """Onto each library logger (a logger's filter does not see its children's records: each one)."""
        names = set(LIBRARY_LOGGERS) | {
            n for n in list(logging.Logger.manager.loggerDict) if n.startswith(tuple(f"{p}." for p in LIBRARY_LOGGERS))
        }
        for name in sorted(names):
            found = logging.getLogger(name)
            if found not in self.loggers:
                found.addFilter(self)
                self.loggers.append(found)

    def detach(self) -> None:
        for found in self.loggers:
            found.removeFilter(self)
        self.loggers.clear()


_LIBRARY_LOGS = _LibraryLogMask()


@contextlib.contextmanager
def library_logs_masked(masked: Callable[[str], str]) -> Iterator[None]:
    """While inside, each record of :data:`LIBRARY_LOGGERS` passes ``masked`` (with what every other
    plugin inside passes: ``Secrets.masked``) before any handler sees it. Nests and overlaps; the
    filter is removed when the last one leaves. Loggers created meanwhile are taken at each entry."""
    _LIBRARY_LOGS.maskers.append(masked)
    _LIBRARY_LOGS.attach()
    try:
        yield
    finally:
        _LIBRARY_LOGS.maskers.remove(masked)
        if not _LIBRARY_LOGS.maskers:
            _LIBRARY_LOGS.detach()
