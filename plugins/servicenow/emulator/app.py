"""The :class:`Emulator`: one instance's settings, modes and test controls, served by uvicorn.

The HTTP side is in :mod:`.api` (Table and Aggregate API) and :mod:`.auth` (credentials and the
token endpoint); the data in :mod:`.store`.
"""

from __future__ import annotations

import copy
import socket
import threading
import time
from collections.abc import Mapping
from types import TracebackType

import anyio
import uvicorn

from mcp_providers.plugins.servicenow.emulator.api import build_app
from mcp_providers.plugins.servicenow.emulator.faults import Fault, FaultScope, LoggedRequest
from mcp_providers.plugins.servicenow.emulator.jwt_bearer import JwtBearerClient
from mcp_providers.plugins.servicenow.emulator.store import Record, Store
from mcp_providers.plugins.servicenow.seed import seed_tables

__all__ = ["Emulator"]


class Emulator:
    """One emulated ServiceNow instance served on ``127.0.0.1`` at an ephemeral port.

    :param instance: the instance name, which chooses the seed (``dev`` or ``prod``; any other
        name gets the ``dev`` shape with its own sys_ids).
    :param users: ``{user name: password}`` accepted by Basic auth and the OAuth password grant.
    :param oauth_clients: ``{client id: client secret}`` accepted by ``/oauth_token.do``.
    :param api_keys: ``{api key: label}`` accepted in ``x-sn-apikey``; the label is what the
        request log records.
    :param tables: replace the seeded tables (``{table: [record, ...]}``, string values).
    :param token_lifetime_seconds: ``expires_in`` of issued access tokens.
    :param default_limit: page size when ``sysparm_limit`` is absent, and its maximum.
    :param port: the port to listen on (``0``: an ephemeral one).
    :param jwt_bearer: enable ServiceNow's OAuth JWT bearer grant at ``/oauth_token.do`` for one
        "OAuth JWT API endpoint": ``{"client_id": ..., "client_secret": ..., "public_key_pem":
        <the client's RSA public key, PEM>, "user_field": "email"}`` (``user_field`` is the
        ``sys_user`` field the assertion's ``sub`` names; default ``email``). See
        :mod:`~mcp_providers.plugins.servicenow.emulator.jwt_bearer` for the checks. Raises
        ``ValueError`` when a key is missing or the key is not an RSA public key.

    Users: the tokens of the JWT bearer grant act as one ``sys_user`` (the seed's people are listed
    in :mod:`~mcp_providers.plugins.servicenow.seed`). For such a **user token** an incident is
    readable only if its ``assignment_group`` is one of the user's groups (``sys_user_grmember``)
    or the user has the ``admin`` role; a ``sys_journal_field`` entry of an incident only if that
    incident is. The rule filters the query itself, like the before-query business rule that
    restricts incidents on a real instance: lists, ``X-Total-Count``, the ``Link`` header, the
    Aggregate API, reads and writes by sys_id (404), dot-walks and display values through a
    reference (empty) all leave the unreadable records out. Writes with a user token stamp
    ``sys_updated_by`` (and ``sys_created_by`` on create) and the journal's ``sys_created_by``
    with the user's ``user_name``. A user token whose user is no longer active is refused (401),
    as are expired ones (:meth:`expire_tokens`) and revoked ones (:meth:`revoke_user_tokens`).
    Service accounts (Basic, the other OAuth grants, API keys) see and write everything, unstamped.

    Switchable modes (set at any time, also while serving): :attr:`send_total_count`,
    :attr:`send_link_header`, :attr:`echo_authorization`, :attr:`stream_answers`, :meth:`hide` (ACL-hidden rows) and
    :meth:`rate_limit` (a rate-limit rule).

    Use it as a context manager (``with`` or ``async with``) or call :meth:`start` and
    :meth:`stop`. :attr:`base_url` is set once started.
    """

    def __init__(
        self,
        instance: str = "dev",
        *,
        users: Mapping[str, str] | None = None,
        oauth_clients: Mapping[str, str] | None = None,
        api_keys: Mapping[str, str] | None = None,
        tables: Mapping[str, list[Record]] | None = None,
        token_lifetime_seconds: int = 1800,
        default_limit: int = 10000,
        port: int = 0,
        jwt_bearer: Mapping[str, str] | None = None,
    ) -> None:
        self.instance = instance
        self.jwt_bearer = JwtBearerClient.from_mapping(jwt_bearer) if jwt_bearer is not None else None
        self.users = dict(users or {})
        self.oauth_clients = dict(oauth_clients or {})
        self.api_keys = dict(api_keys or {})
        self.token_lifetime_seconds = token_lifetime_seconds
        self.default_limit = default_limit
        self.port = port
        self.send_total_count = True
        """Mode: send ``X-Total-Count`` (a real instance omits it with ``sysparm_no_count``, and some
        integrations' instances never send it); ``False`` drops it from every answer."""
        self.send_link_header = True
        """Mode: send the ``Link`` pagination header when there is more than one page."""
        self.stream_answers = False
        """Mode: list answers are sent in 64 KiB chunks without ``Content-Length`` (chunked transfer
        encoding), as a large answer from a real instance or proxy may be."""
        self.echo_authorization = False
        """Mode: every 401 answer's ``error.detail`` echoes the ``Authorization`` and ``x-sn-apikey``
        headers received (as some proxies and misconfigured instances do), to test redaction."""
        self._store = Store(copy.deepcopy(dict(tables)) if tables is not None else seed_tables(instance))
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.base_url = ""
        self.app = build_app(self, self._store)

    # -- lifecycle

    def start(self) -> Emulator:
        """Start serving; returns once the server accepts connections.

        :raises RuntimeError: it is already running, or it did not start within 10 s.
        """
        if self._thread is not None:
            raise RuntimeError(f"emulator {self.instance!r} is already running at {self.base_url}")
        # IPPROTO_TCP (not 0): asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without
        # it every answer waits ~40 ms (Nagle against the client's delayed ACK) between headers and body
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name=f"servicenow-emulator-{self.instance}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"emulator {self.instance!r} did not start on 127.0.0.1:{port}")
            time.sleep(0.005)
        self._socket = sock
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server thread (at most 10 s)."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._socket = None
        self._server = None
        self._thread = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.stop()

    async def __aenter__(self) -> Emulator:
        return await anyio.to_thread.run_sync(self.start)

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:  # fmt: skip
        await anyio.to_thread.run_sync(self.stop)

    # -- test controls

    def fail_next(self, times: int = 1, *, status: int | None = 500, retry_after: str | None = None,
                  delay_seconds: float = 0.0, malformed: bool = False, message: str | None = None,
                  detail: str | None = None, scope: FaultScope = "table",
                  truncated: bool = False) -> None:  # fmt: skip
        """Queue a fault for each of the next ``times`` requests in ``scope`` (see :class:`Fault`).

        ``fail_next(status=429, retry_after="1")`` rate-limits the next request;
        ``fail_next(status=None, delay_seconds=2)`` slows it; ``fail_next(status=None,
        malformed=True)`` answers it with a body that is not JSON; ``fail_next(status=None,
        truncated=True)`` cuts its body short; ``fail_next(status=None)`` lets it through untouched
        (to fault a later request).
        """
        fault = Fault(status=status, retry_after=retry_after, delay_seconds=delay_seconds, malformed=malformed,
                      message=message, detail=detail, scope=scope, truncated=truncated)  # fmt: skip
        with self._store.lock:
            self._store.faults.extend([fault] * times)

    def hide(self, table: str, *sys_ids: str) -> None:
        """Mode: ACLs hide these rows of ``table`` from every caller, as a real instance does it.

        A list answer applies ``sysparm_offset``/``sysparm_limit`` first and removes hidden rows
        from the page afterwards, so a page holds fewer rows than asked while ``X-Total-Count``
        (and the ``Link`` header) still count them; reading a hidden row by sys_id answers 404.
        """
        with self._store.lock:
            self._store.hidden.setdefault(table, set()).update(sys_ids)

    def rate_limit(self, seconds: float | None) -> None:
        """Mode: a rate-limit rule. The next Table API request starts a window of ``seconds``;
        every request inside it is answered 429 with ``Retry-After`` (whole seconds left, at least
        1), ``X-RateLimit-Limit``, ``X-RateLimit-Reset`` (unix time) and ``X-RateLimit-Rule``.
        After the window the rule is spent. ``None`` removes the rule.
        """
        with self._store.lock:
            self._store.rate_limit_seconds = seconds
            self._store.rate_limited_until = None

    def pending_faults(self) -> int:
        """How many queued faults no request has consumed yet."""
        with self._store.lock:
            return len(self._store.faults)

    def clear_faults(self) -> None:
        """Drop every queued fault."""
        with self._store.lock:
            self._store.faults.clear()

    def expire_tokens(self) -> None:
        """Expire every access token issued so far, user tokens too (refresh tokens stay valid)."""
        with self._store.lock:
            for token in self._store.tokens.values():
                token.expires_at = 0.0

    def revoke_user_tokens(self, user_name: str) -> int:
        """Revoke every user token issued for ``user_name`` (they answer 401 from now on), as an
        administrator revoking the user's OAuth tokens does; returns how many were revoked."""
        with self._store.lock:
            tokens = [t for t in self._store.tokens.values() if t.acting == user_name and t.expires_at > 0]
            for token in tokens:
                token.expires_at = 0.0
        return len(tokens)

    def token_requests(self) -> list[LoggedRequest]:
        """The logged ``/oauth_token.do`` requests, oldest first (``detail`` says why one was refused)."""
        return [r for r in self.requests if r.path == "/oauth_token.do"]

    @property
    def requests(self) -> list[LoggedRequest]:
        """A copy of the request log, oldest first."""
        with self._store.lock:
            return list(self._store.requests)

    def table_requests(self) -> list[LoggedRequest]:
        """The logged Table API requests (``/api/now/...``), oldest first."""
        return [r for r in self.requests if r.path.startswith("/api/now/")]

    def clear_requests(self) -> None:
        """Empty the request log."""
        with self._store.lock:
            self._store.requests.clear()

    def issued_tokens(self) -> list[str]:
        """Every access and refresh token issued so far (so tests can check none leaks)."""
        with self._store.lock:
            return list(self._store.tokens) + list(self._store.refresh_tokens)

    def records(self, table: str) -> list[Record]:
        """A copy of the rows of ``table`` as stored (raw values, journal fields empty)."""
        with self._store.lock:
            return copy.deepcopy(self._store.tables.get(table, []))
