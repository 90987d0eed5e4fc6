"""``mode = "jwt"``: JWT access tokens (RFC 9068) checked against their issuer's published keys.

Checks, in order, each refusal logged once by name (never the token): the header's ``alg`` is one
of the configured asymmetric algorithms (never ``none``, never ``HS*``, so a public key can never
serve as an HMAC secret); it names a ``kid``; the unverified ``iss`` is a configured issuer; the
header's ``typ`` is an access token's (:func:`~mcp_providers._serve.identity.kinds.header_kind`); that
issuer's JWKS has the ``kid`` and the key's type fits the ``alg``; then PyJWT verifies the
signature and ``iss``, ``exp``, ``nbf`` and ``iat`` within ``leeway_seconds``; ``aud`` must be
there and contain the audience (the spec's token audience binding; the rule introspection shares,
:func:`~mcp_providers._serve.identity.claims.audience_refusal`); the payload is not evidently another kind
of token (:func:`~mcp_providers._serve.identity.kinds.claims_kind`: an ID or logout token).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import jwt as pyjwt
from mcp.server.auth.provider import AccessToken

from mcp_providers._serve.identity.claims import access_token
from mcp_providers._serve.identity.errors import refused
from mcp_providers._serve.identity.fetch import FetchFailed, discover
from mcp_providers._serve.identity.jwks import KeySet, SigningKey
from mcp_providers._serve.identity.kinds import claims_kind, header_kind
from mcp_providers.config import AuthConfig
from mcp_providers.errors import ConfigError

MAX_VERIFIED = 10_000
"""Most verified tokens remembered (the oldest go first)."""
_FAMILY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521", "EdDSA": "Ed25519"}
_REFUSALS: list[tuple[type[Exception], str]] = [
    (pyjwt.InvalidSignatureError, "bad signature"),
    (pyjwt.ExpiredSignatureError, "expired"),
    (pyjwt.InvalidIssuerError, "wrong issuer"),
    (pyjwt.MissingRequiredClaimError, "missing claim"),
    (pyjwt.InvalidIssuedAtError, "bad iat"),
]


def _segment(text: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _peek(token: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The unverified header and payload of a compact JWS (to choose the key), else ``None``.
    Nothing read here is trusted before PyJWT has checked the signature."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header, payload = _segment(parts[0]), _segment(parts[1])
    except (ValueError, binascii.Error, RecursionError):
        return None
    return (header, payload) if isinstance(header, dict) and isinstance(payload, dict) else None


def audiences(audience: str) -> list[str]:
    """``audience`` and, for a URL with an empty path, its other spelling (``https://mcp.example.com/``
    and ``https://mcp.example.com`` name one resource)."""
    parts = urlsplit(audience)
    if not parts.netloc or parts.query or parts.path not in ("", "/"):
        return [audience]
    return [audience, audience.removesuffix("/") if parts.path else audience + "/"]


def fits(key: SigningKey, alg: str) -> bool:
    """Whether ``key`` may verify an ``alg`` signature: same key type (and curve), and the key's
    own ``alg`` (if it names one) is ``alg``."""
    data = key.entry
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
        self._verified: OrderedDict[str, tuple[KeySet, int, AccessToken]] = OrderedDict()
        """Token -> (its issuer's key set, that set's generation when it was verified, the answer)."""
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

        A token verified before is answered from memory until its ``exp``, as long as its issuer's
        key set is unchanged and within its age (:meth:`KeySet.stale`): a JWT's checks give the
        same answer until then, and the signature
        check is most of a request's cost. The memory is keyed by the token itself, which the
        :class:`AccessToken` holds anyway (a digest would cost more than the lookup and hide nothing).

        :raises IdentityUnavailable: the token's key is not cached and the JWKS cannot be fetched.
        """
        hit = self._verified.get(token)
        fresh = hit is not None and hit[0].generation == hit[1] and not hit[0].stale()
        if hit is not None and fresh and (hit[2].expires_at or 0) > time.time():
            return hit[2]  # the same token: the SDK reads it, never changes it
        before = {issuer: key_set.generation for issuer, key_set in self.keys.items()}
        made = await self._verify(token)
        if made is not None and made.expires_at is not None:
            issuer = (made.claims or {})["iss"]  # one of self.keys: _verify refuses any other
            self._verified[token] = (self.keys[issuer], before[issuer], made)
            while len(self._verified) > MAX_VERIFIED:
                self._verified.popitem(last=False)
        return made

    async def _verify(self, token: str) -> AccessToken | None:
        peeked = _peek(token)
        if peeked is None:
            refused("malformed token")
            return None
        header, unverified = peeked
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
        if (wrong := header_kind(header, strict=issuer in self.config.at_jwt_issuers)) is not None:
            refused(wrong, iss=issuer)
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
        if (wrong := claims_kind(claims)) is not None:
            refused(wrong, iss=issuer, kid=kid)
            return None
        made = access_token(token, claims, issuer, self.config, self.resource, self.audience)
        if isinstance(made, str):
            refused(made, iss=issuer, kid=kid)
            return None
        return made

    def _decode(self, token: str, key: SigningKey, alg: str, issuer: str, kid: str) -> dict[str, Any] | None:
        try:
            claims: dict[str, Any] = pyjwt.decode(
                token,
                key.jwk.key,
                algorithms=[alg],
                issuer=issuer,
                leeway=self.config.leeway_seconds,
                # ``aud`` is checked after the signature by the rule every mode shares
                # (claims.audience_refusal), so a missing audience is refused by one name.
                options={"require": ["exp", "iss"], "verify_aud": False},
            )
        except pyjwt.ImmatureSignatureError as exc:
            refused("issued in the future" if "(iat)" in str(exc) else "not yet valid", iss=issuer, kid=kid)
            return None
        except pyjwt.PyJWTError as exc:
            check = next((name for kind, name in _REFUSALS if isinstance(exc, kind)), "malformed token")
            refused(check, iss=issuer, kid=kid)
            return None
        return claims
