"""The runtime's shared parts: in the process (the default) or in Redis (``[cluster]``).

:class:`InProcess` and :class:`RedisBackend` offer the same four things to the runtime:

- ``bus``: the SDK :class:`~mcp.server.subscriptions.SubscriptionBus` every update goes through.
  On Redis, :class:`RedisSubscriptionBus` publishes each event on one channel
  (``{key_prefix}:events``) and every replica's listener task hands it to its local listeners: the
  2026-07-28 listen streams it holds, and the hub's relay to its 2025-era sessions;
- ``hold(source, seconds)``: one poller per live source; on Redis a lease, a
  :class:`redis.asyncio.lock.Lock` on ``{key_prefix}:lease:{source}`` that lasts ``lease_seconds``.
  The holder claims it for ``seconds`` on each poll (the poller's promise to ask again within that);
  while the claim lasts the replica renews the lease every third of ``lease_seconds``, and lets it
  go once the claim lapses. A replica that dies stops renewing: another takes over within
  ``lease_seconds``;
- ``recall``/``remember``: a poller's last snapshot, so the replica that takes over compares with
  what the previous holder saw and no change is lost across the handover;
- ``connected``: whether the listener is subscribed now; nothing refuses a request for Redis being
  down: reads need no shared state, watches hear this replica's updates meanwhile (:mod:`.outage`).

Every key and the channel start with ``key_prefix``, the deployment's namespace (required with
``[cluster]``: two deployments on one Redis never share keys). Values are read as bytes and checked:
a malformed entry (not UTF-8, not JSON, the wrong shape) counts as missing, with one warning.

Every Redis operation is bounded by ``timeout_seconds`` (1 s by default): Redis down is a clear
error within it, never a hang. The listener reconnects by itself, every half second; a failure
that is not Redis's (a bug) is logged with its traceback, and one local listener's bug neither
stops the relay nor the other listeners. While the channel is down, updates reach this replica's
own watchers, and once it is back every watched URI is re-announced to them (:mod:`.outage`).

The wire format of events and the in-process bus are in :mod:`.bus`, the reads kept in Redis in
:mod:`.shared_reads`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
from mcp.server.subscriptions import (
    ResourceUpdated,
    ServerEvent,
)

from mcp_providers._serve.state.bus import LocalBus, decode, encode, reload_from
from mcp_providers._serve.state.replica import replica_name
from mcp_providers.config import ClusterSettings
from mcp_providers.errors import BACKEND_UNAVAILABLE, UpstreamError

log = logging.getLogger("mcp_providers.cluster")


T = TypeVar("T")


if TYPE_CHECKING:
    from redis.asyncio.lock import Lock

    from mcp_providers._serve.state.outage import BusOutages


class ClusterUnavailable(UpstreamError):
    """The cluster backend (Redis) could not be reached in time: JSON-RPC -32010
    (:data:`~mcp_providers.errors.BACKEND_UNAVAILABLE`), not the upstream's -32006."""

    code = BACKEND_UNAVAILABLE


class InProcess:
    """Shared parts of one process: the embedded default."""

    configured = False

    def __init__(self) -> None:
        self.bus = LocalBus()
        self.held: set[str] = set()
        self._state: dict[str, str] = {}

    async def hold(self, source: str, seconds: float) -> bool:
        self.held.add(source)
        return True

    async def recall(self, source: str) -> str | None:
        return self._state.get(source)

    async def remember(self, source: str, text: str) -> None:
        self._state[source] = text

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
        self.local = LocalBus()

    async def publish(self, event: ServerEvent) -> None:
        """Send ``event`` on the channel; when Redis cannot take it, deliver it to this replica's
        listeners at once and keep its URI to send once Redis answers (:mod:`.outage`). Never raises:
        a publisher's change has happened, and the outage is logged once, not per update."""
        backend = self._backend
        if backend.connected:
            try:
                await backend.call("publish an update", lambda r: r.publish(backend.channel, encode(event)))
                return
            except ClusterUnavailable:
                pass
        await self.local.publish(event)
        if isinstance(event, ResourceUpdated):
            backend.outages.unsent(event.uri)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        return self.local.subscribe(listener)


class RedisBackend:
    """Shared parts kept in Redis (see the module docstring)."""

    configured = True

    def __init__(self, settings: ClusterSettings, replica: str | None = None) -> None:
        from redis.asyncio import Redis  # only with a [cluster] section

        self.settings = settings
        self.replica = replica or f"{replica_name()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.channel = f"{settings.key_prefix}:events"
        timeout = settings.timeout_seconds
        # bytes in, bytes out: every value is checked here, so a malformed one is a miss, not a crash
        self._redis = Redis.from_url(
            settings.connection_url(), socket_timeout=timeout, socket_connect_timeout=timeout, decode_responses=False
        )
        self.bus = RedisSubscriptionBus(self)
        self.held: set[str] = set()
        """Sources whose lease this replica holds."""
        self._leases: dict[str, Lock] = {}
        self._claims: dict[str, float] = {}  # source -> (anyio clock) until when its poller claims it
        self.connected = False
        """Whether the listener is subscribed to the channel now."""
        self.sealing: Seals | None = None
        """Seals per-user values (:mod:`.sealing`), set by the runtime when the deployment key is there."""
        self.on_reload: Callable[[], None] | None = None
        """Called when another replica announces a reload on the channel (:meth:`announce_reload`)."""
        from mcp_providers._serve.state.outage import BusOutages  # [cluster] only: not on every start-up

        self.outages: BusOutages = BusOutages(self._where())
        """This replica's outages of the channel (:mod:`.outage`)."""
        self.on_recovered: Callable[[], int] | None = None
        """Called once the channel is back after an outage: re-announces every watched URI to this
        replica's watchers and returns how many (the subscription hub's ``reannounce``)."""

    async def announce_reload(self) -> None:
        """Ask every other replica listening on the channel to reload its config.

        :raises ClusterUnavailable: Redis did not take the message in time.
        """
        message = json.dumps({"kind": "reload", "from": self.replica})
        await self.call("announce a reload", lambda r: r.publish(self.channel, message))

    def key(self, kind: str, name: str) -> str:
        """The Redis key of ``name`` of ``kind`` (``lease``, ``state``, ``read``...)."""
        return f"{self.settings.key_prefix}:{kind}:{name}"

    def lock(self, kind: str, name: str, seconds: float) -> Lock:
        """A :class:`redis.asyncio.lock.Lock` on :meth:`key` that lasts ``seconds`` unless renewed."""
        return self._redis.lock(self.key(kind, name), timeout=seconds, blocking=False, thread_local=False)

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

    async def ping(self) -> bool:
        try:
            return bool(await self.call("ping", lambda r: r.ping()))
        except ClusterUnavailable:
            return False

    async def hold(self, source: str, seconds: float) -> bool:
        """Whether this replica polls ``source`` now; if so it is claimed for ``seconds`` more.

        The lease itself lasts ``lease_seconds`` and is renewed in the background while the claim
        lasts (:meth:`_renew`). Redis unreachable: ``False`` (nobody can know who polls).
        """
        lease = self._leases.get(source) or self.lock("lease", source, self.settings.lease_seconds)
        self._leases[source] = lease
        self._claims[source] = anyio.current_time() + max(seconds, 0.0)
        try:
            if source in self.held:
                if await self.call("renew a lease", lambda r: _reacquire(lease)):
                    return True
                self.held.discard(source)
                log.warning("lease on %s lost to another replica", source)
            if await self.call("take a lease", lambda r: lease.acquire(token=self.replica)):
                self.held.add(source)
                log.info("replica %s now polls %s", self.replica, source)
                return True
        except ClusterUnavailable:
            self.held.discard(source)
        return False

    async def _renew(self) -> None:
        """Renew every held lease whose poller still claims it, every third of ``lease_seconds``;
        let go of the others (their poller stopped asking)."""
        while True:
            await anyio.sleep(self.settings.lease_seconds / 3)
            for source in list(self.held):
                if anyio.current_time() > self._claims.get(source, 0.0):
                    log.info("the poller of %s stopped asking: its lease is let go", source)
                    await self._release(source)
                    continue
                lease = self._leases[source]

                async def renew(_: Any, lease: Lock = lease) -> bool:
                    return await _reacquire(lease)

                try:
                    renewed = await self.call("renew a lease", renew)
                except ClusterUnavailable:
                    continue  # the next poll or renewal tries again; the lease may lapse meanwhile
                if not renewed:
                    self.held.discard(source)
                    log.warning("lease on %s lost to another replica", source)

    async def recall(self, source: str) -> str | None:
        try:
            raw = await self.call("recall a snapshot", lambda r: r.get(self.key("state", source)))
        except ClusterUnavailable:
            return None
        try:
            return raw.decode() if isinstance(raw, bytes) else None
        except UnicodeDecodeError:
            log.warning("ignored the snapshot of %s kept in Redis: it is not UTF-8", source)
            return None

    async def remember(self, source: str, text: str) -> None:
        with contextlib.suppress(ClusterUnavailable):
            await self.call("keep a snapshot", lambda r: r.set(self.key("state", source), text, ex=86400))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Listen on the channel (reconnecting) and renew leases while the server runs; release them after."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._listen)
            tasks.start_soon(self._renew)
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
            await self.aclose()

    async def aclose(self) -> None:
        """Close the connections to Redis (:meth:`running` does on its way out)."""
        with contextlib.suppress(Exception):  # closing what may be broken already
            await self._redis.aclose()

    async def _release(self, source: str) -> None:
        """Let another replica take ``source`` at once (a clean shutdown need not wait for the TTL)."""
        from redis.exceptions import LockError

        self.held.discard(source)
        lease = self._leases.get(source)
        if lease is not None:
            with contextlib.suppress(ClusterUnavailable, LockError):
                await self.call("release a lease", lambda r: lease.release())

    async def _listen(self) -> None:
        """Relay the channel for as long as the server runs: after a loss, again every 0.5 s
        (tenacity, as every retry in the project)."""
        import tenacity  # with [cluster] only: serve's start-up does not pay for it
        from redis.exceptions import RedisError

        def lost(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            if isinstance(exc, RedisError | OSError | TimeoutError):  # Redis went away: said once per outage
                self.outages.lost(exc)
            else:  # not Redis: a bug, shown in full; the relay starts again
                log.error("the cluster relay on %s failed; restarting it", self.channel, exc_info=exc)
            self.connected = False

        await tenacity.AsyncRetrying(retry=tenacity.retry_if_exception_type(Exception), wait=tenacity.wait_fixed(0.5),
                                     before_sleep=lost, sleep=anyio.sleep)(self._relay_channel)  # fmt: skip

    async def _relay_channel(self) -> None:
        from redis.exceptions import TimeoutError as RedisTimeoutError

        pubsub = self._redis.pubsub()
        try:
            with anyio.fail_after(self.settings.timeout_seconds):
                await pubsub.subscribe(self.channel)
            if not self.connected and not self.outages.down:
                log.info("cluster backend connected: listening on %s", self.channel)
            self.connected = True
            if self.outages.down:
                await self._recover()
            idle = 0.0
            while True:
                if self.outages.waiting:  # a publish failed while the listener stayed up
                    with contextlib.suppress(TimeoutError, RedisTimeoutError):  # kept; a dead Redis fails the ping
                        await self._send_unsent()
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
                if message is None:
                    idle += 0.5
                    if idle >= 2:  # a quiet channel: make sure Redis is still there
                        idle = 0.0
                        await self.still_there()
                    continue
                idle = 0.0
                sender = reload_from(message["data"])
                if sender is not None:
                    if sender != self.replica and self.on_reload is not None:
                        self.on_reload()
                    continue
                event = decode(message["data"])
                if event is not None:
                    await self.bus.local.publish(event)  # LocalBus: a listener's bug stays its own
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]  # typed from redis 8.2

    async def still_there(self) -> None:
        """Whether Redis still answers: a ``PING`` within ``timeout_seconds``, and when that answer is
        late, a second one. One late answer is not an outage: a replica whose own loop was held up
        (CPU throttling, a long collection) or a Redis briefly paused (``CLIENT PAUSE`` in a
        failover) would otherwise count and log a loss and a recovery that never happened, and drop
        its subscription for nothing.

        :raises TimeoutError: two late answers in a row (the relay then counts an outage).
        :raises RedisError: Redis refused or closed the connection (an outage at once).
        """
        from redis.exceptions import TimeoutError as RedisTimeoutError

        for attempt in (1, 2):
            try:
                with anyio.fail_after(self.settings.timeout_seconds):
                    await self._redis.ping()
                return
            except (TimeoutError, RedisTimeoutError):
                if attempt == 2:
                    raise

    async def _recover(self) -> None:
        """The channel is back after an outage: send the updates made here meanwhile, re-announce
        every watched URI to this replica's watchers, log and count the recovery once.

        :raises RedisError: Redis failed again while the updates were sent (still an outage).
        """
        sent = await self._send_unsent()
        reannounced = self.on_recovered() if self.on_recovered is not None else 0
        self.outages.recovered(reannounced, sent)

    async def _send_unsent(self) -> int:
        """Send the kept updates on the channel; returns how many. Those not sent are kept again.

        :raises RedisError: Redis failed (the caller's listener reconnects).
        """
        unsent = self.outages.take_unsent()
        for n, uri in enumerate(unsent):
            try:
                with anyio.fail_after(self.settings.timeout_seconds):
                    await self._redis.publish(self.channel, encode(ResourceUpdated(uri=uri)))
            except BaseException:
                for kept in unsent[n:]:
                    self.outages.unsent(kept)
                raise
        return len(unsent)


async def _reacquire(lease: Lock) -> bool:
    """Reset ``lease`` to its full TTL; ``False`` when another replica holds it now."""
    from redis.exceptions import LockNotOwnedError

    try:
        return await lease.reacquire()
    except LockNotOwnedError:
        return False


class Seals(Protocol):
    """What :class:`SharedReads` needs of :class:`~mcp_providers._serve.state.sealing.Sealing`."""

    def name(self, data: bytes) -> str: ...
    def seal(self, plain: bytes, where: str) -> bytes: ...
    def open(self, sealed: bytes, where: str) -> bytes | None: ...


Shared = InProcess | RedisBackend
"""What the runtime holds: :class:`InProcess` without ``[cluster]``, :class:`RedisBackend` with it."""


def shared_for(settings: ClusterSettings | None) -> Shared:
    """The backend ``[cluster]`` asks for."""
    return RedisBackend(settings) if settings is not None else InProcess()
