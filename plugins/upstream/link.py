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
import threading
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp_providers import credentials
from mcp_providers.credentials import Credential, CredentialBroker, Upstream
from mcp_providers.errors import NotFound, UpstreamError
from mcp_providers.http import client as framework_client
from mcp_providers.identity import LOCAL, Principal
from mcp_providers.plugins.upstream.asking import Relay
from mcp_providers.plugins.upstream.oauth import BrokeredAuth, ClientCredentials, TokenExchange
from mcp_providers.plugins.upstream.pool import QUIET_PARSE_FAILURES, Sessions, unparsed
from mcp_providers.plugins.upstream.settings import (
    BearerAuth,
    OAuthAuth,
    OnBehalfOfAuth,
    ServerSettings,
    read_variable,
)

__all__ = ["Link", "Listed", "list_all", "list_at_start", "served_view", "transport"]

log = logging.getLogger(__name__)
T = TypeVar("T")
BACKOFF = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Seconds between attempts to open a lost connection again; the last one repeats."""
PING_SECONDS = 5.0
"""Longest wait for the ping that tells an error answer coded -32000 from a closed connection."""
IDLE_STREAM_SECONDS = 300.0
"""Longest an HTTP upstream's stream may stay quiet before it is opened again (then every watched
URI is re-announced: nothing sent meanwhile is missed unannounced)."""
CLIENT_INFO = types.Implementation(name="mcp-providers", version="upstream")
_Over = tuple[Client, BrokeredAuth, Callable[[], None]]
"""What a request is sent over: the connection, its auth, and what to call when it is lost."""
Listed = dict[str, Any]
"""``{"info": Implementation | None, "protocol": str, "subscribe": bool, "resources": [...],
"templates": [...], "tools": [...], "prompts": [...], "cut": [(list, why), ...]}`` of ``mcp_types``
records; ``cut`` names each list that was cut short."""


def who(server: ServerSettings) -> str:
    """How messages name an upstream: ``upstream 'files' (stdio)``."""
    return f"upstream {server.name!r} ({server.transport})"


@contextlib.asynccontextmanager
async def transport(server: ServerSettings, auth: httpx2.Auth | None = None) -> AsyncIterator[Any]:
    """The SDK transport for ``server``: a started stdio process, or a streamable HTTP client
    carrying only the configured static credential, or ``auth``'s (a broker's credential).

    :raises ValueError: a named environment variable is unset (the message names it).
    """
    if server.command is not None:
        env = {k: read_variable(v, server=server.name, setting=f"env.{k}") for k, v in server.env.items()}
        params = StdioServerParameters(command=server.command, args=list(server.args), cwd=server.cwd, env=env)
        async with stdio_client(params) as streams:
            yield streams
        return
    assert server.url is not None  # the settings validator holds exactly one of command and url
    headers = {}
    if isinstance(server.auth, BearerAuth):
        headers["Authorization"] = (
            f"Bearer {read_variable(server.auth.token_env, server=server.name, setting='auth.token_env')}"
        )
    # requests are bounded by read_timeout in Link.request; the read timeout here bounds an idle
    # stream (a listen stream, the 2025 GET stream), which must outlive a quiet upstream
    timeout = httpx2.Timeout(server.read_timeout, read=max(server.read_timeout + 5, IDLE_STREAM_SECONDS))
    async with (
        # the framework's client: in a read's scope it passes read-only MCP POSTs to this endpoint only
        framework_client(
            headers=headers, auth=auth, timeout=timeout, follow_redirects=False, mcp_endpoint=server.url
        ) as http,
        streamable_http_client(server.url, http_client=http) as streams,
    ):
        yield streams


def client(
    server: ServerSettings,
    *,
    on_message: MessageHandlerFnT | None = None,
    auth: httpx2.Auth | None = None,
    relay: Relay | None = None,
) -> Client:
    """An unentered SDK ``Client`` for ``server`` (no response cache: every read reaches it),
    announcing elicitation and sampling: ``relay`` hands the upstream's questions to the tool call
    that asked (without one, e.g. while listing, every question is refused: no call is in flight)."""
    return Client(
        transport(server, auth),
        cache=None,
        client_info=CLIENT_INFO,
        message_handler=on_message,
        **(relay or Relay(who(server))).callbacks(),
    )


MAX_PAGES = 1000
"""Most pages read of one list; an upstream whose cursors never end is cut there, and told."""


async def _pages(
    fetch: Callable[[str | None], Awaitable[Any]], field: str, cut: list[tuple[str, str]], what: str
) -> list[Any]:
    """Every page of one list, following ``nextCursor``. Stops, noting ``(what, why)`` in ``cut``,
    after :data:`MAX_PAGES` pages or at a cursor it was given before (it would loop forever)."""
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        items += getattr(page, field)
        cursor = page.next_cursor
        if not cursor:
            return items
        if cursor in seen:
            cut.append((what, f"the upstream sent a cursor it had sent before, after {len(seen) + 1} pages"))
            return items
        seen.add(cursor)
    cut.append((what, f"its pages did not end within {MAX_PAGES}"))
    return items


async def list_all(c: Client) -> Listed:
    """Every component ``c``'s server lists, as its capabilities offer them; ``"cut"`` holds
    ``(list, why)`` for each list that was cut short (see :func:`_pages`)."""
    caps = c.server_capabilities
    cut: list[tuple[str, str]] = []
    out: Listed = {"info": c.server_info, "protocol": c.protocol_version, "subscribe": False, "cut": cut}
    if caps.resources is not None:
        out["subscribe"] = bool(caps.resources.subscribe)
        out["resources"] = await _pages(lambda cur: c.list_resources(cursor=cur), "resources", cut, "resources/list")
        out["templates"] = await _pages(
            lambda cur: c.list_resource_templates(cursor=cur), "resource_templates", cut, "resources/templates/list"
        )
    if caps.tools is not None:
        out["tools"] = await _pages(lambda cur: c.list_tools(cursor=cur), "tools", cut, "tools/list")
    if caps.prompts is not None:
        out["prompts"] = await _pages(lambda cur: c.list_prompts(cursor=cur), "prompts", cut, "prompts/list")
    return out


async def _list_one(server: ServerSettings) -> Listed:
    auth = None
    if isinstance(server.auth, OAuthAuth):  # listed as this server's client (the pooled identity)
        service = ClientCredentials(server)
        auth = BrokeredAuth(await service.obtain(service.principal))
    with anyio.fail_after(server.read_timeout):
        async with client(server, auth=auth) as c:
            listed = await list_all(c)
    for what, why in listed["cut"]:
        log.warning("%s: %s was cut short: %s; the rest is not served", who(server), what, why)
    return listed


def list_at_start(servers: Sequence[ServerSettings]) -> dict[str, Listed | str]:
    """Connect to every server at once, list it and close; per name, the listing or why it failed
    (a failure never raises: that server alone serves nothing). Runs in a worker thread with an
    event loop of its own, so it works whether or not the caller's thread runs a loop."""
    found: dict[str, Listed | str] = {}

    async def one(server: ServerSettings) -> None:
        try:
            found[server.name] = await _list_one(server)
        except TimeoutError:
            found[server.name] = f"{who(server)} did not list its components within {server.read_timeout} s"
        except Exception as exc:
            found[server.name] = f"{who(server)} could not be listed: {_why(exc)}"

    async def every() -> None:
        async with anyio.create_task_group() as tg:
            for server in servers:
                tg.start_soon(one, server)

    worker = threading.Thread(target=anyio.run, args=(every,), name="mcp-providers-upstream-list")
    worker.start()
    worker.join()
    return found


SERVED_KEYS = ("subscribe", "resources", "templates", "tools", "prompts")
"""What of a :data:`Listed` decides what is served (``info`` and ``protocol`` do not)."""


def served_view(listed: Listed | None) -> dict[str, Any] | None:
    """What of ``listed`` decides what is served, comparable with ``==`` (each list as a sorted
    list of its items' JSON, so order alone is no change); ``None`` for no listing at all."""
    if listed is None:
        return None
    view: dict[str, Any] = {"subscribe": bool(listed.get("subscribe"))}
    for key in SERVED_KEYS[1:]:
        view[key] = sorted(_as_json(item) for item in listed.get(key, ()))
    return view


def _as_json(item: Any) -> str:
    """``item`` as JSON; one that cannot be (a schema nested too deep: left out when declared) by
    its kind and name alone, so comparing never raises."""
    try:
        return str(item.model_dump_json(by_alias=True, exclude_none=True))
    except Exception:
        name = getattr(item, "uri", None) or getattr(item, "uri_template", None) or getattr(item, "name", "")
        return f"unserializable {type(item).__name__} {name}"


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    if isinstance(exc, MCPError):
        return f"error {exc.code}: {exc.message[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


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
        self.relay = Relay(self.who)
        """Relays the upstream's questions to the tool call that asked (every session of it)."""
        self.sessions: Sessions | None = None
        """The callers' own sessions (``on_behalf_of`` only)."""
        if isinstance(server.auth, OnBehalfOfAuth):
            self.sessions = Sessions(
                self.who,
                lambda auth, on_message: client(server, on_message=on_message, auth=auth, relay=self.relay),
                idle_seconds=server.auth.idle_seconds,
                max_sessions=server.auth.max_sessions,
                open_timeout=server.read_timeout,
                on_rejected=self._rejected_one,
            )

    @property
    def connected(self) -> Client | None:
        """The connection while it is up, else ``None``."""
        return self._client

    def served_by(self, credential: Credential | None = None, **where: str) -> None:
        """Record, for the current request's receipt and audit line (``upstream``), which
        upstream served it: configured name, the upstream identity (``subject`` and ``grant`` of
        the broker's ``credential``: ``"token_exchange"``, ``"client_credentials"``; without one,
        grant ``"static"``, a bearer from a named variable, or ``"none"``), transport, serverInfo
        name and version, and ``where`` (the upstream's own ``uri``, or ``tool``/``prompt`` name).
        Never the credential itself."""
        info = " ".join(filter(None, (self.info.name, self.info.version))) if self.info is not None else "unknown"
        if credential is not None:
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
        delays = iter(BACKOFF)
        self._started = False
        while True:
            try:
                if await self._connected(task_status):
                    delays = iter(BACKOFF)  # it served: the next loss starts the back-off again
            except Exception as exc:
                if not self._started:
                    if not self.patient:
                        raise UpstreamError(f"{self.who} could not be started: {_why(exc)}") from None
                    self._started = True  # serves nothing yet; keeps trying below
                    task_status.started()
                log.warning("%s: connection failed: %s", self.who, _why(exc))
            self.restarts += 1
            delay = next(delays, BACKOFF[-1])
            said = "connection lost" if self.info is not None else "not connected yet"
            log.warning("%s: %s; opening it again in %s s", self.who, said, delay)
            await anyio.sleep(delay)

    async def _connected(self, task_status: anyio.abc.TaskStatus[None]) -> bool:
        """One connection's life: open (bounded by ``read_timeout``), serve until lost; whether it served."""
        self._lost = anyio.Event()
        with anyio.CancelScope(deadline=anyio.current_time() + self.server.read_timeout) as opening:
            if self.service is not None:
                self._pooled_auth.credential = await self._broker().credential(self.service, self.service.principal)
            auth = self._pooled_auth if self.service is not None else None
            async with client(self.server, on_message=self._message, auth=auth, relay=self.relay) as c:
                opening.deadline = math.inf
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
        opened again after a back-off (:data:`BACKOFF`; a failure is logged), so the upstream's
        updates are not dropped for the rest of the connection. Ends when the connection does
        (its task group is cancelled)."""
        delays = iter(BACKOFF)
        while True:
            try:
                await watch(c)
                delays = iter(BACKOFF)
            except Exception as exc:
                log.warning("%s: watching it stopped: %s; watching again", self.who, _why(exc))
            await anyio.sleep(next(delays, BACKOFF[-1]))

    async def _message(self, message: Any) -> None:
        if unparsed(message):  # one bad line (a warning printed to stdout): the connection is fine
            kind = type(message).__name__
            level = logging.DEBUG if kind in self._unparsed else logging.WARNING
            self._unparsed.add(kind)
            log.log(level, "%s sent a message that could not be parsed (%s); ignored, the connection is kept",
                    self.who, _why(message)[:200])  # fmt: skip
        elif isinstance(message, Exception):
            log.warning("%s: transport error: %s", self.who, _why(message))
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
            return await self._brokered(self.exchange, principal, what, call, where, self._own_session)
        if self.service is not None:
            return await self._brokered(self.service, self.service.principal, what, call, where, self._pooled)
        self.served_by(None, **where)
        async with self._pooled(None, principal, what) as (c, _auth, lost):
            return await self._sent(c, what, call, lost)

    async def _brokered(
        self,
        upstream: Upstream,
        principal: Principal,
        what: str,
        call: Callable[[Client], Awaitable[T]],
        where: Mapping[str, str],
        over: Callable[[Credential, Principal, str], contextlib.AbstractAsyncContextManager[_Over]],
    ) -> T:
        """Send over ``over(credential)`` with ``principal``'s credential from the broker; once
        more with a new one when the upstream answered 401 to it (forgotten in the broker)."""
        broker = self._broker()
        for attempt in (1, 2):
            credential = await broker.credential(upstream, principal)
            self.served_by(credential, **where)
            try:
                async with over(credential, principal, what) as (c, _auth, lost):
                    return await self._sent(c, what, call, lost)
            except UpstreamError:
                if credential not in self._rejected or attempt == 2:
                    raise
            self._rejected.discard(credential)
            log.warning("%s answered 401 to a credential of %s; asking for a new one", self.who, upstream.name)
            await broker.forget(upstream, principal, credential)
        raise AssertionError("unreachable: the second attempt returns or raises")

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

    async def _sent(self, c: Client, what: str, call: Callable[[Client], Awaitable[T]], lost: Callable[[], None]) -> T:
        """``await call(c)`` with the errors of :meth:`request`; ``lost()`` when the connection is."""
        self.in_flight += 1
        try:
            with anyio.fail_after(self.server.read_timeout) as bound, self.relay.sending(c.session, bound):
                return await call(c)
        except TimeoutError:
            raise UpstreamError(f"{self.who} did not answer {what} within {self.server.read_timeout} s") from None
        except MCPError as exc:
            data = exc.error.data
            if exc.code == types.CONNECTION_CLOSED and await self._closed(c):
                lost()
                raise UpstreamError(f"{self.who} connection lost during {what}") from None
            if exc.code == types.INVALID_PARAMS and isinstance(data, Mapping) and "uri" in data:
                raise NotFound(f"{self.who}: {exc.message[:300]}", data={"uri": data["uri"]}) from None
            raise UpstreamError(f"{self.who} answered {what} with error {exc.code}: {exc.message[:300]}") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            lost()
            raise UpstreamError(f"{self.who} connection lost during {what} ({type(exc).__name__})") from None
        except Exception as exc:  # a malformed answer (pydantic), a transport failure
            raise UpstreamError(f"{self.who} failed {what}: {_why(exc)}") from None
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
