"""Bearer-token authentication for streamable HTTP, through the SDK's ``TokenVerifier`` seam.

The verified token's subject becomes the ``subject`` every authorize call and receipt names. Over
stdio there is no token: the subject is ``"local"``. Any ``TokenVerifier`` (JWT, introspection)
can be passed instead of :class:`StaticTokenVerifier` when embedding.
"""

from __future__ import annotations

import hmac
import os
from typing import Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from mcp_providers.config import AuthConfig
from mcp_providers.errors import ConfigError

MIN_TOKEN_LENGTH = 16
"""Shortest bearer token accepted, in characters (a short token can be guessed)."""


class StaticTokenVerifier:
    """Accepts the tokens named in ``[server.auth]``, each read from its environment variable.

    :raises ConfigError: a named environment variable is unset or empty, a token is shorter than
        :data:`MIN_TOKEN_LENGTH`, or two subjects share a token (says which, never the value).
    """

    def __init__(self, config: AuthConfig) -> None:
        self._tokens: list[tuple[bytes, str]] = []
        for entry in config.tokens:
            value = os.environ.get(entry.token_env, "")
            if not value:
                raise ConfigError(
                    f"server.auth: environment variable {entry.token_env} (token for {entry.subject!r}) is unset "
                    "or empty; export it before starting the server"
                )
            if len(value) < MIN_TOKEN_LENGTH:
                raise ConfigError(
                    f"server.auth: the token in {entry.token_env} (for {entry.subject!r}) is shorter than "
                    f"{MIN_TOKEN_LENGTH} characters; use a long random value, e.g. from `openssl rand -hex 32`"
                )
            for other_value, other_subject in self._tokens:
                if hmac.compare_digest(other_value, value.encode()):
                    raise ConfigError(
                        f"server.auth: {other_subject!r} and {entry.subject!r} have the same token; each subject "
                        "needs its own, or one could act as the other"
                    )
            self._tokens.append((value.encode(), entry.subject))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The subject's access token for a known bearer token, else ``None`` (the SDK answers 401)."""
        presented = token.encode()
        found = None
        for value, subject in self._tokens:
            # Compare against every token in constant time so timing reveals nothing.
            if hmac.compare_digest(presented, value):
                found = subject
        if found is None:
            return None
        return AccessToken(token=token, client_id=found, subject=found, scopes=[])


def http_auth(config: AuthConfig | None) -> dict[str, Any]:
    """Keyword arguments for the SDK's ``streamable_http_app()`` that turn bearer auth on.

    :returns: ``{}`` without ``[server.auth]`` tokens, else ``{"auth": ..., "token_verifier": ...}``.
    :raises ConfigError: a token's environment variable is unset.
    """
    if config is None or not config.tokens:
        return {}
    return {
        "auth": AuthSettings(issuer_url=config.issuer_url, resource_server_url=None),
        "token_verifier": StaticTokenVerifier(config),
    }
