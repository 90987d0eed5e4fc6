"""From a verified token's claims (a JWT payload or an RFC 7662 answer) to the SDK access token
that carries the :class:`~mcp_providers.identity.Principal`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from mcp.server.auth.provider import AccessToken

from mcp_providers.config import AuthConfig
from mcp_providers.identity import PRINCIPAL_CLAIM, Principal


def _strings(value: Any) -> list[str] | None:
    """A list of strings from a list claim or a space-separated string claim; ``None`` otherwise.

    Split on spaces only (RFC 6749 §3.3: scope tokens are separated by %x20 and hold no other
    whitespace), so a tab or a newline never turns one string into two grants."""
    if isinstance(value, str):
        return [part for part in value.split(" ") if part]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _groups(value: Any) -> list[str] | None:
    """Group names from a list claim; a single string is one group (Keycloak's single-valued
    Group Membership mapper writes one, and group names may hold spaces), never split."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def scopes_of(claims: Mapping[str, Any]) -> list[str]:
    """``scope`` (RFC 8693 §4.2, RFC 7662: space separated) or ``scp`` (a list, e.g. Entra ID, Okta)."""
    for name in ("scope", "scp"):
        found = _strings(claims.get(name))
        if found is not None:
            return found
    return []


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _malformed(claims: Mapping[str, Any]) -> str | None:
    """The check a claim of the wrong JSON type fails, else ``None``: ``exp``, ``nbf`` and ``iat``
    are NumericDates, JSON numbers (RFC 7519 §2, §4.1.4-6; PyJWT also takes ``"1767225600"``), and
    ``client_id`` and ``azp`` are strings (RFC 9068 §2.2, RFC 7662 §2.2; OIDC Core §2)."""
    for name in ("exp", "nbf", "iat"):
        if name in claims and not _is_number(claims[name]):
            return f"{name} claim is not a number"
    for name in ("client_id", "azp"):
        if name in claims and not isinstance(claims[name], str):
            return f"{name} claim is not a string"
    return None


def audience_refusal(claims: Mapping[str, Any], audience: Sequence[str]) -> str | None:
    """The audience check ``claims`` fail, else ``None``: ``aud`` (RFC 7519 §4.1.3, RFC 7662 §2.2;
    a string or a list of strings) must name one of ``audience``. One rule for every mode that
    reads claims: an ``aud`` left out, ``null`` or empty names no audience, so the token is bound
    to no server and could be replayed here from any service of the issuer (MCP authorization,
    token audience binding)."""
    aud = claims.get("aud")
    found = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else [] if aud is None else None
    if found is None or not all(isinstance(a, str) for a in found):
        return "aud claim is not a string or a list of strings"
    if not found:
        return "no audience"
    return None if any(a in audience for a in found) else "wrong audience"


def access_token(
    token: str,
    claims: Mapping[str, Any],
    issuer: str,
    config: AuthConfig,
    resource: str | None,
    audience: Sequence[str],
) -> AccessToken | str:
    """The SDK access token for verified ``claims``, or the name of the check that fails (a str).

    :param issuer: the verified issuer (a JWT's ``iss``; the configured one for introspection).
    :param resource: this server's canonical URL, reported as ``AccessToken.resource``.
    :param audience: the values ``aud`` must name one of (:func:`audience_refusal`).
    """
    if (wrong := _malformed(claims)) is not None:
        return wrong
    if (wrong := audience_refusal(claims, audience)) is not None:
        return wrong
    client_id = claims.get("client_id") or claims.get("azp") or None
    subject = claims.get(config.subject_claim)
    if subject is None and config.subject_claim == "sub" and client_id is not None:
        # A client acting for itself (client credentials): RFC 9068 §2.2 makes its client id the
        # subject, and an RFC 7662 answer may leave ``sub`` out altogether.
        subject = client_id
    if not isinstance(subject, str) or not subject:
        return f"no {config.subject_claim} claim"
    groups: list[str] = []
    if config.groups_claim and config.groups_claim in claims:
        found = _groups(claims[config.groups_claim])
        if found is None:
            return f"{config.groups_claim} claim is not a list of strings"
        groups = found
    scopes = scopes_of(claims)
    principal = Principal(
        subject,
        issuer=issuer,
        client_id=client_id,
        scopes=frozenset(scopes),
        groups=frozenset(groups),
        claims={name: claims[name] for name in config.claims if name in claims},
        access_token=token,  # the subject_token of an RFC 8693 exchange on the caller's behalf
    )
    exp = claims.get("exp")
    leeway = config.leeway_seconds if config.mode == "jwt" else 0
    return AccessToken(
        token=token,
        client_id=client_id or subject,
        scopes=scopes,
        # The last second the token is accepted: its exp plus the leeway the checks allowed.
        expires_at=int(exp + leeway) if _is_number(exp) else None,
        resource=resource,
        subject=subject,
        claims={"iss": issuer, PRINCIPAL_CLAIM: principal},
    )
