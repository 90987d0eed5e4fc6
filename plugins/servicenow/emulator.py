"""A local ServiceNow Table API emulator: a real HTTP server on 127.0.0.1 for tests and demos.

One :class:`Emulator` is one instance (its own data, users, OAuth clients and API keys), served by
uvicorn in a background thread on an ephemeral port, so it can be used from sync or async code::

    with Emulator("dev", users={"admin": "s3cret"}) as dev:
        httpx2.get(f"{dev.base_url}/api/now/table/incident", auth=("admin", "s3cret"))
        dev.fail_next(status=429, retry_after="1")   # the next table request gets a 429
        dev.requests                                  # what was received, and from whom

Served (paths also under ``/api/now/v2/table``):

- ``GET /api/now/table/{table}``: ``sysparm_query`` (``^``, ``^OR``, ``^NQ``, ``=``, ``!=``, ``>``,
  ``>=``, ``<``, ``<=``, ``LIKE``, ``NOTLIKE``, ``STARTSWITH``, ``ENDSWITH``, ``IN``, ``NOT IN``,
  ``ISEMPTY``, ``ISNOTEMPTY``, ``ORDERBY``/``ORDERBYDESC``, one level of dot-walking, trailing
  ``^EQ``; ``^^`` is refused with 400 rather than split; a term naming an unknown field is
  ignored, as ServiceNow does by default), ``sysparm_fields``, ``sysparm_limit`` (default and
  cap ``default_limit``), ``sysparm_offset``, ``sysparm_display_value`` (``true``/``false``/``all``),
  ``sysparm_exclude_reference_link``, ``sysparm_no_count``, ``sysparm_suppress_pagination_header``;
  answers carry ``X-Total-Count`` and, when there is more than one page, a ``Link`` header.
- ``GET|PATCH|PUT|DELETE /api/now/table/{table}/{sys_id}`` and ``POST /api/now/table/{table}``
  (201; numbers minted for incident, problem and change_request). ``comments`` and ``work_notes``
  are journal fields: writes append a ``sys_journal_field`` row and the field reads back empty.
- ``GET /api/now/stats/{table}`` (the Aggregate API): ``sysparm_count``, ``sysparm_query``,
  ``sysparm_group_by``, ``sysparm_display_value``; answers ``{"result": {"stats": {"count": "N"}}}``
  or, grouped, ``{"result": [{"stats": {"count": "N"}, "groupby_fields": [{"field", "value"}]}]}``.
- ``POST /oauth_token.do`` (form body): ``client_credentials``, ``password`` and ``refresh_token``
  grants, and with ``jwt_bearer=`` the JWT bearer grant (a token acting as one ``sys_user``, see
  :class:`Emulator`); tokens last ``token_lifetime_seconds`` or until :meth:`Emulator.expire_tokens`
  (or :meth:`Emulator.revoke_user_tokens`).
- Auth on the Table API: ``Authorization: Basic``, ``Authorization: Bearer <token>`` or
  ``x-sn-apikey``. Failures use ServiceNow's envelope
  ``{"error": {"message": ..., "detail": ...}, "status": "failure"}``.

Faults are queued with :meth:`Emulator.fail_next` (status, ``Retry-After``, delay, malformed JSON)
and consumed one per request. :attr:`Emulator.requests` logs every request with the identity it
presented (``basic:<user>``, ``oauth:<client>[/<user>]``, ``jwt:<client>/<user_name>`` for a user
token, ``apikey:<label>``) and never a secret.
All scalar values are strings, as in the real API.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import functools
import json
import math
import os
import re
import secrets
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mcp_providers.plugins.servicenow.emulator_jwt import GRANT_TYPE, AssertionRefused, JwtBearerClient, check_assertion
from mcp_providers.plugins.servicenow.seed import REFERENCES, seed_tables

__all__ = [
    "Emulator",
    "Fault",
    "LoggedRequest",
    "QuerySyntaxError",
    "demo_instances",
    "parse_encoded_query",
    "serve_forever",
]

Record = dict[str, str]
DisplayMode = Literal["true", "false", "all"]

_CHOICES: dict[str, dict[str, dict[str, str]]] = {
    "incident": {
        "state": {"1": "New", "2": "In Progress", "3": "On Hold", "6": "Resolved", "7": "Closed", "8": "Canceled"},
        "priority": {"1": "1 - Critical", "2": "2 - High", "3": "3 - Moderate", "4": "4 - Low", "5": "5 - Planning"},
        "urgency": {"1": "1 - High", "2": "2 - Medium", "3": "3 - Low"},
        "impact": {"1": "1 - High", "2": "2 - Medium", "3": "3 - Low"},
    },
    "problem": {"state": {"101": "New", "102": "Assess", "103": "Root Cause Analysis", "107": "Closed"}},
    "change_request": {"state": {"-5": "New", "-4": "Assess", "-2": "Scheduled", "0": "Review", "3": "Closed"}},
}
_DISPLAY_FIELD = {"sys_user": "name", "sys_user_group": "name", "sys_update_set": "name", "sys_db_object": "label"}
_NUMBER_PREFIX = {"incident": "INC", "problem": "PRB", "change_request": "CHG"}
_JOURNAL_FIELDS = ("comments", "work_notes")
_READ_ONLY = ("sys_id", "sys_created_on", "sys_created_by", "sys_updated_by")
_EXTRA_COLUMNS = {
    "sys_journal_field": ("sys_id", "name", "element", "element_id", "value", "sys_created_on", "sys_created_by"),
}
_TERM = re.compile(
    r"^([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)?)"
    r"(ISNOTEMPTY|ISEMPTY|NOT IN|NOTLIKE|STARTSWITH|ENDSWITH|LIKE|IN|!=|>=|<=|=|>|<)(.*)$",
    re.DOTALL,
)


# -- encoded queries -----------------------------------------------------------------------------


class QuerySyntaxError(ValueError):
    """The encoded query cannot be parsed (the emulator answers 400)."""


@dataclass(frozen=True, slots=True)
class Term:
    """One condition ``<field><operator><value>``."""

    field: str
    operator: str
    value: str


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """An encoded query: OR'd groups (``^NQ``) of AND'd clauses of OR'd terms, plus sort keys."""

    groups: tuple[tuple[tuple[Term, ...], ...], ...]
    orders: tuple[tuple[str, bool], ...]
    unparsed: tuple[str, ...]


def parse_encoded_query(query: str) -> ParsedQuery:
    """Parse ``sysparm_query``.

    >>> parse_encoded_query("active=true^priority=1^ORpriority=2^ORDERBYDESCnumber").orders
    (('number', True),)

    :raises QuerySyntaxError: the query contains ``^^`` (no primary source says it is an escape, so
        it is refused instead of being split silently).
    """
    if "^^" in query:
        raise QuerySyntaxError("'^^' in sysparm_query is not supported: a caret cannot be escaped")
    groups: list[tuple[tuple[Term, ...], ...]] = []
    orders: list[tuple[str, bool]] = []
    unparsed: list[str] = []
    for group_text in query.split("^NQ") if query else []:
        clauses: list[list[Term]] = []
        for part in group_text.split("^"):
            if part in ("", "EQ"):
                continue
            if part.startswith("ORDERBYDESC"):
                orders.append((part[len("ORDERBYDESC") :], True))
                continue
            if part.startswith("ORDERBY"):
                orders.append((part[len("ORDERBY") :], False))
                continue
            is_or = part.startswith("OR") and bool(clauses)
            match = _TERM.match(part[2:] if is_or else part)
            if match is None:
                unparsed.append(part)
                continue
            term = Term(match.group(1), match.group(2), match.group(3))
            if is_or:
                clauses[-1].append(term)
            else:
                clauses.append([term])
        groups.append(tuple(tuple(c) for c in clauses))
    return ParsedQuery(tuple(groups), tuple(orders), tuple(unparsed))


def _as_number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _compare(operator: str, actual: str, expected: str) -> bool:
    if operator == "=":
        return actual == expected
    if operator == "!=":
        return actual != expected
    if operator == "LIKE":
        return expected.casefold() in actual.casefold()
    if operator == "NOTLIKE":
        return expected.casefold() not in actual.casefold()
    if operator == "STARTSWITH":
        return actual.casefold().startswith(expected.casefold())
    if operator == "ENDSWITH":
        return actual.casefold().endswith(expected.casefold())
    if operator == "IN":
        return actual in expected.split(",")
    if operator == "NOT IN":
        return actual not in expected.split(",")
    if operator == "ISEMPTY":
        return actual == ""
    if operator == "ISNOTEMPTY":
        return actual != ""
    a, b = _as_number(actual), _as_number(expected)
    left: Any = a if a is not None and b is not None else actual
    right: Any = b if a is not None and b is not None else expected
    return bool({">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right}[operator])


# -- request log and faults ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request the emulator received.

    :param principal: the identity presented, never a secret: ``basic:<user>``,
        ``oauth:<client id>`` or ``oauth:<client id>/<user>``, ``jwt:<client id>/<user_name>``
        (a JWT bearer grant's user token, and the grant that issued it), ``apikey:<label>``,
        ``bearer:unknown``, ``apikey:unknown``, or ``None`` when no credentials were sent.
    :param authenticated: whether those credentials were accepted.
    :param status: the status code answered.
    :param fault: whether a queued :class:`Fault` produced the answer.
    :param detail: for ``/oauth_token.do``, why a grant was refused (which check failed; never a
        secret), which the answer itself does not say.
    """

    method: str
    path: str
    query: Mapping[str, str]
    principal: str | None
    authenticated: bool
    status: int
    body: Any = None
    fault: bool = False
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Fault:
    """What to do to one request instead of (or before) answering it normally.

    :param status: answer with this status and ServiceNow's error envelope (``None``: answer
        normally, after any delay).
    :param retry_after: value of the ``Retry-After`` header, e.g. ``"1"`` (with ``status=429``).
    :param delay_seconds: wait this long before answering (a slow response).
    :param malformed: answer 200 with a body that is not JSON.
    :param truncated: answer 200 declaring a longer body than it sends, then drop the connection.
    :param message: the envelope's ``error.message`` (a default per status otherwise).
    :param detail: the envelope's ``error.detail``.
    :param scope: which requests it applies to: ``"table"`` (Table API), ``"oauth"``
        (``/oauth_token.do``) or ``"any"``.
    """

    status: int | None = None
    retry_after: str | None = None
    delay_seconds: float = 0.0
    malformed: bool = False
    message: str | None = None
    detail: str | None = None
    scope: Literal["table", "oauth", "any"] = "table"
    truncated: bool = False


_DEFAULT_MESSAGES = {
    400: ("Bad Request", "The request could not be understood"),
    401: ("User Not Authenticated", "Required to provide Auth information"),
    403: ("Operation Failed", "ACL restricts the operation"),
    404: ("No Record found", "Record doesn't exist or ACL restricts the record retrieval"),
    429: ("Rate limit exceeded", "Too many requests for this user; retry later"),
    500: ("Internal Server Error", "An unexpected error occurred"),
    503: ("Service Unavailable", "The instance is unavailable"),
}


def _error(status: int, message: str | None = None, detail: str | None = None,
           headers: Mapping[str, str] | None = None) -> JSONResponse:  # fmt: skip
    default_message, default_detail = _DEFAULT_MESSAGES.get(status, ("Error", None))
    body = {"error": {"message": message or default_message, "detail": detail or default_detail}, "status": "failure"}
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


@dataclass(slots=True)
class _Token:
    client_id: str
    user: str | None
    expires_at: float
    refresh_token: str | None = None
    acting: str | None = None  # the sys_user user_name of a JWT bearer grant's token


@dataclass(frozen=True, slots=True)
class _Scope:
    """What a user token may read: incidents of ``groups`` (sys_ids), or everything if ``admin``."""

    user_name: str
    admin: bool
    groups: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Caller:
    """Who sent a request: the logged ``principal``, whether it authenticated, and for a user
    token (JWT bearer grant) the row-level ``scope``; ``None`` for service accounts (see all)."""

    principal: str | None
    ok: bool
    scope: _Scope | None = None


# -- the emulator --------------------------------------------------------------------------------


@dataclass(slots=True)
class _State:
    tables: dict[str, list[Record]]
    columns: dict[str, set[str]]
    faults: deque[Fault] = field(default_factory=deque)
    requests: list[LoggedRequest] = field(default_factory=list)
    tokens: dict[str, _Token] = field(default_factory=dict)
    refresh_tokens: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    hidden: dict[str, set[str]] = field(default_factory=dict)
    seen_jti: set[str] = field(default_factory=set)
    rate_limit_seconds: float | None = None
    rate_limited_until: float | None = None


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
        :mod:`~mcp_providers.plugins.servicenow.emulator_jwt` for the checks. Raises
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
        data = copy.deepcopy(dict(tables)) if tables is not None else seed_tables(instance)
        columns = {name: {k for row in rows for k in row} for name, rows in data.items()}
        for name, extra in _EXTRA_COLUMNS.items():
            columns.setdefault(name, set()).update(extra)
            data.setdefault(name, [])
        self._state = _State(tables=data, columns=columns)
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.base_url = ""
        self.app = self._build_app()

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
                  detail: str | None = None, scope: Literal["table", "oauth", "any"] = "table",
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
        with self._lock:
            self._state.faults.extend([fault] * times)

    def hide(self, table: str, *sys_ids: str) -> None:
        """Mode: ACLs hide these rows of ``table`` from every caller, as a real instance does it.

        A list answer applies ``sysparm_offset``/``sysparm_limit`` first and removes hidden rows
        from the page afterwards, so a page holds fewer rows than asked while ``X-Total-Count``
        (and the ``Link`` header) still count them; reading a hidden row by sys_id answers 404.
        """
        with self._lock:
            self._state.hidden.setdefault(table, set()).update(sys_ids)

    def rate_limit(self, seconds: float | None) -> None:
        """Mode: a rate-limit rule. The next Table API request starts a window of ``seconds``;
        every request inside it is answered 429 with ``Retry-After`` (whole seconds left, at least
        1), ``X-RateLimit-Limit``, ``X-RateLimit-Reset`` (unix time) and ``X-RateLimit-Rule``.
        After the window the rule is spent. ``None`` removes the rule.
        """
        with self._lock:
            self._state.rate_limit_seconds = seconds
            self._state.rate_limited_until = None

    def clear_faults(self) -> None:
        """Drop every queued fault."""
        with self._lock:
            self._state.faults.clear()

    def expire_tokens(self) -> None:
        """Expire every access token issued so far, user tokens too (refresh tokens stay valid)."""
        with self._lock:
            for token in self._state.tokens.values():
                token.expires_at = 0.0

    def revoke_user_tokens(self, user_name: str) -> int:
        """Revoke every user token issued for ``user_name`` (they answer 401 from now on), as an
        administrator revoking the user's OAuth tokens does; returns how many were revoked."""
        with self._lock:
            tokens = [t for t in self._state.tokens.values() if t.acting == user_name and t.expires_at > 0]
            for token in tokens:
                token.expires_at = 0.0
        return len(tokens)

    def token_requests(self) -> list[LoggedRequest]:
        """The logged ``/oauth_token.do`` requests, oldest first (``detail`` says why one was refused)."""
        return [r for r in self.requests if r.path == "/oauth_token.do"]

    @property
    def requests(self) -> list[LoggedRequest]:
        """A copy of the request log, oldest first."""
        with self._lock:
            return list(self._state.requests)

    def table_requests(self) -> list[LoggedRequest]:
        """The logged Table API requests (``/api/now/...``), oldest first."""
        return [r for r in self.requests if r.path.startswith("/api/now/")]

    def clear_requests(self) -> None:
        """Empty the request log."""
        with self._lock:
            self._state.requests.clear()

    def issued_tokens(self) -> list[str]:
        """Every access and refresh token issued so far (so tests can check none leaks)."""
        with self._lock:
            return list(self._state.tokens) + list(self._state.refresh_tokens)

    def records(self, table: str) -> list[Record]:
        """A copy of the rows of ``table`` as stored (raw values, journal fields empty)."""
        with self._lock:
            return copy.deepcopy(self._state.tables.get(table, []))

    # -- HTTP

    def _build_app(self) -> Starlette:
        routes = []
        for prefix in ("/api/now/table", "/api/now/v2/table"):
            routes += [
                Route(prefix + "/{table}", self._collection, methods=["GET", "POST"]),
                Route(prefix + "/{table}/{sys_id}", self._record, methods=["GET", "PUT", "PATCH", "DELETE"]),
            ]
        routes.append(Route("/api/now/stats/{table}", self._stats, methods=["GET"]))
        routes.append(Route("/oauth_token.do", self._oauth_token, methods=["POST"]))
        return Starlette(routes=routes)

    def _log(self, request: Request, principal: str | None, authenticated: bool, status: int,
             body: Any = None, fault: bool = False) -> None:  # fmt: skip
        entry = LoggedRequest(method=request.method, path=request.url.path, query=dict(request.query_params),
                              principal=principal, authenticated=authenticated, status=status, body=body,
                              fault=fault)  # fmt: skip
        with self._lock:
            self._state.requests.append(entry)

    def _next_fault(self, scope: Literal["table", "oauth"]) -> Fault | None:
        with self._lock:
            faults = self._state.faults
            for index, fault in enumerate(faults):
                if fault.scope in (scope, "any"):
                    del faults[index]
                    return fault
        return None

    async def _apply_fault(self, fault: Fault | None) -> Response | None:
        if fault is None:
            return None
        if fault.delay_seconds:
            await anyio.sleep(fault.delay_seconds)
        if fault.malformed:
            return Response('{"result": [ {"sys_id": ', status_code=200, media_type="application/json")
        if fault.truncated:
            body = b'{"result": [ {"sys_id": "0123'
            headers = {"content-length": str(len(body) + 4096)}
            return Response(body, status_code=200, media_type="application/json", headers=headers)
        if fault.status is not None:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return _error(fault.status, fault.message, fault.detail, headers)
        return None

    def _identify(self, request: Request) -> _Caller:
        header = request.headers.get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(credentials, validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return _Caller("basic:malformed", False)
            expected = self.users.get(user)
            ok = expected is not None and secrets.compare_digest(expected, password)
            return _Caller(f"basic:{user}", ok)
        if scheme.lower() == "bearer":
            with self._lock:
                token = self._state.tokens.get(credentials)
                if token is None:
                    return _Caller("bearer:unknown", False)
                live = token.expires_at > time.monotonic()
                if token.acting is not None:
                    scope = self._scope(token.acting)
                    return _Caller(f"jwt:{token.client_id}/{token.acting}", live and scope is not None, scope)
            who = f"oauth:{token.client_id}" + (f"/{token.user}" if token.user else "")
            return _Caller(who, live)
        key = request.headers.get("x-sn-apikey")
        if key is not None:
            label = self.api_keys.get(key)
            return _Caller(f"apikey:{label}", True) if label is not None else _Caller("apikey:unknown", False)
        return _Caller(None, False)

    def _scope(self, user_name: str) -> _Scope | None:
        """The row-level scope of an active ``sys_user`` (call with the lock held); ``None`` if the
        user is unknown or inactive."""
        user = next((u for u in self._state.tables.get("sys_user", []) if u.get("user_name") == user_name), None)
        if user is None or user.get("active") != "true":
            return None
        roles = {r.strip() for r in user.get("roles", "").split(",")}
        members = self._state.tables.get("sys_user_grmember", [])
        groups = frozenset(m.get("group", "") for m in members if m.get("user") == user["sys_id"])
        return _Scope(user_name, "admin" in roles, groups)

    def _visible(self, table: str, row: Record, scope: _Scope | None) -> bool:
        """Whether a caller of ``scope`` may read ``row`` (call with the lock held)."""
        if scope is None or scope.admin:
            return True
        if table == "incident":
            return row.get("assignment_group", "") in scope.groups
        if table == "sys_journal_field" and row.get("name") == "incident":
            parent = self._find("incident", row.get("element_id", ""))
            return parent is not None and self._visible("incident", parent, scope)
        return True

    def _rate_limited(self) -> Response | None:
        """A 429 answer while the rate-limit rule's window is open, else ``None``."""
        with self._lock:
            state = self._state
            if state.rate_limit_seconds is None:
                return None
            now = time.monotonic()
            if state.rate_limited_until is None:
                state.rate_limited_until = now + state.rate_limit_seconds
            elif now >= state.rate_limited_until:
                state.rate_limit_seconds = state.rate_limited_until = None
                return None
            left = state.rate_limited_until - now
        headers = {"Retry-After": str(max(1, math.ceil(left))), "X-RateLimit-Limit": "1",
                   "X-RateLimit-Reset": str(int(time.time() + left)), "X-RateLimit-Rule": "e" * 32}  # fmt: skip
        return _error(429, headers=headers)

    def _unauthorized(self, request: Request, message: str | None = None) -> JSONResponse:
        detail = None
        if self.echo_authorization:
            echoed = {k: request.headers[k] for k in ("authorization", "x-sn-apikey") if k in request.headers}
            detail = "Rejected request headers: " + "; ".join(f"{k}: {v}" for k, v in echoed.items())
        return _error(401, message, detail)

    async def _guard(self, request: Request) -> tuple[Response | None, _Caller]:
        """Identify the caller, apply any queued fault or rate-limit rule, then refuse
        unauthenticated requests."""
        caller = self._identify(request)
        fault = self._next_fault("table")
        answered = await self._apply_fault(fault)
        if answered is not None and answered.status_code == 401 and self.echo_authorization:
            answered = self._unauthorized(request, fault.message if fault else None)
        answered = answered or self._rate_limited()
        if answered is not None:
            self._log(request, caller.principal, caller.ok, answered.status_code, fault=True)
            return answered, caller
        if not caller.ok:
            response = self._unauthorized(request)
            self._log(request, caller.principal, caller.ok, 401)
            return response, caller
        return None, caller

    def _table(self, request: Request) -> tuple[str, list[Record] | None]:
        table = request.path_params["table"]
        return table, self._state.tables.get(table)

    def _query(self, request: Request, caller: _Caller) -> tuple[ParsedQuery | None, Response | None]:
        """``sysparm_query`` parsed, or the 400 answer (logged) when it cannot be."""
        try:
            return parse_encoded_query(request.query_params.get("sysparm_query", "")), None
        except QuerySyntaxError as exc:
            self._log(request, caller.principal, caller.ok, 400)
            return None, _error(400, "Invalid query", str(exc))

    def _select(self, table: str, rows: list[Record], parsed: ParsedQuery, scope: _Scope | None) -> list[Record]:
        """The rows matching ``parsed`` that ``scope`` may read, sorted (call with the lock held)."""
        matched = [row for row in rows if self._visible(table, row, scope) and self._matches(table, row, parsed, scope)]
        for name, descending in reversed(parsed.orders):
            matched.sort(key=functools.partial(self._sort_key, table, field=name, scope=scope), reverse=descending)
        return matched

    async def _collection(self, request: Request) -> Response:
        refused, caller = await self._guard(request)
        if refused is not None:
            return refused
        table, rows = self._table(request)
        if rows is None:
            self._log(request, caller.principal, caller.ok, 400)
            return _error(400, f"Invalid table {table}", None)
        if request.method == "POST":
            return await self._create(request, table, caller)
        params = request.query_params
        try:
            limit = int(params.get("sysparm_limit", self.default_limit))
            offset = int(params.get("sysparm_offset", 0))
            if limit < 0 or offset < 0:
                raise ValueError
        except ValueError:
            self._log(request, caller.principal, caller.ok, 400)
            return _error(400, "Invalid parameter", "sysparm_limit and sysparm_offset must be non-negative integers")
        limit = min(limit, self.default_limit)
        parsed, invalid = self._query(request, caller)
        if parsed is None:
            return invalid or _error(400)
        with self._lock:
            matched = self._select(table, rows, parsed, caller.scope)
            hidden = self._state.hidden.get(table, set())
            # hide() ACLs apply after the page is cut: hidden rows leave holes but still count
            page = [row for row in matched[offset : offset + limit] if row.get("sys_id") not in hidden]
            result = [self._render(table, row, request, caller.scope) for row in page]
        total = len(matched)
        headers: dict[str, str] = {}
        if params.get("sysparm_no_count", "false") != "true" and self.send_total_count:
            headers["X-Total-Count"] = str(total)
        suppress = params.get("sysparm_suppress_pagination_header", "false") == "true" or not self.send_link_header
        if not suppress and limit and total > limit:
            headers["Link"] = self._link_header(request, table, offset, limit, total)
        self._log(request, caller.principal, caller.ok, 200)
        if self.stream_answers:
            body = json.dumps({"result": result}).encode()
            chunks = (body[i : i + 65536] for i in range(0, len(body), 65536))
            return StreamingResponse(_aiter(chunks), headers=headers, media_type="application/json")
        return JSONResponse({"result": result}, headers=headers)

    def _link_header(self, request: Request, table: str, offset: int, limit: int, total: int) -> str:
        def url(at: int) -> str:
            query = dict(request.query_params) | {"sysparm_offset": str(at), "sysparm_limit": str(limit)}
            return f"{self.base_url}{request.url.path}?{urlencode(query)}"

        links = [f'<{url(0)}>;rel="first"']
        if offset > 0:
            links.append(f'<{url(max(0, offset - limit))}>;rel="prev"')
        if offset + limit < total:
            links.append(f'<{url(offset + limit)}>;rel="next"')
        links.append(f'<{url(((total - 1) // limit) * limit)}>;rel="last"')
        return ",".join(links)

    async def _stats(self, request: Request) -> Response:
        """``GET /api/now/stats/{table}`` (the Aggregate API): ``sysparm_count``, ``sysparm_group_by``
        (comma-separated fields), ``sysparm_query``, ``sysparm_display_value`` for group values."""
        refused, caller = await self._guard(request)
        if refused is not None:
            return refused
        table, rows = self._table(request)
        if rows is None:
            self._log(request, caller.principal, caller.ok, 400)
            return _error(400, f"Invalid table {table}", None)
        parsed, invalid = self._query(request, caller)
        if parsed is None:
            return invalid or _error(400)
        params = request.query_params
        group_by = [f.strip() for f in params.get("sysparm_group_by", "").split(",") if f.strip()]
        display = params.get("sysparm_display_value", "false").lower() in ("true", "all")
        result: Any
        with self._lock:
            matched = self._select(table, rows, parsed, caller.scope)
            counts: dict[tuple[str, ...], int] = {}
            for row in matched:
                key = tuple(self._lookup(table, row, name, caller.scope) or "" for name in group_by)
                counts[key] = counts.get(key, 0) + 1
            result = [
                {"stats": {"count": str(count)}, "groupby_fields": [
                    {"field": name, "value": self._display(table, name, value, caller.scope) if display else value}
                    for name, value in zip(group_by, key, strict=True)]}
                for key, count in counts.items()
            ] if group_by else {"stats": {"count": str(len(matched))}}  # fmt: skip
        self._log(request, caller.principal, caller.ok, 200)
        return JSONResponse({"result": result})

    async def _record(self, request: Request) -> Response:
        refused, caller = await self._guard(request)
        if refused is not None:
            return refused
        principal, ok = caller.principal, caller.ok
        table, rows = self._table(request)
        if rows is None:
            self._log(request, principal, ok, 400)
            return _error(400, f"Invalid table {table}", None)
        sys_id = request.path_params["sys_id"]
        with self._lock:
            hidden = self._state.hidden.get(table, set())
            row = next((r for r in rows if r.get("sys_id") == sys_id and sys_id not in hidden), None)
            if row is not None and not self._visible(table, row, caller.scope):
                row = None  # a row the user may not read answers exactly as a missing one
        if row is None:
            self._log(request, principal, ok, 404)
            return _error(404)
        if request.method == "GET":
            with self._lock:
                rendered = self._render(table, row, request, caller.scope)
            self._log(request, principal, ok, 200)
            return JSONResponse({"result": rendered})
        if request.method == "DELETE":
            with self._lock:
                rows.remove(row)
            self._log(request, principal, ok, 204)
            return Response(status_code=204)
        values = await self._body(request)
        if values is None:
            self._log(request, principal, ok, 400)
            return _error(400, "Invalid JSON body", "The request body must be a JSON object")
        with self._lock:
            self._write(table, row, values, caller)
            rendered = self._render(table, row, request, caller.scope)
        self._log(request, principal, ok, 200, body=values)
        return JSONResponse({"result": rendered})

    async def _create(self, request: Request, table: str, caller: _Caller) -> Response:
        values = await self._body(request)
        if values is None:
            self._log(request, caller.principal, True, 400)
            return _error(400, "Invalid JSON body", "The request body must be a JSON object")
        now = _now()
        with self._lock:
            rows = self._state.tables[table]
            row: Record = dict.fromkeys(self._state.columns[table], "")
            row.update({"sys_id": uuid.uuid4().hex, "sys_created_on": now, "sys_updated_on": now})
            if table in _NUMBER_PREFIX:
                prefix = _NUMBER_PREFIX[table]
                taken = [int(r["number"][len(prefix) :]) for r in rows if r.get("number", "").startswith(prefix)]
                row["number"] = f"{prefix}{(max(taken) + 1 if taken else 10001):07d}"
                row["active"] = "true"
                row["state"] = "1" if table == "incident" else row.get("state", "")
            if caller.scope is not None:
                self._state.columns[table].add("sys_created_by")
                row["sys_created_by"] = caller.scope.user_name
            self._write(table, row, values, caller)
            rows.append(row)
            rendered = self._render(table, row, request, caller.scope)
        self._log(request, caller.principal, True, 201, body=values)
        return JSONResponse({"result": rendered}, status_code=201)

    async def _body(self, request: Request) -> dict[str, Any] | None:
        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError:
            return None
        if isinstance(body, list):  # the Table API uses only the first record of a list
            body = body[0] if body else {}
        return body if isinstance(body, dict) else None

    def _write(self, table: str, row: Record, values: Mapping[str, Any], caller: _Caller) -> None:
        """Apply supplied fields (unknown ones are ignored, as ServiceNow does); journal fields append.

        A user token's write is stamped with its user_name (``sys_updated_by``, the journal's
        ``sys_created_by``); a service account's journal entry carries its logged principal."""
        columns = self._state.columns[table]
        now = _now()
        author = caller.scope.user_name if caller.scope is not None else caller.principal or ""
        for name, value in values.items():
            text = value if isinstance(value, str) else json.dumps(value)
            if name in _JOURNAL_FIELDS:
                if text:
                    self._state.tables["sys_journal_field"].append({
                        "sys_id": uuid.uuid4().hex, "name": table, "element": name, "element_id": row["sys_id"],
                        "value": text, "sys_created_on": now, "sys_created_by": author,
                    })  # fmt: skip
                continue
            if name in columns and name not in _READ_ONLY:
                row[name] = text
        if table == "incident" and row.get("state") in ("6", "7", "8"):
            row["active"] = "false"
        row["sys_updated_on"] = now
        if caller.scope is not None:
            columns.add("sys_updated_by")
            row["sys_updated_by"] = caller.scope.user_name

    # -- values

    def _lookup(self, table: str, row: Record, path: str, scope: _Scope | None = None) -> str | None:
        """Raw value of ``path`` (one level of dot-walking); ``None`` for an unknown field. A walk to
        a record ``scope`` may not read gives ``""``, as a walk to a missing one does."""
        name, _, rest = path.partition(".")
        if name not in self._state.columns.get(table, ()):
            return None
        value = row.get(name, "")
        if not rest:
            return value
        target_table = REFERENCES.get(table, {}).get(name)
        if target_table is None:
            return None
        target = self._find(target_table, value)
        readable = target is not None and self._visible(target_table, target, scope)
        return target.get(rest, "") if target is not None and readable else ""

    def _find(self, table: str, sys_id: str) -> Record | None:
        return next((r for r in self._state.tables.get(table, []) if r.get("sys_id") == sys_id), None)

    def _matches(self, table: str, row: Record, parsed: ParsedQuery, scope: _Scope | None) -> bool:
        if not parsed.groups:
            return True
        return any(all(self._clause(table, row, clause, scope) for clause in group) for group in parsed.groups)

    def _clause(self, table: str, row: Record, clause: tuple[Term, ...], scope: _Scope | None) -> bool:
        results = []
        for term in clause:
            actual = self._lookup(table, row, term.field, scope)
            # an unknown field makes the term invalid; ServiceNow ignores invalid terms by default
            results.append(True if actual is None else _compare(term.operator, actual, term.value))
        return any(results)

    def _sort_key(self, table: str, row: Record, *, field: str, scope: _Scope | None) -> tuple[int, float, str]:
        value = self._lookup(table, row, field, scope) or ""
        number = _as_number(value)
        return (0, number, "") if number is not None else (1, 0.0, value)

    def _display(self, table: str, name: str, value: str, scope: _Scope | None) -> str:
        target_table = REFERENCES.get(table, {}).get(name)
        if target_table is not None:
            target = self._find(target_table, value)
            field_name = _DISPLAY_FIELD.get(target_table, "number")
            readable = target is not None and self._visible(target_table, target, scope)
            return target.get(field_name, "") if target is not None and readable else ""
        return _CHOICES.get(table, {}).get(name, {}).get(value, value)

    def _render(self, table: str, row: Record, request: Request, scope: _Scope | None) -> dict[str, Any]:
        params = request.query_params
        mode = params.get("sysparm_display_value", "false").lower()
        exclude_link = params.get("sysparm_exclude_reference_link", "false").lower() == "true"
        wanted = [f.strip() for f in params.get("sysparm_fields", "").split(",") if f.strip()]
        names = wanted or list(row)
        out: dict[str, Any] = {}
        for name in names:
            value = self._lookup(table, row, name, scope)
            if value is None:
                continue
            ref = REFERENCES.get(table, {}).get(name) if "." not in name else None
            link = f"{self.base_url}/api/now/table/{ref}/{value}" if ref and value and not exclude_link else None
            if mode == "true":
                display = self._display(table, name, value, scope) if "." not in name else value
                out[name] = {"display_value": display, "link": link} if link else display
            elif mode == "all":
                display = self._display(table, name, value, scope) if "." not in name else value
                cell: dict[str, str] = {"display_value": display, "value": value}
                if link:
                    cell["link"] = link
                out[name] = cell
            else:
                out[name] = {"link": link, "value": value} if link else value
        return out

    # -- OAuth

    async def _oauth_token(self, request: Request) -> Response:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode(errors="replace")).items()}
        header_client = self._basic_client(request)
        client_id = form.get("client_id") or (header_client[0] if header_client else "")
        client_secret = form.get("client_secret") or (header_client[1] if header_client else "")
        grant = form.get("grant_type", "")
        principal = f"oauth:{client_id}" if client_id else None
        safe_query = {"grant_type": grant}
        fault = self._next_fault("oauth")
        answered = await self._apply_fault(fault)
        if answered is not None:
            self._log_oauth(request, principal, False, answered.status_code, safe_query, fault=True)
            return answered
        if grant == GRANT_TYPE:
            return self._jwt_grant(request, form, client_id, client_secret)
        expected = self.oauth_clients.get(client_id)
        if expected is None or not secrets.compare_digest(expected, client_secret):
            self._log_oauth(request, principal, False, 401, safe_query)
            return JSONResponse({"error": "access_denied", "error_description": "access_denied"}, status_code=401)
        user: str | None = None
        if grant == "password":
            user = form.get("username", "")
            known = self.users.get(user)
            if known is None or not secrets.compare_digest(known, form.get("password", "")):
                self._log_oauth(request, f"oauth:{client_id}/{user}", False, 401, safe_query)
                return JSONResponse({"error": "access_denied", "error_description": "access_denied"}, status_code=401)
        elif grant == "refresh_token":
            with self._lock:
                owner = self._state.refresh_tokens.get(form.get("refresh_token", ""))
            if owner is None or owner[0] != client_id:
                self._log_oauth(request, principal, False, 401, safe_query)
                return JSONResponse({"error": "invalid_grant", "error_description": "invalid_grant"}, status_code=401)
            user = owner[1]
        elif grant != "client_credentials":
            self._log_oauth(request, principal, False, 400, safe_query)
            return JSONResponse({"error": "unsupported_grant_type", "error_description": grant}, status_code=400)
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24) if grant in ("password", "refresh_token") else None
        with self._lock:
            expires_at = time.monotonic() + self.token_lifetime_seconds
            self._state.tokens[access] = _Token(client_id, user, expires_at, refresh)
            if refresh is not None:
                self._state.refresh_tokens[refresh] = (client_id, user)
        who = f"oauth:{client_id}" + (f"/{user}" if user else "")
        self._log_oauth(request, who, True, 200, safe_query)
        body: dict[str, Any] = {"access_token": access, "scope": form.get("scope", "useraccount"),
                                "token_type": "Bearer", "expires_in": self.token_lifetime_seconds}  # fmt: skip
        if refresh is not None:
            body["refresh_token"] = refresh
        return JSONResponse(body)

    def _jwt_grant(self, request: Request, form: Mapping[str, str], client_id: str, client_secret: str) -> Response:
        """The JWT bearer grant: client, assertion (:func:`check_assertion`), then the user mapping.

        Every refusal is a 401 ``{"error": "access_denied", ...}`` that does not say which check
        failed; the request log's ``detail`` does."""
        query = {"grant_type": GRANT_TYPE}

        def refuse(reason: str) -> Response:
            self._log_oauth(request, f"oauth:{client_id}" if client_id else None, False, 401, query, detail=reason)
            return JSONResponse({"error": "access_denied", "error_description": "access_denied"}, status_code=401)

        client = self.jwt_bearer
        if client is None:
            return refuse("no OAuth JWT API endpoint is configured on this instance")
        if not client.secret_matches(client_id, client_secret):
            return refuse("client id or client secret is wrong")
        with self._lock:
            issued = self._issue_user_token(form.get("assertion", ""), client)
        if isinstance(issued, str):
            return refuse(issued)
        access, user_name = issued
        self._log_oauth(request, f"jwt:{client_id}/{user_name}", True, 200, query)
        return JSONResponse({"access_token": access, "token_type": "Bearer", "expires_in": self.token_lifetime_seconds,
                             "scope": form.get("scope", "useraccount")})  # fmt: skip

    def _issue_user_token(self, assertion: str, client: JwtBearerClient) -> tuple[str, str] | str:
        """Check ``assertion`` and map its ``sub``; ``(access token, user_name)`` or the refusal
        reason (call with the lock held)."""
        try:
            claims = check_assertion(assertion, client, f"{self.base_url}/oauth_token.do", self._state.seen_jti)
        except AssertionRefused as exc:
            return str(exc)
        users = self._state.tables.get("sys_user", [])
        user = next((u for u in users if u.get(client.user_field) == claims["sub"]), None)
        if user is None:
            return f"sub names no sys_user by {client.user_field}"
        if user.get("active") != "true":
            return f"sys_user {user.get('user_name')!r} is not active"
        access = secrets.token_urlsafe(24)
        expires_at = time.monotonic() + self.token_lifetime_seconds
        self._state.tokens[access] = _Token(client.client_id, None, expires_at, acting=user["user_name"])
        return access, user["user_name"]

    def _log_oauth(self, request: Request, principal: str | None, ok: bool, status: int, query: dict[str, str],
                   fault: bool = False, detail: str | None = None) -> None:  # fmt: skip
        entry = LoggedRequest(method=request.method, path=request.url.path, query=query, principal=principal,
                              authenticated=ok, status=status, fault=fault, detail=detail)  # fmt: skip
        with self._lock:
            self._state.requests.append(entry)

    @staticmethod
    def _basic_client(request: Request) -> tuple[str, str] | None:
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):
            client_id, _, secret = base64.b64decode(credentials, validate=True).decode().partition(":")
            return client_id, secret
        return None


async def _aiter(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")


def serve_forever(emulators: Mapping[str, Emulator], ready: Callable[[Mapping[str, str]], None] | None = None,
                  stop: threading.Event | None = None) -> None:  # fmt: skip
    """Start several emulators, report ``{instance: base_url}`` to ``ready``, and block until ``stop``.

    For demos: ``serve_forever({"dev": Emulator("dev", users=...)}, print)``.
    """
    with contextlib.ExitStack() as stack:
        urls = {name: stack.enter_context(emu).base_url for name, emu in emulators.items()}
        if ready is not None:
            ready(urls)
        (stop or threading.Event()).wait()


DEMO_ENV = {"dev": "MCP_PROVIDERS_DEMO_SN_DEV_PASSWORD", "prod": "MCP_PROVIDERS_DEMO_SN_PROD_SECRET"}
"""Environment variables :func:`demo_instances` puts the demo credentials in."""


@contextlib.contextmanager
def demo_instances() -> Iterator[dict[str, Any]]:
    """Start emulated ``dev`` (Basic auth) and ``prod`` (OAuth client credentials) instances.

    Fresh random credentials are generated and exported in the variables named by
    :data:`DEMO_ENV` for as long as the context lasts (the previous values are restored after).

    :returns: (yields) the plugin's settings table, ``{"instances": [...]}``, naming those
        variables; it holds no secret.
    """
    password = secrets.token_urlsafe(18)
    client_secret = secrets.token_urlsafe(18)
    saved = {name: os.environ.get(name) for name in DEMO_ENV.values()}
    dev = Emulator("dev", users={"demo.integration": password})
    prod = Emulator("prod", oauth_clients={"mcp-providers-demo": client_secret})
    try:
        with dev, prod:
            os.environ[DEMO_ENV["dev"]] = password
            os.environ[DEMO_ENV["prod"]] = client_secret
            yield {"instances": [
                {"name": "dev", "url": dev.base_url, "description": "Emulated development instance",
                 "auth": {"type": "basic", "username": "demo.integration", "password_env": DEMO_ENV["dev"]}},
                {"name": "prod", "url": prod.base_url, "description": "Emulated production instance",
                 "auth": {"type": "oauth", "grant_type": "client_credentials", "client_id": "mcp-providers-demo",
                          "client_secret_env": DEMO_ENV["prod"]}},
            ]}  # fmt: skip
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> None:
    """``python -m mcp_providers.plugins.servicenow.emulator [--port P]``: serve ``dev`` on ``P``
    and ``prod`` on ``P + 1`` (ephemeral ports without ``--port``) until interrupted.

    Prints the instance URLs, the environment variables to export and a ``[plugins.servicenow]``
    config to paste; the credentials are random for each run and printed, since they guard
    nothing but this local emulator.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m mcp_providers.plugins.servicenow.emulator",
        description="Serve emulated ServiceNow instances dev and prod on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="port of dev (prod uses the next one); 0: ephemeral")
    args = parser.parse_args(argv)
    password, client_secret = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
    emulators = {
        "dev": Emulator("dev", users={"emulator.user": password}, port=args.port),
        "prod": Emulator("prod", oauth_clients={"emulator-client": client_secret},
                         port=args.port + 1 if args.port else 0),
    }  # fmt: skip

    def ready(urls: Mapping[str, str]) -> None:
        print("\n".join(f"{name}: {url}" for name, url in urls.items()))
        print(f"\nexport SN_EMULATOR_DEV_PASSWORD={password}\nexport SN_EMULATOR_PROD_SECRET={client_secret}\n")
        print(f"""[[plugins.servicenow.instances]]
name = "dev"
url = "{urls['dev']}"
auth = {{ type = "basic", username = "emulator.user", password_env = "SN_EMULATOR_DEV_PASSWORD" }}

[[plugins.servicenow.instances]]
name = "prod"
url = "{urls['prod']}"
[plugins.servicenow.instances.auth]
type = "oauth"
client_id = "emulator-client"
client_secret_env = "SN_EMULATOR_PROD_SECRET"
""", flush=True)  # fmt: skip

    with contextlib.suppress(KeyboardInterrupt):
        serve_forever(emulators, ready, stop)


if __name__ == "__main__":
    main()
