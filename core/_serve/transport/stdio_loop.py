"""MCP over stdin/stdout, dispatched straight from the pipe: the serving loop of ``serve`` over stdio.

The SDK serves a stream pair (``Server.run``) through three hand-offs per message: a relay task
that replays the opening request into the chosen protocol era, a memory stream into its
``JSONRPCDispatcher``, and a task group spawning the handler. Here the read pipe's protocol frames
each line as it arrives (:class:`~mcp_providers._serve.transport.stdio_framing.Framer`) and
:class:`StdioDispatcher` hands a request to its handler task at once; the handler writes its answer
to the pipe itself. What runs per request is the SDK's own kernel
(:class:`mcp.server.runner.ServerRunner` for 2025-era connections, :func:`mcp.server.runner.serve_one`
per request for 2026-07-28 ones), so handlers, middleware and result shaping are the ones every
other transport reaches.

The dispatcher (:class:`~mcp_providers._serve.transport.stdio_dispatch.StdioDispatcher`) implements
the SDK's ``Dispatcher`` protocol. stdin stops being read while :data:`UNREAD_ANSWERS_BYTES` of answers
wait for a client that does not read them, so such a client holds a bounded part of the server's memory.

The era is chosen as the SDK chooses it: by the first request, whose ``_meta`` carrying
``io.modelcontextprotocol/protocolVersion`` opens a 2026-07-28 connection; anything else (the
``initialize`` handshake) a 2025-era one. A later message of the other era is refused.
Not carried over: the SDK's OpenTelemetry span around server-to-client requests (the framework
serves without the tracing middleware by default).

Where asyncio pipes do not apply (Windows, an event loop other than asyncio, stdin or stdout a
regular file or a device that cannot be polled), :func:`serve_stdio` serves through the SDK's own
stdio transport (:func:`serve_sdk_stdio`, also chosen with ``MCP_PROVIDERS_STDIO=sdk``) and
``Server.run``, with the same stdout guard: fd 1 points at stderr and fd 0 at the null device
while serving (:mod:`~mcp_providers._serve.transport.stdio_fds`). On that path the SDK's behaviour
applies, not :class:`~mcp_providers._serve.transport.stdio_framing.Framer`'s:

- a line that is not a JSON-RPC message (a blank one too) is handed to the SDK session as an
  exception and never answered (here: a -32700/-32600 error line, with the request's id when it
  has a usable one; a blank line is skipped);
- there is no line limit: a line is buffered whole however long it is (here: one over
  ``max_line_bytes`` is discarded while read and answered -32600);
- JSON-RPC batches are not split (here: a 2025-03-26 session's batch is answered as one array);
- requests still running at end of input are ended unanswered (here: answered -32000,
  "Connection closed");
- each line read and each message written is a hop to a worker thread, and reading is not
  paused while answers wait unread.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Final

import anyio
import anyio.abc
import mcp_types as types
from mcp.server import Server
from mcp.server.connection import Connection, NotifyOnlyOutbound
from mcp.server.runner import ServerRunner, aclose_shielded, modern_error_data, serve_one
from mcp.server.stdio import stdio_server as sdk_stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.transport_context import TransportContext
from mcp_types.version import LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_providers._serve.transport.stdio_dispatch import StdioDispatcher
from mcp_providers._serve.transport.stdio_fds import claimed_std_fds, pipes_apply
from mcp_providers._serve.transport.stdio_framing import DEFAULT_MAX_LINE_BYTES, Framer, Session

log = logging.getLogger("mcp_providers.stdio")

QUEUED_LINES: Final = 256
"""Lines held while reading is parked before the pipe itself is paused (back-pressure on the client)."""

UNREAD_ANSWERS_BYTES: Final = 16 * 1024 * 1024
"""Answers the client has not read yet, in bytes (16 MiB), past which stdin is not read either: a
client that never reads stdout holds this much of the server's memory, not all it can make it write."""


class _WriteFlow(asyncio.streams.FlowControlMixin):
    """stdout's flow control, which also tells the reading side when answers pile up unread."""

    def __init__(self) -> None:
        super().__init__()
        self.full = False
        self.changed: Callable[[], None] = lambda: None

    def pause_writing(self) -> None:
        super().pause_writing()
        self.full = True
        self.changed()

    def resume_writing(self) -> None:
        super().resume_writing()
        self.full = False
        self.changed()


class _LineProtocol(asyncio.Protocol):
    """The read pipe's protocol: splits stdin into lines, frames them and feeds the dispatcher.

    Lines wait here while the dispatcher is parked (``initialize`` running, or the era not chosen
    yet); past :data:`QUEUED_LINES` waiting, or while stdout holds :data:`UNREAD_ANSWERS_BYTES`
    the client has not read, the pipe is paused.
    """

    def __init__(self, framer: Framer, limit: int) -> None:
        self._framer = framer
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0
        self._discarding = False
        self._lines: collections.deque[bytes | None] = collections.deque()
        self._messages: collections.deque[types.JSONRPCMessage] = collections.deque()
        self._ended = False
        self._paused = False
        self.dispatcher: StdioDispatcher | None = None
        self.transport: asyncio.ReadTransport | None = None
        self.stdout: _WriteFlow | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\n", self._scanned)) >= 0:
            too_long = self._discarding or end + 1 > self._limit + 1
            self._lines.append(None if too_long else bytes(self._buffer[: end + 1]))
            del self._buffer[: end + 1]
            self._scanned = 0
            self._discarding = False
        if len(self._buffer) > self._limit:  # a line over the limit: dropped now, answered at its end
            self._buffer.clear()
            self._discarding = True
        self._scanned = len(self._buffer)
        self.drain()

    def eof_received(self) -> bool:
        self._end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if self._ended:
            return
        if self._buffer or self._discarding:  # an unterminated last line is still a line
            self._lines.append(None if self._discarding else bytes(self._buffer))
            self._buffer.clear()
        self._ended = True
        self.drain()

    def drain(self) -> None:
        """Hand the dispatcher what it can take now; a failure costs one message, never the pipe."""
        dispatcher = self.dispatcher
        if dispatcher is None:
            return
        while not dispatcher.parked:
            if self._messages:
                message = self._messages.popleft()
                try:
                    dispatcher.accept(message)
                except Exception:
                    log.exception("dispatching %r failed", message)
                continue
            if not self._lines:
                break
            messages, refusals = self._framer.frame(self._lines.popleft())
            for refusal in refusals:
                dispatcher.refuse(refusal)
            self._messages.extend(messages)
        self._flow(dispatcher)

    def _flow(self, dispatcher: StdioDispatcher) -> None:
        waiting = len(self._lines) > QUEUED_LINES or (self.stdout is not None and self.stdout.full)
        if self.transport is not None and waiting != self._paused and not self._ended:
            (self.transport.pause_reading if waiting else self.transport.resume_reading)()
            self._paused = waiting
        if self._ended and not self._lines and not self._messages:
            dispatcher.end_of_input()


def _has_envelope(params: Mapping[str, Any] | None) -> bool:
    """Whether a request carries the 2026-07-28 per-request envelope (its protocol-version key)."""
    meta = (params or {}).get("_meta")
    return isinstance(meta, Mapping) and types.PROTOCOL_VERSION_META_KEY in meta


async def _serve_legacy(server: Server[Any], dispatcher: StdioDispatcher, state: Any) -> None:
    """A 2025-era connection: the ``initialize`` handshake, one SDK kernel for the connection."""
    connection = Connection.for_loop(dispatcher)
    runner = ServerRunner(server, connection, state, init_options=server.create_initialization_options())
    kernel = runner.on_request

    async def on_request(context: Any, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        if method != "initialize" and _has_envelope(params):
            raise MCPError(
                code=types.INVALID_REQUEST,
                message="this connection serves the handshake protocol era (2025); requests carrying the "
                "2026-07-28 envelope are not accepted on it",
            )
        return await kernel(context, method, params)

    try:
        await dispatcher.run(on_request, runner.on_notify)
    finally:
        await aclose_shielded(connection)


async def _serve_modern(server: Server[Any], dispatcher: StdioDispatcher, state: Any) -> None:
    """A 2026-07-28 connection: every request carries its own envelope; no server-to-client requests."""
    dispatcher.transport = TransportContext(kind="stdio", can_send_request=False)
    outbound = NotifyOnlyOutbound(dispatcher)

    async def on_request(context: Any, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        if method == "initialize":
            requested = (params or {}).get("protocolVersion")
            raise MCPError(
                code=types.UNSUPPORTED_PROTOCOL_VERSION,
                message="this connection serves the 2026-07-28 protocol; the initialize handshake is not accepted",
                data={"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested}
                if isinstance(requested, str)
                else {"supported": list(MODERN_PROTOCOL_VERSIONS)},
            )
        route = classify_inbound_request({"method": method, "params": params})
        if isinstance(route, InboundLadderRejection):
            raise MCPError(code=route.code, message=route.message, data=route.data)
        connection = Connection.from_envelope(
            route.protocol_version, route.client_info, route.client_capabilities, outbound=outbound
        )
        try:
            return await serve_one(server, context, method, params, connection=connection, lifespan_state=state)
        except (MCPError, ValidationError):
            raise
        except Exception as exc:
            error = modern_error_data(exc)
            raise MCPError(code=error.code, message=error.message, data=error.data) from exc

    async def on_notify(context: Any, method: str, params: Mapping[str, Any] | None) -> None:
        connection = Connection.from_envelope(LATEST_MODERN_VERSION, None, None, outbound=outbound)
        try:
            await ServerRunner(server, connection, state).on_notify(context, method, params)
        finally:
            await aclose_shielded(connection)

    await dispatcher.run(on_request, on_notify)


@contextlib.asynccontextmanager
async def _pipes(stdout_fd: int | None, max_line_bytes: int) -> AsyncIterator[StdioDispatcher]:
    """The process's stdin and stdout registered on the event loop, feeding one dispatcher."""
    loop = asyncio.get_running_loop()
    with claimed_std_fds(stdout_fd) as (wire_in, wire_out):
        session = Session()
        protocol = _LineProtocol(Framer(session, max_line_bytes), max_line_bytes)
        write_transport, write_protocol = await loop.connect_write_pipe(
            _WriteFlow, os.fdopen(wire_out, "wb", buffering=0)
        )
        write_transport.set_write_buffer_limits(high=UNREAD_ANSWERS_BYTES)
        write_protocol.changed = protocol.drain
        protocol.stdout = write_protocol
        writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
        dispatcher = StdioDispatcher(writer, session, protocol.drain)
        protocol.dispatcher = dispatcher
        try:
            read_transport, _ = await loop.connect_read_pipe(lambda: protocol, os.fdopen(wire_in, "rb", buffering=0))
        except BaseException:
            write_transport.close()
            raise
        try:
            yield dispatcher
        finally:
            read_transport.close()
            writer.close()  # flushes what is buffered first; given a bounded moment
            with contextlib.suppress(Exception), anyio.move_on_after(5, shield=True):
                await writer.wait_closed()


async def serve_stdio(
    server: Server[Any], *, stdout_fd: int | None = None, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin ends.

    :param stdout_fd: the wire's output when fd 1 was already moved aside by
        :func:`~mcp_providers._serve.transport.stdio_fds.guarded_stdout` (the descriptor it yielded).
    :param max_line_bytes: the longest inbound line kept, in bytes; a longer one is answered -32600.
    :raises RuntimeError: stdio is already being served in this process.

    Where asyncio pipes do not apply (Windows, trio, stdin or stdout a regular file), serves
    through :func:`serve_sdk_stdio` instead (the SDK's framing; ``max_line_bytes`` does not apply).
    """
    if not pipes_apply(1 if stdout_fd is None else stdout_fd):
        await serve_sdk_stdio(server, stdout_fd=stdout_fd)
        return
    async with _pipes(stdout_fd, max_line_bytes) as dispatcher, contextlib.AsyncExitStack() as stack:
        state = await _started(server, dispatcher, stack)
        opening = await dispatcher.opening()
        if opening is None:
            return
        if opening.method != "initialize" and _has_envelope(opening.params):
            await _serve_modern(server, dispatcher, state)
        else:
            await _serve_legacy(server, dispatcher, state)


async def _started(server: Server[Any], dispatcher: StdioDispatcher, stack: contextlib.AsyncExitStack) -> Any:
    """``server``'s lifespan entered on ``stack``, and its state; ``None`` when stdin ends before
    any request while it starts: a client that gave up (the spec's stdio shutdown begins by closing
    stdin) is not kept waiting for providers still on their way in, which are left at once."""
    async with anyio.create_task_group() as watching:

        async def stop_if_no_opening() -> None:
            if await dispatcher.opening() is None:
                entering.cancel()

        with anyio.CancelScope() as entering:
            watching.start_soon(stop_if_no_opening)
            state = await stack.enter_async_context(server.lifespan(server))
        watching.cancel_scope.cancel()
    return None if entering.cancelled_caught else state


async def serve_sdk_stdio(server: Server[Any], *, stdout_fd: int | None = None) -> None:
    """Serve ``server`` through the SDK's stdio transport and ``Server.run`` until stdin ends.

    :param stdout_fd: as for :func:`serve_stdio`; without it fd 1 is the wire.
    :raises RuntimeError: stdio is already being served in this process.

    The fallback of :func:`serve_stdio` (see the module docstring for how its framing differs).
    """
    async with _sdk_streams(stdout_fd) as (read, write):
        await server.run(read, write, server.create_initialization_options())


@contextlib.contextmanager
def _wire_fds(stdout_fd: int | None) -> Iterator[tuple[int, int]]:
    """``(stdin, stdout)`` descriptors of the wire: claimed (:func:`claimed_std_fds`), or on Windows,
    where fd 1 was moved aside by the caller already, duplicates of fd 0 and ``stdout_fd``."""
    if sys.platform == "win32":
        assert stdout_fd is not None  # the SDK serves the other case itself
        yield os.dup(0), os.dup(stdout_fd)
        return
    with claimed_std_fds(stdout_fd) as fds:
        yield fds


@contextlib.asynccontextmanager
async def _sdk_streams(stdout_fd: int | None) -> AsyncIterator[Any]:
    """The SDK's stdio streams over the wire, with fd 0 and fd 1 claimed as :func:`serve_stdio` claims them."""
    if sys.platform == "win32" and stdout_fd is None:  # no F_DUPFD_CLOEXEC: the SDK claims fd 0 and 1 its own way
        async with sdk_stdio_server() as streams:
            yield streams
        return
    with _wire_fds(stdout_fd) as (wire_in, wire_out):
        stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace"))
        stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8"))
        try:
            async with sdk_stdio_server(stdin, stdout) as streams:
                yield streams
        finally:
            with anyio.CancelScope(shield=True):
                await stdout.aclose()  # flushes what the SDK wrote last
                await stdin.aclose()
