"""Is a verified token an access token? ID tokens, logout tokens and refresh tokens are signed by
the same issuer (or answered ``active`` by its introspection endpoint) and may carry the right
``aud``, yet are no credential for calling this server (RFC 9068 §4, RFC 7662 §2.2, OpenID Connect
Core §2, OpenID Connect Back-Channel Logout §2.4).

Each function answers the name of the failed check (logged, never the token) or ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

AT_JWT = frozenset({"at+jwt", "application/at+jwt"})
"""RFC 9068 §2.1: the JOSE ``typ`` of a JWT access token (media types compare case-insensitively;
RFC 7515 §4.1.9 lets ``application/`` be left out)."""
PLAIN_JWT = frozenset({"jwt", "application/jwt"})
"""The ``typ`` most identity providers still put on access tokens (RFC 7519 §5.1)."""
ACCESS_USE = frozenset({"access", "access_token", "bearer"})
"""Values of a token-kind claim that say "access token": ``token_use`` (Amazon Cognito ``access``,
ORY Hydra ``access_token``) and Keycloak's ``typ`` claim (``Bearer``)."""
ACCESS_TOKEN_TYPES = frozenset({"bearer", "access_token"})
"""Introspection ``token_type`` values of a token usable as a bearer access token (RFC 7662 §2.2
names the RFC 6749 §7.1 type, ``bearer``; some servers answer ``access_token``)."""


ID_TOKEN_ONLY = ("at_hash", "c_hash", "s_hash")
"""Claims only an ID token carries: hashes binding it to the access token, code or state issued
with it (OpenID Connect Core §3.1.3.6, §3.3.2.11; FAPI 1.0 Part 2 §5.1)."""


def _folded(value: Any) -> str | None:
    return value.lower() if isinstance(value, str) else None


def claims_kind(claims: Mapping[str, Any]) -> str | None:
    """The check a payload (a JWT's, or an introspection answer) fails because it is evidently not
    an access token, else ``None``:

    - ``events`` (a Security Event Token such as a back-channel logout token, RFC 8417 §2.2);
    - a ``token_use`` or Keycloak ``typ`` claim naming another kind (``id``, ``ID``, ``Refresh``,
      ``Logout``, ``refresh_token``);
    - ``nonce`` (an ID token's replay guard, OpenID Connect Core §2, which access tokens do not
      carry), unless the ``typ`` claim says ``Bearer`` (Keycloak before 25 copied ``nonce`` into
      its access tokens too);
    - :data:`ID_TOKEN_ONLY` claims (``at_hash``, ``c_hash``, ``s_hash``: an ID token without a nonce).
    """
    if "events" in claims:
        return "not an access token (events claim)"  # a logout token or another SET
    for name in ("token_use", "typ"):
        if name in claims and _folded(claims[name]) not in ACCESS_USE:
            return f"not an access token ({name} claim {str(claims[name])[:40]!r})"
    if "nonce" in claims and _folded(claims.get("typ")) != "bearer":
        return "not an access token (nonce claim)"  # an ID token
    for name in ID_TOKEN_ONLY:
        if name in claims:
            return f"not an access token ({name} claim)"
    return None


def header_kind(header: Mapping[str, Any], strict: bool) -> str | None:
    """The check a JWT's JOSE header fails, else ``None``: with ``strict`` (the issuer is named in
    ``[server.auth] at_jwt_issuers``) ``typ`` must be ``at+jwt`` (RFC 9068 §4: "MUST verify");
    otherwise it may also be absent or plain ``JWT``, and any other type (``logout+jwt``,
    ``secevent+jwt``, ``dpop+jwt``, ``oauth-authz-req+jwt``, ...) is refused."""
    if "typ" not in header:
        return "typ is not at+jwt (RFC 9068 §4)" if strict else None
    typ = _folded(header["typ"])
    if typ in AT_JWT or (not strict and typ in PLAIN_JWT):
        return None
    shown = str(header["typ"])[:40]
    return f"typ {shown!r} is not at+jwt (RFC 9068 §4)" if strict else f"not an access token (typ {shown!r})"


def introspection_kind(answer: Mapping[str, Any]) -> str | None:
    """The check an active RFC 7662 answer fails because it describes no access token, else
    ``None``: a ``token_type`` that is not ``bearer``/``access_token`` (a refresh token, an ID
    token; RFC 7662 §2.2), then :func:`claims_kind`."""
    if "token_type" in answer and _folded(answer["token_type"]) not in ACCESS_TOKEN_TYPES:
        return f"not an access token (token_type {str(answer['token_type'])[:40]!r})"
    return claims_kind(answer)
