"""HTTP access to configured ServiceNow instances: one ``httpx2.AsyncClient`` per instance.

:class:`InstancePool` opens one :class:`InstanceClient` per configured instance when the first
provider's ``lifespan()`` is entered and closes them when the last one leaves. Every call names
its instance explicitly; there is no current or default instance and nothing is switched.

Behaviour shared by every call:

- auth: HTTP Basic, OAuth 2.0 (:class:`OAuthFlow`: token cached until it expires, fetched again
  once when the instance answers 401) or an API key in ``x-sn-apikey``: one service account for
  every caller; or, per caller, ``jwt_bearer`` (:class:`JwtBearerUpstream`): the request's own
  user token from the credential broker, sent as ``Authorization: Bearer`` on that request only
  (the instance's client carries no credential of its own), forgotten and obtained once more when
  the instance answers 401, and never replaced by a service account;
- 429: the instance's shared :class:`~.backoff.Backoff` is held for ``Retry-After`` seconds (at
  most ``max_retry_after_seconds``), so every request to it waits, then the request is retried, at
  most ``max_retries`` times; when retries run out the error states the wait asked for;
- answers are streamed and refused with ``TooLarge`` (-32004) once over ``max_response_bytes``,
  before the rest is read;
- records come back normalised (:func:`~.schema.normalise`): reference and choice fields as
  ``{"value", "display_value"}``, other fields as plain strings;
- paging follows the offsets asked for (``offset + limit``, or the ``Link`` header's next page
  when the instance sends one), never the rows received: ACLs remove rows *after* the page is cut,
  so a short page is not the last one; rows missing from a page are reported as hidden;
- failures raise :class:`ServiceNowError` (an ``UpstreamError``, JSON-RPC -32006) or ``NotFound``
  (404) whose message names the instance, the operation, the status and ServiceNow's
  ``error.message``/``error.detail``; timeouts and unreachable hosts say so. No message, log
  line or result ever carries a password, secret, token or ``Authorization`` header: every
  upstream text passes the pool's :class:`~.redact.Redactor` first.
"""

from __future__ import annotations

import contextlib
import copy
import email.utils
import logging
import os
import re
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from json import loads as json_loads
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2

from mcp_providers import http as core_http
from mcp_providers.credentials import Credential, CredentialRefused, Upstream
from mcp_providers.errors import NotFound, TooLarge, UpstreamError
from mcp_providers.identity import LOCAL_ISSUER, Principal
from mcp_providers.plugins.servicenow.backoff import Backoff, LocalBackoff, wait_turn
from mcp_providers.plugins.servicenow.query import check_sys_id, check_table
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.schema import normalise
from mcp_providers.plugins.servicenow.settings import (
    ApiKeyAuth,
    BasicAuth,
    InstanceSettings,
    JwtBearerAuth,
    OAuthAuth,
    is_loopback_host,
    read_secret,
)

if TYPE_CHECKING:  # PyJWT and cryptography are imported when a JWT bearer instance needs them
    from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = [
    "JWT_BEARER_GRANT",
    "Caller",
    "CredentialSource",
    "InstanceClient",
    "InstancePool",
    "JwtBearerUpstream",
    "NoVerifiedCaller",
    "OAuthFlow",
    "Page",
    "ServiceNowError",
    "UnknownInstance",
]

log = logging.getLogger(__name__)


DisplayValue = Literal["true", "false", "all"]
_MAX_TEXT = 500


class UnknownInstance(LookupError):
    """The instance name is not configured; the message lists the configured names."""


class NoVerifiedCaller(CredentialRefused):
    """A ``jwt_bearer`` instance was asked for by a caller it cannot act for (anonymous, ``local``
    with no ``local_user``, or a token without the user claim); nothing was sent to the instance."""


class ServiceNowError(UpstreamError):
    """A ServiceNow instance answered with an error, or could not be reached.

    :ivar instance: the instance name.
    :ivar status: the HTTP status, or ``None`` for a timeout or a connection failure.
    :ivar sn_message: ServiceNow's ``error.message``, if it sent one.
    :ivar sn_detail: ServiceNow's ``error.detail``, if it sent one.
    """

    def __init__(self, message: str, *, instance: str, status: int | None = None,
                 sn_message: str | None = None, sn_detail: str | None = None) -> None:  # fmt: skip
        data = {"instance": instance, "status": status, "message": sn_message, "detail": sn_detail}
        super().__init__(message, data={k: v for k, v in data.items() if v is not None})
        self.instance = instance
        self.status = status
        self.sn_message = sn_message
        self.sn_detail = sn_detail


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a table query.

    :param records: the records, normalised (:func:`~.schema.normalise`).
    :param total: ``X-Total-Count``: records matching the query across all pages, hidden ones
        included (``None`` if the instance did not send it).
    :param offset: ``sysparm_offset`` of this page.
    :param limit: ``sysparm_limit`` asked for.
    :param next_offset: ``sysparm_offset`` of the next page (the ``Link`` header's ``rel="next"``
        if sent, else ``offset + limit`` while that is below ``total``), ``None`` on the last page.
    :param hidden: rows of this page's range the instance did not return (ACLs hide rows after the
        page is cut); ``0`` when that cannot be known (no total and no next page).
    """

    records: list[dict[str, Any]]
    total: int | None
    offset: int
    limit: int
    next_offset: int | None = None
    hidden: int = 0

    @property
    def has_more(self) -> bool:
        """Whether records exist past this page."""
        return self.next_offset is not None


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer read within the budget: status, headers and the whole body."""

    status: int
    headers: httpx2.Headers
    body: bytes


_NEXT_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?', re.IGNORECASE)


def _next_from_link(header: str | None) -> int | None:
    """``sysparm_offset`` of the ``rel="next"`` URL in a ``Link`` header, if any."""
    match = _NEXT_LINK.search(header or "")
    if match is None:
        return None
    found = parse_qs(urlsplit(match.group(1)).query).get("sysparm_offset", [""])[0]
    return int(found) if found.isdigit() else None


def _page(records: list[dict[str, Any]], *, total: int | None, offset: int, limit: int, link: str | None) -> Page:
    """Paging by the offsets asked for: the next page starts at ``offset + limit`` (or the Link
    header's next offset), whatever number of rows this one held."""
    next_offset = _next_from_link(link)
    if next_offset is None and link is None and total is not None and offset + limit < total:
        next_offset = offset + limit
    if next_offset is None and link is None and total is None and len(records) >= limit > 0:
        next_offset = offset + limit  # nothing better to go on: a full page may have a successor
    if next_offset is not None:
        expected = next_offset - offset
    elif total is not None:
        expected = max(0, min(limit, total - offset))
    else:
        expected = len(records)
    return Page(records=records, total=total, offset=offset, limit=limit, next_offset=next_offset,
                hidden=max(0, expected - len(records)))  # fmt: skip


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"


class OAuthFlow(httpx2.Auth):
    """Bearer-token auth against ``/oauth_token.do`` (client_credentials or password grant).

    The token is cached until ``expires_in`` less a margin (10 %, at most 30 s). When a request
    gets 401 the token is fetched again (with the refresh token when one was issued, else with the
    configured grant) and the request is sent once more; a second 401 is returned as is.
    """

    def __init__(self, instance: str, auth: OAuthAuth, secrets: Mapping[str, str],
                 redactor: Redactor | None = None) -> None:  # fmt: skip
        self._redactor = redactor or Redactor()
        self._instance = instance
        self._auth = auth
        self._secrets = dict(secrets)
        self._client: httpx2.AsyncClient | None = None
        self._lock = anyio.Lock()
        self._token: str | None = None
        self._refresh_token: str | None = None
        self._expires_at = 0.0
        self.fetches = 0
        """How many tokens were fetched so far (for diagnostics and tests)."""

    def bind(self, client: httpx2.AsyncClient) -> None:
        """Use ``client`` (the instance's own) for token requests."""
        self._client = client

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._current_token()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            token = await self._renew(stale=token)
            request.headers["Authorization"] = f"Bearer {token}"
            yield request

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise RuntimeError("OAuthFlow works with httpx2.AsyncClient only")

    async def _current_token(self) -> str:
        async with self._lock:
            if self._token is None or time.monotonic() >= self._expires_at:
                await self._fetch(use_refresh=self._token is not None)
            assert self._token is not None  # set by _fetch or it raised
            return self._token

    async def _renew(self, *, stale: str) -> str:
        async with self._lock:
            if self._token == stale:  # nobody renewed it while we waited for the lock
                await self._fetch(use_refresh=True)
            assert self._token is not None
            return self._token

    async def _fetch(self, *, use_refresh: bool) -> None:
        if use_refresh and self._refresh_token is not None:
            form = {"grant_type": "refresh_token", "refresh_token": self._refresh_token}
            if await self._grant(form, quiet=True):
                return
        form = {"grant_type": self._auth.grant_type}
        if self._auth.grant_type == "password":
            form |= {"username": self._auth.username or "", "password": self._secrets["password"]}
        await self._grant(form, quiet=False)

    async def _grant(self, form: dict[str, str], *, quiet: bool) -> bool:
        if self._client is None:
            raise RuntimeError("OAuthFlow.bind() was not called")
        body = form | {"client_id": self._auth.client_id, "client_secret": self._secrets["client_secret"]}
        if self._auth.scope:
            body["scope"] = self._auth.scope
        where = f"OAuth token request ({form['grant_type']} grant) to {self._auth.token_path}"
        try:
            # httpx2.Auth() is the no-op flow: the token request must not carry (or wait for) a bearer token
            # A token request writes no instance data, so it may run inside a resource read.
            with core_http.exempt(f"OAuth token request for instance {self._instance!r}"):
                response = await self._client.post(self._auth.token_path, data=body, auth=httpx2.Auth())
        except httpx2.TimeoutException as exc:
            raise ServiceNowError(f"instance {self._instance!r}: {where} timed out", instance=self._instance) from exc
        except httpx2.HTTPError as exc:
            raise ServiceNowError(
                f"instance {self._instance!r}: {where} failed: {type(exc).__name__}", instance=self._instance
            ) from exc
        self.fetches += 1
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.status_code == 200 and isinstance(payload, dict) and isinstance(payload.get("access_token"), str):
            lifetime = float(payload.get("expires_in") or 1800)
            self._token = payload["access_token"]
            self._refresh_token = payload.get("refresh_token") or self._refresh_token
            self._redactor.add(self._token, self._refresh_token)
            self._expires_at = time.monotonic() + max(0.0, lifetime - min(30.0, lifetime * 0.1))
            log.debug("instance %s: OAuth token fetched (%s grant)", self._instance, form["grant_type"])
            return True
        if quiet:
            self._refresh_token = None
            return False
        reason = ""
        if isinstance(payload, dict):
            reason = " ".join(str(payload[k]) for k in ("error", "error_description") if payload.get(k))
        env = self._auth.client_secret_env + (f" / {self._auth.password_env}" if self._auth.password_env else "")
        raise ServiceNowError(
            self._redactor.text(
                f"instance {self._instance!r}: {where} was refused with HTTP {response.status_code}"
                f"{': ' + _clip(reason) if reason else ''}; check auth.client_id and the secret(s) "
                f"in {env}"
            ),
            instance=self._instance,
            status=response.status_code,
        )


JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
"""``grant_type`` of the JWT bearer grant (RFC 7523 §2.1), as ServiceNow's ``/oauth_token.do`` takes it."""


def load_private_key(pem: str, *, instance: str, env: str) -> rsa.RSAPrivateKey:
    """The RSA private key in ``pem`` (PEM, unencrypted; ``\\n`` escapes accepted for one-line variables).

    :raises ValueError: not an unencrypted PEM private key, not RSA, or under 2048 bits; the
        message names ``env`` and never shows any part of the value.
    """
    from cryptography.exceptions import UnsupportedAlgorithm  # only with JWT bearer auth configured
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    text = pem if "\n" in pem else pem.replace("\\n", "\n")
    where = f"instance {instance!r}: environment variable {env} (from auth.private_key_env)"
    try:
        key = serialization.load_pem_private_key(text.strip().encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValueError(
            f"{where} does not hold an unencrypted PEM private key (PKCS#8 or "
            f"PKCS#1); export the key the instance's JWT verifier map has the certificate of"
        ) from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError(f"{where} holds a {type(key).__name__.lstrip('_')} key; RS256 assertions need an RSA key")
    if key.key_size < 2048:
        raise ValueError(f"{where} holds a {key.key_size}-bit RSA key; use 2048 bits or more")
    return key


class JwtBearerUpstream:
    """The :class:`~mcp_providers.credentials.Upstream` of one ``jwt_bearer`` instance.

    :meth:`obtain` signs an RS256 assertion for the caller (``iss`` = client id, ``sub`` = the
    Principal's ``user_claim``, ``aud`` = client id or token endpoint, ``iat``, ``exp``, a fresh
    ``jti``) and posts it with the client id and secret to the instance's token endpoint
    (``grant_type`` = :data:`JWT_BEARER_GRANT`); the ``access_token`` answered is a token of that
    ServiceNow user. Source: ServiceNow docs, "JSON Web token bearer grant".
    """

    def __init__(self, settings: InstanceSettings, redactor: Redactor) -> None:
        if not isinstance(settings.auth, JwtBearerAuth):
            raise TypeError(f"instance {settings.name!r} does not use jwt_bearer auth")
        self.settings = settings
        self.auth: JwtBearerAuth = settings.auth
        self._redactor = redactor
        self._http: httpx2.AsyncClient | None = None
        self._error: str | None = f"instance {settings.name!r} is not open"
        self._client_id = settings.auth.client_id or ""
        self._secret = ""
        self._key: rsa.RSAPrivateKey | None = None
        self.token_requests = 0
        """Grant requests sent so far (for diagnostics and tests)."""

    @property
    def name(self) -> str:
        """``servicenow:<instance>``: stable for the instance, part of the broker's cache key."""
        return f"servicenow:{self.settings.name}"

    def bind(self, http: httpx2.AsyncClient | None, error: str | None = None) -> str | None:
        """Use ``http`` (the instance's own client) for grant requests, reading the secrets now;
        with ``error`` (or a secret missing or malformed) every :meth:`obtain` fails saying so.

        :returns: why grants cannot be made (a missing or malformed secret, named, never shown),
            or ``None``.
        """
        self._http, self._error = http, error
        if http is None:
            return error
        name, auth = self.settings.name, self.auth
        try:
            if auth.client_id_env is not None:
                self._client_id = read_secret(auth.client_id_env, instance=name, setting="auth.client_id_env")
            self._secret = read_secret(auth.client_secret_env, instance=name, setting="auth.client_secret_env")
            pem = read_secret(auth.private_key_env, instance=name, setting="auth.private_key_env")
            self._key = load_private_key(pem, instance=name, env=auth.private_key_env)
        except ValueError as exc:
            self._http, self._error = None, str(exc)
        return self._error

    def user_of(self, principal: Principal) -> str:
        """The ServiceNow user value (the assertion's ``sub``) ``principal`` acts as.

        :raises NoVerifiedCaller: ``principal`` is anonymous, is stdio's ``local`` and no
            ``local_user`` is configured, comes from an issuer the instance does not map
            (``auth.issuers``), or carries no non-empty string in ``user_claim``.
        """
        name, claim = self.settings.name, self.auth.user_claim
        lead = (f"instance {name!r} serves each caller as their own ServiceNow user (auth type jwt_bearer), "
                f"and never as a service account")  # fmt: skip
        if principal.anonymous:
            raise NoVerifiedCaller(f"{lead}; this request has no verified caller: call over HTTP with a bearer "
                                   f"token (configure [server.auth])", data={"instance": name})  # fmt: skip
        if principal.issuer == LOCAL_ISSUER:
            if self.auth.local_user is None:
                raise NoVerifiedCaller(f"{lead}; the local (stdio) caller is not mapped to a user: set "
                                       f"auth.local_user, or call over HTTP with a bearer token",
                                       data={"instance": name})  # fmt: skip
            return self.auth.local_user
        mapped = self.auth.mapped_issuers
        if mapped and principal.issuer not in mapped:
            # A claim value names a user only within its issuer: another issuer's "alice" is not ours.
            raise NoVerifiedCaller(f"{lead}; it maps callers of {', '.join(map(repr, mapped))} only (auth.issuers), "
                                   f"and this caller's issuer is {principal.issuer!r}",
                                   data={"instance": name, "issuer": principal.issuer})  # fmt: skip
        value = principal.subject if claim == "sub" else principal.claims.get(claim)
        if not isinstance(value, str) or not value:
            raise NoVerifiedCaller(f"{lead}; the caller's token carries no {claim!r} claim (auth.user_claim), so "
                                   f"there is no user to act as: list {claim!r} in [server.auth] claims and have the "
                                   f"identity provider issue it", data={"instance": name, "claim": claim})  # fmt: skip
        return value

    def assertion(self, user: str, *, now: float | None = None) -> str:
        """The signed RS256 assertion for ``user`` (compact JWS); valid ``assertion_seconds``.

        :raises RuntimeError: the upstream is not bound (no key loaded).
        """
        if self._key is None:
            raise RuntimeError(self._error or f"instance {self.settings.name!r} has no private key loaded")
        issued = int(time.time() if now is None else now)
        audience = self._client_id if self.auth.audience == "client_id" else self.settings.url + self.auth.token_path
        claims = {"iss": self._client_id, "sub": user, "aud": audience, "iat": issued,
                  "exp": issued + self.auth.assertion_seconds, "jti": secrets.token_urlsafe(24)}  # fmt: skip
        headers = {"kid": self.auth.key_id} if self.auth.key_id else None
        import jwt  # only with JWT bearer auth configured

        return jwt.encode(claims, self._key, algorithm="RS256", headers=headers)

    async def obtain(self, principal: Principal) -> Credential:
        """A token of ``principal``'s ServiceNow user, from the JWT bearer grant.

        :raises NoVerifiedCaller: see :meth:`user_of` (nothing is sent).
        :raises CredentialRefused: the instance refused the grant (its ``error``/``error_description``
            quoted, redacted), or answered without an ``access_token``.
        :raises ServiceNowError: the instance is not open, a secret is missing, or the token
            endpoint timed out or could not be reached.
        """
        user = self.user_of(principal)
        if self._http is None:
            raise ServiceNowError(self._error or "not open", instance=self.settings.name)
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": self.assertion(user), "client_id": self._client_id,
                "client_secret": self._secret}  # fmt: skip
        response = await self._post(form, user)
        try:
            payload = response.json()
        except ValueError:
            payload = None
        token = payload.get("access_token") if isinstance(payload, dict) else None
        if response.status_code == 200 and isinstance(token, str) and token:
            lifetime = _seconds(payload.get("expires_in") if isinstance(payload, dict) else None)
            log.debug("instance %s: user token obtained (jwt_bearer grant)", self.settings.name)
            return Credential(token=token, expires_at=time.time() + lifetime, subject=user, grant="jwt_bearer")
        raise CredentialRefused(
            self._refusal(response.status_code, payload, user),
            data={"instance": self.settings.name, "status": response.status_code},
        )

    async def _post(self, form: Mapping[str, str], user: str) -> httpx2.Response:
        assert self._http is not None
        name, path = self.settings.name, self.auth.token_path
        where = f"instance {name!r}: JWT bearer token request for user {user!r} to {path}"
        self.token_requests += 1
        try:
            # A token request writes no instance data, so it may run inside a resource read.
            with core_http.exempt(f"OAuth JWT bearer token request for instance {name!r}"):
                return await self._http.post(path, data=dict(form))
        except httpx2.TimeoutException as exc:
            raise ServiceNowError(f"{where} timed out", instance=name) from exc
        except httpx2.HTTPError as exc:
            raise ServiceNowError(f"{where} failed: {type(exc).__name__}", instance=name) from exc

    def _refusal(self, status: int, payload: Any, user: str) -> str:
        reason = ""
        if isinstance(payload, dict):
            reason = " ".join(str(payload[k]) for k in ("error", "error_description") if payload.get(k))
        auth = self.auth
        client = f"auth.client_id_env {auth.client_id_env}" if auth.client_id_env else f"client {self._client_id!r}"
        return self._redactor.text(
            f"instance {self.settings.name!r} refused a token for ServiceNow user {user!r} (JWT bearer grant, "
            f"HTTP {status}{': ' + _clip(reason) if reason else ''}); check that an active sys_user has that "
            f"value in the user field of the OAuth JWT API endpoint, that its JWT verifier map holds the "
            f"certificate of the key in {auth.private_key_env}, and {client} with the secret in "
            f"{auth.client_secret_env}"
        )


def _seconds(value: Any) -> float:
    """``expires_in`` as seconds (1800, ServiceNow's default, when absent or malformed)."""
    try:
        found = float(value)
    except (TypeError, ValueError):
        return 1800.0
    return found if found > 0 else 1800.0


class CredentialSource(Protocol):
    """What a request offers for per-user access: its principal and the broker's credentials
    (:class:`~mcp_providers.providers.ReadRequest`, ``ToolCall``, ``CompletionRequest``)."""

    @property
    def principal(self) -> Principal: ...

    async def credential(self, upstream: Upstream) -> Credential: ...

    async def forget_credential(self, upstream: Upstream, stale: Credential | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class Caller:
    """How one request's calls to a ``jwt_bearer`` instance get and drop its user token."""

    user: str
    """The ServiceNow user value acted as (for messages)."""
    credential: Callable[[], Awaitable[Credential]]
    forget: Callable[[Credential], Awaitable[None]]


class InstanceClient:
    """Table API calls on one instance, through that instance's own ``httpx2.AsyncClient``.

    :param redactor: masks every secret the plugin knows in each message that leaves.
    :param backoff: the 429 back-off this instance shares with every other request to it.
    """

    def __init__(self, settings: InstanceSettings, http: httpx2.AsyncClient | None, error: str | None = None, *,
                 redactor: Redactor | None = None, backoff: Backoff | None = None) -> None:  # fmt: skip
        self.settings = settings
        self.name = settings.name
        self._http = http
        self._error = error
        self.redactor = redactor or Redactor()
        self.backoff: Backoff = backoff or LocalBackoff()
        self.caller: Caller | None = None
        """Whose user token the calls carry (``jwt_bearer`` instances only; see :meth:`acting`)."""

    def acting(self, caller: Caller) -> InstanceClient:
        """This client for one request of ``caller``: the same HTTP client, back-off and redactor,
        every call carrying that caller's user token (never the client's; nothing is switched)."""
        bound = copy.copy(self)
        bound.caller = caller
        return bound

    async def list_records(
        self,
        table: str,
        *,
        query: str = "",
        fields: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> Page:
        """``GET /api/now/table/{table}``: one page of records matching the encoded ``query``.

        :param query: an encoded query made by :func:`~.query.build_query` (never raw caller text).
        :param fields: ``sysparm_fields``; empty for every field.
        :param limit: ``sysparm_limit``; the instance's ``page_size`` when ``None``.
        :param offset: ``sysparm_offset``.
        :returns: the page, records normalised (``sysparm_display_value=all`` is always asked).
        :raises ServiceNowError: the instance failed or refused (see the module docstring).
        :raises TooLarge: the answer is over ``max_response_bytes``.
        """
        check_table(table)
        size = self.settings.page_size if limit is None else limit
        params = {
            "sysparm_query": query,
            "sysparm_limit": str(size),
            "sysparm_offset": str(offset),
            "sysparm_display_value": "all",
            "sysparm_exclude_reference_link": "true",
        }
        if fields:
            params["sysparm_fields"] = ",".join(fields)
        what = f"query of {table}"
        answer = await self._request("GET", f"/api/now/table/{table}", params=params, what=what)
        records = self._json(answer, what).get("result")
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise self._fail(f"instance {self.name!r}: {what} answered without a result list")
        total_header = answer.headers.get("x-total-count")
        total = int(total_header) if total_header and total_header.isdigit() else None
        return _page(normalise(table, records), total=total, offset=offset, limit=size,
                     link=answer.headers.get("link"))  # fmt: skip

    async def get_record(self, table: str, sys_id: str, *, fields: Sequence[str] = ()) -> dict[str, Any]:
        """``GET /api/now/table/{table}/{sys_id}``: the record, normalised.

        :raises NotFound: no such record (or an ACL hides it).
        :raises ServiceNowError: any other failure.
        """
        check_table(table)
        check_sys_id(sys_id)
        params: dict[str, str] = {"sysparm_display_value": "all", "sysparm_exclude_reference_link": "true"}
        if fields:
            params["sysparm_fields"] = ",".join(fields)
        what = f"read of {table} record {sys_id}"
        answer = await self._request("GET", f"/api/now/table/{table}/{sys_id}", params=params, what=what)
        return self._result(table, answer, what)

    async def create_record(self, table: str, values: Mapping[str, str]) -> dict[str, Any]:
        """``POST /api/now/table/{table}`` with ``values``; returns the created record, normalised.

        :raises ServiceNowError: the instance refused (e.g. a data policy, 403) or failed.
        """
        check_table(table)
        what = f"insert into {table}"
        params = {"sysparm_display_value": "all", "sysparm_exclude_reference_link": "true"}
        answer = await self._request("POST", f"/api/now/table/{table}", params=params, json=dict(values), what=what)
        return self._result(table, answer, what)

    async def update_record(self, table: str, sys_id: str, values: Mapping[str, str]) -> dict[str, Any]:
        """``PATCH /api/now/table/{table}/{sys_id}``: change only the supplied fields (never PUT).

        :returns: the record after the change, normalised.
        :raises NotFound: no such record.
        :raises ServiceNowError: the instance refused or failed.
        """
        check_table(table)
        check_sys_id(sys_id)
        what = f"update of {table} record {sys_id}"
        params = {"sysparm_display_value": "all", "sysparm_exclude_reference_link": "true"}
        answer = await self._request(
            "PATCH", f"/api/now/table/{table}/{sys_id}", params=params, json=dict(values), what=what
        )
        return self._result(table, answer, what)

    # -- internals

    def _fail(self, message: str, *, status: int | None = None, sn_message: str | None = None,
              sn_detail: str | None = None) -> ServiceNowError:  # fmt: skip
        """A :class:`ServiceNowError` whose message and data are redacted."""
        r = self.redactor
        return ServiceNowError(r.text(message), instance=self.name, status=status,
                               sn_message=r.text(sn_message) if sn_message else None,
                               sn_detail=r.text(sn_detail) if sn_detail else None)  # fmt: skip

    async def _request(self, method: str, path: str, *, params: Mapping[str, str], what: str,
                       json: Any = None) -> Answer:  # fmt: skip
        if self._http is None or self._error is not None:
            raise self._fail(self._error or f"instance {self.name!r} is not open")
        if not self.settings.per_user:
            return await self._attempts(method, path, params=params, json=json, what=what, headers=None)
        caller = self.caller
        if caller is None:  # a programming error: per-user instances are only reached through acting()
            raise self._fail(f"instance {self.name!r}: {what} has no caller to act for (auth type jwt_bearer)")
        credential = await caller.credential()
        self.redactor.add_issued(credential.token)  # an instance may echo it in an error
        answer = await self._attempts(method, path, params=params, json=json, what=what,
                                      headers={"Authorization": f"Bearer {credential.token}"})  # fmt: skip
        if answer.status != 401:
            return answer
        # the instance no longer takes this user's token (expired early, revoked): once more, anew
        await caller.forget(credential)  # only this one: a concurrent request may have a new one already
        credential = await caller.credential()
        self.redactor.add_issued(credential.token)
        answer = await self._attempts(method, path, params=params, json=json, what=what,
                                      headers={"Authorization": f"Bearer {credential.token}"})  # fmt: skip
        if answer.status == 401:
            raise self._failure(
                answer,
                what,
                suffix=f"; a new token of user {caller.user!r} was refused too "
                "(the user may be locked out or lack access to the instance)",
            )
        return answer

    async def _attempts(self, method: str, path: str, *, params: Mapping[str, str], what: str, json: Any,
                        headers: Mapping[str, str] | None) -> Answer:  # fmt: skip
        """One request, retried after each 429 (the instance's back-off held) up to ``max_retries``."""
        retries = self.settings.max_retries
        for attempt in range(retries + 1):
            await wait_turn(self.backoff, self.name)
            answer = await self._send(method, path, params=params, json=json, what=what, headers=headers)
            log.debug("instance %s: %s %s -> %s", self.name, method, path, answer.status)
            if answer.status != 429:
                return answer
            wait = self._retry_after(answer, attempt)
            cap = self.settings.max_retry_after_seconds
            await self.backoff.hold(self.name, min(wait, cap))
            if wait > cap:
                raise self._failure(
                    answer,
                    what,
                    suffix=f"; the instance asks to wait {wait:g} s (Retry-After) "
                    f"before the next request, more than max_retry_after_seconds = {cap:g}",
                )
            if attempt == retries:
                raise self._failure(
                    answer,
                    what,
                    suffix=f"; still rate-limited after {retries} retries; wait "
                    f"{wait:g} s (Retry-After) before trying again",
                )
            log.info("instance %s: %s rate-limited (429); every request to it waits %g s", self.name, what, wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(self, method: str, path: str, *, params: Mapping[str, str], json: Any, what: str,
                    headers: Mapping[str, str] | None = None) -> Answer:  # fmt: skip
        """One request, its body streamed and refused once over ``max_response_bytes``."""
        assert self._http is not None
        budget = self.settings.max_response_bytes
        try:
            request = self._http.build_request(method, path, params=params, json=json, headers=headers)
            response = await self._http.send(request, stream=True)
            try:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > budget:
                    raise self._too_large(what, budget, read=0, declared=int(declared))
                body = bytearray()
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) > budget:
                        raise self._too_large(what, budget, read=len(body))
            finally:
                await response.aclose()
        except httpx2.TimeoutException as exc:
            raise self._fail(
                f"instance {self.name!r}: {what} got no answer within {self.settings.timeout_seconds:g} s "
                f"({type(exc).__name__}); the instance may be overloaded, or raise timeout_seconds"
            ) from exc
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            raise self._fail(f"instance {self.name!r}: {what} could not reach {self.settings.url} "
                             f"({type(exc).__name__})") from exc  # fmt: skip
        except httpx2.HTTPError as exc:
            raise self._fail(
                f"instance {self.name!r}: {what}: the connection to {self.settings.url} broke before the "
                f"answer was complete ({type(exc).__name__}); nothing from it was used, try again"
            ) from exc
        return Answer(response.status_code, response.headers, bytes(body))

    def _too_large(self, what: str, budget: int, *, read: int, declared: int | None = None) -> TooLarge:
        size = f"declares {declared} bytes" if declared is not None else f"is larger (stopped after {read} bytes)"
        return TooLarge(
            f"instance {self.name!r}: {what}: the answer {size}, over max_response_bytes = {budget}; ask for "
            f"fewer records (limit) or fewer fields, or raise max_response_bytes",
            data={"instance": self.name, "budget": budget, "read": read},
        )

    @staticmethod
    def _retry_after(answer: Answer, attempt: int) -> float:
        value = answer.headers.get("retry-after", "").strip()
        if value.isdigit():
            return float(value)
        if value:
            with contextlib.suppress(TypeError, ValueError):
                when = email.utils.parsedate_to_datetime(value)
                return max(0.0, when.timestamp() - time.time())
        return float(min(2**attempt, 8))

    def _json(self, answer: Answer, what: str) -> dict[str, Any]:
        if answer.status >= 300:
            raise self._failure(answer, what)
        try:
            body = json_loads(answer.body)
        except ValueError:
            raise self._fail(
                f"instance {self.name!r}: {what} answered HTTP {answer.status} with a body that is not "
                f"valid JSON ({len(answer.body)} bytes)",
                status=answer.status,
            ) from None
        if not isinstance(body, dict):
            raise self._fail(f"instance {self.name!r}: {what} answered JSON that is not an object")
        return body

    def _result(self, table: str, answer: Answer, what: str) -> dict[str, Any]:
        result = self._json(answer, what).get("result")
        if not isinstance(result, dict):
            raise self._fail(f"instance {self.name!r}: {what} answered without a result record")
        return normalise(table, [result])[0]

    def _failure(self, answer: Answer, what: str, suffix: str = "") -> ServiceNowError | NotFound:
        status = answer.status
        sn_message = sn_detail = None
        with contextlib.suppress(ValueError):
            body = json_loads(answer.body)
            error = body.get("error") if isinstance(body, dict) else None
            if isinstance(error, dict):
                sn_message = _clip(str(error["message"])) if error.get("message") else None
                sn_detail = _clip(str(error["detail"])) if error.get("detail") else None
        said = f": {sn_message}" + (f" ({sn_detail})" if sn_detail else "") if sn_message else ""
        hint = {
            401: f"; the instance rejected the credentials configured for {self.name!r} ({self._auth_hint()})",
            403: "; the user lacks the role or ACL for this operation",
        }.get(status, "")
        if status >= 500:
            hint = "; the instance failed, try again later"
        message = f"instance {self.name!r}: {what} failed with HTTP {status}{said}{hint}{suffix}"
        if status == 404:
            return NotFound(self.redactor.text(message), data={"instance": self.name, "status": 404})
        return self._fail(message, status=status, sn_message=sn_message, sn_detail=sn_detail)

    def _auth_hint(self) -> str:
        auth = self.settings.auth
        if isinstance(auth, BasicAuth):
            return f"user {auth.username!r}, password from {auth.password_env}"
        if isinstance(auth, ApiKeyAuth):
            return f"API key from {auth.api_key_env}"
        if isinstance(auth, JwtBearerAuth):
            return f"the user token of {self.caller.user!r}" if self.caller else "a user token"
        return f"OAuth client {auth.client_id!r}"


def feed_redactor(redactor: Redactor, settings: InstanceSettings) -> None:
    """Give ``redactor`` every secret ``settings`` names (those set in the environment), derived
    credentials (the Basic credential in base64) and the credential parts of the URL."""
    auth = settings.auth
    redactor.add_url(settings.url)
    if isinstance(auth, BasicAuth):
        password = os.environ.get(auth.password_env, "")
        if password:
            redactor.add_basic(auth.username, password)
    elif isinstance(auth, ApiKeyAuth):
        redactor.add(os.environ.get(auth.api_key_env))
    elif isinstance(auth, JwtBearerAuth):
        secret = os.environ.get(auth.client_secret_env, "")
        key = os.environ.get(auth.private_key_env, "")
        redactor.add(secret, key, key.replace("\\n", "\n"))
        client_id = auth.client_id or os.environ.get(auth.client_id_env or "", "")
        if secret and client_id:
            redactor.add_basic(client_id, secret)
    else:
        secret = os.environ.get(auth.client_secret_env, "")
        redactor.add(secret, auth.password_env and os.environ.get(auth.password_env))
        if secret:
            redactor.add_basic(auth.client_id, secret)


def _open(settings: InstanceSettings, redactor: Redactor, backoff: Backoff,
          upstream: JwtBearerUpstream | None = None) -> InstanceClient:  # fmt: skip
    """Build one instance's client; a missing secret gives a client whose every call says so.

    A ``jwt_bearer`` instance's client carries no credential: ``upstream`` is bound to it for the
    grant, and each request adds its caller's token."""
    auth = settings.auth
    headers = {"Accept": "application/json", "User-Agent": "mcp-providers-servicenow"}
    flow: httpx2.Auth | None = None
    try:
        if isinstance(auth, JwtBearerAuth):
            pass  # the secrets are read by upstream.bind() below
        elif isinstance(auth, BasicAuth):
            flow = httpx2.BasicAuth(auth.username, read_secret(auth.password_env, instance=settings.name,
                                                               setting="auth.password_env"))  # fmt: skip
        elif isinstance(auth, ApiKeyAuth):
            headers["x-sn-apikey"] = read_secret(auth.api_key_env, instance=settings.name, setting="auth.api_key_env")
        else:
            found = {"client_secret": read_secret(auth.client_secret_env, instance=settings.name,
                                                  setting="auth.client_secret_env")}  # fmt: skip
            if auth.password_env is not None:
                found["password"] = read_secret(auth.password_env, instance=settings.name, setting="auth.password_env")
            flow = OAuthFlow(settings.name, auth, found, redactor)
    except ValueError as exc:
        return InstanceClient(settings, None, error=str(exc), redactor=redactor, backoff=backoff)
    # The core's client: inside a resource read it refuses anything but GET/HEAD/OPTIONS.
    http = core_http.client(
        base_url=settings.url,
        auth=flow,
        headers=headers,
        timeout=httpx2.Timeout(settings.timeout_seconds),
        follow_redirects=False,
        trust_env=not is_loopback_host(urlsplit(settings.url).hostname or ""),  # no proxy for loopback
    )
    if isinstance(flow, OAuthFlow):
        flow.bind(http)
    if upstream is not None:
        failure = upstream.bind(http)
        if failure is not None:  # a grant secret is missing or malformed: every call says so
            return InstanceClient(settings, http, error=failure, redactor=redactor, backoff=backoff)
    return InstanceClient(settings, http, redactor=redactor, backoff=backoff)


class InstancePool:
    """The open :class:`InstanceClient` of every configured instance.

    Entered by each provider's ``lifespan()`` through :meth:`opened`; the clients are created on
    the first entry and closed when the last one leaves.
    """

    def __init__(self, instances: Sequence[InstanceSettings], *, backoff: Backoff | None = None) -> None:
        self._settings = {i.name: i for i in instances}
        self.redactor = Redactor()
        """Masks every secret of every configured instance (and each OAuth token issued)."""
        self.backoff: Backoff = backoff or LocalBackoff()
        """The 429 back-off, one entry per instance, shared by all its requests."""
        self._clients: dict[str, InstanceClient] = {}
        self._users = 0
        self.upstreams: dict[str, JwtBearerUpstream] = {
            i.name: JwtBearerUpstream(i, self.redactor) for i in instances if i.per_user
        }
        """Instance name -> the credential broker's upstream, for each ``jwt_bearer`` instance."""

    @property
    def names(self) -> list[str]:
        """Configured instance names, in config order."""
        return list(self._settings)

    def settings(self, name: str) -> InstanceSettings:
        """The settings of instance ``name``.

        :raises UnknownInstance: ``name`` is not configured (the message lists the names that are).
        """
        found = self._settings.get(name)
        if found is None:
            configured = ", ".join(self._settings) or "none"
            raise UnknownInstance(f"unknown instance {name!r}; configured instances: {configured}")
        return found

    def client(self, name: str) -> InstanceClient:
        """The open client of instance ``name``.

        :raises UnknownInstance: ``name`` is not configured.
        :raises ServiceNowError: the pool is not open (no provider lifespan is running).
        """
        self.settings(name)
        client = self._clients.get(name)
        if client is None:
            raise ServiceNowError(
                f"instance {name!r} has no open HTTP client: the provider's lifespan() is not running",
                instance=name,
            )
        return client

    def client_for(self, name: str, request: CredentialSource) -> InstanceClient:
        """The client of instance ``name`` for ``request``: for a ``jwt_bearer`` instance, one whose
        calls carry the request's own user token (from ``request.credential``); else :meth:`client`.

        :raises UnknownInstance: ``name`` is not configured.
        :raises NoVerifiedCaller: a ``jwt_bearer`` instance and a caller it cannot act for; checked
            before anything is sent or obtained.
        :raises ServiceNowError: the pool is not open.
        """
        client = self.client(name)
        upstream = self.upstreams.get(name)
        if upstream is None:
            return client
        user = upstream.user_of(request.principal)

        async def credential() -> Credential:
            return await request.credential(upstream)

        async def forget(stale: Credential) -> None:
            await request.forget_credential(upstream, stale)

        return client.acting(Caller(user=user, credential=credential, forget=forget))

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[InstancePool]:
        """Open every instance's client (first entry) and close them all (last exit)."""
        if self._users == 0:
            for s in self._settings.values():
                feed_redactor(self.redactor, s)
            self._clients = {name: _open(s, self.redactor, self.backoff, self.upstreams.get(name))
                             for name, s in self._settings.items()}  # fmt: skip
        self._users += 1
        try:
            yield self
        finally:
            self._users -= 1
            if self._users == 0:
                clients, self._clients = self._clients, {}
                for upstream in self.upstreams.values():
                    upstream.bind(None, f"instance {upstream.settings.name!r} is not open")
                for client in clients.values():
                    if client._http is not None:
                        await client._http.aclose()
