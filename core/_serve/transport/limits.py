"""Slow and greedy HTTP clients: header, body and idle timeouts, and connections per client address.

uvicorn times out an idle keep-alive connection (``timeout_keep_alive``) but not a client that
sends its request headers a byte at a time, nor one that never finishes its body, and it admits
any number of connections from one address. :func:`run_uvicorn` serves an ASGI app with:

- :class:`LimitedH11Protocol`: a connection whose request headers are not complete within
  ``header_timeout`` seconds of its first byte (or of connecting) is closed, and a client address
  holding ``max_connections_per_client`` connections gets its next one closed at once;
- :class:`BodyDeadline`: a request body not received in full within ``body_timeout`` seconds
  is answered ``408`` and the connection closed;
- ``timeout_keep_alive``: an idle connection between requests is closed after ``idle_timeout``.
"""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from mcp_providers._serve.steps.deadline import deadline_after, within
from mcp_providers._serve.transport.shutdown import GRACE_SECONDS, GracefulServer

HEADER_TIMEOUT = 10.0
"""Seconds a client has to send its request headers (from connecting, or from its first byte)."""
BODY_TIMEOUT = 30.0
"""Seconds a client has to send a request body in full, from the first read of it."""
IDLE_TIMEOUT = 5
"""Seconds an idle keep-alive connection is kept open between requests (uvicorn's own timer)."""
MAX_CONNECTIONS_PER_CLIENT = 64
"""Open connections accepted from one client address; the next is closed at once."""


@dataclass
class Limits:
    header_timeout: float = HEADER_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    idle_timeout: int = IDLE_TIMEOUT
    max_connections_per_client: int = MAX_CONNECTIONS_PER_CLIENT


def limited_protocol(limits: Limits) -> type[H11Protocol]:
    """An h11 protocol class enforcing ``limits`` (its per-address counts are its own)."""
    open_per_client: Counter[str] = Counter()

    class LimitedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _counted: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            address = self.client[0] if self.client else None
            if address is not None:
                cap = limits.max_connections_per_client
                if cap and open_per_client[address] >= cap:  # 0: no limit (behind a proxy)
                    transport.close()
                    return
                open_per_client[address] += 1
                self._counted = address
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._counted is not None:
                open_per_client[self._counted] -= 1
                if open_per_client[self._counted] <= 0:
                    del open_per_client[self._counted]
                self._counted = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:
                self._arm()  # still waiting for headers: the timer from the first byte keeps running
            else:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._disarm()  # between requests uvicorn's keep-alive timer applies

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(limits.header_timeout, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return LimitedH11Protocol


class BodyDeadline:
    """ASGI middleware: a request body not complete within ``seconds`` is answered 408."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = {"deadline": None, "done": False, "late": False, "started": False}

        async def timed_receive() -> Message:
            if state["done"]:
                return await receive()
            if state["deadline"] is None:
                state["deadline"] = deadline_after(self.seconds)
            try:
                # A body the server has buffered already arrives without a timer (``within``).
                message = await within(receive(), state["deadline"])
            except TimeoutError:
                state["late"] = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                state["done"] = True
            return message

        async def watched_send(message: Message) -> None:
            if state["late"]:
                return  # the 408 below answers instead
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        try:
            await self.app(scope, timed_receive, watched_send)
        except Exception:
            if not state["late"]:
                raise
        if state["late"] and not state["started"]:
            await _request_timeout(send)


async def _request_timeout(send: Send) -> None:
    body = b"Request Timeout: the request body was not received in time"
    headers = [
        (b"content-type", b"text/plain"),
        (b"connection", b"close"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": 408, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def uvicorn_config(app: ASGIApp, host: str, port: int, limits: Limits | None = None, **extra: Any) -> Any:
    """A ``uvicorn.Config`` serving ``app`` with ``limits`` (defaults above)."""
    import uvicorn

    limits = limits or Limits()
    return uvicorn.Config(
        BodyDeadline(app, limits.body_timeout),
        host=host,
        port=port,
        log_level="warning",
        http=limited_protocol(limits),
        timeout_keep_alive=limits.idle_timeout,
        **extra,
    )


def run_uvicorn(
    app: ASGIApp,
    host: str,
    port: int,
    limits: Limits | None = None,
    *,
    fd: int | None = None,
    trusted_proxies: tuple[str, ...] = (),
    listening: Callable[[str, int], None] | None = None,
    ending: Callable[[], None] | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` with uvicorn and the limits of this module.

    :param fd: an inherited listening socket to serve on instead (a ``--workers`` worker).
    :param trusted_proxies: ``[server] trusted_proxies``: the only peers whose ``X-Forwarded-For``
        and ``X-Forwarded-Proto`` uvicorn believes (none by default, where uvicorn's own default
        would trust 127.0.0.1).
    :param listening: called with the bound host and port once the socket listens, before the
        first request is taken (port 0 gives the port the kernel chose).
    :param ending: called in the event loop on the first ``SIGTERM``/``SIGINT``, to end the
        streams that would hold the stop up (:mod:`.shutdown`); in-flight requests then get
        :data:`~.shutdown.GRACE_SECONDS`.
    :raises OSError: the address cannot be bound (in use, not this machine's); nothing was served.
    """
    extra: dict[str, Any] = {"fd": fd} if fd is not None else {}
    extra.update(proxy_headers_settings(trusted_proxies))
    config = uvicorn_config(app, host, port, limits, timeout_graceful_shutdown=GRACE_SECONDS, **extra)
    server = GracefulServer(config, ending)
    if fd is not None:
        server.run()
        return
    sock = _listen(host, port)
    if listening is not None:
        listening(host, sock.getsockname()[1])
    server.run(sockets=[sock])


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when ``host`` is one), as uvicorn would bind it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's default backlog
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def proxy_headers_settings(trusted_proxies: tuple[str, ...]) -> dict[str, Any]:
    """uvicorn's ``proxy_headers`` and ``forwarded_allow_ips`` for ``trusted_proxies``."""
    return {"proxy_headers": bool(trusted_proxies), "forwarded_allow_ips": list(trusted_proxies) or ""}
