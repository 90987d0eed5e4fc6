"""The upstream sessions of an ``on_behalf_of`` upstream: one MCP session per caller.

A caller's requests go over a session of their own, opened with their exchanged credential on
their first request and kept under the broker's cache key for that caller's token
(:class:`~mcp_providers.credentials.CacheKey`: two callers never share one, nor two tokens of one
subject with other scopes, OAuth client, groups or selected claims). A session unused for
``idle_seconds`` is closed; at most ``max_sessions`` are open, the least recently used idle one
closed to make room. A session whose connection fails is dropped; the caller's next request
opens another.

Each session lives in a task of the pool's task group (an SDK ``Client`` must be entered and
left by one task), started in the context the pool was started in, not the request's: the
session outlives the request, and must not keep its side-effect scope or credential scope.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math
from collections.abc import AsyncIterator, Callable, Hashable
from typing import Any

import anyio
import anyio.abc
from mcp import Client
from mcp.client.session import MessageHandlerFnT

from mcp_providers.credentials import Credential
from mcp_providers.errors import UpstreamError
from mcp_providers.plugins.upstream.connect import reason
from mcp_providers.plugins.upstream.oauth import BrokeredAuth

__all__ = ["QUIET_PARSE_FAILURES", "Session", "Sessions", "unparsed"]

log = logging.getLogger(__name__)
Opener = Callable[[BrokeredAuth, MessageHandlerFnT], Client]
"""``open_client(auth, on_message) -> Client``: an unentered SDK client presenting ``auth``."""


def unparsed(message: object) -> bool:
    """Whether a transport's ``message`` is a line or event that failed to parse (the SDK hands
    the parse error itself, a ``ValueError``: pydantic's ``ValidationError``, a JSON decode error),
    as opposed to a transport that failed: one bad message is no lost connection."""
    return isinstance(message, ValueError)


class _QuietParseFailures(logging.Filter):
    """Drops the SDK's own record of a message it could not parse (an ERROR with a traceback):
    the link warns once per kind instead, naming the upstream (:func:`unparsed`)."""

    SAID = ("Failed to parse JSONRPC message", "Error parsing SSE message")

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith(self.SAID))


QUIET_PARSE_FAILURES = _QuietParseFailures()


class Session:
    """One caller's open upstream session (its ``client`` is ``None`` until open, and after)."""

    def __init__(self, credential: Credential, on_rejected: Callable[[Credential], None] | None = None) -> None:
        self.auth = BrokeredAuth(credential, on_rejected)
        self.client: Client | None = None
        self.error: str | None = None
        self.ready = anyio.Event()
        self.done = anyio.Event()
        self.last_used = anyio.current_time()
        self.in_use = 0

    def close(self) -> None:
        """Ask the session's task to leave the session (the connection is closed)."""
        self.done.set()


class Sessions:
    """The per-caller sessions of one upstream.

    :param who: how messages name the upstream.
    :param open_client: ``open_client(auth, on_message)``: an unentered SDK ``Client`` presenting
        ``auth`` and handing its messages to ``on_message``.
    :param idle_seconds: a session unused this long is closed.
    :param max_sessions: most sessions open at once.
    :param open_timeout: seconds a session may take to open (the upstream's ``read_timeout``).
    :param on_rejected: told of each credential the upstream answered 401 to.
    """

    def __init__(
        self,
        who: str,
        open_client: Opener,
        *,
        idle_seconds: float,
        max_sessions: int,
        open_timeout: float,
        on_rejected: Callable[[Credential], None] | None = None,
        masked: Callable[[str], str] = str,
    ) -> None:
        self.on_rejected = on_rejected
        self._masked = masked  # the link's secrets out of what the upstream says (connect.reason)
        self.who, self._open = who, open_client
        self.idle_seconds, self.max_sessions, self.open_timeout = idle_seconds, max_sessions, open_timeout
        self._sessions: dict[Hashable, Session] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._context: contextvars.Context | None = None
        self.opened = 0
        """Sessions opened so far (for tests and diagnostics)."""

    def __len__(self) -> int:
        return len(self._sessions)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hold the sessions' task group (and its idle sweep); every session closes on exit."""
        self._context = contextvars.copy_context()
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._sweep)
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()
        self._sessions.clear()

    @contextlib.asynccontextmanager
    async def session(self, key: Hashable, credential: Credential) -> AsyncIterator[Session]:
        """The open session kept under ``key`` (opened now with ``credential`` if there is none),
        presenting ``credential`` from now on.

        :raises UpstreamError: the pool is not running, is full of busy sessions, or the session
            could not be opened (the message names the upstream).
        """
        found = self._sessions.get(key)
        if found is None:
            found = self._start(key, credential)
        found.in_use += 1
        try:
            with anyio.move_on_after(self.open_timeout):
                await found.ready.wait()
            if found.client is None:
                why = found.error or f"no handshake within {self.open_timeout} s"
                raise UpstreamError(f"{self.who}: a session for this caller could not be opened: {why}")
            found.auth.credential = credential
            found.last_used = anyio.current_time()
            yield found
        finally:
            found.in_use -= 1
            found.last_used = anyio.current_time()

    def drop(self, key: Hashable, session: Session) -> None:
        """Close ``session`` (its connection failed); the caller's next request opens another."""
        if self._sessions.get(key) is session:
            del self._sessions[key]
        session.close()

    def _start(self, key: Hashable, credential: Credential) -> Session:
        if self._group is None or self._context is None:
            raise UpstreamError(f"{self.who} is not being served (its provider has not started)")
        if len(self._sessions) >= self.max_sessions:
            idle = [(s.last_used, k) for k, s in self._sessions.items() if s.in_use == 0]
            if not idle:
                raise UpstreamError(
                    f"{self.who}: {self.max_sessions} callers' sessions are open and busy (max_sessions); try again"
                )
            oldest = min(idle, key=lambda pair: pair[0])[1]
            self.drop(oldest, self._sessions[oldest])
        made = self._sessions[key] = Session(credential, self.on_rejected)
        # the pool's context, not the request's: the session outlives the request
        self._context.run(self._group.start_soon, self._hold, key, made)
        return made

    async def _hold(self, key: Hashable, session: Session) -> None:
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.open_timeout) as opening:
                async with self._open(session.auth, lambda message: self._message(key, session, message)) as c:
                    opening.deadline = math.inf
                    session.client = c
                    self.opened += 1
                    session.ready.set()
                    await session.done.wait()
            if opening.cancelled_caught:
                session.error = f"no handshake within {self.open_timeout} s"
        except Exception as exc:
            session.error = reason(exc, self._masked)
            log.warning("%s: a caller's session failed: %s", self.who, session.error)
        finally:
            session.client = None
            session.ready.set()
            if self._sessions.get(key) is session:
                del self._sessions[key]

    async def _message(self, key: Hashable, session: Session, message: Any) -> None:
        """A transport failure ends the session (a message that failed to parse does not); the
        upstream's notifications reach the pooled connection too, which relays them."""
        if unparsed(message):
            said = reason(message, self._masked)
            log.debug("%s: a caller's session got a message that could not be parsed: %s", self.who, said)
        elif isinstance(message, Exception):
            log.warning("%s: a caller's session lost its connection: %s", self.who, reason(message, self._masked))
            self.drop(key, session)

    async def _sweep(self) -> None:
        while True:
            await anyio.sleep(max(0.05, min(self.idle_seconds / 2, 30.0)))
            now = anyio.current_time()
            for key, s in list(self._sessions.items()):
                if s.in_use == 0 and now - s.last_used >= self.idle_seconds:
                    self.drop(key, s)
