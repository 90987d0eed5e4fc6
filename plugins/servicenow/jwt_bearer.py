"""Per-user access through ServiceNow's OAuth JWT bearer grant (RFC 7523): :class:`JwtBearerUpstream`.

The credential broker calls :meth:`JwtBearerUpstream.obtain` for a caller; the instance's answer is
a token of that caller's ServiceNow user, sent on that caller's requests only. authlib signs the
assertion (:meth:`authlib.oauth2.rfc7523.JWTBearerGrant.sign`, RS256 through joserfc) and makes
the grant (:mod:`~.token_endpoint`); this module maps callers to users, loads the key and words
the refusals.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from typing import TYPE_CHECKING, Any

import httpx2

from mcp_providers.credentials import Credential, CredentialRefused, fingerprint
from mcp_providers.identity import LOCAL_ISSUER, Principal
from mcp_providers.plugins.servicenow.auth_settings import JwtBearerAuth, read_secret
from mcp_providers.plugins.servicenow.errors import NoVerifiedCaller, ServiceNowError, clip
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import InstanceSettings

if TYPE_CHECKING:  # authlib, joserfc and cryptography are imported when a JWT bearer instance needs them
    from cryptography.hazmat.primitives.asymmetric import rsa
    from joserfc.jwk import RSAKey

    from mcp_providers.plugins.servicenow.token_endpoint import TokenEndpoint

__all__ = ["JWT_BEARER_GRANT", "JwtBearerUpstream", "load_private_key"]

log = logging.getLogger(__name__)


JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
"""``grant_type`` of the JWT bearer grant (RFC 7523 §2.1), as ServiceNow's ``/oauth_token.do`` takes it."""


def load_private_key(pem: str, *, instance: str, env: str) -> rsa.RSAPrivateKey:
    """The RSA private key in ``pem`` (PEM, unencrypted; ``\\n`` escapes accepted for one-line variables).

    :raises ValueError: not an unencrypted PEM private key, not RSA, or under 2048 bits; the
        message names ``env`` and never shows any part of the value.
    """
    from cryptography.exceptions import UnsupportedAlgorithm  # only with JWT bearer auth configured
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    text = pem if "\n" in pem else pem.replace("\\n", "\n")
    where = f"instance {instance!r}: environment variable {env} (from auth.private_key_env)"
    try:
        key = serialization.load_pem_private_key(text.strip().encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValueError(
            f"{where} does not hold an unencrypted PEM private key (PKCS#8 or "
            f"PKCS#1); export the key the instance's JWT verifier map has the certificate of"
        ) from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError(f"{where} holds a {type(key).__name__.lstrip('_')} key; RS256 assertions need an RSA key")
    if key.key_size < 2048:
        raise ValueError(f"{where} holds a {key.key_size}-bit RSA key; use 2048 bits or more")
    return key


class JwtBearerUpstream:
    """The :class:`~mcp_providers.credentials.Upstream` of one ``jwt_bearer`` instance.

    :meth:`obtain` signs an RS256 assertion for the caller (``iss`` = client id, ``sub`` = the
    Principal's ``user_claim``, ``aud`` = client id or token endpoint, ``iat``, ``exp``, a fresh
    ``jti``) and posts it with the client id and secret to the instance's token endpoint
    (``grant_type`` = :data:`JWT_BEARER_GRANT`); the ``access_token`` answered is a token of that
    ServiceNow user. Source: ServiceNow docs, "JSON Web token bearer grant".
    """

    def __init__(self, settings: InstanceSettings, redactor: Redactor) -> None:
        if not isinstance(settings.auth, JwtBearerAuth):
            raise TypeError(f"instance {settings.name!r} does not use jwt_bearer auth")
        self.settings = settings
        self.auth: JwtBearerAuth = settings.auth
        self._redactor = redactor
        self._endpoint: TokenEndpoint | None = None
        self._error: str | None = f"instance {settings.name!r} is not open"
        self._client_id = settings.auth.client_id or ""
        self._secret = ""
        self._key: RSAKey | None = None
        self.token_requests = 0
        """Grant requests sent so far (for diagnostics and tests)."""
        env = settings.auth.client_id_env
        self.fingerprint = fingerprint(
            "jwt_bearer", settings.url, self.auth.model_dump(mode="json"), self.auth.mapped_issuers,
            os.environ.get(env, "") if env else self._client_id,
        )  # fmt: skip
        """Everything a user token is obtained under (the broker's key): the instance URL, the auth
        table (user claim, client, token path, issuers), the client id; a reload changing any of
        them is another key, so no token is sent to a moved instance or kept for a re-mapped user."""

    @property
    def name(self) -> str:
        """``servicenow:<instance>``: stable for the instance, part of the broker's cache key."""
        return f"servicenow:{self.settings.name}"

    def bind(self, http: httpx2.AsyncClient | None, error: str | None = None) -> str | None:
        """Use ``http`` (the instance's own client) for grant requests, reading the secrets now;
        with ``error`` (or a secret missing or malformed) every :meth:`obtain` fails saying so.

        :returns: why grants cannot be made (a missing or malformed secret, named, never shown),
            or ``None``.
        """
        self._endpoint, self._error = None, error
        if http is None:
            return error
        from joserfc.jwk import RSAKey  # only with JWT bearer auth configured

        from mcp_providers.plugins.servicenow.token_endpoint import TokenEndpoint

        name, auth = self.settings.name, self.auth
        try:
            if auth.client_id_env is not None:
                self._client_id = read_secret(auth.client_id_env, instance=name, setting="auth.client_id_env")
            secret = read_secret(auth.client_secret_env, instance=name, setting="auth.client_secret_env")
            pem = read_secret(auth.private_key_env, instance=name, setting="auth.private_key_env")
            self._key = RSAKey.import_key(load_private_key(pem, instance=name, env=auth.private_key_env))
        except ValueError as exc:
            self._error = str(exc)
            return self._error
        self._endpoint = TokenEndpoint(http, instance=name, client_id=self._client_id, client_secret=secret)
        return None

    def user_of(self, principal: Principal) -> str:
        """The ServiceNow user value (the assertion's ``sub``) ``principal`` acts as.

        :raises NoVerifiedCaller: ``principal`` is anonymous, is stdio's ``local`` and no
            ``local_user`` is configured, comes from an issuer the instance does not map
            (``auth.issuers``), or carries no non-empty string in ``user_claim``.
        """
        name, claim = self.settings.name, self.auth.user_claim
        lead = (f"instance {name!r} serves each caller as their own ServiceNow user (auth type jwt_bearer), "
                f"and never as a service account")  # fmt: skip
        if principal.anonymous:
            raise NoVerifiedCaller(f"{lead}; this request has no verified caller: call over HTTP with a bearer "
                                   f"token (configure [server.auth])", data={"instance": name})  # fmt: skip
        if principal.issuer == LOCAL_ISSUER:
            if self.auth.local_user is None:
                raise NoVerifiedCaller(f"{lead}; the local (stdio) caller is not mapped to a user: set "
                                       f"auth.local_user, or call over HTTP with a bearer token",
                                       data={"instance": name})  # fmt: skip
            return self.auth.local_user
        if (refusal := self.auth.refusal(principal.issuer)) is not None:
            raise NoVerifiedCaller(f"{lead}; {refusal}", data={"instance": name, "issuer": principal.issuer})
        value = principal.subject if claim == "sub" else principal.claims.get(claim)
        if not isinstance(value, str) or not value:
            raise NoVerifiedCaller(f"{lead}; the caller's token carries no {claim!r} claim (auth.user_claim), so "
                                   f"there is no user to act as: list {claim!r} in [server.auth] claims and have the "
                                   f"identity provider issue it", data={"instance": name, "claim": claim})  # fmt: skip
        return value

    def admit(self, principal: Principal) -> None:
        """Refuse a caller the current settings map to no user (:meth:`user_of`): asked by the
        broker before every hand-out of a cached token, as :meth:`obtain` does before a grant.

        :raises NoVerifiedCaller: see :meth:`user_of` (nothing is sent).
        """
        self.user_of(principal)

    def assertion(self, user: str, *, now: float | None = None) -> str:
        """The signed RS256 assertion for ``user`` (compact JWS); valid ``assertion_seconds``.

        :raises RuntimeError: the upstream is not bound (no key loaded).
        """
        if self._key is None:
            raise RuntimeError(self._error or f"instance {self.settings.name!r} has no private key loaded")
        from authlib.oauth2.rfc7523 import JWTBearerGrant  # only with JWT bearer auth configured

        issued = int(time.time() if now is None else now)
        audience = self._client_id if self.auth.audience == "client_id" else self.settings.url + self.auth.token_path
        header = {"alg": "RS256"} | ({"kid": self.auth.key_id} if self.auth.key_id else {})
        signed: str = JWTBearerGrant.sign(self._key, issuer=self._client_id, audience=audience, subject=user,
                                          issued_at=issued, expires_at=issued + self.auth.assertion_seconds,
                                          claims={"jti": secrets.token_urlsafe(24)}, header=header)  # fmt: skip
        return signed

    async def obtain(self, principal: Principal) -> Credential:
        """A token of ``principal``'s ServiceNow user, from the JWT bearer grant.

        :raises NoVerifiedCaller: see :meth:`user_of` (nothing is sent).
        :raises CredentialRefused: the instance refused the grant (its ``error``/``error_description``
            quoted, redacted), or answered without an ``access_token``.
        :raises ServiceNowError: the instance is not open, a secret is missing, or the token
            endpoint timed out or could not be reached.
        """
        from mcp_providers.plugins.servicenow.token_endpoint import TokenEndpointUnreachable, TokenRefused

        user = self.user_of(principal)
        name, path = self.settings.name, self.auth.token_path
        if self._endpoint is None:
            raise ServiceNowError(self._error or "not open", instance=name)
        self.token_requests += 1
        try:
            token = await self._endpoint.grant(path, JWT_BEARER_GRANT, assertion=self.assertion(user))
        except TokenEndpointUnreachable as exc:
            where = f"instance {name!r}: JWT bearer token request for user {user!r} to {path}"
            raise ServiceNowError(f"{where} {exc}", instance=name) from exc
        except TokenRefused as exc:
            raise CredentialRefused(self._refusal(exc.status, exc.reason, user),
                                    data={"instance": name, "status": exc.status}) from None  # fmt: skip
        log.debug("instance %s: user token obtained (jwt_bearer grant)", name)
        lifetime = _seconds(token.get("expires_in"))
        return Credential(token=token["access_token"], expires_at=time.time() + lifetime, subject=user,
                          grant="jwt_bearer")  # fmt: skip

    def _refusal(self, status: int, reason: str, user: str) -> str:
        auth = self.auth
        client = f"auth.client_id_env {auth.client_id_env}" if auth.client_id_env else f"client {self._client_id!r}"
        said = f": {clip(reason, self._redactor.text)}" if reason else ""  # masked, then cut
        return self._redactor.text(
            f"instance {self.settings.name!r} refused a token for ServiceNow user {user!r} (JWT bearer grant, "
            f"HTTP {status}{said}); check that an active sys_user has that value in the user field of the OAuth "
            f"JWT API endpoint, that its JWT verifier map holds the certificate of the key in {auth.private_key_env}, "
            f"and {client} with the secret in "
            f"{auth.client_secret_env}"
        )


def _seconds(value: Any) -> float:
    """``expires_in`` as seconds (1800, ServiceNow's default, when absent or malformed)."""
    try:
        found = float(value)
    except (TypeError, ValueError):
        return 1800.0
    return found if found > 0 else 1800.0
