"""The server's own log on stderr: its level, and lines with a UTC timestamp, as text or JSON.

``serve`` takes the level from ``--log-level``, else ``[server] log_level``, else ``warning``; the
format from ``--log-format``, else ``[server] log_format``, else ``text``:

- ``text``: ``2026-12-03T18:06:03.123Z WARNING mcp_providers.cluster: cluster backend lost (...)``;
- ``json``: one object a line, ``{"time": ..., "level": ..., "logger": ..., "message": ...}``, with
  ``"exception"`` (the traceback's text) when one is logged: for a log collector to parse.

The loggers of reloads (``mcp_providers.reload``) keep ``info`` whatever the level: what a reload
did is always said.

``check`` and the other commands that print a report (:func:`for_report`) log ``warning: ...``
lines without tracebacks (``check`` also without the records of problems its report prints); their
``--verbose`` brings the timestamped lines and the tracebacks back.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import weakref
from typing import Any, Literal

LEVELS = ("debug", "info", "warning", "error")
_OURS: weakref.WeakSet[logging.Handler] = weakref.WeakSet()  # the handlers configure() added
LogLevel = Literal["debug", "info", "warning", "error"]
LogFormat = Literal["text", "json"]


def _timestamp(record: logging.LogRecord) -> str:
    """ISO 8601 in UTC, to the millisecond (``2026-12-03T18:06:03.123Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


def _traceback(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    """The record's traceback: the text a filter left (a masked one, its ``exc_info`` dropped), else
    its exception formatted; ``""`` without one."""
    if record.exc_text:
        return record.exc_text
    return formatter.formatException(record.exc_info) if record.exc_info else ""


class TextFormatter(logging.Formatter):
    """``<UTC time> <LEVEL> <logger>: <message>`` (and the traceback, when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname} {record.name}: {record.getMessage()}"
        if traceback := _traceback(self, record):
            line += "\n" + traceback
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time``, ``level``, ``logger``, ``message`` and, with a traceback,
    ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"time": _timestamp(record), "level": record.levelname, "logger": record.name,
                                 "message": record.getMessage()}  # fmt: skip
        if traceback := _traceback(self, record):
            entry["exception"] = traceback
        return json.dumps(entry, ensure_ascii=False)


REPORTED = "mcp_providers_reported"
"""Name of a log record's attribute (``extra={REPORTED: True}``) saying that what it logs is kept
where a report prints it (a provider's failure to start is in ``startup_failures``)."""


class ReportFormatter(logging.Formatter):
    """``<level>: <message>`` and, with a traceback, only its last line (``(KeyError: 'x')``)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line += f" ({type(exc).__name__}: {str(exc)[:300]})"
        return line


def _unreported(record: logging.LogRecord) -> bool:
    return not getattr(record, REPORTED, False)


def for_report(verbose: bool, *, prints_failures: bool = False) -> None:
    """The log of a command printing a report (``check``, ``read``...): ``warning`` and above, one
    line each, and, when the report ``prints_failures`` of providers itself (``check``), without
    those records; with ``verbose``, :func:`configure`'s lines, tracebacks included."""
    configure("warning", "text")
    if verbose:
        return
    for handler in logging.getLogger().handlers:
        if handler in _OURS:
            handler.setFormatter(ReportFormatter())
            if prints_failures:
                handler.addFilter(_unreported)


def configure(level: str = "warning", fmt: str = "text") -> None:
    """Send the root logger's records of ``level`` and above to stderr in ``fmt``; replaces what an
    earlier call set (the config, read later, may change what the command line left open).

    :raises ValueError: ``level`` or ``fmt`` is not one of those above.
    """
    if level not in LEVELS:
        raise ValueError(f"log level {level!r}: use one of {', '.join(LEVELS)}")
    if fmt not in ("text", "json"):
        raise ValueError(f"log format {fmt!r}: use text or json")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h in _OURS]:
        root.removeHandler(old)
    _OURS.add(handler)
    root.addHandler(handler)
    root.setLevel(level.upper())
