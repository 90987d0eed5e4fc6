"""The audit sink: exactly one JSON line per request the server answers, whatever its outcome.

The pipeline writes the line when the request ends. It holds the time, the actor, the subject,
the JSON-RPC method as ``operation``, the authorization ``action`` that was refused (on denials),
the target, the decision (``allowed``, ``denied`` or ``error``), a short reason, a count for
lists, and the custody receipt for reads, tool calls and prompts. It never holds content, tool
argument values or secrets.

::

    {"time": "2026-11-30T08:00:00.000Z", "actor": "application", "subject": "local",
     "operation": "resources/read", "target": "documcp://ssgs/hugo", "decision": "allowed",
     "receipt": {...}}
    {"time": "...", "actor": "model", "subject": "alice", "operation": "tools/call",
     "action": "read", "target": "servicenow://prod/incident", "decision": "denied", "reason": "..."}

Lines are written with every character outside printable ASCII escaped, so U+2028, U+2029 and
U+0085 inside a target cannot split a record for a reader using ``str.splitlines()``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import IO, Any

from mcp_providers._serve.steps.custody import now_utc


class AuditLog:
    """Appends audit lines to a file; a no-op when no path is configured."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: IO[str] | None = None
        self._lock = threading.Lock()
        self._opened = 0

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def open(self) -> None:
        """Open the file (nested opens are counted; the last :meth:`close` closes it)."""
        with self._lock:
            self._opened += 1
            if self.path is not None and self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8", buffering=1)

    def close(self) -> None:
        with self._lock:
            self._opened = max(0, self._opened - 1)
            if self._opened == 0 and self._file is not None:
                self._file.close()
                self._file = None

    def write(self, line: dict[str, Any]) -> None:
        """Append ``line`` (``time`` is added first)."""
        if self._file is None:
            return
        text = json.dumps({"time": now_utc(), **line}, ensure_ascii=True, separators=(",", ":")) + "\n"
        with self._lock:
            if self._file is not None:
                self._file.write(text)
