"""``mode = "static"``: bearer tokens named in ``[server.auth] tokens``, each read from its
environment variable; the configured subject becomes the caller (issuer
:data:`~mcp_providers.identity.STATIC_ISSUER`)."""

from __future__ import annotations

import hmac
import os

from mcp.server.auth.provider import AccessToken

from mcp_providers._serve.identity.errors import refused
from mcp_providers.config import AuthConfig, TokenConfig
from mcp_providers.errors import ConfigError
from mcp_providers.identity import PRINCIPAL_CLAIM, STATIC_ISSUER, Principal

MIN_TOKEN_LENGTH = 16
"""Shortest bearer token accepted, in characters (a short token can be guessed)."""


class StaticTokenVerifier:
    """Accepts the tokens named in ``[server.auth]``, each read from its environment variable.

    :raises ConfigError: a named environment variable is unset or empty, a token is shorter than
        :data:`MIN_TOKEN_LENGTH`, or two subjects share a token (says which, never the value).
    """

    def __init__(self, config: AuthConfig) -> None:
        self._tokens: list[tuple[bytes, TokenConfig]] = []
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
            for other_value, other in self._tokens:
                if hmac.compare_digest(other_value, value.encode()):
                    raise ConfigError(
                        f"server.auth: {other.subject!r} and {entry.subject!r} have the same token; each subject "
                        "needs its own, or one could act as the other"
                    )
            self._tokens.append((value.encode(), entry))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The subject's access token for a known bearer token, else ``None`` (answered 401)."""
        presented = token.encode()
        found = None
        for value, entry in self._tokens:
            # Compare against every token in constant time so timing reveals nothing.
            if hmac.compare_digest(presented, value):
                found = entry
        if found is None:
            refused("unknown static token")
            return None
        principal = Principal(
            found.subject,
            issuer=STATIC_ISSUER,
            client_id=found.subject,
            scopes=frozenset(found.scopes),
            groups=frozenset(found.groups),
        )
        return AccessToken(
            token=token,
            client_id=found.subject,
            subject=found.subject,
            scopes=list(found.scopes),
            claims={PRINCIPAL_CLAIM: principal},
        )
