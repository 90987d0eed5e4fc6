"""OAuth 2.0 service-account auth for one instance: :class:`OAuthFlow`, an ``httpx2.Auth``.

The grants themselves (password, client credentials, refresh) go through authlib
(:mod:`~.token_endpoint`); this module decides when to ask (expiry, a 401) and what to say when a
grant is refused.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Generator, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import httpx2

from mcp_providers.plugins.servicenow.auth_settings import OAuthAuth
from mcp_providers.plugins.servicenow.errors import ServiceNowError, clip
from mcp_providers.plugins.servicenow.redact import Redactor

if TYPE_CHECKING:
    from mcp_providers.plugins.servicenow.token_endpoint import TokenEndpoint

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
        self._endpoint: TokenEndpoint | None = None
        self._lock = anyio.Lock()
        self._token: dict[str, Any] | None = None
        self._refresh_token: str | None = None

    @property
    def fetches(self) -> int:
        """How many token requests were sent so far (for diagnostics and tests)."""
        return self._endpoint.requests if self._endpoint is not None else 0

    def bind(self, client: httpx2.AsyncClient) -> None:
        """Use ``client`` (the instance's own) for token requests."""
        from mcp_providers.plugins.servicenow.token_endpoint import TokenEndpoint

        auth = self._auth
        self._endpoint = TokenEndpoint(client, instance=self._instance, client_id=auth.client_id,
                                       client_secret=self._secrets["client_secret"], scope=auth.scope)  # fmt: skip

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
            if self._token is None or self._expired(self._token):
                await self._fetch(use_refresh=self._token is not None)
            assert self._token is not None  # set by _fetch or it raised
            return str(self._token["access_token"])

    async def _renew(self, *, stale: str) -> str:
        async with self._lock:
            if self._token is None or self._token["access_token"] == stale:  # nobody renewed it meanwhile
                await self._fetch(use_refresh=True)
            assert self._token is not None
            return str(self._token["access_token"])

    @staticmethod
    def _expired(token: dict[str, Any]) -> bool:
        """Past ``expires_at`` less the margin: 10 % of the lifetime, at most 30 s."""
        lifetime = float(token.get("expires_in") or 1800)
        return time.time() >= float(token["expires_at"]) - min(30.0, lifetime * 0.1)

    async def _fetch(self, *, use_refresh: bool) -> None:
        from mcp_providers.plugins.servicenow.token_endpoint import TokenRefused

        endpoint, path = self._bound(), self._auth.token_path
        if use_refresh and self._refresh_token is not None:
            with contextlib.suppress(TokenRefused):  # a refused refresh falls back to the grant
                self._took(await self._sent(endpoint.grant(path, "refresh_token", refresh_token=self._refresh_token),
                                            "refresh_token"))  # fmt: skip
                return
            self._refresh_token = None
        grant = self._auth.grant_type
        form = (
            {"username": self._auth.username or "", "password": self._secrets["password"]}
            if grant == "password"
            else {}
        )
        try:
            self._took(await self._sent(endpoint.grant(path, grant, **form), grant))
        except TokenRefused as exc:
            env = self._auth.client_secret_env + (f" / {self._auth.password_env}" if self._auth.password_env else "")
            said = f": {clip(exc.reason, self._redactor.text)}" if exc.reason else ""  # masked, then cut
            raise ServiceNowError(
                self._redactor.text(
                    f"instance {self._instance!r}: OAuth token request ({grant} grant) to {path} was refused with "
                    f"HTTP {exc.status}{said}; check auth.client_id and the secret(s) in {env}"
                ),
                instance=self._instance,
                status=exc.status,
            ) from None

    def _bound(self) -> TokenEndpoint:
        if self._endpoint is None:
            raise RuntimeError("OAuthFlow.bind() was not called")
        return self._endpoint

    async def _sent(self, grant: Awaitable[dict[str, Any]], name: str) -> dict[str, Any]:
        """The token ``grant`` answers; no answer is a :class:`ServiceNowError` saying so."""
        from mcp_providers.plugins.servicenow.token_endpoint import TokenEndpointUnreachable

        try:
            return await grant
        except TokenEndpointUnreachable as exc:
            where = f"OAuth token request ({name} grant) to {self._auth.token_path}"
            raise ServiceNowError(f"instance {self._instance!r}: {where} {exc}", instance=self._instance) from exc

    def _took(self, token: dict[str, Any]) -> None:
        if not token.get("expires_in"):  # none (or 0) said: ServiceNow's default lifetime
            token["expires_at"] = int(time.time()) + 1800
        self._token = token
        self._refresh_token = token.get("refresh_token") or self._refresh_token
        self._redactor.add(token["access_token"], self._refresh_token)
        log.debug("instance %s: OAuth token fetched", self._instance)
