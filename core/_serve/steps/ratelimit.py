"""Rate limits per subject (``[server.limits]``): the pipeline's first step, before the gate.

::

    Pipeline.run -> RateLimiter.admit(principal, method) -> route -> authorize -> ...

Each request counts against one budget, over a moving window of ``window_seconds`` (the ``limits``
library's moving-window strategy, its ``limits.aio`` storages):

- an authenticated caller has one budget per method class, keyed by ``Principal.key`` (issuer and
  subject; never a client address, which behind a proxy is the proxy's): ``reads``
  (``resources/read``, ``prompts/get``, ``completion/complete``, and a task's ``tasks/get`` and
  ``tasks/update``), ``calls`` (``tools/call``) and ``lists`` (every ``*/list``,
  ``resources/subscribe``, ``subscriptions/listen``), an extension's methods counting as ``calls``;
- every anonymous caller (``Principal.anonymous``) shares the one ``anonymous`` budget, all methods;
- ``resources/unsubscribe`` and ``tasks/cancel`` are never refused: they only give something back.

Counts live in the process, or with ``[cluster]`` in Redis under
``{key_prefix}:limits:...`` so every replica counts against the same budget. Keys hold a digest of
``(issuer, subject)``, not the subject itself (no personal data in Redis, and an issuer URL's
``/`` cannot make two callers' keys meet).

A refusal is :class:`~mcp_providers.errors.RateLimited` (-32009, ``data.retryAfter`` in seconds):
the seconds travel on the error, and over HTTP the transport sends them as ``Retry-After`` with
the answer it writes (``transport/http_outcome.py``); this step knows no transport.

Redis unreachable: **fail open to the local count**. Each replica then counts its own requests in
memory with the same limits until Redis answers again (so a caller can get at most one budget per
replica), with one warning when it starts and one line when it ends. Refusing every request while
Redis is down (fail closed) would turn a cache outage into a full outage; not counting at all would
drop the guard exactly when a flood may be the cause. While the cluster listener knows Redis is
gone (``RedisBackend.connected``) the local count is used at once, so requests do not each wait
``timeout_seconds`` first; every Redis operation is bounded by it, as the cluster's others are.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from mcp_providers.config import ClusterSettings, LimitsSettings
from mcp_providers.errors import RateLimited
from mcp_providers.identity import Principal

if TYPE_CHECKING:  # limits (with every storage it ships) is imported only when [server.limits] is set
    from limits import RateLimitItem
    from limits.aio.strategies import MovingWindowRateLimiter

log = logging.getLogger("mcp_providers.limits")

_CLASSES = {
    "resources/read": "reads",
    "prompts/get": "reads",
    "completion/complete": "reads",
    "tools/call": "calls",
    "tasks/get": "reads",  # polling a task's result (SEP-2663)
    "tasks/update": "reads",
    "resources/subscribe": "lists",
    "subscriptions/listen": "lists",
}
_WHAT = {
    "reads": "reads (resources/read, prompts/get, completion/complete, tasks/get, tasks/update)",
    "calls": "tool calls",
    "lists": "lists and subscriptions",
    "anonymous": "requests",
}


NEVER_LIMITED = frozenset({"resources/unsubscribe", "tasks/cancel"})
"""Methods that only give something back: never refused."""


def method_class(method: str) -> str | None:
    """``"reads"``, ``"calls"`` or ``"lists"`` for a JSON-RPC method the pipeline serves; ``None``
    for :data:`NEVER_LIMITED`. Any other method (an extension's, SEP-2133: served as a tool call
    is) counts as ``calls``, so no method the pipeline serves is in no budget."""
    if method in NEVER_LIMITED:
        return None
    found = _CLASSES.get(method)
    if found is None and method.endswith("/list"):
        return "lists"
    return found or "calls"


def _caller(principal: Principal, name: Callable[[bytes], str] | None = None) -> str:
    """The bucket name of an authenticated caller: a digest of ``Principal.key``, keyed with the
    deployment key's HMAC ``name`` when there is one (so Redis keys cannot be reversed by hashing
    guessed ``(issuer, subject)`` pairs, round 4 item 14), else SHA-256."""
    data = json.dumps(principal.key).encode()
    return (name(data) if name is not None else hashlib.sha256(data).hexdigest())[:32]


class RateLimiter:
    """The ``[server.limits]`` budgets of one runtime (see the module docstring).

    :param settings: the limits; ``None`` limits nothing (:meth:`admit` returns at once).
    :param cluster: with ``[cluster]``, counts are kept in its Redis under its ``key_prefix``.
    :param connected: whether the cluster listener is connected to Redis now (``RedisBackend.connected``);
        while it says no, the local count is used without trying Redis.
    :param name: the HMAC naming callers in keys (:meth:`~mcp_providers._serve.state.sealing.Sealing.name`).
    """

    def __init__(
        self,
        settings: LimitsSettings | None,
        cluster: ClusterSettings | None = None,
        connected: Callable[[], bool] | None = None,
        name: Callable[[bytes], str] | None = None,
    ) -> None:
        self.settings = settings
        self._name = name
        self._items: dict[str, RateLimitItem] = {}
        self._local: MovingWindowRateLimiter | None = None  # counts only when a limit is set
        if settings is not None:
            from limits import RateLimitItemPerSecond
            from limits.aio.storage import MemoryStorage
            from limits.aio.strategies import MovingWindowRateLimiter

            window = settings.window_seconds
            for bucket in ("reads", "calls", "lists", "anonymous"):
                self._items[bucket] = RateLimitItemPerSecond(getattr(settings, bucket), window, namespace="rate")
            self._local = MovingWindowRateLimiter(MemoryStorage())
        self._shared: MovingWindowRateLimiter | None = None
        self._pool: Any = None
        self._timeout = cluster.timeout_seconds if cluster is not None else 1.0
        self._connected = connected or (lambda: True)
        self.degraded = False
        """Whether the last count fell back to the local one because Redis did not answer."""
        if settings is not None and cluster is not None:
            self._shared = self._redis(cluster)

    def _redis(self, cluster: ClusterSettings) -> MovingWindowRateLimiter:
        from limits.aio.storage import RedisStorage
        from limits.aio.strategies import MovingWindowRateLimiter
        from redis.asyncio import ConnectionPool  # only with [cluster]

        timeout = cluster.timeout_seconds
        url = cluster.connection_url()
        self._pool = ConnectionPool.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        storage = RedisStorage(
            f"async+{url}",
            implementation="redispy",
            key_prefix=f"{cluster.key_prefix}:limits",
            wrap_exceptions=True,
            connection_pool=self._pool,
        )
        return MovingWindowRateLimiter(storage)

    @property
    def enabled(self) -> bool:
        """Whether any limit is configured."""
        return self.settings is not None

    async def admit(self, principal: Principal, method: str) -> None:
        """Count one ``method`` request of ``principal`` against its caller's budget.

        :raises RateLimited: the budget is used up (``data["retryAfter"]``: the seconds to wait,
            which the HTTP transport also sends as ``Retry-After``).
        """
        if self.settings is None:
            return
        await self.check(principal, method)

    async def check(self, principal: Principal, method: str) -> None:
        """Count one ``method`` request of ``principal``.

        :raises RateLimited: over the budget; the message says which limit (requests per seconds)
            and after how many seconds to retry, ``data["retryAfter"]`` carries the seconds.
        """
        kind = method_class(method)
        if self.settings is None or kind is None:
            return
        bucket, who = ("anonymous", "all") if principal.anonymous else (kind, _caller(principal, self._name))
        item = self._items[bucket]
        retry_after = await self._hit(item, bucket, who)
        if retry_after is None:
            return
        raise RateLimited(_message(bucket, item.amount, self.settings.window_seconds, retry_after), data={
            "retryAfter": retry_after, "limit": bucket, "allowed": item.amount,
            "windowSeconds": self.settings.window_seconds,
        })  # fmt: skip

    async def _hit(self, item: RateLimitItem, bucket: str, who: str) -> int | None:
        """``None`` when the request fits the budget, else the whole seconds until it would."""
        if self._shared is not None and self._connected():
            try:
                with anyio.fail_after(self._timeout):
                    found = await _count(self._shared, item, bucket, who)
            except Exception as exc:  # Redis down or slow: limits.errors.StorageError, TimeoutError
                self._fall_back(exc)
            else:
                if self.degraded:
                    self.degraded = False
                    log.info("rate limits are counted in Redis again")
                return found
        elif self._shared is not None:
            self._fall_back(None)
        assert self._local is not None  # made with the settings that made ``item``
        return await _count(self._local, item, bucket, who)

    def _fall_back(self, exc: Exception | None) -> None:
        if not self.degraded:
            why = type(exc).__name__ if exc is not None else "the cluster listener is disconnected"
            log.warning("rate limits: Redis unreachable (%s); counting in this replica's memory until it answers", why)
        self.degraded = True

    async def aclose(self) -> None:
        """Close the Redis connections (if any); the limiter keeps working, reconnecting on demand."""
        if self._pool is not None:
            await self._pool.aclose()


async def _count(limiter: MovingWindowRateLimiter, item: RateLimitItem, bucket: str, who: str) -> int | None:
    if await limiter.hit(item, bucket, who):
        return None
    stats = await limiter.get_window_stats(item, bucket, who)
    return max(1, math.ceil(stats.reset_time - time.time()))


def _message(bucket: str, allowed: int, window: int, retry_after: int) -> str:
    whose = "shared by every anonymous caller" if bucket == "anonymous" else "per subject"
    hint = "; authenticate to get a budget of your own" if bucket == "anonymous" else ""
    return (
        f"rate limit {bucket!r} reached: at most {allowed} {_WHAT[bucket]} per {window} seconds {whose} "
        f"([server.limits] {bucket} = {allowed}); retry after {retry_after} seconds{hint}"
    )
