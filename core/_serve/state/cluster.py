"""The runtime's shared parts: in the process (the default) or in Redis (``[cluster]``).

:class:`InProcess` and :class:`RedisBackend` offer the same four things to the runtime:

- ``bus``: the SDK :class:`~mcp.server.subscriptions.SubscriptionBus` every update goes through.
  On Redis, :class:`RedisSubscriptionBus` publishes each event on one channel
  (``{key_prefix}:events``) and every replica's listener task hands it to its local listeners: the
  2026-07-28 listen streams it holds, and the hub's relay to its 2025-era sessions;
- ``hold(source, seconds)``: one poller per live source; on Redis a lease
  (``SET {key_prefix}:lease:{source} <replica> NX PX``) renewed by its holder on each poll and taken
  over by another replica once it expires;
- ``recall``/``remember``: a poller's last snapshot, so the replica that takes over compares with
  what the previous holder saw and no change is lost across the handover;
- ``require()``: raises :class:`ClusterUnavailable` at once when Redis is unreachable, for the
  requests that need it (watching); reads need no shared state and keep working.

Every Redis operation is bounded by ``timeout_seconds`` (1 s by default): Redis down is a clear
error within it, never a hang. The listener reconnects by itself, every half second.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from datetime import datetime
from typing import Any, TypeVar

import anyio
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from mcp_providers._serve.state.coalesce import Coalescer
from mcp_providers.config import ClusterSettings
from mcp_providers.errors import UpstreamError
from mcp_providers.models import Freshness
from mcp_providers.providers import Content

log = logging.getLogger("mcp_providers.cluster")
T = TypeVar("T")

_SIMPLE: dict[str, Any] = {
    "tools_list_changed": ToolsListChanged,
    "prompts_list_changed": PromptsListChanged,
    "resources_list_changed": ResourcesListChanged,
}
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class ClusterUnavailable(UpstreamError):
    """The cluster backend (Redis) could not be reached in time."""


def encode(event: ServerEvent) -> str:
    """One event as the JSON text carried on the channel."""
    if isinstance(event, ResourceUpdated):
        return json.dumps({"kind": "resource_updated", "uri": event.uri})
    kind = next(k for k, cls in _SIMPLE.items() if isinstance(event, cls))
    return json.dumps({"kind": kind})


def decode(text: str | bytes) -> ServerEvent | None:
    """The event in ``text``, or ``None`` for anything not understood (logged)."""
    try:
        data = json.loads(text)
        if data["kind"] == "resource_updated":
            return ResourceUpdated(uri=str(data["uri"]))
        return _SIMPLE[data["kind"]]()  # type: ignore[no-any-return]
    except (ValueError, KeyError, TypeError):
        log.warning("ignored a malformed event on the cluster channel: %.200r", text)
        return None


class InProcess:
    """Shared parts of one process: the embedded default."""

    configured = False

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.held: set[str] = set()
        self._state: dict[str, str] = {}

    async def hold(self, source: str, seconds: float) -> bool:
        self.held.add(source)
        return True

    async def recall(self, source: str) -> str | None:
        return self._state.get(source)

    async def remember(self, source: str, text: str) -> None:
        self._state[source] = text

    def require(self, what: str) -> None:
        """Nothing to check: the process is its own backend."""

    async def ping(self) -> bool:
        return True

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        yield


class RedisSubscriptionBus:
    """A :class:`~mcp.server.subscriptions.SubscriptionBus` over Redis pub/sub.

    ``publish`` sends the event on the cluster channel (and raises :class:`ClusterUnavailable`
    when Redis cannot take it); every replica, this one included, delivers what arrives on the
    channel to its local listeners (``subscribe`` registers locally, as the protocol requires).
    """

    def __init__(self, backend: RedisBackend) -> None:
        self._backend = backend
        self.local = InMemorySubscriptionBus()

    async def publish(self, event: ServerEvent) -> None:
        backend = self._backend
        await backend.call("publish an update", lambda r: r.publish(backend.channel, encode(event)))

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        return self.local.subscribe(listener)


class RedisBackend:
    """Shared parts kept in Redis (see the module docstring)."""

    configured = True

    def __init__(self, settings: ClusterSettings, replica: str | None = None) -> None:
        from redis.asyncio import Redis  # only with a [cluster] section

        self.settings = settings
        self.replica = replica or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.channel = f"{settings.key_prefix}:events"
        timeout = settings.timeout_seconds
        self._redis = Redis.from_url(
            settings.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout, decode_responses=True
        )
        self.bus = RedisSubscriptionBus(self)
        self.held: set[str] = set()
        """Sources whose lease this replica holds."""
        self.connected = False
        """Whether the listener is subscribed to the channel now."""

    def key(self, kind: str, name: str) -> str:
        """The Redis key of ``name`` of ``kind`` (``lease``, ``state``, ``read``...)."""
        return f"{self.settings.key_prefix}:{kind}:{name}"

    def _key(self, kind: str, source: str) -> str:
        return f"{self.settings.key_prefix}:{kind}:{source}"

    async def call(self, what: str, operation: Callable[[Any], Awaitable[T]]) -> T:
        """Run one Redis operation within ``timeout_seconds``.

        :raises ClusterUnavailable: Redis failed or did not answer in time.
        """
        from redis.exceptions import RedisError

        try:
            with anyio.fail_after(self.settings.timeout_seconds):
                return await operation(self._redis)
        except (RedisError, OSError, TimeoutError) as exc:
            raise ClusterUnavailable(
                f"cannot {what}: the cluster backend (Redis at {self._where()}) is unreachable "
                f"({type(exc).__name__}); it is retried automatically",
                data={"backend": "redis"},
            ) from None

    def _where(self) -> str:
        kwargs = self._redis.connection_pool.connection_kwargs
        return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"

    def require(self, what: str) -> None:
        """:raises ClusterUnavailable: the replica is not connected to Redis now."""
        if not self.connected:
            raise ClusterUnavailable(
                f"cannot {what}: the cluster backend (Redis at {self._where()}) is unreachable; "
                "reconnection is automatic, try again shortly",
                data={"backend": "redis"},
            )

    async def ping(self) -> bool:
        try:
            return bool(await self.call("ping", lambda r: r.ping()))
        except ClusterUnavailable:
            return False

    async def hold(self, source: str, seconds: float) -> bool:
        key, ms = self._key("lease", source), max(1, int(seconds * 1000))
        try:
            if source in self.held:
                if await self.call("renew a lease", lambda r: r.eval(_RENEW, 1, key, self.replica, ms)):
                    return True
                self.held.discard(source)
                log.warning("lease on %s lost to another replica", source)
            if await self.call("take a lease", lambda r: r.set(key, self.replica, nx=True, px=ms)):
                self.held.add(source)
                log.info("replica %s now polls %s", self.replica, source)
                return True
        except ClusterUnavailable:
            self.held.discard(source)
        return False

    async def recall(self, source: str) -> str | None:
        try:
            return await self.call("recall a snapshot", lambda r: r.get(self._key("state", source)))
        except ClusterUnavailable:
            return None

    async def remember(self, source: str, text: str) -> None:
        with contextlib.suppress(ClusterUnavailable):
            await self.call("keep a snapshot", lambda r: r.set(self._key("state", source), text, ex=86400))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Listen on the channel (reconnecting) while the server runs; release leases after."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._listen)
            with anyio.move_on_after(self.settings.timeout_seconds):
                while not self.connected:
                    await anyio.sleep(0.02)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.settings.timeout_seconds):
            for source in list(self.held):
                await self._release(source)
            self.held.clear()
            with contextlib.suppress(Exception):
                await self._redis.aclose()

    async def _release(self, source: str) -> None:
        """Let another replica take ``source`` at once (a clean shutdown need not wait for the TTL)."""
        key = self._key("lease", source)
        with contextlib.suppress(ClusterUnavailable):
            await self.call("release a lease", lambda r: r.eval(_RELEASE, 1, key, self.replica))

    async def _listen(self) -> None:
        while True:
            try:
                await self._relay_channel()
            except Exception as exc:  # Redis went away: say so once, then keep trying
                if self.connected:
                    log.warning("cluster backend lost (%s); reconnecting", type(exc).__name__)
            self.connected = False
            await anyio.sleep(0.5)

    async def _relay_channel(self) -> None:
        pubsub = self._redis.pubsub()
        try:
            with anyio.fail_after(self.settings.timeout_seconds):
                await pubsub.subscribe(self.channel)
            if not self.connected:
                log.info("cluster backend connected: listening on %s", self.channel)
            self.connected = True
            idle = 0.0
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
                if message is None:
                    idle += 0.5
                    if idle >= 2:  # a quiet channel: make sure Redis is still there
                        idle = 0.0
                        with anyio.fail_after(self.settings.timeout_seconds):
                            await self._redis.ping()
                    continue
                idle = 0.0
                event = decode(message["data"])
                if event is not None:
                    await self.bus.local.publish(event)
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]


class SharedReads(Coalescer[Any]):
    """The invoker's coalescer with ``[cluster]``: ``max_age`` reads are cached in Redis.

    A read of a resource declared ``max_age`` is kept under ``{key_prefix}:read:<digest of
    (provider, uri, subject)>`` for ``max_age_seconds``: the scope of every ``max_age`` hint is
    ``private``, so the subject is always part of the key and one caller never gets content read
    for another. Identical reads in flight on different replicas share one upstream read (a lock
    key; the others wait for its result). Other reads are coalesced in the process as before.
    Redis unreachable: the read goes to the provider, as without a cluster.
    """

    def __init__(self, backend: RedisBackend, freshness_of: Callable[[str], Freshness | None]) -> None:
        super().__init__()
        self._backend, self._freshness_of = backend, freshness_of
        self.hits = 0
        """Reads answered from Redis."""

    async def run(self, key: Hashable, read: Callable[[], Awaitable[Any]]) -> Any:
        uri = key[1] if isinstance(key, tuple) and len(key) == 3 else None
        freshness = self._freshness_of(uri) if isinstance(uri, str) else None
        if freshness is None or freshness.kind != "max_age" or not freshness.max_age_seconds:
            return await super().run(key, read)
        seconds = freshness.max_age_seconds
        return await super().run(key, lambda: self._cached(key, seconds, read))

    async def _cached(self, key: Hashable, seconds: float, read: Callable[[], Awaitable[Any]]) -> Any:
        digest = hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()
        entry, lock = self._backend.key("read", digest), self._backend.key("reading", digest)
        try:
            found = await self._backend.call("read the cache", lambda r: r.get(entry))
            leader = found is None and await self._backend.call(
                "lock a read", lambda r: r.set(lock, self._backend.replica, nx=True, px=60_000)
            )
            if found is None and not leader:
                found = await self._wait(entry, lock)
        except ClusterUnavailable:
            return await read()
        if leader:
            return await self._lead(entry, lock, seconds, read)
        if found is None:  # the other replica's read failed: read here
            return await read()
        self.hits += 1
        return _content_from(found)

    async def _lead(self, entry: str, lock: str, seconds: float, read: Callable[[], Awaitable[Any]]) -> Any:
        try:
            content = await read()
            if isinstance(content, Content):
                text, ms = _content_to(content), max(1, int(seconds * 1000))
                with contextlib.suppress(ClusterUnavailable):
                    await self._backend.call("fill the cache", lambda r: r.set(entry, text, px=ms))
            return content
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(ClusterUnavailable):
                await self._backend.call("unlock a read", lambda r: r.delete(lock))

    async def _wait(self, entry: str, lock: str) -> str | None:
        """The entry another replica is reading, once it is there; ``None`` if that read ended without one."""
        while True:
            await anyio.sleep(0.02)
            found: str | None = await self._backend.call("read the cache", lambda r: r.get(entry))
            if found is not None:
                return found
            if not await self._backend.call("check a read", lambda r: r.exists(lock)):
                return None


def _content_to(content: Content) -> str:
    blob = base64.b64encode(content.blob).decode() if content.blob is not None else None
    as_of = content.as_of.isoformat() if content.as_of is not None else None
    return json.dumps({"text": content.text, "blob": blob, "mime_type": content.mime_type, "as_of": as_of})


def _content_from(text: str) -> Content:
    data = json.loads(text)
    blob = base64.b64decode(data["blob"]) if data.get("blob") is not None else None
    as_of = datetime.fromisoformat(data["as_of"]) if data.get("as_of") else None
    return Content(text=data.get("text"), blob=blob, mime_type=data.get("mime_type"), as_of=as_of)


Shared = InProcess | RedisBackend
"""What the runtime holds: :class:`InProcess` without ``[cluster]``, :class:`RedisBackend` with it."""


def shared_for(settings: ClusterSettings | None) -> Shared:
    """The backend ``[cluster]`` asks for."""
    return RedisBackend(settings) if settings is not None else InProcess()
