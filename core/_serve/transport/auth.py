"""Bearer authentication for streamable HTTP: the MCP server as an OAuth 2.1 resource server.

- :func:`http_auth` builds the :class:`~mcp_providers._serve.identity.ResourceServer` that
  ``[server.auth]`` describes (static tokens, JWT, or RFC 7662 introspection).
- :class:`BearerGate` guards the MCP path. No token: 401 with
  ``WWW-Authenticate: Bearer resource_metadata="<url>"`` (and ``scope="..."`` when scopes are
  required); a refused token: the same with ``error="invalid_token"``; a missing scope: 403
  ``error="insufficient_scope"``, ``scope`` naming the scopes needed (RFC 6750 §3.1; MCP
  authorization, scope challenge); a token that cannot be checked now: 503 with ``Retry-After``
  (429 when the client address asked about too many unknown tokens,
  :mod:`~mcp_providers._serve.identity.guard`).
  An accepted token leaves the SDK's ``AuthenticatedUser`` in ``scope["user"]`` and
  ``AuthCredentials`` in ``scope["auth"]`` and the user in the SDK's ``auth_context_var`` (what its
  ``AuthContextMiddleware`` does), so the SDK's session-to-principal binding, ``get_access_token()``
  and ``ctx.request.scope["user"].access_token`` work as with its own middleware (which has no
  ``scope=`` and no 503).
- :func:`metadata_endpoints`: RFC 9728 Protected Resource Metadata at
  ``/.well-known/oauth-protected-resource`` and the path-suffixed form for the MCP path (and for
  the path of ``resource_url``, when a proxy serves it under another one), through the SDK's model
  and handler.
"""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_providers._serve.identity import IdentityUnavailable, ResourceServer, resource_server
from mcp_providers._serve.identity.errors import refused
from mcp_providers._serve.identity.guard import asking_from
from mcp_providers._serve.identity.static import MIN_TOKEN_LENGTH as MIN_TOKEN_LENGTH
from mcp_providers._serve.identity.static import StaticTokenVerifier as StaticTokenVerifier
from mcp_providers.config import AuthConfig

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MAX_USERS = 10_000
"""Most access tokens whose SDK user objects the bearer gate keeps (as many as the JWT verifier)."""


def http_auth(config: AuthConfig | None, default_resource_url: str | None = None) -> ResourceServer | None:
    """The resource server of ``[server.auth]``, or ``None`` without one (unauthenticated HTTP).

    :param default_resource_url: ``http://<bind host:port>/mcp`` when clients can use it.
    :raises ConfigError: see :func:`~mcp_providers._serve.identity.resource_server`.
    """
    return None if config is None else resource_server(config, default_resource_url)


def _resource_of(server: ResourceServer, scope: Scope, path: str) -> str:
    """The canonical resource URL: configured or derived, else this request's own URL of ``path``."""
    if server.resource_url is not None:
        return server.resource_url
    url = Request(scope).url
    return f"{url.scheme}://{url.netloc}{scope.get('root_path', '')}{path}"


def _metadata(server: ResourceServer, resource: str) -> ProtectedResourceMetadata:
    # Validated from strings: the model keeps an empty URL path empty, so an issuer reads exactly
    # as configured (RFC 8414 §3.3 compares issuers as strings; no trailing slash added).
    return ProtectedResourceMetadata.model_validate(
        {
            "resource": resource,
            "authorization_servers": list(server.authorization_servers),
            "scopes_supported": list(server.required_scopes) or None,
            "bearer_methods_supported": ["header"],
        }
    )


def _suffix(resource: str) -> str:
    """What RFC 9728 §3.1 appends to the well-known path for ``resource``: its path as it is
    (``""`` for an origin's ``/``; a trailing slash stays, ``/mcp/`` is not ``/mcp``)."""
    path = urlsplit(resource).path
    return "" if path == "/" else path


def metadata_url(resource: str) -> str:
    """The URL of ``resource``'s RFC 9728 metadata (§3.1): ``/.well-known/oauth-protected-resource``
    inserted between the host and the path (and query) of the resource identifier, e.g.
    ``https://h/mcp/`` -> ``https://h/.well-known/oauth-protected-resource/mcp/``."""
    parts = urlsplit(resource)
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{_suffix(resource)}{query}"


def metadata_endpoints(server: ResourceServer, path: str) -> dict[str, ASGIApp]:
    """RFC 9728 metadata endpoints by path (``{}`` when no authorization server is known: static
    tokens without ``issuer_url`` have nothing for a client to log in with): the root, the MCP
    path's, and, with ``resource_url``, exactly where :func:`metadata_url` points (and that path
    without a trailing slash, for clients that drop it)."""
    if not server.authorization_servers:
        return {}
    paths = {WELL_KNOWN, WELL_KNOWN + path}
    if server.resource_url is not None:
        suffix = _suffix(server.resource_url)
        paths |= {WELL_KNOWN + suffix, WELL_KNOWN + suffix.rstrip("/")}
        fixed = ProtectedResourceMetadataHandler(_metadata(server, server.resource_url))
        endpoint = cors_middleware(fixed.handle, ["GET", "OPTIONS"])
    else:

        async def derived(scope: Scope, receive: Receive, send: Send) -> None:
            handler = ProtectedResourceMetadataHandler(_metadata(server, _resource_of(server, scope, path)))
            await cors_middleware(handler.handle, ["GET", "OPTIONS"])(scope, receive, send)

        endpoint = derived
    return dict.fromkeys(sorted(paths), endpoint)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BearerGate:
    """Guards ``app`` (the MCP endpoint at ``path``) with ``server``'s verifier (module docstring)."""

    def __init__(self, app: ASGIApp, server: ResourceServer, path: str) -> None:
        self.app = app
        self.server = server
        self.path = path
        self.published = bool(server.authorization_servers)
        self._users: dict[int, tuple[AccessToken, AuthenticatedUser, AuthCredentials]] = {}
        """id(access token) -> what the SDK reads of it: a verifier answers a token it has seen with
        the same object, so both are made once per token (the entry holds it, so its id is not reused)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _bearer(scope)
        if token is _TWO:  # RFC 6750 §3.1: more than one way of presenting a token is invalid_request
            await _send(send, 400, "invalid_request", "more than one Authorization header; send one", [])
            return
        if token is None:
            await self._challenge(scope, send, 401, None, "a bearer token is required")
            return
        try:
            with asking_from(_address(scope)):
                access = await self.server.verifier.verify_token(token)
        except IdentityUnavailable as exc:
            retry = [(b"retry-after", str(exc.retry_after).encode())]
            error = "too_many_requests" if exc.status == 429 else "temporarily_unavailable"
            await _send(send, exc.status, error, str(exc), retry)
            return
        if access is not None and access.expires_at is not None and access.expires_at < int(time.time()):
            refused("expired", by="the bearer gate")
            access = None
        if access is None:
            await self._challenge(scope, send, 401, "invalid_token", "the bearer token was refused")
            return
        missing = [s for s in self.server.required_scopes if s not in access.scopes]
        if missing:
            await self._challenge(scope, send, 403, "insufficient_scope", f"missing scope: {' '.join(missing)}")
            return
        scope["user"], scope["auth"] = user, _ = self._user(access)
        reset = auth_context_var.set(user)  # what the SDK's AuthContextMiddleware does, one layer less
        try:
            await self.app(scope, receive, send)
        finally:
            auth_context_var.reset(reset)

    def _user(self, access: AccessToken) -> tuple[AuthenticatedUser, AuthCredentials]:
        entry = self._users.get(id(access))
        if entry is None:
            entry = (access, AuthenticatedUser(access), AuthCredentials(access.scopes))
            if len(self._users) >= MAX_USERS:
                del self._users[next(iter(self._users))]  # the oldest first
            self._users[id(access)] = entry
        return entry[1], entry[2]

    async def _challenge(self, scope: Scope, send: Send, status: int, error: str | None, description: str) -> None:
        parts = [f"error={_quoted(error)}"] if error else []
        if self.published:
            resource = _resource_of(self.server, scope, self.path)
            parts.append(f"resource_metadata={_quoted(metadata_url(resource))}")
        if self.server.required_scopes:
            parts.append(f"scope={_quoted(' '.join(self.server.required_scopes))}")
        if error:
            parts.append(f"error_description={_quoted(description)}")
        header = ("Bearer " + ", ".join(parts)).strip()
        await _send(send, status, error or "invalid_token", description, [(b"www-authenticate", header.encode())])


def _address(scope: Scope) -> str | None:
    """The client's address (uvicorn has put a ``trusted_proxies`` peer's ``X-Forwarded-For`` there)."""
    client = scope.get("client")
    return str(client[0]) if client else None


_TWO = "\0two"
"""What :func:`_bearer` answers for a request with several ``Authorization`` headers."""


def _bearer(scope: Scope) -> str | None:
    """The bearer token of the ``Authorization`` header (RFC 6750 §2.1), ``None`` without one,
    :data:`_TWO` when there are several (which of them would count is not defined)."""
    found = [value for name, value in scope["headers"] if name == b"authorization"]
    if not found:
        return None
    if len(found) > 1:
        return _TWO
    kind, _, token = found[0].decode("latin-1").strip().partition(" ")
    if kind.lower() != "bearer":
        return None  # another scheme (Basic, ...) is no bearer token: answered as none given
    return token.strip() or None


async def _send(send: Send, status: int, error: str, description: str, extra: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
