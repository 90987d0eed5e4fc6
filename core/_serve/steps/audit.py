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

Where lines go (``[server.audit]``, :meth:`ServerSettings.audit_sinks
<mcp_providers.config.ServerSettings.audit_sinks>`): files are appended to as the request ends;
syslog and webhook sinks (:mod:`.sinks`) are queued for and shipped by :meth:`AuditLog.ship`,
which the runtime runs in the background, so they never hold a request up.

Every denied line is also kept, shortened, in :attr:`AuditLog.recent_denials` (with or without
sinks) for the ``/status`` page: at most :data:`PER_CALLER` per caller (issuer and subject; every
unauthenticated refusal is one caller), so that no one caller's flood, least of all an anonymous
one, pushes what others were refused off the page (:class:`RecentDenials`).
"""

from __future__ import annotations

import collections
import heapq
import itertools
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.abc

from mcp_providers._serve.steps.custody import now_utc
from mcp_providers.config import FileSinkSettings, OtlpLogsSinkSettings, SyslogSinkSettings, WebhookSinkSettings

if TYPE_CHECKING:
    import tenacity

    from mcp_providers._serve.steps.sinks import SyslogSink, WebhookSink

log = logging.getLogger("mcp_providers.audit")

RECENT_DENIALS = 50
"""How many denials :attr:`AuditLog.recent_denials` shows (the newest of those kept)."""
PER_CALLER = 10
"""How many denials it keeps per caller (issuer, subject): the newest."""
CALLERS = 100
"""How many callers it keeps denials of (the one refused least recently is forgotten first)."""
SHORT = 200
"""Longest target or reason kept there, in characters (longer ones end in ``…``)."""

FLUSH_SECONDS = 5.0
"""How long a stopping server waits for the shipped sinks to send what is queued, in seconds."""


class AuditLog:
    """Writes each audit line to every sink; a no-op without sinks.

    :param sinks: the sinks (``ServerSettings.audit_sinks()``), or a file path (one file sink).
    :param drop_log_seconds: least time between two warnings of one sink's drops.
    """

    def __init__(
        self,
        sinks: Sequence[FileSinkSettings | SyslogSinkSettings | WebhookSinkSettings] | Path | None = (),
        drop_log_seconds: float = 30.0,
    ) -> None:
        if sinks is None or isinstance(sinks, Path):
            sinks = [] if sinks is None else [FileSinkSettings(type="file", path=sinks)]
        self._files = [_File(s.path) for s in sinks if isinstance(s, FileSinkSettings)]
        self.shipped: list[SyslogSink | WebhookSink] = []
        """The syslog and webhook sinks, each with its :class:`~.sinks.Outbox`."""
        shipped = [s for s in sinks if isinstance(s, SyslogSinkSettings | WebhookSinkSettings)]
        if shipped:  # the sinks' module only with one configured: not on a start-up without (issue 43)
            from mcp_providers._serve.steps.sinks import OtlpLogsSink, Outbox, SyslogSink, WebhookSink
        for s in shipped:
            if isinstance(s, SyslogSinkSettings):
                self.shipped.append(SyslogSink(s, Outbox(s.name, s.queue_size, drop_log_seconds)))
            elif isinstance(s, OtlpLogsSinkSettings):  # before its base class, WebhookSinkSettings
                self.shipped.append(OtlpLogsSink(s, Outbox(s.name, s.queue_size, drop_log_seconds)))
            elif isinstance(s, WebhookSinkSettings):
                self.shipped.append(WebhookSink(s, Outbox(s.name, s.queue_size, drop_log_seconds)))
        self._outboxes = [sink.outbox for sink in self.shipped]
        self.recent_denials = RecentDenials()
        """The newest denials, oldest first: ``time``, ``operation``, ``action``, ``target``,
        ``subject``, ``issuer``, ``reason`` (targets and reasons cut at :data:`SHORT`)."""

    @property
    def enabled(self) -> bool:
        return bool(self._files or self.shipped)

    def dropped(self) -> dict[str, int]:
        """Sink name -> lines it dropped since start (the ``mcp_providers_audit_dropped`` metric)."""
        return {box.name: box.dropped for box in self._outboxes}

    def open(self) -> None:
        """Open the files (nested opens are counted; the last :meth:`close` closes them)."""
        for f in self._files:
            f.open()

    def close(self) -> None:
        for f in self._files:
            f.close()

    def write(self, line: dict[str, Any]) -> None:
        """Write ``line`` (``time`` is added first) to the files and queue it for the shipped sinks;
        keep it in :attr:`recent_denials` when its ``decision`` is ``denied`` (even without sinks)."""
        denied = line.get("decision") == "denied"
        if not self.enabled and not denied:
            return
        when = now_utc()
        if denied:
            self.recent_denials.append(_denial(when, line))
        if not self.enabled:
            return
        text = json.dumps({"time": when, **line}, ensure_ascii=True, separators=(",", ":"))
        for f in self._files:
            f.write(text + "\n")
        entry = (when, str(line.get("decision", "")), text)
        for box in self._outboxes:
            box.put(entry)

    async def ship(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run every shipped sink until cancelled (the runtime runs it in its task group)."""
        async with anyio.create_task_group() as tasks:
            for sink in self.shipped:
                tasks.start_soon(_kept_running, sink)
            task_status.started()

    async def flush(self) -> None:
        """Wait (shielded, at most :data:`FLUSH_SECONDS`) for the shipped sinks to send what is
        queued; what is left then is dropped and counted. Called as the runtime stops."""
        if not self._outboxes:
            return
        with anyio.move_on_after(FLUSH_SECONDS, shield=True):
            while not all(box.idle for box in self._outboxes):
                await anyio.sleep(0.02)
        for box in self._outboxes:
            box.abandon()


class RecentDenials:
    """The denials ``/status`` lists, kept per caller (round 4 item 7).

    One ring for everything let 50 unauthenticated ``GET /status.json`` push every real denial
    off the page. Here each caller (``issuer``, ``subject``; all unauthenticated refusals share
    one) keeps its newest :data:`PER_CALLER`, at most :data:`CALLERS` callers are kept (the one
    refused least recently is dropped first), and iterating gives the newest
    :data:`RECENT_DENIALS` of all, oldest first. Bounded: ``PER_CALLER * CALLERS`` entries.
    """

    def __init__(self) -> None:
        self._by_caller: collections.OrderedDict[tuple[str | None, str | None], collections.deque[Any]] = (
            collections.OrderedDict()
        )
        self._seq = 0

    def append(self, fact: dict[str, str | None]) -> None:
        """Keep ``fact`` (a :func:`_denial`) under its caller."""
        key = (fact.get("issuer"), fact.get("subject"))
        kept = self._by_caller.pop(key, None)
        if kept is None:
            kept = collections.deque(maxlen=PER_CALLER)
            if len(self._by_caller) >= CALLERS:
                self._by_caller.popitem(last=False)
        self._by_caller[key] = kept  # now the most recently refused
        self._seq += 1
        kept.append((self._seq, fact))

    def __iter__(self) -> Iterator[dict[str, str | None]]:
        newest = heapq.nlargest(RECENT_DENIALS, itertools.chain.from_iterable(self._by_caller.values()),
                                key=lambda entry: entry[0])  # fmt: skip
        return (fact for _, fact in reversed(newest))

    def __len__(self) -> int:
        return min(RECENT_DENIALS, sum(len(kept) for kept in self._by_caller.values()))


def _denial(when: str, line: dict[str, Any]) -> dict[str, str | None]:
    """The facts of a denied line kept for ``/status``: never content, arguments or secrets (the
    line holds none), targets and reasons shortened."""
    fact: dict[str, str | None] = {"time": when}
    for key in ("operation", "action", "target", "subject", "issuer", "reason"):
        value = line.get(key)
        fact[key] = None if value is None else _short(str(value))
    return fact


def _short(text: str) -> str:
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


RESTART_SECONDS = 1.0
"""How long a shipped sink that failed unexpectedly waits before it starts again, in seconds."""


async def _kept_running(sink: SyslogSink | WebhookSink) -> None:
    """Run ``sink``; an unexpected failure in it is logged (its kind only: a message may quote the
    URL) and costs the lines it had taken, never the runtime's task group, and it starts again
    after :data:`RESTART_SECONDS` (tenacity, as every retry in the project)."""
    import tenacity  # when a sink ships: serve's start-up does not pay for it

    def lost(state: tenacity.RetryCallState) -> None:
        kind = type(state.outcome.exception()).__name__ if state.outcome is not None else "?"
        log.error("audit sink %r failed (%s); starting it again in %s s", sink.outbox.name, kind, RESTART_SECONDS)
        sink.outbox.lose_in_flight(f"the sink failed: {kind}")

    await tenacity.AsyncRetrying(retry=tenacity.retry_if_exception_type(Exception), before_sleep=lost,
                                 wait=tenacity.wait_fixed(RESTART_SECONDS), sleep=anyio.sleep)(sink.run)  # fmt: skip


class _File:
    """One JSON-lines file, line buffered."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None
        self._lock = threading.Lock()
        self._opened = 0

    def open(self) -> None:
        with self._lock:
            self._opened += 1
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8", buffering=1)

    def close(self) -> None:
        with self._lock:
            self._opened = max(0, self._opened - 1)
            if self._opened == 0 and self._file is not None:
                self._file.close()
                self._file = None

    def write(self, text: str) -> None:
        with self._lock:
            if self._file is not None:
                self._file.write(text)
