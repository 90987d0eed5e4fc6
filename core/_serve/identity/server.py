"""What ``[server.auth]`` makes of this server: an OAuth 2.1 resource server (MCP authorization,
RFC 9728) with one token verifier, the canonical resource URL, the issuers it trusts and the
scopes every request needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_providers._serve.identity.introspection import IntrospectionVerifier
from mcp_providers._serve.identity.jwt import JwtVerifier
from mcp_providers._serve.identity.static import StaticTokenVerifier
from mcp_providers.config import AuthConfig
from mcp_providers.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ResourceServer:
    """The verifier and what the HTTP layer publishes (RFC 9728 metadata, ``WWW-Authenticate``).

    :param resource_url: the canonical URL clients use (``None``: static tokens served without a
        known URL; the metadata is then derived from each request's own URL).
    :param authorization_servers: the issuers named in the metadata (empty for static tokens
        without ``issuer_url``: then no metadata is published).
    """

    verifier: Any
    resource_url: str | None
    authorization_servers: tuple[str, ...]
    required_scopes: tuple[str, ...]


def resource_server(config: AuthConfig, default_resource_url: str | None, *, start: bool = True) -> ResourceServer:
    """The resource server ``config`` describes.

    :param default_resource_url: ``http://<bind host:port><path>`` when that is a URL clients can
        use (not a wildcard bind), else ``None``; ``config.resource_url`` wins.
    :param start: reach the identity provider now (discovery, JWKS, an introspection probe), so a
        wrong or unreachable issuer stops start-up instead of failing every request.
    :raises ConfigError: a static token's variable is unset; ``jwt``/``introspection`` without a
        resource URL or audience; the issuer unreachable or not what it says (names the URL).
    """
    resource = str(config.resource_url) if config.resource_url is not None else default_resource_url
    if config.mode == "static":
        servers = (str(config.issuer_url),) if config.issuer_url is not None else ()
        return ResourceServer(StaticTokenVerifier(config), resource, servers, config.required_scopes)
    audience = config.audience or resource
    if audience is None or resource is None:
        raise ConfigError(
            f'server.auth: mode "{config.mode}" needs resource_url, the URL clients use for this server '
            '(e.g. resource_url = "https://mcp.example.com/mcp"): it is the audience tokens must be issued for, '
            "and this server binds a wildcard address or is mounted in another app, so it cannot be derived"
        )
    verifier: JwtVerifier | IntrospectionVerifier
    if config.mode == "jwt":
        verifier = JwtVerifier(config, audience, resource)
    else:
        verifier = IntrospectionVerifier(config, audience, resource)
    if start:
        verifier.start()
    return ResourceServer(verifier, resource, config.issuers, config.required_scopes)
