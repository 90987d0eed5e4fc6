"""Audit sinks that ship lines off the host: syslog, an HTTP webhook and an OTLP logs endpoint (``[server.audit]``).

Each sink has an :class:`Outbox`, a bounded in-memory queue the request path only appends to
(never waiting, never failing), and a task that drains it in the background
(:meth:`SyslogSink.run`, :meth:`WebhookSink.run`), started by the runtime. A line is dropped, and
counted per sink in :attr:`Outbox.dropped`, when it finds the queue full, when its sink gave up
(after its retries, once the queue is full too: a destination that is down keeps its lines while
there is room; or at once for an answer not worth retrying), or when it is still queued as the
server stops; drops are logged as a warning
at most once per ``drop_log_seconds``.

Syslog messages follow RFC 5424 (section 6: ``<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID
SD MSG``, MSGID ``audit``, no structured data, MSG the line's JSON, ASCII only); over TCP they are
framed by octet counting (RFC 6587 section 3.4.1: ``LENGTH SP MESSAGE``). A webhook batch is a
JSON array of lines POSTed with ``Idempotency-Key`` (one per batch, kept across its retries) and
``X-Audit-Sequence`` (1, 2, ... per sink and process), resent only after an attempt without a
2xx answer.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import select
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import httpx2

from mcp_providers.config import SYSLOG_FACILITIES, OtlpLogsSinkSettings, SyslogSinkSettings, WebhookSinkSettings

if TYPE_CHECKING:
    import tenacity

log = logging.getLogger("mcp_providers.audit")

ShippedSettings = SyslogSinkSettings | WebhookSinkSettings | OtlpLogsSinkSettings
"""Settings of a sink fed from an :class:`Outbox`: ``retries``, ``retry_seconds``, ``max_retry_seconds``."""

Entry = tuple[str, str, str]
"""One queued audit line: its ``time``, its ``decision`` and its JSON text (no newline)."""

Connection = anyio.abc.ByteStream | anyio.abc.ConnectedUDPSocket | anyio.abc.ConnectedUNIXDatagramSocket
"""Where a syslog sink sends: each has ``send(bytes)`` and ``aclose()``."""

SEVERITY = {"allowed": 6, "denied": 5, "error": 4}
"""RFC 5424 severity per decision: informational, notice, warning."""


class Outbox:
    """A sink's bounded queue of :data:`Entry`, with its drop count.

    :param size: most entries held; :meth:`put` drops (and counts) the one that finds it full.
    :param drop_log_seconds: least time between two drop warnings, in seconds.
    """

    def __init__(self, name: str, size: int, drop_log_seconds: float) -> None:
        self.name, self._size, self._interval = name, size, drop_log_seconds
        self._entries: deque[Entry] = deque()
        self._wake: anyio.Event | None = None
        self.dropped = 0
        """Entries dropped so far (queue full, retries exhausted, unsent at stop)."""
        self.in_flight = 0
        """Entries taken by the sink and not yet delivered or dropped."""
        self._unlogged, self._logged_at = 0, -math.inf

    def put(self, entry: Entry) -> None:
        """Queue ``entry``, or drop it if the queue is full; never waits."""
        if len(self._entries) >= self._size:
            self.drop(1, "its queue is full")
            return
        self._entries.append(entry)
        if self._wake is not None:
            self._wake.set()

    @property
    def full(self) -> bool:
        """Whether the next :meth:`put` would be dropped: a sink retrying a failed delivery goes on
        until then (a line is kept while there is room, and counted once it cannot be)."""
        return len(self._entries) >= self._size

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being sent."""
        return not self._entries and self.in_flight == 0

    def drop(self, count: int, why: str) -> None:
        """Count ``count`` entries dropped; warn if no warning was logged in the last interval."""
        self.dropped += count
        self._unlogged += count
        self.report(why)

    def report(self, why: str = "its destination is down or slow") -> None:
        """Log the drops not yet logged, unless a warning went out less than an interval ago."""
        now = time.monotonic()
        if self._unlogged and now - self._logged_at >= self._interval:
            log.warning("audit sink %r dropped %d lines (%s); %d dropped since start",
                        self.name, self._unlogged, why, self.dropped)  # fmt: skip
            self._unlogged, self._logged_at = 0, now

    async def take(self, most: int, linger: float = 0.0) -> list[Entry]:
        """Wait for an entry, then up to ``linger`` seconds more for ``most``; returns 1 to ``most``
        entries, counted :attr:`in_flight` until :meth:`done` or :meth:`drop`."""
        while not self._entries:
            await self._wait()
        if linger > 0 and len(self._entries) < most:
            with anyio.move_on_after(linger):
                while len(self._entries) < most:
                    await self._wait()
        taken = [self._entries.popleft() for _ in range(min(most, len(self._entries)))]
        self.in_flight += len(taken)
        return taken

    def done(self, count: int) -> None:
        """``count`` taken entries were delivered (or dropped: call :meth:`drop` too)."""
        self.in_flight -= count

    def abandon(self) -> None:
        """The server stops: whatever is still queued or in flight is dropped and counted."""
        left = len(self._entries) + self.in_flight
        self._entries.clear()
        self.in_flight = 0
        if left:
            self._logged_at = -math.inf  # the last word: always logged
            self.drop(left, "the server stopped before they were sent")

    def lose_in_flight(self, why: str) -> None:
        """The sink failed with entries taken: they are dropped and counted."""
        lost, self.in_flight = self.in_flight, 0
        if lost:
            self.drop(lost, why)

    async def _wait(self) -> None:
        self._wake = anyio.Event()
        try:
            await self._wake.wait()
        finally:
            self._wake = None


def retrying(settings: ShippedSettings, outbox: Outbox, *, error: type[Exception],
             again: Callable[[Any], bool] = lambda _: False) -> tenacity.AsyncRetrying:  # fmt: skip
    """The attempts of one delivery, through tenacity.

    An attempt that raises ``error``, or returns a value ``again`` holds true of, is tried again
    after ``retry_seconds`` doubled for each attempt so far (at most ``max_retry_seconds``), at
    least ``retries`` times, and more while ``outbox`` has room (a destination down longer than
    the retries last loses nothing the queue can hold). When they run out the call returns
    ``None``; any other exception is raised at once.
    """
    import tenacity  # at the first delivery: serve's start-up does not pay for it

    return tenacity.AsyncRetrying(
        stop=lambda state: state.attempt_number > settings.retries and outbox.full,
        wait=tenacity.wait_exponential(multiplier=settings.retry_seconds, max=settings.max_retry_seconds),
        retry=tenacity.retry_if_exception_type(error) | tenacity.retry_if_result(again),
        sleep=anyio.sleep,
        retry_error_callback=lambda state: None,
    )


class SyslogSink:
    """Sends each entry as an RFC 5424 message over UDP, TCP (octet counting) or a Unix socket."""

    def __init__(self, settings: SyslogSinkSettings, outbox: Outbox) -> None:
        self.settings, self.outbox = settings, outbox
        host = "".join(c for c in socket.gethostname() if "!" <= c <= "~")[:255] or "-"  # RFC 5424 PRINTUSASCII
        self._after_time = f" {host} {settings.app_name} {os.getpid()} audit - "
        self._facility = SYSLOG_FACILITIES[settings.facility]
        self._connection: Connection | None = None

    def message(self, entry: Entry) -> bytes:
        """The RFC 5424 message for ``entry`` (framed for TCP: ``LENGTH SP MESSAGE``)."""
        when, decision, text = entry
        pri = self._facility * 8 + SEVERITY.get(decision, 6)
        data = f"<{pri}>1 {when}{self._after_time}{text}".encode("ascii")
        return b"%d %s" % (len(data), data) if self.settings.transport == "tcp" else data

    async def run(self) -> None:
        """Drain the outbox until cancelled."""
        try:
            while True:
                for entry in await self.outbox.take(100):
                    await self._deliver(self.message(entry))
                    self.outbox.done(1)
                self.outbox.report()
        finally:
            await self._close()

    async def _deliver(self, data: bytes) -> None:
        s = self.settings
        sent: bool | None = await retrying(s, self.outbox, error=OSError)(self._send, data)  # None: gave up
        if not sent:
            self.outbox.drop(1, f"sending failed {s.retries + 1} times or more, and its queue is full")

    async def _send(self, data: bytes) -> bool:
        """One attempt: connect when not connected (or when the server closed the connection), send;
        a failure closes the connection and is raised as an ``OSError`` (retried)."""
        try:
            if self._connection is not None and closed_by_peer(self._connection):
                await self._close()  # a line sent now would be lost without an error: connect again
            if self._connection is None:
                self._connection = await self._connect()
            await self._connection.send(data)
            return True
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            log.debug("audit sink %r: send failed: %s", self.settings.name, type(exc).__name__)
            await self._close()
            if isinstance(exc, OSError):
                raise
            raise ConnectionResetError(f"the connection broke ({type(exc).__name__})") from None  # retried too

    async def _connect(self) -> Connection:
        s = self.settings
        if s.transport == "tcp":
            return await anyio.connect_tcp(s.host, s.port)
        if s.transport == "udp":
            return await anyio.create_connected_udp_socket(s.host, s.port)
        return await anyio.create_connected_unix_datagram_socket(str(s.socket))

    async def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with anyio.CancelScope(shield=True):
                await connection.aclose()


def closed_by_peer(connection: Connection) -> bool:
    """Whether the server closed (or reset) this TCP connection. A syslog server never writes to
    it, so anything to read means its end: a message sent into a connection the server has closed
    is lost without an error (the reset comes back after it), as across an rsyslogd restart."""
    raw = connection.extra(anyio.abc.SocketAttribute.raw_socket, None)
    if raw is None or raw.type != socket.SOCK_STREAM:
        return False
    fd = raw.fileno()
    if fd < 0:  # the event loop already closed it (it saw the reset)
        return True
    poller = select.poll()  # the loop's socket wrapper has no recv: ask the descriptor, without waiting
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))  # readable (its end, or a reset), or hung up


class WebhookSink:
    """POSTs batches of entries as JSON arrays, retried with exponential back-off."""

    kind = "webhook"

    def __init__(self, settings: WebhookSinkSettings, outbox: Outbox) -> None:
        self.settings, self.outbox = settings, outbox
        self.sequence = 0
        """The last batch's ``X-Audit-Sequence``."""
        self._headers = {"Content-Type": "application/json"}
        token = os.environ.get(settings.token_env) if settings.token_env else None
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        elif settings.token_env:
            log.warning("audit sink %r: $%s is unset or empty; batches are sent without a bearer token",
                        settings.name, settings.token_env)  # fmt: skip

    async def run(self) -> None:
        """Drain the outbox in batches until cancelled."""
        s = self.settings
        async with httpx2.AsyncClient(timeout=s.timeout_seconds, follow_redirects=False) as http:
            while True:
                batch = await self.outbox.take(s.batch_size, s.batch_seconds)
                self.sequence += 1
                headers = {**self._headers, "Idempotency-Key": uuid.uuid4().hex, "X-Audit-Sequence": str(self.sequence)}
                if not await self._deliver(http, self.body(batch), headers):
                    self.outbox.drop(len(batch), f"the {self.kind} gave no 2xx answer to {s.retries + 1} attempts "
                                     "or more while its queue filled, or refused the batch")  # fmt: skip
                self.outbox.done(len(batch))
                self.outbox.report()

    async def _deliver(self, http: httpx2.AsyncClient, body: bytes, headers: dict[str, str]) -> bool:
        """Whether an attempt got a 2xx answer; a batch is resent only after one that did not."""

        def again(status: int) -> bool:
            return not 200 <= status < 300 and self.retryable(status)

        status: int | None = await retrying(self.settings, self.outbox, error=httpx2.HTTPError, again=again)(
            self._post, http, body, headers
        )  # None: gave up
        return status is not None and 200 <= status < 300

    async def _post(self, http: httpx2.AsyncClient, body: bytes, headers: dict[str, str]) -> int:
        """One attempt: the answer's status."""
        s = self.settings
        try:
            answer = await http.post(str(s.url), content=body, headers=headers)
        except httpx2.HTTPError as exc:  # never the URL's query or the token: only the kind
            log.debug("audit sink %r: POST failed: %s", s.name, type(exc).__name__)
            raise
        if not 200 <= answer.status_code < 300:
            log.debug("audit sink %r: POST answered %d", s.name, answer.status_code)
        return answer.status_code

    def body(self, batch: list[Entry]) -> bytes:
        """A batch as the JSON array of its lines."""
        return ("[" + ",".join(text for _, _, text in batch) + "]").encode("ascii")

    def retryable(self, status: int) -> bool:
        """Whether an answer with ``status`` is worth another attempt (a webhook: any non-2xx)."""
        return True


OTLP_SEVERITY = {"allowed": (9, "INFO"), "denied": (13, "WARN"), "error": (17, "ERROR")}
"""OpenTelemetry severity number and text per decision (the logs data model's INFO, WARN, ERROR)."""
OTLP_RETRYABLE = frozenset({429, 502, 503, 504})
"""The HTTP answers OTLP/HTTP says to retry (OTLP specification, "Retryable Response Codes")."""


class OtlpLogsSink(WebhookSink):
    """POSTs batches to an OTLP/HTTP logs endpoint as ``ExportLogsServiceRequest`` JSON."""

    kind = "OTLP logs endpoint"

    def body(self, batch: list[Entry]) -> bytes:
        settings = self.settings
        service = settings.service_name if isinstance(settings, OtlpLogsSinkSettings) else "mcp-providers"
        records = [_log_record(when, decision, text) for when, decision, text in batch]
        request = {"resourceLogs": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
            "scopeLogs": [{"scope": {"name": "mcp_providers.audit"}, "logRecords": records}],
        }]}  # fmt: skip
        return json.dumps(request, ensure_ascii=True, separators=(",", ":")).encode("ascii")

    def retryable(self, status: int) -> bool:
        return status in OTLP_RETRYABLE


_TRACED = re.compile(r',"trace_id":"([0-9a-f]{32})","span_id":"([0-9a-f]{16})"}$')
"""How a traced line ends (the pipeline adds the ids last); quotes inside values are escaped, so
only the line's own keys can match."""


def _log_record(when: str, decision: str, text: str) -> dict[str, object]:
    number, severity = OTLP_SEVERITY.get(decision, (9, "INFO"))
    record: dict[str, object] = {
        "timeUnixNano": str(_unix_nanos(when)),
        "severityNumber": number,
        "severityText": severity,
        "body": {"stringValue": text},
        "attributes": [{"key": "event.name", "value": {"stringValue": "mcp_providers.audit"}},
                       {"key": "decision", "value": {"stringValue": decision}}],
    }  # fmt: skip
    traced = _TRACED.search(text)
    if traced:  # OTLP/JSON gives both ids as hex strings: a backend joins the record to its trace
        record["traceId"], record["spanId"] = traced.groups()
    return record


def _unix_nanos(when: str) -> int:
    """The line's ISO 8601 ``time`` in nanoseconds since the epoch (now, if it does not parse)."""
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp() * 1_000_000_000)
    except ValueError:
        return time.time_ns()
