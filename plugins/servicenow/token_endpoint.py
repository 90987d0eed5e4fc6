"""ServiceNow's token endpoint (``/oauth_token.do``), with authlib doing the OAuth 2.0 parts.

authlib's public API builds each grant's form (:func:`~authlib.oauth2.rfc6749.parameters.prepare_token_request`:
RFC 6749 §4.3 password, §4.4 client credentials, §6 refresh, and RFC 7523 §2.1 JWT bearer with
``assertion=``), adds the client id and secret to the body
(:class:`~authlib.oauth2.ClientAuth` with ``client_secret_post``, which ServiceNow takes for every
grant) and holds the answer (:class:`~authlib.oauth2.rfc6749.OAuth2Token`: ``expires_at`` from
``expires_in``). What is ours is the sending: each request goes through the instance's own client,
the one :func:`mcp_providers.http.client` made (its side-effect checks and traces), inside
:func:`mcp_providers.http.exempt` since a token request writes no instance data; and the failures,
which callers turn into messages naming settings, never secrets.

Why not authlib's ``AsyncOAuth2Client``: it *is* an ``httpx2.AsyncClient`` of its own, so the
instance's requests would leave the framework's client; and its base class is made async by
overriding two private methods (``_fetch_token``, ``_refresh_token``), which would add two private
names of another package to the ones the project registers. So only public functions are used.

Imported when an OAuth or ``jwt_bearer`` instance is opened, so the plugin's import does not pay
for authlib.
"""

from __future__ import annotations

from typing import Any

import httpx2
from authlib.oauth2 import ClientAuth
from authlib.oauth2.rfc6749 import OAuth2Token
from authlib.oauth2.rfc6749.parameters import prepare_token_request

from mcp_providers import http as core_http
from mcp_providers.plugins._masking import Secrets

__all__ = ["TokenEndpoint", "TokenEndpointUnreachable", "TokenRefused"]

_SECRET_FIELDS = ("password", "refresh_token", "assertion")
"""Form fields whose values are secrets sent (masked in a refusal, like the client secret)."""
_HEADERS = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded;charset=UTF-8"}


class TokenRefused(Exception):
    """The endpoint did not grant a token.

    :ivar status: the HTTP status answered.
    :ivar reason: its ``error`` and ``error_description`` (the instance's words, with what was sent
        masked: redact them before showing too), or ``""``.
    """

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status}" + (f": {reason}" if reason else ""))
        self.status, self.reason = status, reason


class TokenEndpointUnreachable(Exception):
    """No answer: ``str(exc)`` is ``"timed out"`` or ``"failed: <exception class>"``."""


class TokenEndpoint:
    """Grants from one instance's token endpoint, sent through ``http`` (the instance's client).

    :param instance: the instance name (for the side-effect exemption's reason).
    :param client_id: the OAuth client id.
    :param client_secret: its secret, sent in the form body (kept here only; never in a message).
    :param scope: ``scope`` sent with each grant, if set.
    """

    def __init__(self, http: httpx2.AsyncClient, *, instance: str, client_id: str, client_secret: str,
                 scope: str | None = None) -> None:  # fmt: skip
        self._http = http
        self._instance = instance
        self._client = ClientAuth(client_id, client_secret, "client_secret_post")
        self._secret = client_secret
        self._scope = scope
        self.requests = 0
        """Token requests sent so far (for diagnostics and tests)."""

    def __repr__(self) -> str:
        return f"TokenEndpoint(instance={self._instance!r})"

    async def grant(self, path: str, grant_type: str, **form: str) -> OAuth2Token:
        """Ask ``path`` for a token by ``grant_type`` with ``form`` (``username``/``password``,
        ``refresh_token`` or ``assertion``); empty values are left out.

        :returns: the token (a dict: ``access_token``, ``expires_at`` when ``expires_in`` was sent,
            ``refresh_token`` when issued).
        :raises TokenRefused: the answer was not 200 with a non-empty ``access_token``.
        :raises TokenEndpointUnreachable: the request timed out or failed.
        """
        if self._scope and "scope" not in form:
            form["scope"] = self._scope
        _, headers, body = self._client.prepare("POST", path, dict(_HEADERS), prepare_token_request(grant_type, **form))
        self.requests += 1
        try:
            with core_http.exempt(f"OAuth token request for instance {self._instance!r}"):
                # httpx2.Auth() is the no-op flow: the request must not carry (or wait for) a bearer token
                response = await self._http.post(path, content=body, headers=headers, auth=httpx2.Auth())
        except httpx2.TimeoutException as exc:
            raise TokenEndpointUnreachable("timed out") from exc
        except httpx2.HTTPError as exc:
            raise TokenEndpointUnreachable(f"failed: {type(exc).__name__}") from exc
        sent = (self._secret, *(form[k] for k in _SECRET_FIELDS if form.get(k)))
        return _granted(response, f"the token endpoint of instance {self._instance!r}", sent)


def _granted(response: httpx2.Response, who: str, sent: tuple[str, ...]) -> OAuth2Token:
    """The token ``response`` grants; raises :class:`TokenRefused` with the endpoint's words, each
    of ``sent`` masked in them in every spelling an endpoint may echo it in (form-encoded, JSON-escaped,
    re-cased, base64...: :class:`~mcp_providers.plugins._masking.Secrets`)."""
    try:
        payload: Any = response.json()
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        raise TokenRefused(response.status_code, "")
    access = payload.get("access_token")
    if response.status_code != 200 or not isinstance(access, str) or not access:
        reason = " ".join(str(payload[k]) for k in ("error", "error_description") if payload.get(k))
        raise TokenRefused(response.status_code, Secrets.of(who, sent).masked(reason))
    return OAuth2Token.from_dict(payload)
