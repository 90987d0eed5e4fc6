"""The connection to one upstream MCP server, through the SDK's own ``Client``.

Two moments use it:

- composition (:func:`list_at_start`): ``resources()``, ``tools()`` ... are called once, without
  an event loop of ours, so every configured upstream is connected in a worker thread with its
  own loop, listed (every page of every kind its capabilities offer) and closed;
- serving (:class:`Link`): the resource provider's ``lifespan`` holds one connection open for
  all of the upstream's requests (reads, calls, prompts), each bounded by ``read_timeout``.

Every failure becomes an :class:`~mcp_providers.errors.UpstreamError` whose message names the
upstream (``upstream 'files' (stdio): ...``); an answer over ``max_bytes`` is refused the same way.
The caller's token is never sent: a streamable HTTP upstream gets the static credential its settings
name, or a credential from the broker (:mod:`~mcp_providers.plugins.upstream.oauth`): this server's
client's (``client_credentials``, one pooled connection), or each caller's own by token exchange
(``on_behalf_of``: one session per caller, :mod:`~mcp_providers.plugins.upstream.pool`).
Every client announces elicitation and sampling; what an upstream asks goes to the tool call that
asked (:class:`~mcp_providers.plugins.upstream.asking.Relay`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPError
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp_providers import credentials
from mcp_providers.credentials import Credential, CredentialBroker, Upstream
from mcp_providers.errors import NotFound, UpstreamError
from mcp_providers.identity import LOCAL, Principal
from mcp_providers.plugins import _oauth
from mcp_providers.plugins._library_logs import library_logs_masked
from mcp_providers.plugins.upstream.asking import Bounds, Relay
from mcp_providers.plugins.upstream.connect import client, held_secrets, reason, who
from mcp_providers.plugins.upstream.oauth import BrokeredAuth, ClientCredentials, TokenExchange
from mcp_providers.plugins.upstream.pool import QUIET_PARSE_FAILURES, Sessions, unparsed
from mcp_providers.plugins.upstream.settings import (
    OAuthAuth,
    OnBehalfOfAuth,
    ServerSettings,
)
from mcp_providers.plugins.upstream.stdio import LINE_LIMIT_KEY, line_limit
from mcp_providers.plugins.upstream.tasks import Handed

if TYPE_CHECKING:
    import tenacity

__all__ = ["Link"]

log = logging.getLogger(__name__)
T = TypeVar("T")
BACKOFF = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Seconds between attempts to open a lost connection again; the last one repeats."""
STABLE_SECONDS = 30.0
"""A connection lost sooner than this after it opened makes the next wait the next step of
:data:`BACKOFF` (an upstream that dies right after its handshake is not restarted 5 times a
second); one that lived longer starts the steps again."""
PING_SECONDS = 5.0
"""Longest wait for the ping that tells an error answer coded -32000 from a closed connection."""
_Over = tuple[Client, BrokeredAuth, Callable[[], None]]
"""What a request is sent over: the connection, its auth, and what to call when it is lost."""


def _retrying(before_sleep: Callable[[tenacity.RetryCallState], None]) -> tenacity.AsyncRetrying:
    """Attempts until one ends without an error, waiting :data:`BACKOFF` between them (its last
    value once it is spent); ``before_sleep`` is told of each failure (tenacity, as every retry in
    the project)."""
    import tenacity  # with an upstream configured only: serve's start-up does not pay for it

    waits = tenacity.wait_chain(*(tenacity.wait_fixed(seconds) for seconds in BACKOFF))
    return tenacity.AsyncRetrying(retry=tenacity.retry_if_exception_type(Exception), wait=waits,
                                  before_sleep=before_sleep, sleep=anyio.sleep)  # fmt: skip


def _failure(state: tenacity.RetryCallState) -> BaseException:
    """The exception the attempt before a back-off failed with (tenacity retries on failures only)."""
    exc = state.outcome.exception() if state.outcome is not None else None
    return exc if exc is not None else RuntimeError("the attempt failed")


class Link:
    """The serving connection to one upstream: kept open by :meth:`serving` (the resource
    provider's lifespan), used by every request through :meth:`request`.

    A connection found lost (a request met a closed stream, or the upstream closed it) is opened
    again with back-off (:data:`BACKOFF`), in the same task that opened it; requests meanwhile get
    an :class:`UpstreamError` naming the upstream.

    With OAuth settings the credentials come from the credential broker (the request's, else one
    of the link's own): ``client_credentials`` upstreams serve every request over the pooled
    connection as this server's client; ``on_behalf_of`` ones serve each caller's requests over
    that caller's own session (:attr:`sessions`) with the caller's exchanged credential, and keep
    the pooled connection, as the client, for subscriptions and ``list_changed``.
    """

    def __init__(self, server: ServerSettings) -> None:
        self.server = server
        self.who = who(server)
        self.info: types.Implementation | None = None
        self.restarts = 0
        """How many times the connection was opened again after it was lost."""
        self.in_flight = 0
        """Requests sent and not yet answered."""
        self._client: Client | None = None
        self._lost = anyio.Event()
        self._started = False
        self._opened_at = 0.0  # anyio's clock when the current connection finished its handshake
        self.on_connect: list[Callable[[Client], Awaitable[None]]] = []
        """Called with each new connection, the first and every restart (subscriptions restored)."""
        self.on_message: Callable[[Any], Awaitable[None]] | None = None
        """Given every notification the upstream sends (set before :meth:`serving`)."""
        self.watch: Callable[[Client], Awaitable[None]] | None = None
        """Run in a task of each connection while it lives (a 2026-07-28 listen stream)."""
        self.alongside: list[Callable[[Client], Coroutine[Any, Any, None]]] = []
        """Each run once in a task of each connection while it lives (it must not raise)."""
        self.patient = False
        """Whether :meth:`serving` starts although the first connection cannot be opened (it
        then keeps trying with back-off): set for an upstream that could not be listed at
        composition, whose provider would otherwise never see it come back."""
        self._unparsed: set[str] = set()
        """Kinds of unparsable messages already warned about (each is warned about once)."""
        oauth = isinstance(server.auth, OAuthAuth)
        self.service = ClientCredentials(server) if oauth else None
        """The pooled identity's :class:`~mcp_providers.credentials.Upstream` (OAuth settings only)."""
        self.exchange = TokenExchange(server) if isinstance(server.auth, OnBehalfOfAuth) else None
        """The callers' :class:`~mcp_providers.credentials.Upstream` (``on_behalf_of`` only)."""
        self._rejected: set[Credential] = set()
        """Credentials the upstream answered 401 to, not yet forgotten in the broker."""
        self._pooled_auth = BrokeredAuth(on_rejected=self._rejected_one)
        self._own_broker = CredentialBroker()
        self.relay = Relay(self.who, Bounds(server.max_questions_per_call, server.max_open_questions_per_call))
        """Relays the upstream's questions to the tool call that asked (every session of it)."""
        self.secrets = held_secrets(server)
        """What this server holds for the upstream, masked in any text from it (:meth:`said`)."""
        self.sessions: Sessions | None = None
        """The callers' own sessions (``on_behalf_of`` only)."""
        if isinstance(server.auth, OnBehalfOfAuth):
            self.sessions = Sessions(
                self.who,
                lambda auth, on_message: client(
                    server, on_message=on_message, auth=auth, relay=self.relay, secrets=self.secrets
                ),
                idle_seconds=server.auth.idle_seconds,
                max_sessions=server.auth.max_sessions,
                open_timeout=server.read_timeout,
                on_rejected=self._rejected_one,
                masked=self.secrets.masked,
            )

    @property
    def connected(self) -> Client | None:
        """The connection while it is up, else ``None``."""
        return self._client

    def said(self, text: str, limit: int = 300) -> str:
        """``text`` from the upstream as messages may quote it: every secret held for the
        upstream masked (:mod:`~mcp_providers.plugins._masking`), then cut to ``limit`` characters."""
        return self.secrets.masked(text)[:limit]

    def served_by(self, credential: Credential | None = None, **where: str) -> None:
        """Record, for the current request's receipt and audit line (``upstream``), which
        upstream served it: configured name, the upstream identity (``subject`` and ``grant`` of
        the broker's ``credential``: ``"token_exchange"``, ``"client_credentials"``; without one,
        grant ``"static"``, a bearer from a named variable, or ``"none"``), transport, serverInfo
        name and version, and ``where`` (the upstream's own ``uri``, or ``tool``/``prompt`` name).
        Never the credential itself."""
        info = " ".join(filter(None, (self.info.name, self.info.version))) if self.info is not None else "unknown"
        if credential is not None:
            self.secrets.add(credential.token, handed=True)
            who = {"name": self.server.name, "subject": credential.subject, "grant": credential.grant}
        else:
            who = {"name": self.server.name, "grant": "static" if self.server.auth is not None else "none"}
        credentials.record_upstream({**who, "transport": self.server.transport, "serverInfo": info, **where})

    def _rejected_one(self, credential: Credential) -> None:
        if len(self._rejected) > 1000:  # never asked about again (the request gave up): forget them
            self._rejected.clear()
        self._rejected.add(credential)

    def _broker(self) -> CredentialBroker:
        """The current request's broker (cached and shared as the server configures it), else the link's own."""
        scope = credentials.current_scope.get()
        return scope.broker if scope is not None else self._own_broker

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Hold the connection open while the server runs, opening it again when lost.

        :raises UpstreamError: the first connection cannot be opened (the provider then fails to
            start, alone).
        """
        for name in ("mcp.client.stdio", "mcp.client.streamable_http"):  # we say it once, naming the upstream
            logging.getLogger(name).addFilter(QUIET_PARSE_FAILURES)
        try:
            with library_logs_masked(self.secrets.masked):  # the SDK's client logs bodies, httpx2 URLs
                async with anyio.create_task_group() as tg:
                    await tg.start(self._keep)
                    try:
                        if self.sessions is None:
                            yield
                        else:
                            async with self.sessions.running():
                                yield
                    finally:
                        tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # the task group's wrapping hides the message that names us
            failed = [e for e in group.exceptions if isinstance(e, UpstreamError)]
            if failed:
                raise failed[0] from None
            raise

    async def _keep(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open the connection and keep it: a connection that fails is opened again after the
        back-off (:data:`BACKOFF`, tenacity), which starts again once a connection has served."""
        self._started = False
        brief = 0  # connections in a row lost within STABLE_SECONDS of opening: each waits longer
        while True:
            await _retrying(self._failed)(self._connected, task_status)  # it served, and was lost
            self.restarts += 1
            brief = brief + 1 if anyio.current_time() - self._opened_at < STABLE_SECONDS else 0
            wait = BACKOFF[min(brief, len(BACKOFF) - 1)]
            log.warning("%s: connection lost; opening it again in %s s", self.who, wait)
            await anyio.sleep(wait)

    def _failed(self, state: tenacity.RetryCallState) -> None:
        """Before the wait after a failed opening: an upstream that must answer at start fails here."""
        exc = _failure(state)
        task_status = state.args[0] if state.args else anyio.TASK_STATUS_IGNORED
        if not self._started:
            if not self.patient:
                raise UpstreamError(f"{self.who} could not be started: {reason(exc, self.secrets.masked)}") from None
            self._started = True  # serves nothing yet; keeps trying below
            task_status.started()
        log.warning("%s: connection failed: %s", self.who, reason(exc, self.secrets.masked))
        self.restarts += 1
        said = "connection lost" if self.info is not None else "not connected yet"
        log.warning("%s: %s; opening it again in %s s", self.who, said, round(state.upcoming_sleep, 3))

    async def _connected(self, task_status: anyio.abc.TaskStatus[None]) -> bool:
        """One connection's life: open (bounded by ``read_timeout``), serve until lost; whether it served."""
        self._lost = anyio.Event()
        with anyio.CancelScope(deadline=anyio.current_time() + self.server.read_timeout) as opening:
            if self.service is not None:
                self._pooled_auth.credential = await self._broker().credential(self.service, self.service.principal)
            auth = self._pooled_auth if self.service is not None else None
            lost = self._lost
            async with client(
                self.server,
                on_message=self._message,
                auth=auth,
                relay=self.relay,
                secrets=self.secrets,
                on_end=lost.set,  # a process that exits while idle: opened again now, not at the next request
            ) as c:
                opening.deadline = math.inf
                self._opened_at = anyio.current_time()
                for call in self.on_connect:
                    await call(c)
                self._client, self.info = c, c.server_info
                if not self._started:
                    self._started = True
                    task_status.started()
                try:
                    async with anyio.create_task_group() as watching:
                        if self.watch is not None:
                            watching.start_soon(self._watching, self.watch, c)
                        for run in self.alongside:
                            watching.start_soon(run, c)
                        await self._lost.wait()
                        watching.cancel_scope.cancel()
                finally:
                    self._client = None
        if opening.cancelled_caught:
            raise TimeoutError(f"no handshake within {self.server.read_timeout} s")
        return True

    async def _watching(self, watch: Callable[[Client], Awaitable[None]], c: Client) -> None:
        """Run ``watch`` for as long as this connection lives: a stream that fails or ends is
        opened again after a back-off (:data:`BACKOFF`, tenacity; a failure is logged), so the
        upstream's updates are not dropped for the rest of the connection. Ends when the connection
        does (its task group is cancelled)."""

        def stopped(state: tenacity.RetryCallState) -> None:
            exc = _failure(state)
            log.warning("%s: watching it stopped: %s; watching again", self.who, reason(exc, self.secrets.masked))

        while True:
            await _retrying(stopped)(watch, c)  # the stream ended without an error: open it again
            await anyio.sleep(BACKOFF[0])

    async def _message(self, message: Any) -> None:
        if unparsed(message):  # one bad line (a warning printed to stdout): the connection is fine
            kind = type(message).__name__
            level = logging.DEBUG if kind in self._unparsed else logging.WARNING
            self._unparsed.add(kind)
            log.log(level, "%s sent a message that could not be parsed (%s); ignored, the connection is kept",
                    self.who, reason(message, self.secrets.masked)[:200])  # fmt: skip
        elif isinstance(message, Exception):
            log.warning("%s: transport error: %s", self.who, reason(message, self.secrets.masked))
            self._lost.set()
        elif self.on_message is not None:
            await self.on_message(message)

    async def request(
        self, what: str, call: Callable[[Client], Awaitable[T]], *, principal: Principal = LOCAL, **where: str
    ) -> T:
        """``await call(client)``, bounded by ``read_timeout``, errors naming the upstream, recorded
        for the receipt (:meth:`served_by`, with ``where``). An ``on_behalf_of`` upstream is asked
        over ``principal``'s own session, with ``principal``'s exchanged credential; a credential
        the upstream answers 401 to is forgotten and the request sent once more with a new one.

        :param what: the request as messages show it, e.g. ``"resources/read demo://a"``.
        :raises UpstreamError: not connected, no answer in time, connection lost, an error answer.
        :raises NotFound: the upstream says the resource does not exist (-32602 with a ``uri``).
        :raises CredentialRefused: the caller's credential was refused (no exchange, nothing sent).
        """
        if self.exchange is not None:
            return await self._brokered(self.exchange, principal, what, call, where, self._own_session, principal)
        if self.service is not None:
            service = self.service.principal
            return await self._brokered(self.service, service, what, call, where, self._pooled, principal)
        self.served_by(None, **where)
        async with self._pooled(None, principal, what) as (c, _auth, lost):
            return await self._sent(c, what, call, lost, principal)

    async def _brokered(
        self,
        upstream: Upstream,
        principal: Principal,
        what: str,
        call: Callable[[Client], Awaitable[T]],
        where: Mapping[str, str],
        over: Callable[[Credential, Principal, str], contextlib.AbstractAsyncContextManager[_Over]],
        caller: Principal,
    ) -> T:
        """Send over ``over(credential)`` with ``principal``'s credential from the broker (for
        ``caller``: the upstream's questions go to no other); once more with a new one when the
        upstream answered 401 to it (:func:`_oauth.brokered`)."""

        async def send(credential: Credential) -> T:
            self.served_by(credential, **where)
            async with over(credential, principal, what) as (c, _auth, lost):
                return await self._sent(c, what, call, lost, caller)

        def rejected(exc: Exception, credential: Credential) -> bool:
            if isinstance(exc, UpstreamError) and credential in self._rejected:
                self._rejected.discard(credential)  # the 401 this request met: forgotten with the credential
                return True
            return False

        return await _oauth.brokered(upstream, principal, send, rejected=rejected, own=self._own_broker, who=self.who)

    @contextlib.asynccontextmanager
    async def _pooled(self, credential: Credential | None, principal: Principal, what: str) -> AsyncIterator[_Over]:
        """The pooled connection, presenting ``credential`` (when the broker gave one)."""
        c = self._client
        if c is None:
            raise UpstreamError(f"{self.who} is not connected; {what} was not sent")
        if credential is not None:
            self._pooled_auth.credential = credential
        yield c, self._pooled_auth, self._lost.set

    @contextlib.asynccontextmanager
    async def _own_session(self, credential: Credential, principal: Principal, what: str) -> AsyncIterator[_Over]:
        """``principal``'s own session (opened now if it has none), presenting ``credential``."""
        assert self.exchange is not None and self.sessions is not None  # on_behalf_of only
        key, sessions = credentials.cache_key(self.exchange, principal), self.sessions
        async with sessions.session(key, credential) as session:
            assert session.client is not None  # session() yields open sessions only
            yield session.client, session.auth, lambda: sessions.drop(key, session)

    async def _sent(
        self, c: Client, what: str, call: Callable[[Client], Awaitable[T]], lost: Callable[[], None], caller: Principal
    ) -> T:
        """``await call(c)`` for ``caller`` with the errors of :meth:`request`; ``lost()`` when the
        connection is."""
        self.in_flight += 1
        try:
            bounded = anyio.fail_after(self.server.read_timeout)
            with bounded as bound, self.relay.sending(c.session, bound, caller):
                return await call(c)
        except TimeoutError:
            raise UpstreamError(f"{self.who} did not answer {what} within {self.server.read_timeout} s") from None
        except MCPError as exc:
            data = exc.error.data
            if exc.code == types.CONNECTION_CLOSED and await self._closed(c):
                lost()
                raise UpstreamError(f"{self.who} connection lost during {what}") from None
            if exc.code == types.INVALID_PARAMS and isinstance(data, Mapping) and "uri" in data:
                raise NotFound(f"{self.who}: {self.said(exc.message)}", data={"uri": data["uri"]}) from None
            limit = line_limit(self.server.max_bytes)
            if isinstance(data, Mapping) and data.get(LINE_LIMIT_KEY) == limit:  # the transport's refusal
                over = "the line limit" if self.server.command is not None else "the limit on one body or event"
                raise UpstreamError(
                    f"{self.who} answered {what} with more than {limit} bytes, over {over} its max_bytes "
                    f"of {self.server.max_bytes} sets; the answer was discarded; raise max_bytes in its settings "
                    "if this is expected"
                ) from None
            raise UpstreamError(f"{self.who} answered {what} with error {exc.code}: {self.said(exc.message)}") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            lost()
            raise UpstreamError(f"{self.who} connection lost during {what} ({type(exc).__name__})") from None
        except Handed:  # a task handle: the caller follows it (tasks.follow)
            raise
        except Exception as exc:  # a malformed answer (pydantic), a transport failure
            raise UpstreamError(f"{self.who} failed {what}: {reason(exc, self.secrets.masked)}") from None
        finally:
            self.in_flight -= 1

    async def _closed(self, c: Client) -> bool:
        """Whether ``c``'s connection is closed. The SDK reports a closed connection with -32000,
        which many servers also answer any failure with: only a ping that meets a closed
        connection tells (any answer, an error too, says it is open; a 2026-07-28 upstream may
        answer -32601). A ping that times out or fails otherwise says nothing closed."""
        try:
            with anyio.fail_after(min(self.server.read_timeout, PING_SECONDS)), warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # 2026-07-28 removed ping: still sent
                await c.send_ping()
        except MCPError as exc:
            return exc.code == types.CONNECTION_CLOSED
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            return True
        except Exception:
            return False
        return False
