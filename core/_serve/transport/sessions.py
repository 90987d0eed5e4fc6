"""How many 2025-era sessions one caller may hold open, and how fast it may open them.

The SDK's session manager caps the sessions of the whole server (``max_sessions``, 10,000), not
those of one caller, and ``initialize`` reaches no ``[server.limits]`` budget (the SDK answers it
before the pipeline): one authenticated subject filled the table in about 20 s, and every other
2025-era client was answered 503 until the sessions idled out (round 4 item 4). Here, before a
POST that would open a session reaches the SDK:

- a caller (``Principal.key``: issuer and subject) holding ``sessions`` open sessions is refused;
- with ``[server.limits]``, a caller that opened ``sessions_opened`` sessions within the last
  ``window_seconds`` is refused;

both with HTTP 429, JSON-RPC -32009 (``data.retryAfter``) and ``Retry-After``. The cap applies to
authenticated callers with or without ``[server.limits]`` (its default); anonymous callers, who
cannot be told apart, share one quota, and only under ``[server.limits]``.

A session is counted from the response that hands out its ``Mcp-Session-Id`` until the SDK's
manager no longer holds it (``DELETE``, idle timeout, server end).
"""

from __future__ import annotations

import collections
import contextlib
import math
import time
from collections.abc import Callable, Iterator

import mcp_types as types
from starlette.types import Message, Scope, Send

from mcp_providers.config import LimitsSettings
from mcp_providers.errors import RATE_LIMITED
from mcp_providers.identity import UnreadableIdentity, user_principal

_DEFAULTS = LimitsSettings()
SWEEP_AT = 1024
"""How many callers' openings are kept before the expired ones are swept out."""
Key = tuple[str, str]


def caller_key(scope: Scope) -> Key | None:
    """The ``Principal.key`` of the request's verified caller (set by the bearer gate), ``None``
    for an anonymous one or one whose identity cannot be read."""
    try:
        principal = user_principal(scope.get("user"))
    except UnreadableIdentity:  # refused by the pipeline (and before it by mount()): counted as anonymous
        return None
    return None if principal is None else principal.key


class SessionQuota:
    """The per-caller session quota of one HTTP app (see the module docstring).

    :param held: whether the SDK's manager still holds a session id (it has no public view).
    :param settings: ``[server.limits]``, or ``None`` (then only the cap on authenticated callers,
        at its default).
    :param clock: monotonic seconds.
    """

    def __init__(
        self,
        held: Callable[[str], bool],
        settings: LimitsSettings | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._held = held
        self._settings = settings
        self._clock = clock
        self._open: dict[Key | None, set[str]] = {}
        self._opened: dict[Key | None, collections.deque[float]] = {}
        self._sweep_at = SWEEP_AT
        self._pending: collections.Counter[Key | None] = collections.Counter()
        """Opening requests admitted and not yet answered, per caller: they count as sessions, so
        concurrent ``initialize`` requests cannot all pass one check before any is recorded."""

    def refusal(self, scope: Scope) -> types.ErrorData | None:
        """The -32009 error (``data.retryAfter`` in seconds) refusing a request that would open a
        session, else ``None``."""
        key = caller_key(scope)
        if key is None and self._settings is None:
            return None
        cap = (self._settings or _DEFAULTS).sessions
        if len(self._live(key)) + self._pending[key] >= cap:
            return _refused(f"this caller holds {cap} open sessions, the most [server.limits] sessions allows; "
                            "end one (DELETE with its Mcp-Session-Id) or reuse one", 60)  # fmt: skip
        if self._settings is None:
            return None
        window, most = self._settings.window_seconds, self._settings.sessions_opened
        now = self._clock()
        opened = self._opened.get(key)
        while opened and opened[0] <= now - window:
            opened.popleft()
        if (len(opened) if opened else 0) + self._pending[key] >= most:
            wait = max(1, math.ceil(opened[0] + window - now)) if opened else window
            return _refused(f"this caller opened {most} sessions in the last {window} s, the most "
                            f"[server.limits] sessions_opened allows; retry in {wait} s", wait)  # fmt: skip
        return None

    @contextlib.contextmanager
    def opening(self, scope: Scope, send: Send) -> Iterator[Send]:
        """While the admitted opening request is served: it counts as one of its caller's sessions,
        and the ``send`` given records the session its response hands out (its ``Mcp-Session-Id``)."""
        key = caller_key(scope)
        if key is None and self._settings is None:
            yield send
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id":
                        self._record(key, value.decode("latin-1"))
            await send(message)

        self._pending[key] += 1
        try:
            yield sending
        finally:
            self._pending[key] -= 1
            if not self._pending[key]:
                del self._pending[key]

    def _record(self, key: Key | None, session: str) -> None:
        if len(self._open) + len(self._opened) >= self._sweep_at:
            self._sweep()
        self._open.setdefault(key, set()).add(session)
        if self._settings is not None:
            self._opened.setdefault(key, collections.deque()).append(self._clock())

    def _sweep(self) -> None:
        """Forget ended sessions, openings older than a window, and the callers left with neither
        (a caller who never comes back holds no memory); amortized, the next sweep waits until the
        callers kept have doubled."""
        oldest = self._clock() - (self._settings or _DEFAULTS).window_seconds
        for key in list(self._opened):
            opened = self._opened[key]
            while opened and opened[0] <= oldest:
                opened.popleft()
            if not opened:
                del self._opened[key]
        for key in list(self._open):
            self._live(key)
        self._sweep_at = max(SWEEP_AT, 2 * (len(self._open) + len(self._opened)))

    def _live(self, key: Key | None) -> set[str]:
        """The caller's sessions the SDK still holds (the others are forgotten now)."""
        sessions = self._open.setdefault(key, set())
        sessions.difference_update([s for s in sessions if not self._held(s)])
        if not sessions and not self._opened.get(key):
            del self._open[key]  # a caller without sessions holds no memory here
        return sessions


def _refused(message: str, retry_after: int) -> types.ErrorData:
    return types.ErrorData(code=RATE_LIMITED, message=message, data={"retryAfter": retry_after})
