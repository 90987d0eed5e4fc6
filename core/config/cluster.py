"""``[cluster]``: the Redis backend replicas share."""

import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_providers.config.environment import ENV_NAME
from mcp_providers.errors import ConfigError

__all__ = ["KEY_PREFIX_REQUIRED", "ClusterSettings"]


KEY_PREFIX_REQUIRED = (
    "key_prefix is required with [cluster]: it names this deployment's keys and channel in Redis. "
    "Give every replica of the deployment the same one and every other deployment on that Redis "
    'another, e.g. key_prefix = "docs-prod" (letters, digits, _ . : -, at most 64)'
)
"""Why ``[cluster]`` without ``key_prefix`` is refused (two deployments would share one namespace)."""


class ClusterSettings(BaseModel):
    """The ``[cluster]`` table: share live state between replicas through Redis.

    Without it everything stays in the process (one server, or ``--workers 1``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

    redis_url: str | None = Field(default=None, pattern=r"^rediss?://")
    """``redis://[user:password@]host:port/db`` (``rediss://`` for TLS). A password in it makes the
    file a secret: give it with ``password_env`` instead, or the whole URL with ``redis_url_env``."""
    redis_url_env: str | None = Field(default=None, pattern=ENV_NAME)
    """Environment variable holding the URL instead of ``redis_url`` (one of the two; set from a
    Secret under Kubernetes: the chart's ``redis.existingSecret`` and ``redis.urlKey``)."""
    password_env: str | None = Field(default=None, pattern=ENV_NAME)
    """Environment variable holding Redis's password (``AUTH``), which then takes the place of any
    password in the URL; the chart's ``redis.existingSecret`` and ``redis.passwordKey``."""
    key_prefix: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    """The deployment's namespace in Redis: the prefix of every key and of the channel. Required,
    with no default: the replicas of one deployment share it, and each other deployment on the same
    Redis needs its own, or they would serve each other's cached reads, updates and leases."""
    lease_seconds: float = Field(default=10.0, ge=0.5, le=3600)
    """How long a replica's hold on a live source's poller lasts without renewal (the replica renews
    it every third of that while it polls): the longest polling stops when the holder dies, before
    another replica takes over."""
    timeout_seconds: float = Field(default=1.0, gt=0, le=30)
    """Longest wait for Redis in one operation; past it the request fails with a clear error."""
    stream_ttl_seconds: float = Field(default=3600.0, ge=1, le=7 * 86400)
    """How long a stateful session's SSE stream is kept for ``Last-Event-ID`` replay after its last
    event (2025-era sessions, not ``--stateless``)."""
    stream_max_events: int = Field(default=1000, ge=10, le=1_000_000)
    """Most events kept per stream for replay; older ones are dropped first."""

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        if isinstance(data, dict) and "key_prefix" not in data:
            raise ValueError(KEY_PREFIX_REQUIRED)
        if isinstance(data, dict) and ("redis_url" in data) == ("redis_url_env" in data):
            raise ValueError(
                "[cluster] needs one of redis_url (the URL) or redis_url_env (a variable holding it), "
                'not both, e.g. redis_url = "redis://redis:6379/0" with password_env = "REDIS_PASSWORD"'
            )
        return data

    def connection_url(self, env: Mapping[str, str] | None = None) -> str:
        """The URL to connect with: ``redis_url``, or ``$redis_url_env``; with ``password_env`` the
        password from that variable in place of the URL's (percent-encoded). Read from ``env``
        (default :data:`os.environ`) when a connection is made; never logged or shown.

        :raises ConfigError: a variable named here is unset or empty, or the URL it holds is not
            ``redis://`` or ``rediss://`` (the message names the variable, never its value).
        """
        import urllib.parse

        env = os.environ if env is None else env
        url = self.redis_url or ""
        if self.redis_url_env is not None:
            url = env.get(self.redis_url_env, "").strip()
            if not re.match(r"^rediss?://", url):
                what = "unset or empty" if not url else "not a redis:// or rediss:// URL"
                raise ConfigError(
                    f"[cluster] redis_url_env: ${self.redis_url_env} is {what}; "
                    "set it to the Redis URL, e.g. redis://redis:6379/0"
                )
        if self.password_env is None:
            return url
        password = env.get(self.password_env, "")
        if not password:
            raise ConfigError(
                f"[cluster] password_env: ${self.password_env} is unset or empty; "
                "set it to Redis's password (requirepass), or drop password_env"
            )
        parts = urllib.parse.urlsplit(url)
        user = urllib.parse.quote(urllib.parse.unquote(parts.username or ""), safe="")
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{user}:{urllib.parse.quote(password, safe='')}@{host}"
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
