"""OAuth credentials for a streamable HTTP upstream, obtained through the credential broker.

Two :class:`~mcp_providers.credentials.Upstream` implementations, one per kind of identity, made
from an upstream's settings (the grants themselves are :mod:`mcp_providers.plugins._oauth`'s,
shared with the OpenAPI plugin):

- :class:`ClientCredentials`: this server's own client (RFC 6749 §4.4), the one identity of every
  caller's requests for ``client_credentials`` upstreams, and the pooled connection's identity
  (listing, subscriptions) of ``on_behalf_of`` ones;
- :class:`TokenExchange`: per caller, RFC 8693 token exchange: the caller's verified access token
  is exchanged for a token of the same user whose ``resource`` (RFC 8707) is the upstream's ``url``.

The caller's token goes to the token endpoint only. Neither it, the client secret nor an issued
token is ever in a log line, an error or a receipt.

:class:`BrokeredAuth` is the ``httpx2.Auth`` of a connection whose credential comes from the
broker: it presents the credential last handed to it, and notes one the upstream answered 401 to.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import httpx2

from mcp_providers.credentials import Credential
from mcp_providers.identity import Principal
from mcp_providers.plugins import _oauth
from mcp_providers.plugins._oauth import ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT
from mcp_providers.plugins.upstream.settings import OAuthAuth, OnBehalfOfAuth, ServerSettings

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "TOKEN_EXCHANGE_GRANT",
    "BrokeredAuth",
    "ClientCredentials",
    "TokenExchange",
]


def _endpoint(server: ServerSettings) -> dict[str, Any]:
    """The token endpoint's arguments for ``server`` (an upstream with OAuth settings)."""
    assert isinstance(server.auth, OAuthAuth)  # the callers check the kind
    return {
        "owner": f"upstream {server.name!r}",
        "who": f"upstream {server.name!r} ({server.transport})",
        "resource": str(server.url),
        "timeout": server.read_timeout,
    }


class ClientCredentials(_oauth.ClientCredentials):
    """This server's client as the upstream's one user (RFC 6749 §4.4), whoever the caller is; the
    broker keeps its credential as ``upstream-client:<name>`` under :attr:`principal`."""

    def __init__(self, server: ServerSettings) -> None:
        assert isinstance(server.auth, OAuthAuth)
        principal = Principal(f"client:{server.name}", issuer=f"mcp-providers:upstream:{server.name}")
        super().__init__(server.auth, name=f"upstream-client:{server.name}", principal=principal, **_endpoint(server))
        self.server = server


class TokenExchange(_oauth.TokenExchange):
    """The caller's own upstream identity, by RFC 8693 token exchange; the broker keeps each
    caller's credential as ``upstream:<name>``."""

    def __init__(self, server: ServerSettings) -> None:
        assert isinstance(server.auth, OnBehalfOfAuth)
        super().__init__(server.auth, name=f"upstream:{server.name}", **_endpoint(server))
        self.server = server


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
