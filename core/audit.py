"""The audit sink: one JSON line per list, read, call and denial.

A line holds the time, the actor, the subject, the operation, the target, the decision and (for
reads and calls) the receipt. It never holds content, tool argument values or secrets.

::

    {"time": "2026-11-30T08:00:00.000Z", "actor": "application", "subject": "local",
     "operation": "resources/read", "target": "documcp://ssgs/hugo", "decision": "allowed",
     "receipt": {...}}
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import IO, Any

from mcp_providers.custody import now_utc

__all__ = ["AuditLog"]


class AuditLog:
    """Appends audit lines to a file; a no-op when no path is configured."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: IO[str] | None = None
        self._lock = threading.Lock()

    def open(self) -> None:
        if self.path is not None and self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8", buffering=1)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def record(
        self,
        *,
        actor: str,
        subject: str,
        operation: str,
        target: str,
        decision: str = "allowed",
        reason: str | None = None,
        receipt: dict[str, Any] | None = None,
        count: int | None = None,
    ) -> None:
        """Append one line (lists give ``count``, the number of items returned)."""
        if self._file is None:
            return
        line: dict[str, Any] = {
            "time": now_utc(),
            "actor": actor,
            "subject": subject,
            "operation": operation,
            "target": target,
            "decision": decision,
        }
        if reason:
            line["reason"] = reason
        if count is not None:
            line["count"] = count
        if receipt is not None:
            line["receipt"] = receipt
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            if self._file is not None:
                self._file.write(text)
