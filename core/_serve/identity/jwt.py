"""``mode = "jwt"``: JWT access tokens (RFC 9068) checked against their issuer's published keys.

Checks, in order, each refusal logged once by name (never the token): the header's ``alg`` is one
of the configured asymmetric algorithms (never ``none``, never ``HS*``, so a public key can never
serve as an HMAC secret); it names a ``kid``; the unverified ``iss`` is a configured issuer; that
issuer's JWKS has the ``kid`` and the key's type fits the ``alg``; then PyJWT verifies the
signature and ``iss``, ``aud`` (must contain the audience: the spec's token audience binding),
``exp``, ``nbf`` and ``iat`` within ``leeway_seconds``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import jwt as pyjwt
from jwt import PyJWK
from mcp.server.auth.provider import AccessToken

from mcp_providers._serve.identity.claims import access_token
from mcp_providers._serve.identity.errors import refused
from mcp_providers._serve.identity.fetch import FetchFailed, discover
from mcp_providers._serve.identity.jwks import KeySet
from mcp_providers.config import AuthConfig
from mcp_providers.errors import ConfigError

_FAMILY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521", "EdDSA": "Ed25519"}
_REFUSALS: list[tuple[type[Exception], str]] = [
    (pyjwt.InvalidSignatureError, "bad signature"),
    (pyjwt.ExpiredSignatureError, "expired"),
    (pyjwt.InvalidAudienceError, "wrong audience"),
    (pyjwt.InvalidIssuerError, "wrong issuer"),
    (pyjwt.MissingRequiredClaimError, "missing claim"),
    (pyjwt.InvalidIssuedAtError, "bad iat"),
]


def audiences(audience: str) -> list[str]:
    """``audience`` and, for a URL with an empty path, its other spelling (``https://mcp.example.com/``
    and ``https://mcp.example.com`` name one resource)."""
    parts = urlsplit(audience)
    if not parts.netloc or parts.query or parts.path not in ("", "/"):
        return [audience]
    return [audience, audience.removesuffix("/") if parts.path else audience + "/"]


def fits(key: PyJWK, alg: str) -> bool:
    """Whether ``key`` may verify an ``alg`` signature: same key type (and curve), and the key's
    own ``alg`` (if it names one) is ``alg``."""
    data: Mapping[str, Any] = key._jwk_data
    if data.get("alg") not in (None, alg):
        return False
    if data.get("kty") != _FAMILY.get(alg[:2]):
        return False
    return alg not in _CURVE or data.get("crv") == _CURVE[alg]


class JwtVerifier:
    """Verifies JWT access tokens from the issuers of ``config`` (see the module docstring).

    :param audience: what ``aud`` must contain (``config.audience``, else the resource URL).
    :param resource: this server's canonical URL, reported as ``AccessToken.resource``.
    """

    def __init__(self, config: AuthConfig, audience: str, resource: str | None) -> None:
        self.config = config
        self.audience = audiences(audience)
        self.resource = resource
        self.keys: dict[str, KeySet] = {}
        for issuer in config.issuers:
            url = str(config.jwks_url) if config.jwks_url is not None else None
            self.keys[issuer] = KeySet(
                url or "", min_refresh=config.jwks_min_refresh_seconds, timeout=config.http_timeout_seconds
            )

    def start(self) -> None:
        """Discover each issuer's ``jwks_uri`` (unless ``jwks_url`` is set) and fetch its keys.

        :raises ConfigError: an issuer or its JWKS cannot be reached or is not usable (names the URL).
        """
        for issuer, key_set in self.keys.items():
            if not key_set.url:
                uri = discover(issuer, self.config.http_timeout_seconds).get("jwks_uri")
                if not isinstance(uri, str) or not uri:
                    raise ConfigError(
                        f"server.auth: issuer {issuer} publishes no jwks_uri; set jwks_url to where its keys are"
                    )
                key_set.url = uri
            try:
                key_set.load_now()
            except FetchFailed as exc:
                raise ConfigError(f"server.auth: the keys of issuer {issuer} cannot be loaded: {exc}") from None

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token for a valid JWT, else ``None`` (answered 401); one log line per refusal.

        :raises IdentityUnavailable: the token's key is not cached and the JWKS cannot be fetched.
        """
        try:
            header = pyjwt.get_unverified_header(token)
            unverified = pyjwt.decode(token, options={"verify_signature": False})
        except pyjwt.PyJWTError:
            refused("malformed token")
            return None
        alg, kid, issuer = header.get("alg"), header.get("kid"), unverified.get("iss")
        if alg not in self.config.algorithms:
            refused("disallowed alg", alg=alg)
            return None
        if not isinstance(kid, str) or not kid:
            refused("no kid in the header", alg=alg)
            return None
        if not isinstance(issuer, str) or issuer not in self.keys:
            refused("wrong issuer", iss=issuer)
            return None
        key = await self.keys[issuer].key(kid)
        if key is None:
            refused("unknown kid", iss=issuer, kid=kid)
            return None
        if not fits(key, alg):
            refused("key does not fit alg", iss=issuer, kid=kid, alg=alg)
            return None
        claims = self._decode(token, key, alg, issuer, kid)
        if claims is None:
            return None
        made = access_token(token, claims, issuer, self.config, self.resource)
        if isinstance(made, str):
            refused(made, iss=issuer, kid=kid)
            return None
        return made

    def _decode(self, token: str, key: PyJWK, alg: str, issuer: str, kid: str) -> dict[str, Any] | None:
        try:
            claims: dict[str, Any] = pyjwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=issuer,
                leeway=self.config.leeway_seconds,
                options={"require": ["exp", "iss", "aud"]},
            )
        except pyjwt.ImmatureSignatureError as exc:
            refused("issued in the future" if "(iat)" in str(exc) else "not yet valid", iss=issuer, kid=kid)
            return None
        except pyjwt.PyJWTError as exc:
            check = next((name for kind, name in _REFUSALS if isinstance(exc, kind)), "malformed token")
            refused(check, iss=issuer, kid=kid)
            return None
        return claims
