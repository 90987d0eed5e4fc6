"""``mode = "introspection"``: opaque (or any) tokens checked by asking the issuer (RFC 7662).

The request authenticates this server with its client credentials (``client_secret_basic``,
RFC 6749 §2.3.1: id and secret form-encoded, then HTTP Basic). ``active: false`` is refused; when
the answer names ``iss`` it must be the configured issuer; ``aud`` must be there and name the
audience, as for a JWT (:func:`~mcp_providers._serve.identity.claims.audience_refusal`: an answer
naming no audience is a token bound to no server, refused);
an ``exp`` or ``nbf`` outside now is refused, and so is an answer about another kind of token
(a ``token_type`` other than ``bearer``/``access_token``: a refresh token; see
:func:`~mcp_providers._serve.identity.kinds.introspection_kind`). Positive answers are reused for at most
``introspection_cache_seconds`` and never past the token's ``exp``, keyed by the SHA-256 of the
token, held in memory only and never logged. A token not cached meets the guards of
:mod:`~mcp_providers._serve.identity.guard` before anything is asked (a negative cache, one
question per token, a budget per client address, a cap on questions in flight).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
from mcp.server.auth.provider import AccessToken

from mcp_providers._serve.identity.claims import access_token
from mcp_providers._serve.identity.errors import IdentityUnavailable, log, refused
from mcp_providers._serve.identity.fetch import FetchFailed, client_options, discover, json_object
from mcp_providers._serve.identity.guard import IntrospectionGuard
from mcp_providers._serve.identity.jwt import audiences
from mcp_providers._serve.identity.kinds import introspection_kind
from mcp_providers.config import AuthConfig, mask
from mcp_providers.errors import ConfigError
from mcp_providers.identity import PRINCIPAL_CLAIM, Principal

MAX_CACHED = 10_000
"""Most positive answers kept (the oldest go first)."""
RETRY_AFTER_SECONDS = 5
"""``Retry-After`` when the introspection endpoint cannot be asked."""
PROBE_TOKEN = "mcp-providers-start-up-probe"


def _credential(env: str | None, what: str) -> str:
    value = os.environ.get(env or "", "")
    if not value:
        raise ConfigError(f"server.auth: environment variable {env} ({what}) is unset or empty; export it")
    return value


class IntrospectionVerifier:
    """Asks ``config``'s issuer about each token not cached (see the module docstring).

    :raises ConfigError: a client credential's environment variable is unset.
    """

    def __init__(self, config: AuthConfig, audience: str, resource: str | None) -> None:
        self.config = config
        self.issuer = config.issuers[0]
        self.audience = audiences(audience)
        self.resource = resource
        self.endpoint = str(config.introspection_endpoint) if config.introspection_endpoint else ""
        client_id = _credential(config.client_id_env, "this server's client id")
        secret = _credential(config.client_secret_env, "this server's client secret")
        basic = httpx2.BasicAuth(quote(client_id, safe=""), quote(secret, safe=""))
        self._auth = basic
        self._cache: OrderedDict[bytes, tuple[float, AccessToken]] = OrderedDict()
        self.guard = IntrospectionGuard(
            negative_seconds=config.introspection_negative_cache_seconds,
            max_concurrent=config.introspection_max_concurrent,
            per_client_per_minute=config.introspection_per_client_per_minute,
            wait_seconds=config.http_timeout_seconds,
        )
        self.requests = 0
        """Introspection requests made (start-up probe included)."""

    def start(self) -> None:
        """Find the endpoint (unless configured) and probe it with a token no issuer made, which
        checks that it answers and accepts this server's credentials.

        :raises ConfigError: unreachable, or the credentials are refused (names the URL).
        """
        timeout = self.config.http_timeout_seconds
        if not self.endpoint:
            found = discover(self.issuer, timeout).get("introspection_endpoint")
            if not isinstance(found, str) or not found:
                raise ConfigError(
                    f"server.auth: issuer {self.issuer} publishes no introspection_endpoint; set introspection_endpoint"
                )
            self.endpoint = found
        self.requests += 1
        try:
            with httpx2.Client(**client_options(timeout)) as client:
                response = client.post(self.endpoint, data={"token": PROBE_TOKEN}, auth=self._auth)
        except httpx2.HTTPError as exc:
            raise ConfigError(f"server.auth: cannot reach {mask(self.endpoint)}: {type(exc).__name__}") from None
        if response.status_code in (401, 403):
            raise ConfigError(
                f"server.auth: {mask(self.endpoint)} refused this server's client credentials (HTTP "
                f"{response.status_code}); check {self.config.client_id_env} and {self.config.client_secret_env}"
            )
        try:
            json_object(response, self.endpoint)
        except FetchFailed as exc:
            raise ConfigError(f"server.auth: introspection probe failed: {exc}") from None

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token for an active token, else ``None`` (answered 401).

        :raises IdentityUnavailable: the endpoint cannot be asked or answers no JSON object.
        """
        digest = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > time.time():
            return _bearing(cached[1], token)
        self._cache.pop(digest, None)
        made = await self.guard.answer(digest, lambda: self._introspect(token, digest))
        return _bearing(made, token) if made is not None else None

    async def _introspect(self, token: str, digest: bytes) -> AccessToken | None:
        """Ask about ``token`` now (behind :attr:`guard`), and remember a positive answer."""
        answer = await self._ask(token)
        now = time.time()
        made = self._check(token, answer, now)
        if made is None:
            return None
        until = now + self.config.introspection_cache_seconds
        if made.expires_at is not None:
            until = min(until, made.expires_at)
        if until > now:
            self._remember(digest, until, made)
        return made

    async def _ask(self, token: str) -> dict[str, Any]:
        self.requests += 1
        timeout = self.config.http_timeout_seconds
        try:
            with anyio.fail_after(timeout):
                async with httpx2.AsyncClient(**client_options(timeout)) as client:
                    response = await client.post(
                        self.endpoint,
                        data={"token": token, "token_type_hint": "access_token"},
                        headers={"Accept": "application/json"},
                        auth=self._auth,
                    )
            return json_object(response, self.endpoint)
        except (httpx2.HTTPError, TimeoutError, FetchFailed) as exc:
            why = str(exc) if isinstance(exc, FetchFailed) else f"cannot reach {mask(self.endpoint)}"
            log.error("introspection failed: %s", why)
            raise IdentityUnavailable(f"introspection failed: {why}", retry_after=RETRY_AFTER_SECONDS) from None

    def _check(self, token: str, answer: dict[str, Any], now: float) -> AccessToken | None:
        """The access token for a positive ``answer``, else ``None`` after logging the failed check."""
        issuer = answer.get("iss", self.issuer)
        exp, nbf = _number(answer.get("exp")), _number(answer.get("nbf"))
        if answer.get("active") is not True:
            check = "inactive"
        elif issuer != self.issuer:
            check = "wrong issuer"
        elif exp is not None and exp <= now:
            check = "expired"
        elif nbf is not None and nbf > now:
            check = "not yet valid"
        elif (kind := introspection_kind(answer)) is not None:
            check = kind
        else:
            made = access_token(token, answer, self.issuer, self.config, self.resource, self.audience)
            if not isinstance(made, str):
                return made
            check = made
        refused(check, iss=issuer if isinstance(issuer, str) else None)
        return None

    def _remember(self, digest: bytes, until: float, made: AccessToken) -> None:
        self._cache[digest] = (until, _bearing(made, None))  # the cache keeps no token
        while len(self._cache) > MAX_CACHED:
            self._cache.popitem(last=False)


def _bearing(made: AccessToken, token: str | None) -> AccessToken:
    """``made`` for ``token`` (``None``: for no token, as cached): the SDK token and the principal
    in its claims (:attr:`Principal.access_token`) both carry it."""
    claims = dict(made.claims or {})
    principal = claims.get(PRINCIPAL_CLAIM)
    if isinstance(principal, Principal):
        claims[PRINCIPAL_CLAIM] = principal.bearing(token)
    return made.model_copy(update={"token": token or "", "claims": claims})


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
