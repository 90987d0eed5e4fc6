"""Reads shared between replicas with ``[cluster]``: :class:`SharedReads`, the invoker's coalescer
keeping ``max_age`` reads in Redis (sealed with the deployment key) and sharing one upstream read
among the replicas asking at once."""

import base64
import contextlib
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Hashable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError

from mcp_providers._serve.state.cluster import ClusterUnavailable, RedisBackend, Seals
from mcp_providers._serve.state.coalesce import Coalescer
from mcp_providers.credentials import current_scope
from mcp_providers.models import Freshness
from mcp_providers.providers import Content

if TYPE_CHECKING:
    from redis.asyncio.lock import Lock

log = logging.getLogger("mcp_providers.cluster")


READ_LOCK_SECONDS = 60.0
"""Longest a replica's shared read holds the others back (its lock's TTL), should it die mid-read."""


class SharedReads(Coalescer[Any]):
    """The invoker's coalescer with ``[cluster]``: ``max_age`` reads are cached in Redis.

    A read of a resource declared ``max_age`` is kept under ``{key_prefix}:read:<digest of
    (provider, uri, subject)>`` for ``max_age_seconds``: the scope of every ``max_age`` hint is
    ``private``, so the subject is always part of the key and one caller never gets content read
    for another. With the deployment key (``sealing``) the digest is an HMAC and the entry is
    sealed (AES-256-GCM, :mod:`.sealing`): nothing of it is readable in Redis. Identical reads in
    flight on different replicas share one upstream read (a
    :class:`redis.asyncio.lock.Lock` on ``{key_prefix}:reading:<digest>``; the others wait for its
    result). A read that used its caller's upstream credential (:mod:`mcp_providers.credentials`)
    is never kept: per-user upstream content stays out of Redis. Other reads are coalesced in the
    process as before. Redis unreachable, or an entry that
    is not one this class wrote (logged once per entry, then replaced): the read goes to the provider.
    """

    def __init__(
        self, backend: RedisBackend, freshness_of: Callable[[str], Freshness | None], sealing: Seals | None = None
    ) -> None:
        super().__init__()
        self._backend, self._freshness_of, self._sealing = backend, freshness_of, sealing
        self.hits = 0
        """Reads answered from Redis."""
        self._warned: set[str] = set()

    def digest(self, key: Hashable) -> str:
        """The name of ``key``'s entry under ``{key_prefix}:read:``: the HMAC of its JSON under the
        deployment key (:mod:`.sealing`), SHA-256 without one (hex)."""
        data = json.dumps(key, default=str).encode()
        return self._sealing.name(data) if self._sealing is not None else hashlib.sha256(data).hexdigest()

    async def run(self, key: Hashable, read: Callable[[], Awaitable[Any]]) -> Any:
        uri = key[1] if isinstance(key, tuple) and len(key) == 3 else None
        freshness = self._freshness_of(uri) if isinstance(uri, str) else None
        if freshness is None or freshness.kind != "max_age" or not freshness.max_age_seconds:
            return await super().run(key, read)
        seconds = freshness.max_age_seconds
        return await super().run(key, lambda: self._cached(key, seconds, read))

    async def _cached(self, key: Hashable, seconds: float, read: Callable[[], Awaitable[Any]]) -> Any:
        digest = self.digest(key)
        entry, lock = self._backend.key("read", digest), self._backend.lock("reading", digest, READ_LOCK_SECONDS)
        leader = False
        try:
            found = await self._found(entry)
            if found is None:
                leader = await self._backend.call("lock a read", lambda r: lock.acquire())
                # a leader that took the lock just after another one filled the entry reads it
                found = await self._found(entry) if leader else await self._wait(entry, lock)
        except ClusterUnavailable:
            if leader:
                await self._unlock(lock)
            return await read()
        if found is not None:
            if leader:
                await self._unlock(lock)
            self.hits += 1
            return found
        if leader:
            return await self._lead(entry, lock, seconds, read)
        return await read()  # the other replica's read ended without an entry: read here

    async def _found(self, entry: str) -> Content | None:
        """The content kept under ``entry``; ``None`` when there is none or it is malformed (then it is
        dropped, so the next read fills it again, and logged once)."""
        raw = await self._backend.call("read the cache", lambda r: r.get(entry))
        if raw is None:
            return None
        if self._sealing is not None:
            raw = self._sealing.open(raw, entry) or b""  # unsealed, tampered or moved: malformed
        content = _content_from(raw)
        if content is None:
            if entry not in self._warned:
                self._warned = self._warned if len(self._warned) < 1024 else set()
                self._warned.add(entry)
                log.warning("ignored a malformed cached read at %s (%.120r); reading from the provider", entry, raw)
            await self._backend.call("drop a malformed entry", lambda r: r.delete(entry))
        return content

    async def _lead(self, entry: str, lock: "Lock", seconds: float, read: Callable[[], Awaitable[Any]]) -> Any:
        try:
            content = await read()
            if isinstance(content, Content) and not _used_credentials():
                plain = _content_to(content)
                text = plain if self._sealing is None else self._sealing.seal(plain.encode(), entry)
                ms = max(1, int(seconds * 1000))
                with contextlib.suppress(ClusterUnavailable):
                    await self._backend.call("fill the cache", lambda r: r.set(entry, text, px=ms))
            return content
        finally:
            await self._unlock(lock)

    async def _unlock(self, lock: "Lock") -> None:
        """Release ``lock`` if it is still this read's (never another replica's, should it have expired)."""
        from redis.exceptions import LockError

        with anyio.CancelScope(shield=True), contextlib.suppress(ClusterUnavailable, LockError):
            await self._backend.call("unlock a read", lambda r: lock.release())

    async def _wait(self, entry: str, lock: "Lock") -> Content | None:
        """The entry another replica is reading, once it is there; ``None`` if that read ended without one."""
        while True:
            await anyio.sleep(0.02)
            found = await self._found(entry)
            if found is not None:
                return found
            if not await self._backend.call("check a read", lambda r: lock.locked()):
                # the leader fills the entry before it unlocks: one more look, as it may have done
                # both since the last one
                return await self._found(entry)


class _Entry(BaseModel):
    """A cached read as :func:`_content_to` writes it: every key, each of its own type."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)  # [cluster] only
    text: str | None
    blob: str | None
    mime_type: str | None
    as_of: str | None


def _content_to(content: Content) -> str:
    blob = base64.b64encode(content.blob).decode() if content.blob is not None else None
    as_of = content.as_of.isoformat() if content.as_of is not None else None
    return json.dumps({"text": content.text, "blob": blob, "mime_type": content.mime_type, "as_of": as_of})


def _content_from(raw: bytes) -> Content | None:
    """The content in ``raw``, or ``None`` when it is not UTF-8 JSON of :class:`_Entry`'s shape with
    exactly one of text and blob (base64), and ``as_of`` an ISO 8601 time."""
    try:
        data = _Entry.model_validate_json(raw)
        blob = base64.b64decode(data.blob, validate=True) if data.blob is not None else None
        as_of = datetime.fromisoformat(data.as_of) if data.as_of is not None else None
        return Content(text=data.text, blob=blob, mime_type=data.mime_type, as_of=as_of)
    except (ValidationError, ValueError, TypeError):  # binascii.Error is a ValueError
        return None


def _used_credentials() -> bool:
    """Whether the read just made used an upstream credential of its caller: such content is that
    user's own upstream answer, kept out of Redis (it would sit there readable, and a replica
    answering from it could not say which upstream identity served it)."""
    scope = current_scope.get()
    return scope is not None and bool(scope.used)
