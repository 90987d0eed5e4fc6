"""OAuth 2.0 service-account auth for one instance: :class:`OAuthFlow`, an ``httpx2.Auth``."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Generator, Mapping

import anyio
import httpx2

from mcp_providers import http as core_http
from mcp_providers.plugins.servicenow.errors import ServiceNowError, clip
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import OAuthAuth

__all__ = ["OAuthFlow"]

log = logging.getLogger(__name__)


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
                f"{': ' + clip(reason) if reason else ''}; check auth.client_id and the secret(s) "
                f"in {env}"
            ),
            instance=self._instance,
            status=response.status_code,
        )
