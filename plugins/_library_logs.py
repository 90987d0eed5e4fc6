"""Masking held secrets out of what the libraries a plugin sends with log.

Those libraries log before any masking of :mod:`~mcp_providers.plugins._masking` sees what they
log: httpx2 each request's URL at INFO (an API key sent in the query with it), httpcore2 each
answer's headers at DEBUG (a credential a service echoes, a ``Set-Cookie``), the SDK's client each
message's body at DEBUG (what an upstream echoed, before the sieve masks it). While a plugin holds
secrets for a service it enters :func:`library_logs_masked`, which masks every secret held, by
every plugin inside it, in each record of :data:`LIBRARY_LOGGERS` and every logger below them, made
before or after (message and traceback; a record factory chained to the process's, see
:class:`_LibraryLogMask` for why); a record, or a part of it, holding no secret is left as it was
made; it is removed when the last plugin leaves.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Final

__all__ = ["LIBRARY_LOGGERS", "library_logs_masked"]

LIBRARY_LOGGERS: Final = ("httpx", "httpx2", "httpcore", "httpcore2", "mcp.client", "mcp.shared", "mcp.os")
"""The loggers (each with every logger below it) of libraries that log URLs, headers or message
bodies of what a plugin sends and receives."""


_LIBRARY_DOTTED: Final = tuple(f"{name}." for name in LIBRARY_LOGGERS)


def _from_library(name: str) -> bool:
    """Whether a logger's name is one of :data:`LIBRARY_LOGGERS` or below one (``httpx2._new``;
    ``httpx2x`` is not)."""
    return name in LIBRARY_LOGGERS or name.startswith(_LIBRARY_DOTTED)


class _LibraryLogMask(logging.Filter):
    """Masks, in a record of a library's logger, every secret the plugins inside
    :func:`library_logs_masked` hold (its message and its traceback; nothing else changes).

    Two places see a record, so that a logger made at any time is covered: a record factory
    chained to the process's (``logging.setLogRecordFactory``: the one public hook every record a
    ``Logger`` makes passes, whatever the logger and however late it was made, e.g. by a module a
    library imports lazily), which masks the record as it is made; and this filter on each library
    logger that exists at an entry, for a record made while a host's factory that does not chain
    replaced ours. A record is masked once (:attr:`done`).
    """

    def __init__(self) -> None:
        super().__init__()
        self.maskers: list[Callable[[str], str]] = []
        self.loggers: list[logging.Logger] = []
        self.done: weakref.WeakSet[logging.LogRecord] = weakref.WeakSet()
        self.factory: Callable[..., logging.LogRecord] | None = None  # ours, while in the chain
        self.below: Callable[..., logging.LogRecord] | None = None  # the factory ours chains to
        self.above: Callable[..., logging.LogRecord] | None = None  # a host's set over ours, when we left

    def masked(self, text: str) -> str:
        for masker in list(self.maskers):
            text = masker(text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask ``record`` where it holds a secret; a part holding none is left as it was made (its
        template and arguments, its exception object: a host's handler may read them)."""
        if record in self.done:
            return True
        try:
            said = record.getMessage()
        except Exception:  # a record whose arguments do not fit its message: its message alone
            said = str(record.msg)
        if (masked := self.masked(said)) != said:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[1] is not None:
            shown = record.exc_text or logging.Formatter().formatException(record.exc_info)
            if (masked := self.masked(shown)) != shown:
                record.exc_text, record.exc_info = masked, None  # a formatter would render it again, unmasked
        if record.stack_info and (masked := self.masked(record.stack_info)) != record.stack_info:
            record.stack_info = masked
        self.done.add(record)
        return True

    def attach(self) -> None:
        """Chain the factory (unless ours is still in the chain: on top, or below the factory a
        host set over it), and the filter onto each library logger there is (a logger's filter
        does not see its children's records: each one)."""
        current = logging.getLogRecordFactory()
        if self.factory is None or current not in (self.factory, self.above):
            self._chain(current)
        names = set(LIBRARY_LOGGERS) | {n for n in list(logging.Logger.manager.loggerDict) if _from_library(n)}
        for name in sorted(names):
            found = logging.getLogger(name)
            if found not in self.loggers:
                found.addFilter(self)
                self.loggers.append(found)

    def _chain(self, below: Callable[..., logging.LogRecord]) -> None:
        def made(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = below(*args, **kwargs)
            if self.maskers and _from_library(record.name):  # any other record: one name check
                self.filter(record)
            return record

        self.factory, self.below, self.above = made, below, None
        logging.setLogRecordFactory(made)

    def detach(self) -> None:
        """Remove the filters, and the factory when it is still the process's. When a host set its
        own on top of ours (chained to it: tearing ours out would drop the host's), ours stays in
        that chain, inert with no masker, and is used again at the next entry if that factory is
        still on top, rather than chained twice."""
        for found in self.loggers:
            found.removeFilter(self)
        self.loggers.clear()
        current = logging.getLogRecordFactory()
        if self.factory is not None and self.below is not None and current is self.factory:
            logging.setLogRecordFactory(self.below)
            self.factory = self.below = None
        else:
            self.above = current


_LIBRARY_LOGS = _LibraryLogMask()


@contextlib.contextmanager
def library_logs_masked(masked: Callable[[str], str]) -> Iterator[None]:
    """While inside, each record of :data:`LIBRARY_LOGGERS` passes ``masked`` (with what every other
    plugin inside passes: ``Secrets.masked``) before any handler sees it, however late its logger
    is made. Nests and overlaps; when the last one leaves the filters go, and the record factory is
    restored unless a host chained its own on top (ours then stays there, changing nothing)."""
    _LIBRARY_LOGS.maskers.append(masked)
    _LIBRARY_LOGS.attach()
    try:
        yield
    finally:
        _LIBRARY_LOGS.maskers.remove(masked)
        if not _LIBRARY_LOGS.maskers:
            _LIBRARY_LOGS.detach()
