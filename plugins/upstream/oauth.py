"""OAuth credentials for a streamable HTTP upstream, obtained through the credential broker.

Two :class:`~mcp_providers.credentials.Upstream` implementations, one per kind of identity:

- :class:`ClientCredentials`: this server's own client (RFC 6749 §4.4), the one identity of every
  caller's requests for ``client_credentials`` upstreams, and the pooled connection's identity
  (listing, subscriptions) of ``on_behalf_of`` ones;
- :class:`TokenExchange`: per caller, RFC 8693 token exchange (§2.1): the caller's verified access
  token (:attr:`~mcp_providers.identity.Principal.access_token`) is the ``subject_token``
  (``subject_token_type`` ``urn:ietf:params:oauth:token-type:access_token``), ``resource`` (RFC 8707)
  and ``audience`` name the upstream, and the answer is a token of the same user for it.

authlib's public functions build the form (:func:`~authlib.oauth2.rfc6749.parameters.prepare_token_request`)
and authenticate the client (:class:`~authlib.oauth2.ClientAuth`, ``client_secret_basic`` or
``client_secret_post``) and read the answer (:class:`~authlib.oauth2.rfc6749.OAuth2Token`:
``expires_at`` from ``expires_in``); the request goes through :func:`mcp_providers.http.client`,
inside :func:`mcp_providers.http.exempt` (a token request changes no served data, and it is made
from inside a read's side-effect scope). The caller's token goes to the token endpoint only.
Neither it, the client secret nor an issued token is ever in a log line, an error or a receipt.

:class:`BrokeredAuth` is the ``httpx2.Auth`` of a connection whose credential comes from the
broker: it presents the credential last handed to it, and notes one the upstream answered 401 to.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import Any

import httpx2
from authlib.oauth2 import ClientAuth
from authlib.oauth2.rfc6749 import OAuth2Token
from authlib.oauth2.rfc6749.parameters import prepare_token_request

from mcp_providers import http as core_http
from mcp_providers.credentials import Credential, CredentialRefused
from mcp_providers.errors import UpstreamError
from mcp_providers.identity import Principal
from mcp_providers.plugins.upstream.settings import OAuthAuth, OnBehalfOfAuth, ServerSettings, read_variable

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "TOKEN_EXCHANGE_GRANT",
    "BrokeredAuth",
    "ClientCredentials",
    "TokenExchange",
]

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
"""``grant_type`` of RFC 8693 §2.1."""
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
"""The token type (RFC 8693 §3) of the caller's token and of the one asked for."""
DEFAULT_LIFETIME = 300.0
"""Seconds a token is kept when the answer has no ``expires_in`` (RFC 8693 §2.2.1: RECOMMENDED)."""
_HEADERS = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded;charset=UTF-8"}
_REASON_CHARS = 200


class _Endpoint:
    """One upstream's token endpoint and client (read from the named variables when first used)."""

    def __init__(self, server: ServerSettings) -> None:
        assert isinstance(server.auth, OAuthAuth)  # the callers check the kind
        self.server, self.auth = server, server.auth
        self.who = f"upstream {server.name!r} ({server.transport})"
        self.requests = 0
        """Token requests sent (for diagnostics and tests)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(upstream={self.server.name!r})"

    def _target(self) -> dict[str, str]:
        form = {"resource": self.auth.resource or str(self.server.url)}
        if self.auth.audience:
            form["audience"] = self.auth.audience
        if self.auth.scope:
            form["scope"] = self.auth.scope
        return form

    async def grant(self, grant_type: str, what: str, hide: tuple[str, ...] = (), **form: str) -> OAuth2Token:
        """The token the endpoint grants for ``form``.

        :param what: the grant as messages name it, e.g. ``"a token exchange for 'alice'"``.
        :param hide: secrets the answer's words must not repeat (the subject token).
        :raises CredentialRefused: not granted (HTTP status and the server's ``error`` named).
        :raises UpstreamError: the endpoint cannot be reached, or a variable is unset.
        """
        name, auth = self.server.name, self.auth
        try:
            client_id = read_variable(auth.client_id_env, server=name, setting="auth.client_id_env")
            secret = read_variable(auth.client_secret_env, server=name, setting="auth.client_secret_env")
        except ValueError as exc:
            raise UpstreamError(str(exc)) from None
        body = prepare_token_request(grant_type, **form, **self._target())
        url = auth.token_endpoint
        _, headers, body = ClientAuth(client_id, secret, auth.client_auth).prepare("POST", url, dict(_HEADERS), body)
        self.requests += 1
        try:
            with core_http.exempt(f"OAuth token request for {self.who}"):
                async with core_http.client(timeout=self.server.read_timeout, follow_redirects=False) as http:
                    response = await http.post(url, content=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise UpstreamError(
                f"{self.who}: the token endpoint {url} cannot be reached ({type(exc).__name__})"
            ) from None
        return self._granted(response, what, (secret, *hide))

    def _granted(self, response: httpx2.Response, what: str, hide: tuple[str, ...]) -> OAuth2Token:
        try:
            payload: Any = response.json()
        except ValueError:
            payload = None
        payload = payload if isinstance(payload, dict) else {}
        access = payload.get("access_token")
        if response.status_code != 200 or not isinstance(access, str) or not access:
            reason = " ".join(str(payload[k]) for k in ("error", "error_description") if payload.get(k))
            for secret in hide:
                reason = reason.replace(secret, "***")
            said = f": {reason[:_REASON_CHARS]}" if reason else ""
            raise CredentialRefused(
                f"{self.who}: the authorization server refused {what} (HTTP {response.status_code}{said})"
            )
        kind = str(payload.get("token_type", "")).lower()
        issued = payload.get("issued_token_type", ACCESS_TOKEN_TYPE)
        if kind != "bearer" or issued != ACCESS_TOKEN_TYPE:
            raise CredentialRefused(
                f"{self.who}: the authorization server answered {what} with a {kind or 'untyped'} token of type "
                f"{issued}; the upstream needs a Bearer access token ({ACCESS_TOKEN_TYPE})"
            )
        return OAuth2Token.from_dict(payload)


def _credential(token: OAuth2Token, subject: str, grant: str) -> Credential:
    expires = token.get("expires_at")
    expires_at = float(expires) if isinstance(expires, int | float) else time.time() + DEFAULT_LIFETIME
    return Credential(token=str(token["access_token"]), expires_at=expires_at, subject=subject, grant=grant)


class ClientCredentials(_Endpoint):
    """This server's client as the upstream's one user (RFC 6749 §4.4), whoever the caller is."""

    grant_name = "client_credentials"
    """``grant`` in receipts and audit lines."""

    def __init__(self, server: ServerSettings) -> None:
        super().__init__(server)
        self.principal = Principal(f"client:{server.name}", issuer=f"mcp-providers:upstream:{server.name}")
        """The principal the broker keeps this identity's credential under (every caller shares it)."""

    @property
    def name(self) -> str:
        """``upstream-client:<name>``: the broker's cache key part."""
        return f"upstream-client:{self.server.name}"

    async def obtain(self, principal: Principal) -> Credential:
        """A token of this server's client (the caller does not matter); the receipt's subject is
        the client id. Raises what :meth:`grant` raises."""
        token = await self.grant("client_credentials", "a client credentials grant")
        client_id = read_variable(self.auth.client_id_env, server=self.server.name, setting="auth.client_id_env")
        return _credential(token, client_id, self.grant_name)


class TokenExchange(_Endpoint):
    """The caller's own upstream identity, by RFC 8693 token exchange (see the module docstring)."""

    grant_name = "token_exchange"
    """``grant`` in receipts and audit lines."""

    def __init__(self, server: ServerSettings) -> None:
        super().__init__(server)
        assert isinstance(server.auth, OnBehalfOfAuth)

    @property
    def name(self) -> str:
        """``upstream:<name>``: the broker's cache key part."""
        return f"upstream:{self.server.name}"

    async def obtain(self, principal: Principal) -> Credential:
        """A token of ``principal``'s user for this upstream; the receipt's subject is the caller's.

        :raises CredentialRefused: the caller brought no verified access token (stdio, a static
            token, anonymous), or the authorization server refused the exchange.
        :raises UpstreamError: the token endpoint cannot be reached.
        """
        subject_token = principal.access_token
        if not subject_token:
            raise CredentialRefused(
                f"{self.who} is reached on behalf of each caller, and caller {principal.subject!r} brought no "
                "verified access token to exchange (on_behalf_of needs callers over HTTP with [server.auth] "
                'mode = "jwt" or "introspection")'
            )
        token = await self.grant(
            TOKEN_EXCHANGE_GRANT,
            f"a token exchange for caller {principal.subject!r}",
            (subject_token,),
            subject_token=subject_token,
            subject_token_type=ACCESS_TOKEN_TYPE,
            requested_token_type=ACCESS_TOKEN_TYPE,
        )
        return _credential(token, principal.subject, self.grant_name)


class BrokeredAuth(httpx2.Auth):
    """Presents :attr:`credential` as ``Authorization: Bearer`` on every request of one connection.

    The connection's owner sets :attr:`credential` from the broker before each request (the
    broker refreshes it before it expires); ``on_rejected(credential)`` is told of each
    credential the upstream answered 401 to, for the owner to forget.
    """

    def __init__(
        self, credential: Credential | None = None, on_rejected: Callable[[Credential], None] | None = None
    ) -> None:
        self.credential = credential
        self.on_rejected = on_rejected

    def __repr__(self) -> str:
        return "BrokeredAuth()"

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        credential = self.credential
        if credential is not None:
            request.headers["Authorization"] = f"Bearer {credential.token}"
        response = yield request
        if response.status_code == 401 and credential is not None and self.on_rejected is not None:
            self.on_rejected(credential)
