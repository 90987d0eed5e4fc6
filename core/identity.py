"""Who is asking: the :class:`Principal` every request is served for.

A principal is made once per request, before anything else runs, from what the transport
verified: over HTTP the bearer token the configured verifier accepted (static tokens, a JWT, or an
RFC 7662 introspection answer), over stdio the process owner (:data:`LOCAL`), and in an embedding
whatever the embedder passes. The gate hands it to every ``authorize`` implementation, providers
see it on :class:`~mcp_providers.providers.ReadRequest`, :class:`~mcp_providers.providers.ToolCall`,
prompts and completion, and custody receipts and audit lines record its issuer, subject and client
id (never a token, nor a digest of one that could be replayed).

A subject is unique only within its issuer (OpenID Connect Core §2, RFC 9068 §2.2): two identity
providers may both issue ``sub = "alice"`` for different people. What counts or owns per person
(rate-limit buckets, stream and session quotas) keys on :attr:`Principal.key`, the pair
``(issuer, subject)``; what holds something granted to the caller's token (coalesced and cached
reads, upstream credentials and the upstream sessions opened with them) keys on
:attr:`Principal.share_key`, everything a policy or an authorization server may look at.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "ANONYMOUS",
    "LOCAL",
    "LOCAL_ISSUER",
    "PRINCIPAL_CLAIM",
    "STATIC_ISSUER",
    "Principal",
    "UnreadableIdentity",
    "from_access_token",
    "serving_as",
    "transportless",
    "user_principal",
]

LOCAL_ISSUER = "local"
"""Issuer of :data:`LOCAL`: the operating system account that started the process (stdio)."""
STATIC_ISSUER = "static"
"""Issuer of the principals of ``[server.auth] mode = "static"`` tokens (named in the config file)."""


@dataclass(frozen=True, slots=True)
class Principal:
    """One verified caller (frozen; safe to share between tasks and to use as a dict key part).

    :param subject: the caller, unique within ``issuer`` (a token's ``sub``, a static token's
        configured subject, ``"local"`` on stdio, ``"anonymous"`` over unauthenticated HTTP).
    :param issuer: who vouches for the subject: the token's ``iss`` (exactly as the identity
        provider spells it), :data:`STATIC_ISSUER`, :data:`LOCAL_ISSUER`, or ``None`` for anonymous.
    :param client_id: the OAuth client the caller used (``client_id``/``azp``), if known.
    :param scopes: OAuth scopes granted to the token.
    :param groups: group or role names taken from the token's configured groups claim.
    :param claims: the token claims the operator selected (``[server.auth] claims``), read-only;
        never the token itself.
    :param access_token: the caller's verified inbound access token, exactly as presented, kept
        only so that a provider acting on the caller's behalf can hand it to an authorization
        server as an RFC 8693 ``subject_token`` (never to an upstream: MCP forbids passing it
        through). A secret: left out of ``repr``, equality, hashing, :attr:`share_key`,
        :meth:`custody` and anything kept in a cluster's shared state. Set by the ``jwt`` and
        ``introspection`` verifiers (and :func:`from_access_token` for an embedder's verifier);
        ``None`` over stdio, for static tokens, for anonymous callers and for principals made by hand.
    """

    subject: str
    issuer: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    access_token: str | None = field(default=None, repr=False, compare=False, hash=False)
    _share_key: tuple[str, str, str, tuple[str, ...], tuple[str, ...], str] = field(
        init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.subject, str) or not self.subject:
            raise ValueError(f"a principal needs a non-empty subject string, not {self.subject!r}")
        for name in ("scopes", "groups"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise TypeError(f"Principal.{name} must be a collection of strings, not {value!r}")
            object.__setattr__(self, name, frozenset(str(v) for v in value))
        if not isinstance(self.claims, MappingProxyType):
            object.__setattr__(self, "claims", MappingProxyType(dict(self.claims)))
        share = (
            self.issuer or "",
            self.subject,
            self.client_id or "",
            tuple(sorted(self.scopes)),
            tuple(sorted(self.groups)),
            json.dumps(dict(self.claims), sort_keys=True, default=str),
        )
        object.__setattr__(self, "_share_key", share)  # read on every read: made once

    def bearing(self, access_token: str | None) -> Principal:
        """This principal carrying ``access_token`` (see the class docstring): ``self`` when it
        already does, else a copy (made without re-running the checks: cheap on a request's path)."""
        if self.access_token == access_token:
            return self
        made = copy.copy(self)
        object.__setattr__(made, "access_token", access_token)
        return made

    @property
    def key(self) -> tuple[str, str]:
        """``(issuer, subject)``: what identifies the caller across identity providers (the
        issuer is ``""`` for anonymous callers)."""
        return (self.issuer or "", self.subject)

    @property
    def share_key(self) -> tuple[str, str, str, tuple[str, ...], tuple[str, ...], str]:
        """Everything a policy may look at, as a plain (JSON-ready) tuple: what two requests must
        share to share one read (coalesced, or cached in Redis). Two tokens of one subject with
        other scopes, groups or claims may be allowed other things, so they never share."""
        return self._share_key

    @property
    def anonymous(self) -> bool:
        """Whether nobody vouched for the caller (HTTP without authentication)."""
        return self.issuer is None

    def custody(self) -> dict[str, str | None]:
        """What receipts and audit lines record of the caller: ``subject``, ``issuer``, ``clientId``."""
        return {"subject": self.subject, "issuer": self.issuer, "clientId": self.client_id}

    def __repr__(self) -> str:  # claims may hold personal data: not in logs by accident
        return f"Principal(subject={self.subject!r}, issuer={self.issuer!r}, client_id={self.client_id!r})"


LOCAL = Principal("local", issuer=LOCAL_ISSUER)
"""The caller over stdio (and in an embedding that passes none): whoever started the process."""
ANONYMOUS = Principal("anonymous")
"""The caller over HTTP when no ``[server.auth]`` is configured."""

TRUSTED_ISSUERS = "mcp_providers.trusted_issuers"
"""Key of the pydantic validation context every plugin's settings are validated with: the issuers
whose principals this server's ``[server.auth]`` accepts over HTTP, a tuple of strings (the
configured ``issuer`` list for ``mode = "jwt"``/``"introspection"``, ``("static",)`` for static
tokens, ``()`` without ``[server.auth]``). A settings model that maps a caller to an upstream user
by a claim reads it with :func:`trusted_issuers`, to refuse a config where two issuers' users
could meet in one upstream user space (a subject is unique only within its issuer)."""


def trusted_issuers(context: Any) -> tuple[str, ...] | None:
    """The issuers :data:`TRUSTED_ISSUERS` names in a settings validation ``context``
    (``pydantic.ValidationInfo.context``), or ``None`` when the settings were validated without
    one (built directly in a test or by an embedder: the server's issuers are not known)."""
    found = context.get(TRUSTED_ISSUERS) if isinstance(context, Mapping) else None
    return tuple(found) if isinstance(found, tuple | list) else None


PRINCIPAL_CLAIM = "mcp_providers.principal"
"""Key under which this project's verifiers leave the :class:`Principal` in ``AccessToken.claims``."""


def from_access_token(token: Any) -> Principal:
    """The principal of a verified SDK ``AccessToken`` (``mcp.server.auth.provider.AccessToken``).

    This project's verifiers store the finished principal in the token's claims under
    :data:`PRINCIPAL_CLAIM`. For any other ``TokenVerifier`` (an embedder's own) it is built from
    the token's standard fields: ``subject`` (else ``client_id``), ``claims["iss"]``, ``client_id``,
    ``scopes`` and the token itself (:attr:`Principal.access_token`); such a token without an
    ``iss`` claim gets issuer ``"verifier"``.

    :raises ValueError: the token names neither a subject nor a client id.
    """
    claims = getattr(token, "claims", None) or {}
    # type() first: an ABC isinstance check costs a microsecond on every request
    ready = claims.get(PRINCIPAL_CLAIM) if type(claims) is dict or isinstance(claims, Mapping) else None
    if isinstance(ready, Principal):
        return ready
    subject = getattr(token, "subject", None) or getattr(token, "client_id", None)
    issuer = claims.get("iss") if isinstance(claims, Mapping) else None
    return Principal(
        str(subject or ""),
        issuer=str(issuer) if issuer else "verifier",
        client_id=getattr(token, "client_id", None) or None,
        scopes=frozenset(getattr(token, "scopes", None) or ()),
        access_token=getattr(token, "token", None) or None,
    )


class UnreadableIdentity(ValueError):
    """An HTTP request's authenticated user (``scope["user"]``) carries an identity this server
    cannot read; the request is refused (HTTP 403, or JSON-RPC -32003), never served as someone."""


def user_principal(user: Any) -> Principal | None:
    """The principal of an HTTP request's authenticated user (``scope["user"]``, set by the bearer
    gate, the SDK's auth middleware, or a host app's own ``AuthenticationMiddleware``).

    Only the SDK's convention is read: a ``user.access_token`` that is an SDK ``AccessToken``
    (``mcp.server.auth.provider.AccessToken``), through :func:`from_access_token`. (The pipeline
    also refuses, in a session, a user that is not the SDK's ``AuthenticatedUser``: the SDK binds
    sessions to that class only.) A user without
    an ``access_token`` (none, ``SimpleUser``, ``UnauthenticatedUser``) gives ``None``: the caller is
    anonymous. Anything else cannot be told verified, so it is refused rather than guessed at.

    :raises UnreadableIdentity: ``access_token`` is another type (a string, a dict, a look-alike
        object), or an ``AccessToken`` naming neither a subject nor a client id. The message names
        types only, never the token.
    """
    access = getattr(user, "access_token", None)
    if access is None:
        return None
    fix = "map your users with mount(..., identify=...) or configure [server.auth]"
    from mcp.server.auth.provider import AccessToken  # here: importing this module must not import the SDK

    if not isinstance(access, AccessToken):
        raise UnreadableIdentity(
            f"the request's authenticated user ({type(user).__name__}) has an access_token that is a "
            f"{type(access).__name__}, not the SDK's AccessToken, so who it is cannot be read; {fix}"
        )
    try:
        return from_access_token(access)
    except ValueError:
        raise UnreadableIdentity(
            f"the request's authenticated user ({type(user).__name__}) has an access_token naming "
            f"neither a subject nor a client id; {fix}"
        ) from None


_serving_as: ContextVar[Principal | None] = ContextVar("mcp_providers_serving_as", default=None)


@contextmanager
def serving_as(principal: Principal) -> Iterator[Principal]:
    """Serve requests that arrive without an HTTP request (stdio, in memory, an embedder's own
    transport) for ``principal`` instead of :data:`LOCAL`, in this context and the tasks started in it.

    For an embedder that authenticated the user itself, e.g.
    ``with serving_as(Principal("alice", issuer="https://idp.example.com/")): await server.run(...)``;
    :func:`mcp_providers.testing.connect` takes ``principal=`` for the same. A request that came
    over HTTP is always served for its verified token's principal, whatever is set here.

    :raises TypeError: ``principal`` is not a :class:`Principal`.
    """
    if not isinstance(principal, Principal):
        raise TypeError(f"serving_as() needs a Principal, not {type(principal).__name__}")
    token = _serving_as.set(principal)
    try:
        yield principal
    finally:
        _serving_as.reset(token)


def transportless() -> Principal:
    """The principal of a request that came without an HTTP request: :func:`serving_as`'s, else :data:`LOCAL`."""
    return _serving_as.get() or LOCAL
