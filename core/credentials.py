"""Upstream credentials on the caller's behalf: the broker providers ask for a token of *this* user.

A provider that reaches an upstream (ServiceNow, a REST API) as the calling user, never by passing
the caller's own token on (the MCP spec forbids "token passthrough"), implements :class:`Upstream`:
a stable ``name`` and ``obtain(principal)``, which asks the upstream's authorization server for a
credential of that user (a JWT bearer grant, an RFC 8693 token exchange). It then asks for one
from the request it is handed::

    async def read(self, request: ReadRequest) -> Content:
        credential = await request.credential(self.upstream)     # cached, single-flight
        answer = await client.get(url, headers={"Authorization": f"Bearer {credential.token}"})
        if answer.status_code == 401:                            # the upstream revoked it
            await request.forget_credential(self.upstream)
            ...                                                  # obtain once more, retry once

The same two calls exist on :class:`~mcp_providers.providers.ToolCall` and
:class:`~mcp_providers.providers.CompletionRequest`; a prompt's ``render`` uses
:func:`mcp_providers.policy.credential` and :func:`mcp_providers.policy.forget_credential`.

The :class:`CredentialBroker` behind them:

- caches one credential per ``upstream.name``,
  :attr:`Principal.share_key <mcp_providers.identity.Principal.share_key>` (issuer, subject,
  client id, scopes, groups, selected claims: whatever may change what the upstream grants), the
  upstream's ``fingerprint`` (its settings: auth table, URL, token endpoint, the issuers it maps)
  and the broker's ``identity`` (the server's: trusted issuers, audience) until
  ``expires_at - margin_seconds`` (``[server.credentials] margin_seconds``, 60 s by default): a
  token exchanged from a caller's broad-scoped token, or from a token issued to another OAuth
  client, is never handed to the same subject's narrower or other client's token, and one obtained
  before a reload changed the upstream's settings is never handed out after it;
- asks the upstream's ``admit(principal)`` before every hand-out, cached or not, so a caller the
  current settings refuse (an issuer a reload took out of ``auth.issuers``) is refused at once;
- ``forget(upstream, principal, stale)`` drops the credential only while ``stale`` is the one
  cached, so requests refused together with one revoked token cause one refresh;
- single-flights: concurrent calls for one key cause exactly one ``upstream.obtain``; when it
  raises, every waiter gets that error and nothing is cached;
- keeps its cache in a :class:`CredentialStore`: in the process by default, in Redis under
  ``[cluster]``, encrypted with the deployment's key (see ``docs/security.md``), with one obtain per
  key across replicas;
- records, for the request that asked, ``(upstream.name, credential.subject, credential.grant)``:
  the request's custody receipt and audit line carry ``upstream: {"name", "subject", "grant"}``.
  The token itself is never logged, returned to a client, put in a receipt or in an error.

Outside a server (a unit test building a ``ReadRequest`` by hand) the calls use one process-wide
in-memory broker, :data:`DEFAULT_BROKER`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import anyio

from mcp_providers.errors import Denied
from mcp_providers.identity import Principal

__all__ = [
    "DEFAULT_BROKER",
    "DEFAULT_MARGIN_SECONDS",
    "CacheKey",
    "Credential",
    "CredentialBroker",
    "CredentialRefused",
    "CredentialScope",
    "CredentialStore",
    "MemoryStore",
    "Upstream",
    "cache_key",
    "credential_for",
    "current_scope",
    "fingerprint",
    "forget_for",
    "record_upstream",
]

log = logging.getLogger("mcp_providers.credentials")

DEFAULT_MARGIN_SECONDS = 60.0
"""How long before its ``expires_at`` a cached credential is no longer handed out, in seconds."""


@dataclass(frozen=True, slots=True)
class Credential:
    """A credential for one upstream, of one upstream identity (frozen; the token never in its repr).

    :param token: the secret to present (e.g. an OAuth access token, sent as ``Bearer``); never
        logged, never shown by ``repr``, never in an error or a receipt.
    :param expires_at: when it stops being valid, in Unix seconds (the :func:`time.time` clock),
        e.g. ``time.time() + answer["expires_in"]``.
    :param subject: who the upstream knows the holder as, e.g. ServiceNow user name ``"alice"``
        (recorded in receipts and audit lines).
    :param grant: how it was obtained: ``"jwt_bearer"``, ``"token_exchange"``, ``"client_credentials"``,
        ``"service_account"``...
    :raises TypeError: a field of the wrong type (``expires_at`` must be a finite number).
    :raises ValueError: an empty ``token``, ``subject`` or ``grant``.
    """

    token: str = field(repr=False)
    expires_at: float
    subject: str
    grant: str

    def __post_init__(self) -> None:
        for name in ("token", "subject", "grant"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Credential.{name} must be a string, not {type(value).__name__}")
            if not value:
                raise ValueError(f"Credential.{name} must not be empty")
        expires = self.expires_at
        if isinstance(expires, bool) or not isinstance(expires, int | float) or not math.isfinite(expires):
            raise TypeError(
                f"Credential.expires_at must be a finite number of Unix seconds (time.time() + lifetime), "
                f"not {type(expires).__name__}"
            )

    def custody(self, upstream: str) -> dict[str, str]:
        """What receipts and audit lines record of a credential used for ``upstream``:
        ``{"name": upstream, "subject": ..., "grant": ...}`` (never the token)."""
        return {"name": upstream, "subject": self.subject, "grant": self.grant}


class Upstream(Protocol):
    """An upstream service a provider reaches as the calling user (implemented by the provider).

    Two members are optional, read by the broker when present:

    - ``fingerprint: str``: what a credential is obtained under, :func:`fingerprint` of every
      setting that goes into obtaining it (auth table, URL and token endpoint, client id, the
      issuers it serves), e.g. ``fingerprint("jwt_bearer", url, auth.model_dump(mode="json"))``;
      part of the cache key, so a credential is never handed out under other settings (after a
      reload). Absent: ``""``, the name alone stands for the settings.
    - ``admit(principal) -> None``: raises :class:`CredentialRefused` for a caller the current
      settings do not serve (e.g. of an issuer ``auth.issuers`` does not name); called before
      every hand-out, cached or not, and never sends anything.
    """

    @property
    def name(self) -> str:
        """A stable id, unique in the deployment, e.g. ``"servicenow:prod"``: part of the cache key,
        so two upstreams never share a credential (and renaming one drops its cache)."""
        ...

    async def obtain(self, principal: Principal) -> Credential:
        """A fresh credential for ``principal`` (called by the broker only, on a cache miss).

        :raises CredentialRefused: the upstream will not grant one (the caller has no verified
            identity, is unknown upstream, the grant was refused); a clear message, no secret.
        """
        ...


class CredentialRefused(Denied):
    """The upstream will not grant a credential for this caller (JSON-RPC -32003, audited as denied).

    Raised by :meth:`Upstream.obtain`; the message says which upstream refused and why, and never
    holds a token, an assertion or a client secret.
    """


class CacheKey(NamedTuple):
    """What one cached credential is kept under: ``(upstream name, principal's share key,
    upstream's settings fingerprint, server's identity fingerprint)``.

    ``principal`` is :attr:`Principal.share_key <mcp_providers.identity.Principal.share_key>`
    whole, ``(issuer, subject, client id, sorted scopes, sorted groups, selected claims as JSON)``
    (issuer and client id ``""`` when unknown), never a subset: an authorization server may grant
    by any of them (RFC 8693 down-scoping to the subject token's scope, a grant per OAuth client,
    ServiceNow's ``user_claim``), so two tokens of one subject that differ in any of them never
    share a credential. ``settings`` is the upstream's ``fingerprint`` and ``identity`` the
    broker's (the server's ``[server.auth]`` as :func:`fingerprint` makes it), ``""`` when there
    is none: a credential obtained under other settings (before a reload changed them) is another
    key's. Plain strings and
    tuples: hashable, and JSON-ready for a shared store.
    """

    upstream: str
    principal: tuple[str, str, str, tuple[str, ...], tuple[str, ...], str]
    settings: str = ""
    identity: str = ""


def fingerprint(*parts: Any) -> str:
    """A SHA-256 hex digest of ``parts`` as canonical JSON (sorted keys; anything else as ``str``):
    equal for equal settings in any process, another for any change. Secrets must not be parts."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def cache_key(upstream: Upstream, principal: Principal, identity: str = "") -> CacheKey:
    """The key of ``principal``'s credential for ``upstream`` under the broker's ``identity``
    (see :class:`CacheKey`).

    :raises TypeError: ``upstream.name`` is not a non-empty string, or its ``fingerprint`` is
        not a string.
    """
    name = upstream.name
    if not isinstance(name, str) or not name:
        raise TypeError(f"{type(upstream).__name__}.name must be a non-empty string, e.g. 'servicenow:prod'")
    settings = getattr(upstream, "fingerprint", "")
    if not isinstance(settings, str):
        raise TypeError(f"{type(upstream).__name__}.fingerprint must be a string (credentials.fingerprint(...))")
    return CacheKey(name, principal.share_key, settings, identity)


class CredentialStore(Protocol):
    """Where a :class:`CredentialBroker` keeps credentials: the process (:class:`MemoryStore`) or,
    under ``[cluster]``, Redis (encrypted). Every method is best effort and never raises for an
    unreachable backend: a miss, or nothing kept, is always safe (the broker obtains anew)."""

    async def get(self, key: CacheKey) -> Credential | None:
        """The credential kept under ``key``, or ``None``."""
        ...

    async def put(self, key: CacheKey, credential: Credential, seconds: float) -> None:
        """Keep ``credential`` under ``key`` for at most ``seconds``."""
        ...

    async def drop(self, key: CacheKey) -> None:
        """Forget what is kept under ``key``."""
        ...

    def obtaining(self, key: CacheKey) -> contextlib.AbstractAsyncContextManager[None]:
        """Held while this process obtains ``key``'s credential: where several processes share the
        store, at most one of them at a time (a lease), so across them one obtain per key."""
        ...


class MemoryStore:
    """The in-process :class:`CredentialStore`; at most ``max_entries`` kept, the oldest dropped first."""

    def __init__(self, max_entries: int = 100_000, clock: Callable[[], float] = time.time) -> None:
        self._entries: dict[CacheKey, Credential] = {}
        self._max, self._clock = max_entries, clock

    async def get(self, key: CacheKey) -> Credential | None:
        credential = self._entries.get(key)
        if credential is not None and credential.expires_at <= self._clock():
            del self._entries[key]
            return None
        return credential

    async def put(self, key: CacheKey, credential: Credential, seconds: float) -> None:
        self._entries.pop(key, None)
        while len(self._entries) >= self._max:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = credential

    async def drop(self, key: CacheKey) -> None:
        self._entries.pop(key, None)

    @contextlib.asynccontextmanager
    async def obtaining(self, key: CacheKey) -> AsyncIterator[None]:
        yield  # one process: the broker's own single-flight is enough

    def __len__(self) -> int:
        return len(self._entries)


class _Flight:
    __slots__ = ("credential", "done", "error")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.credential: Credential | None = None
        self.error: BaseException | None = None


class CredentialBroker:
    """Hands out upstream credentials per caller: cached, single-flight (see the module docstring).

    :param store: where credentials are kept; default a new :class:`MemoryStore`.
    :param margin_seconds: a credential is handed out until ``expires_at - margin_seconds`` (so a
        request never starts with one about to expire); one obtained with less life left than that
        is used for the request that obtained it but not kept.
    :param clock: the :func:`time.time` clock (Unix seconds), replaceable in tests.
    :param identity: the :func:`fingerprint` of the server's ``[server.auth]``, part of every
        key: replicas or restarts vouching for callers otherwise share no credential in a store.
    :raises ValueError: ``margin_seconds`` is negative or not finite.
    """

    def __init__(
        self,
        store: CredentialStore | None = None,
        *,
        margin_seconds: float = DEFAULT_MARGIN_SECONDS,
        clock: Callable[[], float] = time.time,
        identity: str = "",
    ) -> None:
        if not math.isfinite(margin_seconds) or margin_seconds < 0:
            raise ValueError(f"margin_seconds must be a finite number of seconds >= 0, not {margin_seconds!r}")
        self.store: CredentialStore = store if store is not None else MemoryStore(clock=clock)
        self.margin_seconds = margin_seconds
        self._clock = clock
        self._flights: dict[CacheKey, _Flight] = {}
        self.identity = identity
        """The server's identity fingerprint, in every key this broker makes."""
        self.obtained = 0
        """How many times this broker called ``upstream.obtain`` (for tests and metrics)."""

    async def credential(self, upstream: Upstream, principal: Principal) -> Credential:
        """``principal``'s credential for ``upstream``: the cached one while it has more than
        ``margin_seconds`` left, else a new one from ``upstream.obtain(principal)``, shared by every
        concurrent call for the same key. First, every time, ``upstream.admit(principal)`` (when
        the upstream has one): a caller its current settings refuse gets nothing, cached or not.

        :raises CredentialRefused: ``admit`` refused the caller, or the upstream refused (nothing
            is cached; the next call asks again).
        :raises TypeError: ``upstream.name`` is not a non-empty string, or ``obtain`` returned
            something other than a :class:`Credential`.
        :raises Exception: whatever else ``obtain`` raised, to every concurrent caller alike.
        """
        key = cache_key(upstream, principal, self.identity)
        admit = getattr(upstream, "admit", None)
        if admit is not None:
            admit(principal)  # the current settings judge the caller on every use, not only on obtaining
        while (flight := self._flights.get(key)) is not None:
            await flight.done.wait()
            if flight.credential is not None:
                return flight.credential
            if flight.error is not None:
                raise flight.error
            # the leader was cancelled (its client went away): try again, perhaps as the leader
        mine = self._flights[key] = _Flight()
        try:
            mine.credential = await self._fetch(key, upstream, principal)
            return mine.credential
        except Exception as exc:
            mine.error = exc
            raise
        finally:
            del self._flights[key]
            mine.done.set()

    async def forget(self, upstream: Upstream, principal: Principal, stale: Credential | None = None) -> None:
        """Drop ``principal``'s cached credential for ``upstream`` (the upstream rejected it, e.g.
        answered 401); the next :meth:`credential` call obtains a new one.

        :param stale: the credential the upstream rejected: dropped only while it is still the one
            cached, so that of many requests refused together (a revoked token) the first one's
            new credential is not thrown away by the others, and one refresh serves them all.
        :raises TypeError: ``upstream.name`` is not a non-empty string.
        """
        key = cache_key(upstream, principal, self.identity)
        if stale is not None:
            cached = await self.store.get(key)
            if cached is None or cached.token != stale.token:
                return  # already forgotten, or replaced by a newer one
        await self.store.drop(key)

    def fresh(self, credential: Credential | None) -> bool:
        """Whether ``credential`` may still be handed out (more than ``margin_seconds`` left)."""
        return credential is not None and credential.expires_at - self.margin_seconds > self._clock()

    async def _fetch(self, key: CacheKey, upstream: Upstream, principal: Principal) -> Credential:
        cached = await self.store.get(key)
        if self.fresh(cached):
            return cached  # type: ignore[return-value]  # fresh() is False for None
        async with self.store.obtaining(key):
            cached = await self.store.get(key)  # another process may have obtained it meanwhile
            if self.fresh(cached):
                return cached  # type: ignore[return-value]
            self.obtained += 1
            credential = await upstream.obtain(principal)
            if not isinstance(credential, Credential):
                raise TypeError(
                    f"upstream {key.upstream!r}: obtain() returned {type(credential).__name__}; "
                    "expected mcp_providers.credentials.Credential"
                )
            left = credential.expires_at - self._clock()
            if left > self.margin_seconds:
                await self.store.put(key, credential, left)
            else:
                log.warning(
                    "upstream %r granted a credential with %.0f s left, within the %g s margin: used once, not kept",
                    key.upstream, left, self.margin_seconds,
                )  # fmt: skip
            return credential


DEFAULT_BROKER = CredentialBroker()
"""The broker of requests served outside a server's pipeline (unit tests, direct calls)."""


@dataclass(slots=True)
class CredentialScope:
    """The broker of the request running in this context, and what that request used.

    Set by the core for each request (:data:`current_scope`); ``used`` collects one
    ``{"name", "subject", "grant"}`` per distinct upstream identity, in order of first use.
    """

    broker: CredentialBroker
    used: list[dict[str, str]] = field(default_factory=list)

    def record(self, upstream: str, credential: Credential) -> None:
        """Note that this request used ``credential`` for ``upstream`` (once per identity)."""
        entry = credential.custody(upstream)
        if entry not in self.used:
            self.used.append(entry)


current_scope: ContextVar[CredentialScope | None] = ContextVar("mcp_providers_credentials", default=None)
"""The credential scope of the request running in this context; ``None`` outside one. Set by the core only."""


async def credential_for(upstream: Upstream, principal: Principal) -> Credential:
    """``principal``'s credential for ``upstream`` from the current request's broker (else
    :data:`DEFAULT_BROKER`), recorded for the request's receipt and audit line. What
    ``request.credential(upstream)`` calls; raises what :meth:`CredentialBroker.credential` raises."""
    scope = current_scope.get()
    broker = DEFAULT_BROKER if scope is None else scope.broker
    credential = await broker.credential(upstream, principal)
    if scope is not None:
        scope.record(upstream.name, credential)
    return credential


async def forget_for(upstream: Upstream, principal: Principal, stale: Credential | None = None) -> None:
    """Drop ``principal``'s credential for ``upstream`` from the current request's broker (else
    :data:`DEFAULT_BROKER`). What ``request.forget_credential(upstream, stale)`` calls."""
    scope = current_scope.get()
    await (DEFAULT_BROKER if scope is None else scope.broker).forget(upstream, principal, stale)


def record_upstream(entry: Mapping[str, str]) -> None:
    """Note, in the current request's receipt and audit line (``upstream``, and ``upstreams`` when
    there are several), an upstream the request reached with the provider's own credential or none,
    not one from the broker: an OpenAPI service (``{"name": "openapi:petstore", "subject": "service",
    "grant": "bearer", "operationId": "getPetById", "method": "GET", "url": "https://.../pet/1"}``)
    or an upstream MCP server (``{"name": "everything", "grant": "none", "transport": "stdio",
    "serverInfo": "mcp-servers/everything 2.0.0", "uri": "demo://resource/1"}``).

    :param entry: strings only, ``name``, ``subject`` and ``grant`` first, as
        :meth:`Credential.custody` gives them; never a secret (no token, no credential in a URL).
        Recorded once per distinct entry; outside a request, nothing happens.
    """
    scope = current_scope.get()
    if scope is not None:
        recorded = dict(entry)
        if recorded not in scope.used:
            scope.used.append(recorded)
