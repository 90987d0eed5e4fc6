"""Upstream health: how each provider's calls ended, for the ``/status`` page.

The invoker (:class:`~.invoker.Invoker`) tells :class:`UpstreamHealth` how every read, completion,
prompt render and tool call it ran ended. A provider stands for its upstream (ServiceNow, an MCP
server, an HTTP API): what the person on call wants to know is whether it answers now, and since
when it has not. Failures are sorted into :data:`FAILURES`; anything the provider answered (a
result, a tool's ``isError``, a refusal such as not found or invalid params) counts as answered.
Kept per provider name since start-up, so bounded by the providers ever served; no message,
target or argument is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcp_providers.errors import UPSTREAM_ERROR, ProviderFailed, ReadTimeout, UpstreamError

FAILURES = ("upstream", "timeout", "crashed", "not started")
"""How a call can fail: its upstream failed (-32006), it missed its deadline (-32005), the provider
raised unexpectedly (-32603), or the provider never started (its ``lifespan`` failed)."""


def failure_of(exc: BaseException) -> str | None:
    """The :data:`FAILURES` kind of ``exc`` raised by a provider's call; ``None`` when the provider
    answered (a refusal is an answer). A cluster outage (-32010) is not the upstream's failure."""
    if isinstance(exc, ReadTimeout):
        return "timeout"
    if isinstance(exc, UpstreamError):
        return "upstream" if exc.code == UPSTREAM_ERROR else None
    if isinstance(exc, ProviderFailed):
        return "crashed"
    return None


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class _Provider:
    __slots__ = ("calls", "failing_since", "failures", "last_failure", "last_kind", "last_ok", "plugin")

    plugin: str
    calls: int
    failures: dict[str, int]
    last_ok: float | None
    last_failure: float | None
    last_kind: str | None
    failing_since: float | None

    def __init__(
        self,
        plugin: str,
        calls: int = 0,
        last_ok: float | None = None,
        last_failure: float | None = None,
        last_kind: str | None = None,
        failing_since: float | None = None,
    ) -> None:
        self.plugin = plugin
        self.calls = calls
        self.failures = dict.fromkeys(FAILURES, 0)
        self.last_ok = last_ok
        self.last_failure = last_failure
        self.last_kind = last_kind
        self.failing_since = failing_since


class UpstreamHealth:
    """Per provider: its calls, failures by kind, and when it last answered and last failed.

    :param clock: seconds since the epoch (tests give their own).
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._providers: dict[str, _Provider] = {}

    def ended(self, plugin: str, provider: str, failure: str | None) -> None:
        """Count one call of ``provider`` (of ``plugin``): answered (``failure`` ``None``) or failed
        in one of :data:`FAILURES`."""
        record = self._providers.get(provider)
        if record is None or record.plugin != plugin:
            record = self._providers[provider] = _Provider(plugin)
        record.calls += 1
        now = self._clock()
        if failure is None:
            record.last_ok, record.failing_since = now, None
            return
        record.failures[failure] += 1
        record.last_failure, record.last_kind = now, failure
        if record.failing_since is None:
            record.failing_since = now

    def snapshot(self) -> list[dict[str, Any]]:
        """One dict per provider, by name: ``provider``, ``plugin``, ``state`` (``answering``: its last
        call was answered; ``failing``: its last call failed), ``calls``, ``failures`` (kind -> count),
        ``last_ok``, ``last_failure``, ``failing_since`` (ISO 8601 UTC or ``None``) and
        ``last_failure_kind``."""
        return [
            {
                "provider": name,
                "plugin": r.plugin,
                "state": "failing" if r.failing_since is not None else "answering",
                "calls": r.calls,
                "failures": dict(r.failures),
                "last_ok": _iso(r.last_ok),
                "last_failure": _iso(r.last_failure),
                "last_failure_kind": r.last_kind,
                "failing_since": _iso(r.failing_since),
            }
            for name, r in sorted(self._providers.items())
        ]


def _iso(when: float | None) -> str | None:
    return None if when is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
