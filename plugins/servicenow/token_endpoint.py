"""ServiceNow's token endpoint (``/oauth_token.do``) as an authlib OAuth 2.0 client.

authlib's :class:`~authlib.oauth2.client.OAuth2Client` does the protocol: it builds each grant's
form (RFC 6749 §4.3 password, §4.4 client credentials, §6 refresh, and RFC 7523 §2.1 JWT bearer
with ``assertion=``), adds the client id and secret to the body (``client_secret_post``, which
ServiceNow takes for every grant), parses the answer into an
:class:`~authlib.oauth2.rfc6749.OAuth2Token` (``expires_at`` from ``expires_in``; ``is_expired``)
and turns an ``{"error": ...}`` answer into an error. What is ours is the sending: each request
goes through the instance's own client, the one :func:`mcp_providers.http.client` made (its
side-effect checks and traces), inside :func:`mcp_providers.http.exempt` since a token request
writes no instance data; and the failures, which callers turn into messages naming settings.

Why not authlib's ``AsyncOAuth2Client``: it *is* an ``httpx2.AsyncClient`` of its own, so the
instance's requests would leave the framework's client. This class is authlib's base client with
the two async send methods that authlib's own httpx integration adds, over the framework's client.
The secrets live in authlib's client object; nothing here logs or repeats them.

Imported when an OAuth or ``jwt_bearer`` instance is opened, so the plugin's import does not pay
for authlib.
"""

from __future__ import annotations

from typing import Any

import httpx2
from authlib.common.urls import url_decode
from authlib.integrations.httpx_client import OAuth2ClientAuth
from authlib.oauth2.client import OAuth2Client
from authlib.oauth2.rfc6749 import OAuth2Error, OAuth2Token

from mcp_providers import http as core_http

__all__ = ["TokenEndpoint", "TokenEndpointUnreachable", "TokenRefused"]


class TokenRefused(Exception):
    """The endpoint did not grant a token.

    :ivar status: the HTTP status answered.
    :ivar reason: its ``error`` and ``error_description`` (the instance's words: redact them before
        showing), or ``""``.
    """

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status}" + (f": {reason}" if reason else ""))
        self.status, self.reason = status, reason


class TokenEndpointUnreachable(Exception):
    """No answer: ``str(exc)`` is ``"timed out"`` or ``"failed: <exception class>"``."""


class TokenEndpoint(OAuth2Client):  # type: ignore[misc]  # authlib ships no type information
    """Grants from one instance's token endpoint, sent through ``http`` (the instance's client).

    ``await endpoint.fetch_token(path, grant_type=..., **form)`` and
    ``await endpoint.refresh_token(path, refresh_token=...)`` return an ``OAuth2Token`` (a dict
    with ``access_token``, ``expires_at`` and, when issued, ``refresh_token``).

    :param instance: the instance name (for the side-effect exemption's reason).
    :param client_id: the OAuth client id.
    :param client_secret: its secret, sent in the form body.
    :param scope: ``scope`` sent with each grant, if set.
    :raises TokenRefused: the answer was not 200 with an ``access_token``.
    :raises TokenEndpointUnreachable: the request timed out or failed.
    """

    client_auth_class = OAuth2ClientAuth
    oauth_error_class = OAuth2Error

    def __init__(self, http: httpx2.AsyncClient, *, instance: str, client_id: str, client_secret: str,
                 scope: str | None = None) -> None:  # fmt: skip
        super().__init__(session=None, client_id=client_id, client_secret=client_secret,
                         token_endpoint_auth_method="client_secret_post", scope=scope)  # fmt: skip
        self._http = http
        self._instance = instance
        self.requests = 0
        """Token requests sent so far (for diagnostics and tests)."""

    async def _fetch_token(self, url: str, body: str = "", headers: dict[str, str] | None = None,
                           auth: Any = None, method: str = "POST", **kwargs: Any) -> OAuth2Token:  # fmt: skip
        return self._granted(await self._post(url, body, headers, auth))

    async def _refresh_token(self, url: str, refresh_token: str | None = None, body: str = "",
                             headers: dict[str, str] | None = None, auth: Any = None,
                             **kwargs: Any) -> OAuth2Token:  # fmt: skip
        token = self._granted(await self._post(url, body, headers, auth))
        if not token.get("refresh_token"):  # RFC 6749 §6: the old refresh token stays good
            token["refresh_token"] = refresh_token
        return token

    async def _post(self, url: str, body: str, headers: dict[str, str] | None, auth: Any) -> httpx2.Response:
        self.requests += 1
        try:
            with core_http.exempt(f"OAuth token request for instance {self._instance!r}"):
                return await self._http.post(url, data=dict(url_decode(body)), headers=headers, auth=auth)
        except httpx2.TimeoutException as exc:
            raise TokenEndpointUnreachable("timed out") from exc
        except httpx2.HTTPError as exc:
            raise TokenEndpointUnreachable(f"failed: {type(exc).__name__}") from exc

    def _granted(self, response: httpx2.Response) -> OAuth2Token:
        try:
            token: OAuth2Token = self.parse_response_token(response)
        except (OAuth2Error, ValueError, httpx2.HTTPStatusError):
            token = None
        access = token.get("access_token") if token else None
        if response.status_code != 200 or not isinstance(access, str) or not access:
            raise TokenRefused(response.status_code, _reason(response))
        return token


def _reason(response: httpx2.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        return ""
    if not isinstance(payload, dict):
        return ""
    return " ".join(str(payload[k]) for k in ("error", "error_description") if payload.get(k))
