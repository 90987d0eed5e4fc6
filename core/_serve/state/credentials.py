"""The runtime's credential broker, and its Redis store under ``[cluster]``.

:func:`broker_for` makes the :class:`~mcp_providers.credentials.CredentialBroker` of one runtime
from ``[server.credentials]`` and ``[cluster]``: without ``[cluster]`` it keeps credentials in the
process (:class:`~mcp_providers.credentials.MemoryStore`); with it, in Redis
(:class:`RedisCredentialStore`), so every replica shares one cache and one obtain per key.

Nothing readable is kept in Redis. With the deployment key ``K`` (32 random bytes, base64, from the
environment variable ``[server.credentials] key_env``) two keys are derived with HKDF-SHA256
(RFC 5869): one names entries, one encrypts them.

- an entry is ``{key_prefix}:credential:<HMAC-SHA256(name key, K)>``, where ``K`` is the
  :class:`~mcp_providers.credentials.CacheKey` as compact JSON tagged with its shape,
  ``["credential-key/3", upstream, [issuer, subject, client id, [scopes], [groups], claims],
  settings, identity]`` (the upstream's settings fingerprint, the server's identity fingerprint):
  one text per key on every replica, and keys of different shapes (an older release's, another
  part list) never name one entry; neither the caller nor the upstream shows in the key (nor can
  be found by hashing guesses);
- its value is a 12-byte random nonce followed by the AES-256-GCM encryption of the JSON
  ``{"token", "expires_at", "subject", "grant"}``, with the entry's own Redis key as associated
  data, so a value copied under another caller's key does not decrypt;
- it expires (Redis ``PX``) when the credential does;
- one replica at a time obtains a key's credential: a :class:`redis.asyncio.lock.Lock` on
  ``{key_prefix}:credential-lock:<same digest>`` that lasts ``lock_seconds``; the others wait for
  it and then read the entry it left.

An entry that does not decrypt (another deployment key, a tampered value) is a miss: dropped and
logged once (no value shown). Redis unreachable is a miss too, and the credential is obtained
without the lease: a request never fails for the cache, and never falls back to plaintext.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING

import anyio

from mcp_providers._serve.state.cluster import ClusterUnavailable, RedisBackend, Shared
from mcp_providers.config import CREDENTIALS_KEY_ENV, AuthConfig, ClusterSettings, CredentialsSettings
from mcp_providers.credentials import CacheKey, Credential, CredentialBroker, MemoryStore, fingerprint
from mcp_providers.errors import ConfigError, UpstreamError

if TYPE_CHECKING:
    from redis.asyncio.lock import Lock

log = logging.getLogger("mcp_providers.credentials")

KEY_BYTES = 32
"""Length of the deployment key: 256 bits (AES-256)."""
MAKE_A_KEY = 'python -c "import base64, secrets; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())"'
"""A command printing a valid deployment key (shown in the errors)."""


def deployment_key(env_name: str, environ: Mapping[str, str] | None = None) -> bytes | None:
    """The deployment key in the environment variable ``env_name``: ``None`` when it is unset or empty.

    :raises ConfigError: it is set but not 32 bytes in base64 (standard or URL-safe alphabet,
        padding optional); the message names the variable and how to make a key, never the value.
    """
    raw = (os.environ if environ is None else environ).get(env_name, "").strip()
    if not raw:
        return None
    try:
        key = base64.b64decode(raw + "=" * (-len(raw) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise ConfigError(
            f"server.credentials: ${env_name} is not a valid deployment key: it must be {KEY_BYTES} random "
            f"bytes in base64 (44 characters, URL-safe or standard), the same on every replica; make one with "
            f"{MAKE_A_KEY}"
        )
    return key


KEY_SHAPE = "credential-key/3"
"""The tag that opens every serialized :class:`~mcp_providers.credentials.CacheKey` (bumped
when its parts change, so an entry kept under an older shape is never read as a newer one's)."""


def key_text(key: CacheKey) -> str:
    """``key`` as the one text every replica names its entry by: compact JSON (ASCII only) of
    :data:`KEY_SHAPE`, the upstream, the principal's parts, the settings and identity
    fingerprints, nested as in the key, so no two
    keys (of this or any other shape) give one text (``["a b"]`` is not ``["a", "b"]``).

    :raises TypeError: ``key`` is not a :class:`~mcp_providers.credentials.CacheKey`.
    """
    if not isinstance(key, CacheKey):
        raise TypeError(f"a credential cache key is a CacheKey (credentials.cache_key), not {type(key).__name__}")
    parts = [KEY_SHAPE, key.upstream, key.principal, key.settings, key.identity]
    return json.dumps(parts, separators=(",", ":"), ensure_ascii=True)


def _derive(key: bytes, purpose: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes  # only with [cluster] (credentials in Redis)
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=purpose).derive(key)


class Sealer:
    """Names and seals credential entries with keys derived from the deployment key (module docstring)."""

    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._names = _derive(key, b"mcp-providers credentials: entry names")
        self._aead = AESGCM(_derive(key, b"mcp-providers credentials: entry values"))

    def name(self, key: CacheKey) -> str:
        """The hex HMAC-SHA256 naming ``key``'s entry (no issuer, subject or upstream readable in it)."""
        return hmac.new(self._names, key_text(key).encode(), hashlib.sha256).hexdigest()

    def seal(self, credential: Credential, where: str) -> bytes:
        """Nonce and ciphertext of ``credential``, bound to the Redis key ``where``."""
        plain = json.dumps(
            {
                "token": credential.token,
                "expires_at": credential.expires_at,
                "subject": credential.subject,
                "grant": credential.grant,
            }
        ).encode()
        nonce = secrets.token_bytes(12)
        return nonce + self._aead.encrypt(nonce, plain, where.encode())

    def open(self, sealed: bytes, where: str) -> Credential | None:
        """The credential in ``sealed``, or ``None`` when it does not decrypt under this key and
        ``where``, or is not what :meth:`seal` wrote."""
        from cryptography.exceptions import InvalidTag

        try:
            data = json.loads(self._aead.decrypt(sealed[:12], sealed[12:], where.encode()))
            return Credential(data["token"], data["expires_at"], data["subject"], data["grant"])
        except (InvalidTag, ValueError, TypeError, KeyError):  # json errors are ValueErrors
            return None


class RedisCredentialStore:
    """The :class:`~mcp_providers.credentials.CredentialStore` in Redis, encrypted (module docstring)."""

    def __init__(self, backend: RedisBackend, key: bytes, lock_seconds: float) -> None:
        self._backend, self._sealer, self._lock_seconds = backend, Sealer(key), lock_seconds
        self._warned: set[str] = set()

    def _where(self, key: CacheKey) -> tuple[str, str]:
        digest = self._sealer.name(key)
        return digest, self._backend.key("credential", digest)

    async def get(self, key: CacheKey) -> Credential | None:
        _, where = self._where(key)
        try:
            raw = await self._backend.call("read a cached credential", lambda r: r.get(where))
        except ClusterUnavailable:
            return None
        if raw is None:
            return None
        credential = self._sealer.open(bytes(raw), where) if isinstance(raw, bytes) and len(raw) > 12 else None
        if credential is None:
            if where not in self._warned and len(self._warned) < 1024:
                self._warned.add(where)
                log.warning("dropped a cached credential at %s that does not decrypt with this deployment key", where)
            await self.drop(key)
        return credential

    async def put(self, key: CacheKey, credential: Credential, seconds: float) -> None:
        _, where = self._where(key)
        sealed, ms = self._sealer.seal(credential, where), max(1, int(seconds * 1000))
        with contextlib.suppress(ClusterUnavailable):
            await self._backend.call("cache a credential", lambda r: r.set(where, sealed, px=ms))

    async def drop(self, key: CacheKey) -> None:
        _, where = self._where(key)
        with contextlib.suppress(ClusterUnavailable):
            await self._backend.call("forget a cached credential", lambda r: r.delete(where))

    @contextlib.asynccontextmanager
    async def obtaining(self, key: CacheKey) -> AsyncIterator[None]:
        digest, _ = self._where(key)
        lock = self._backend.lock("credential-lock", digest, self._lock_seconds)
        held = await self._acquire(lock)
        try:
            yield
        finally:
            if held:
                await self._release(lock)

    async def _acquire(self, lock: Lock) -> bool:
        """Wait until this replica holds ``lock``: ``True``; ``False`` when Redis cannot be asked or
        the wait passed ``lock_seconds`` (the holder hung; its lease has lapsed by then anyway)."""
        with anyio.move_on_after(self._lock_seconds + self._backend.settings.timeout_seconds):
            try:
                while not await self._backend.call("lease an obtain", lambda r: lock.acquire()):
                    await anyio.sleep(0.02)
                return True
            except ClusterUnavailable:
                log.warning("cluster backend unreachable: obtaining an upstream credential without the shared lease")
                return False
        return False

    async def _release(self, lock: Lock) -> None:
        from redis.exceptions import LockError

        with anyio.CancelScope(shield=True), contextlib.suppress(ClusterUnavailable, LockError):
            await self._backend.call("release an obtain lease", lambda r: lock.release())


class KeylessStore(MemoryStore):
    """Under ``[cluster]`` without a deployment key: refuses every credential, never a plaintext cache."""

    def __init__(self, env_name: str) -> None:
        super().__init__(max_entries=1)
        self._env_name = env_name

    @contextlib.asynccontextmanager
    async def obtaining(self, key: CacheKey) -> AsyncIterator[None]:
        """:raises UpstreamError: always, naming the variable to set."""
        if self._env_name:  # always: a generator must still be one
            raise UpstreamError(
                f"this server cannot keep upstream credentials: it runs with [cluster], where they are cached "
                f"in Redis encrypted with the deployment key, and ${self._env_name} is unset; the operator must "
                f"set it on every replica ({KEY_BYTES} random bytes in base64) and add [server.credentials]"
            )
        yield


def broker_for(
    settings: CredentialsSettings | None,
    cluster: ClusterSettings | None,
    shared: Shared,
    environ: Mapping[str, str] | None = None,
    *,
    identity: str = "",
) -> CredentialBroker:
    """The runtime's broker: in memory, or in Redis with ``[cluster]`` (see the module docstring),
    keying every credential by ``identity`` too (:func:`identity_fingerprint`
    of ``[server.auth]``).

    :raises ConfigError: under ``[cluster]`` the deployment key is malformed, or it is missing while
        ``[server.credentials]`` is configured (the message names the variable and a valid key's form).
    """
    chosen = settings or CredentialsSettings()
    if cluster is None or not isinstance(shared, RedisBackend):
        return CredentialBroker(margin_seconds=chosen.margin_seconds, identity=identity)
    key = deployment_key(chosen.key_env, environ)
    if key is None and settings is not None:
        raise ConfigError(
            f"server.credentials: ${chosen.key_env} is unset; with [cluster] upstream credentials are cached "
            f"in Redis encrypted with this deployment key, so every replica needs the same {KEY_BYTES} random "
            f"bytes in base64 there; make one with {MAKE_A_KEY}"
        )
    if key is None:
        store: MemoryStore | RedisCredentialStore = KeylessStore(chosen.key_env or CREDENTIALS_KEY_ENV)
    else:
        store = RedisCredentialStore(shared, key, chosen.lock_seconds)
    return CredentialBroker(store, margin_seconds=chosen.margin_seconds, identity=identity)


def identity_fingerprint(auth: AuthConfig | None) -> str:
    """The :func:`~mcp_providers.credentials.fingerprint` of what ``[server.auth]`` vouches for
    callers with: mode, trusted issuers, audience and resource URL, subject and groups claims, and
    where trust comes from (the JWKS URL, accepted algorithms and ``at+jwt`` issuers; the
    introspection endpoint and the names of its client's variables, never their values)
    (``None``: no table). Part of every key the server's broker makes."""
    if auth is None:
        return fingerprint("server.auth", None)
    return fingerprint("server.auth", auth.mode, auth.principal_issuers, auth.audience, auth.resource_url,
                       auth.subject_claim, auth.groups_claim, auth.jwks_url, auth.algorithms,
                       auth.at_jwt_issuers, auth.introspection_endpoint, auth.client_id_env,
                       auth.client_secret_env)  # fmt: skip
