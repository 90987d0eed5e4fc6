"""HTTP access to configured ServiceNow instances: one ``httpx2.AsyncClient`` per instance.

:class:`InstancePool` opens one :class:`InstanceClient` per configured instance when the first
provider's ``lifespan()`` is entered and closes them when the last one leaves. Every call names
its instance explicitly; there is no current or default instance and nothing is switched.

Behaviour shared by every call:

- auth: HTTP Basic, OAuth 2.0 (:class:`OAuthFlow`: token cached until it expires, fetched again
  once when the instance answers 401) or an API key in ``x-sn-apikey``;
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
import email.utils
import logging
import os
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping, Sequence
from dataclasses import dataclass
from json import loads as json_loads
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2

from mcp_providers import http as core_http
from mcp_providers.errors import NotFound, TooLarge, UpstreamError
from mcp_providers.plugins.servicenow.backoff import Backoff, LocalBackoff, wait_turn
from mcp_providers.plugins.servicenow.query import check_sys_id, check_table
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.schema import normalise
from mcp_providers.plugins.servicenow.settings import (
    ApiKeyAuth,
    BasicAuth,
    InstanceSettings,
    OAuthAuth,
    is_loopback_host,
    read_secret,
)

__all__ = [
    "InstanceClient",
    "InstancePool",
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
            self._redactor.text(f"instance {self._instance!r}: {where} was refused with HTTP {response.status_code}"
                                f"{': ' + _clip(reason) if reason else ''}; check auth.client_id and the secret(s) "
                                f"in {env}"),
            instance=self._instance,
            status=response.status_code,
        )


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
        if self._http is None:
            raise self._fail(self._error or f"instance {self.name!r} is not open")
        retries = self.settings.max_retries
        for attempt in range(retries + 1):
            await wait_turn(self.backoff, self.name)
            answer = await self._send(method, path, params=params, json=json, what=what)
            log.debug("instance %s: %s %s -> %s", self.name, method, path, answer.status)
            if answer.status != 429:
                return answer
            wait = self._retry_after(answer, attempt)
            cap = self.settings.max_retry_after_seconds
            await self.backoff.hold(self.name, min(wait, cap))
            if wait > cap:
                raise self._failure(answer, what, suffix=f"; the instance asks to wait {wait:g} s (Retry-After) "
                                    f"before the next request, more than max_retry_after_seconds = {cap:g}")
            if attempt == retries:
                raise self._failure(answer, what, suffix=f"; still rate-limited after {retries} retries; wait "
                                    f"{wait:g} s (Retry-After) before trying again")
            log.info("instance %s: %s rate-limited (429); every request to it waits %g s", self.name, what, wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(self, method: str, path: str, *, params: Mapping[str, str], json: Any, what: str) -> Answer:
        """One request, its body streamed and refused once over ``max_response_bytes``."""
        assert self._http is not None
        budget = self.settings.max_response_bytes
        try:
            request = self._http.build_request(method, path, params=params, json=json)
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
    else:
        secret = os.environ.get(auth.client_secret_env, "")
        redactor.add(secret, auth.password_env and os.environ.get(auth.password_env))
        if secret:
            redactor.add_basic(auth.client_id, secret)


def _open(settings: InstanceSettings, redactor: Redactor, backoff: Backoff) -> InstanceClient:
    """Build one instance's client; a missing secret gives a client whose every call says so."""
    auth = settings.auth
    headers = {"Accept": "application/json", "User-Agent": "mcp-providers-servicenow"}
    flow: httpx2.Auth | None = None
    try:
        if isinstance(auth, BasicAuth):
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

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[InstancePool]:
        """Open every instance's client (first entry) and close them all (last exit)."""
        if self._users == 0:
            for s in self._settings.values():
                feed_redactor(self.redactor, s)
            self._clients = {name: _open(s, self.redactor, self.backoff) for name, s in self._settings.items()}
        self._users += 1
        try:
            yield self
        finally:
            self._users -= 1
            if self._users == 0:
                clients, self._clients = self._clients, {}
                for client in clients.values():
                    if client._http is not None:
                        await client._http.aclose()
