"""What stands between a bearer token nobody has seen and a request to the identity provider.

Without it every made-up token costs one authenticated POST to the introspection endpoint, before
any rate limit (the limiter runs after the bearer gate): a flood of junk tokens turns this server
into a proxy hammering the identity provider with its own client credentials. In the order a
token not in the positive cache meets them:

1. **negative cache**: a token refused (inactive, or failing a check) is refused again from memory
   for ``introspection_negative_cache_seconds``, keyed by its SHA-256, never kept itself;
2. **one flight per token**: concurrent requests with one token wait for one question;
3. **a budget per client address**: at most ``introspection_per_client_per_minute`` questions a
   minute for the tokens of one address (the peer, or the ``X-Forwarded-For`` of a
   ``trusted_proxies`` peer); over it, 429 with ``Retry-After`` until the minute ends;
4. **a concurrency cap**: at most ``introspection_max_concurrent`` questions in flight; a question
   that waits longer than ``http_timeout_seconds`` for a slot is answered 503 with ``Retry-After``.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

import anyio
from mcp.server.auth.provider import AccessToken

from mcp_providers._serve.identity.errors import IdentityUnavailable, log

MAX_REMEMBERED = 10_000
"""Most refused tokens, and most client addresses, remembered (the oldest go first)."""
WINDOW_SECONDS = 60.0
"""The per-address budget's window."""

_client_address: ContextVar[str | None] = ContextVar("mcp_providers_client_address", default=None)


@contextlib.contextmanager
def asking_from(address: str | None) -> Iterator[None]:
    """Attribute the tokens verified in this block to the client ``address`` (``None``: unknown,
    no per-address budget applies)."""
    reset = _client_address.set(address)
    try:
        yield
    finally:
        _client_address.reset(reset)


class TooManyTokens(IdentityUnavailable):
    """A client address asked about more unknown tokens than its budget: answered 429."""

    status = 429


class _Flight:
    __slots__ = ("answer", "done", "error", "finished")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.answer: AccessToken | None = None
        self.error: BaseException | None = None
        self.finished = False


class IntrospectionGuard:
    """The guards of the module docstring, around one verifier's questions.

    :param negative_seconds: how long a refusal is remembered (0: not at all).
    :param max_concurrent: questions in flight at once, at most.
    :param per_client_per_minute: questions a minute for one client address (0: no budget).
    :param wait_seconds: longest wait for a free slot before answering 503.
    """

    def __init__(
        self,
        *,
        negative_seconds: float,
        max_concurrent: int,
        per_client_per_minute: int,
        wait_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.negative_seconds, self.per_client, self.wait_seconds = (
            negative_seconds,
            per_client_per_minute,
            wait_seconds,
        )
        self._clock = clock
        self._refused: OrderedDict[bytes, float] = OrderedDict()
        self._flights: dict[bytes, _Flight] = {}
        self._spent: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self.max_concurrent = max_concurrent
        self._slots = anyio.Semaphore(max_concurrent)

    async def answer(self, digest: bytes, ask: Callable[[], Awaitable[AccessToken | None]]) -> AccessToken | None:
        """What ``ask()`` answers for the token whose SHA-256 is ``digest``, behind the guards.

        :raises TooManyTokens: the client address spent its budget this minute.
        :raises IdentityUnavailable: no slot freed within ``wait_seconds``, or what ``ask`` raised.
        """
        until = self._refused.get(digest)
        if until is not None:
            if until > self._clock():
                return None
            del self._refused[digest]
        while (flight := self._flights.get(digest)) is not None:
            await flight.done.wait()
            if flight.error is not None:
                raise flight.error
            if flight.finished:
                return flight.answer
            # the leader was cancelled before it knew: ask again, perhaps as the leader
        mine = self._flights[digest] = _Flight()
        try:
            mine.answer = await self._ask(digest, ask)
            mine.finished = True
            return mine.answer
        except Exception as exc:
            mine.error = exc
            raise
        finally:
            del self._flights[digest]
            mine.done.set()

    async def _ask(self, digest: bytes, ask: Callable[[], Awaitable[AccessToken | None]]) -> AccessToken | None:
        self._spend(_client_address.get())
        with anyio.move_on_after(self.wait_seconds) as waited:
            await self._slots.acquire()
        if waited.cancelled_caught:
            log.error("introspection refused: %d questions already in flight", self.max_concurrent)
            raise IdentityUnavailable("the identity provider is busy; try again shortly", retry_after=self.wait_seconds)
        try:
            made = await ask()
        finally:
            self._slots.release()
        if made is None and self.negative_seconds > 0:
            self._refused[digest] = self._clock() + self.negative_seconds
            while len(self._refused) > MAX_REMEMBERED:
                self._refused.popitem(last=False)
        return made

    def _spend(self, address: str | None) -> None:
        if address is None or not self.per_client:
            return
        now = self._clock()
        start, count = self._spent.pop(address, (now, 0))
        if now - start >= WINDOW_SECONDS:
            start, count = now, 0
        self._spent[address] = (start, count + 1)
        while len(self._spent) > MAX_REMEMBERED:
            self._spent.popitem(last=False)
        if count >= self.per_client:
            wait = math.ceil(start + WINDOW_SECONDS - now)
            raise TooManyTokens(
                f"more than {self.per_client} unknown bearer tokens a minute from this address; try again in {wait} s",
                retry_after=wait,
            )
