"""MCP over stdin/stdout, dispatched straight from the pipe: the serving loop of ``serve`` over stdio.

The SDK serves a stream pair (``Server.run``) through three hand-offs per message: a relay task
that replays the opening request into the chosen protocol era, a memory stream into its
``JSONRPCDispatcher``, and a task group spawning the handler. Here the read pipe's protocol frames
each line as it arrives (:class:`~mcp_providers._serve.transport.stdio.Framer`, the same rules as the
stream transport) and :class:`StdioDispatcher` hands a request to its handler task at once; the
handler writes its answer to the pipe itself. What runs per request is the SDK's own kernel
(:class:`mcp.server.runner.ServerRunner` for 2025-era connections, :func:`mcp.server.runner.serve_one`
per request for 2026-07-28 ones), so handlers, middleware and result shaping are the ones every
other transport reaches.

:class:`StdioDispatcher` implements the SDK's ``Dispatcher`` protocol
(``mcp.shared.dispatcher``) with the behaviour of its ``JSONRPCDispatcher``:

- requests run concurrently, each in its own task; ``initialize`` runs with reading parked, so a
  request pipelined behind it sees the initialized connection;
- ``notifications/cancelled`` interrupts the named request, which is then never answered;
  ``notifications/progress`` reaches the waiter of the server's own request;
- server-to-client requests (2025 era only: sampling, elicitation, roots, ping) are correlated by
  id, with ``timeout``, ``on_progress`` and a courtesy ``notifications/cancelled`` when abandoned
  (2026-07-28 tools ask in input rounds instead: ``_serve.methods.rounds``);
- a handler's exception becomes its JSON-RPC error (``MCPError`` as is, a pydantic
  ``ValidationError`` as -32602, anything else logged and answered with code 0, as the SDK does);
- at end of input, requests still running are cancelled and answered -32000 ("Connection closed"),
  and waiters of the server's own requests get the same error.

Beyond it: a cancelled request inside a 2025-03-26 batch leaves the rest of the batch answered
(without it), and stdin stops being read while :data:`UNREAD_ANSWERS_BYTES` of answers wait for a
client that does not read them, so such a client holds a bounded part of the server's memory.

The era is chosen as the SDK chooses it: by the first request, whose ``_meta`` carrying
``io.modelcontextprotocol/protocolVersion`` opens a 2026-07-28 connection; anything else (the
``initialize`` handshake) a 2025-era one. A later message of the other era is refused.
Not carried over: the SDK's OpenTelemetry span around server-to-client requests (the framework
serves without the tracing middleware by default).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.abc
import mcp_types as types
from mcp.server import Server
from mcp.server.connection import Connection, NotifyOnlyOutbound
from mcp.server.runner import ServerRunner, aclose_shielded, modern_error_data, serve_one
from mcp.shared.dispatcher import (
    CallOptions,
    OnNotify,
    OnNotifyIntercept,
    OnRequest,
    ProgressFnT,
    coerce_request_id,
    run_notify_intercept,
)
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.jsonrpc_dispatcher import (
    cancelled_request_id_from_params,
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.transport_context import TransportContext
from mcp_types.version import LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_providers._serve.transport.stdio import (
    DEFAULT_MAX_LINE_BYTES,
    Framer,
    _claimed_std_fds,
    _line,
    _pipes_apply,
    _Session,
    stdio_server,
)

log = logging.getLogger("mcp_providers.stdio")

PRE_REQUEST_FRAMES: Final = 8
"""Frames kept from before the client's first request (the SDK keeps as many); more are dropped."""

QUEUED_LINES: Final = 256
"""Lines held while reading is parked before the pipe itself is paused (back-pressure on the client)."""

UNREAD_ANSWERS_BYTES: Final = 16 * 1024 * 1024
"""Answers the client has not read yet, in bytes (16 MiB), past which stdin is not read either: a
client that never reads stdout holds this much of the server's memory, not all it can make it write."""

_CLOSED = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
_UNWRITABLE = types.ErrorData(code=types.INTERNAL_ERROR, message="internal error; the server log has the details")


def _error_answer(request_id: types.RequestId, error: types.ErrorData) -> dict[str, Any]:
    reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
    return reply.model_dump(by_alias=True, exclude_unset=True, mode="json")


class _Context:
    """The ``DispatchContext`` of one inbound message: its id, progress token and way back."""

    __slots__ = (
        "_cancel",
        "_closed",
        "_dispatcher",
        "_progress_token",
        "answered",
        "inline",
        "peer_cancelled",
        "request_id",
        "settled",
        "task",
        "transport",
    )

    message_metadata = None  # stdio attaches no transport metadata to a message

    def __init__(
        self, dispatcher: StdioDispatcher, request_id: types.RequestId | None, progress_token: Any = None
    ) -> None:
        self._dispatcher = dispatcher
        self.request_id = request_id
        self.transport = dispatcher.transport
        self._progress_token = progress_token
        self._cancel: anyio.Event | None = None
        self._closed = False
        self.peer_cancelled = False
        self.answered = False
        self.settled = False
        self.inline = False
        """``initialize``: reading is parked until it is settled."""
        self.task: asyncio.Task[None] | None = None

    @property
    def cancel_requested(self) -> anyio.Event:
        """Set when the client cancels this request (made on first use: most requests never look)."""
        if self._cancel is None:
            self._cancel = anyio.Event()
            if self.peer_cancelled:
                self._cancel.set()
        return self._cancel

    @property
    def can_send_request(self) -> bool:
        return self.transport.can_send_request and not self._closed

    def cancelled_by_peer(self) -> None:
        self.peer_cancelled = True
        if self._cancel is not None:
            self._cancel.set()

    def close(self) -> None:
        self._closed = True

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        if self._closed:
            log.debug("dropped %s: request already answered", method)
            return
        await self._dispatcher.notify(method, params, opts)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        if not self.can_send_request:
            raise NoBackChannelError(method)
        return await self._dispatcher.send_raw_request(method, params, opts)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self._progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self._progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)


@dataclass(slots=True)
class _Pending:
    """A server-to-client request waiting for the client's answer."""

    answer: asyncio.Future[dict[str, Any] | types.ErrorData]
    on_progress: ProgressFnT | None


@dataclass(slots=True)
class _Handlers:
    on_request: OnRequest
    on_notify: OnNotify
    intercept: OnNotifyIntercept | None


class StdioDispatcher:
    """The SDK ``Dispatcher`` of one stdio connection, fed message by message from the read pipe.

    :meth:`accept` is called with each inbound message (synchronously, from the pipe's protocol)
    while :attr:`parked` is false; :meth:`end_of_input` when stdin closes. :meth:`opening` waits
    for the first request, which decides the era before :meth:`run` is called.
    """

    def __init__(self, writer: asyncio.StreamWriter, session: _Session, resume: Callable[[], None]) -> None:
        self._writer = writer
        self._session = session
        self._resume = resume
        self.transport = TransportContext(kind="stdio", can_send_request=True)
        self.parked = False
        self._handlers: _Handlers | None = None
        self._early: list[types.JSONRPCMessage] = []
        loop = asyncio.get_running_loop()
        self._opening: asyncio.Future[types.JSONRPCRequest | None] = loop.create_future()
        self._ended: asyncio.Future[None] = loop.create_future()
        self._in_flight: dict[types.RequestId, tuple[asyncio.Task[None], _Context]] = {}
        self._requests: dict[asyncio.Task[None], _Context] = {}
        """Every request's task, even one whose id a later request reused, until it is settled."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = loop
        self._pending: dict[types.RequestId, _Pending] = {}
        self._next_id = 0
        self._closed = False

    # -- inbound, from the pipe ----------------------------------------------------------------

    async def opening(self) -> types.JSONRPCRequest | None:
        """The client's first request (``None`` if input ends before one)."""
        return await self._opening

    def accept(self, message: types.JSONRPCMessage) -> None:
        """Take one inbound message: dispatched now, or held until :meth:`run` starts."""
        if self._handlers is None:
            self._hold(message)
            return
        if isinstance(message, types.JSONRPCRequest):
            self._request(message, self._handlers)
        elif isinstance(message, types.JSONRPCNotification):
            self._notification(message, self._handlers)
        elif isinstance(message, types.JSONRPCResponse):
            self._resolve(message.id, message.result)
        else:
            self._resolve(message.id, message.error)

    def refuse(self, line: bytes) -> None:
        """Write the error answering a line that was not a message (see :class:`Framer`)."""
        transport = self._writer.transport
        if not transport.is_closing():
            transport.write(line)

    def _hold(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._early.append(message)
            self.parked = True  # until run() has the handlers of the era this request opens
            if not self._opening.done():
                self._opening.set_result(message)
        elif len(self._early) < PRE_REQUEST_FRAMES:
            self._early.append(message)
        else:
            log.debug("dropped a frame received before the first request: %r", message)

    def end_of_input(self) -> None:
        """stdin closed: stop waiting for an opening request and end :meth:`run`."""
        if not self._opening.done():
            self._opening.set_result(None)
        if not self._ended.done():
            self._ended.set_result(None)

    def _request(self, request: types.JSONRPCRequest, handlers: _Handlers) -> None:
        context = _Context(self, request.id, progress_token_from_params(request.params))
        context.inline = request.method == "initialize"
        if context.inline:
            self.parked = True  # the next message waits for the negotiated connection
        # Settled at the end of its own body (no done callback: a loop turn less per request); a
        # task cancelled before its first step never runs it, so whoever cancels settles it.
        # initialize resumes reading, which dispatches what waited: from a done callback, so those
        # requests start in the loop's context, not in a copy of initialize's.
        context.task = task = self._loop.create_task(self._handle(request, context, handlers.on_request))
        self._requests[task] = context
        self._in_flight[coerce_request_id(request.id)] = (task, context)
        if context.inline:
            task.add_done_callback(lambda _: self._settle(context))

    def _notification(self, message: types.JSONRPCNotification, handlers: _Handlers) -> None:
        params = message.params
        if message.method == "notifications/cancelled":
            self._peer_cancel(params)
        elif message.method == "notifications/progress":
            self._progress(params)
        if run_notify_intercept(handlers.intercept, message.method, params):
            return
        self._spawn(self._notify_handler(handlers.on_notify, _Context(self, None), message.method, params))

    def _peer_cancel(self, params: Mapping[str, Any] | None) -> None:
        request_id = cancelled_request_id_from_params(params)
        entry = self._in_flight.get(coerce_request_id(request_id)) if request_id is not None else None
        if entry is not None:
            task, context = entry
            context.cancelled_by_peer()
            task.cancel()
            task.add_done_callback(lambda _: self._settle(context))

    def _progress(self, params: Mapping[str, Any] | None) -> None:
        params = params or {}
        match params:
            case {"progressToken": str() | int() as token, "progress": int() | float() as progress} if (
                not isinstance(token, bool)
                and not isinstance(progress, bool)
                and (pending := self._pending.get(coerce_request_id(token))) is not None
                and pending.on_progress is not None
            ):
                total, note = params.get("total"), params.get("message")
                self._spawn(
                    _contained(
                        pending.on_progress(
                            float(progress),
                            float(total) if isinstance(total, int | float) else None,
                            note if isinstance(note, str) else None,
                        ),
                        "progress callback",
                    )
                )
            case _:
                pass

    def _resolve(self, request_id: types.RequestId | None, outcome: dict[str, Any] | types.ErrorData) -> None:
        pending = self._pending.get(coerce_request_id(request_id)) if request_id is not None else None
        if pending is None or pending.answer.done():
            log.debug("dropping an answer to unknown or settled request id %r", request_id)
            return
        pending.answer.set_result(outcome)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- handling ------------------------------------------------------------------------------

    async def _handle(self, request: types.JSONRPCRequest, context: _Context, on_request: OnRequest) -> None:
        """Run one request and write its answer (none when the client cancelled it)."""
        try:
            result = await on_request(context, request.method, request.params)
            if not context.peer_cancelled:
                context.answered = True
                await self._send({"jsonrpc": "2.0", "id": request.id, "result": result})
        except asyncio.CancelledError:
            if context.peer_cancelled:
                return  # the client withdrew it: it is never answered
            raise  # shutting down: _settle answers it
        except Exception as exc:
            if not context.peer_cancelled:
                context.answered = True
                await self._send(_error_answer(request.id, self._error_of(request.method, exc)))
        finally:
            if not context.inline:
                self._settle(context)

    def _settle(self, context: _Context) -> None:
        """A request is over, whether or not its body ever ran (called once; later calls do nothing)."""
        if context.settled:
            return
        context.settled = True
        self._requests.pop(context.task, None)  # type: ignore[arg-type]  # a request's context has its task
        context.close()
        request_id = context.request_id
        key = coerce_request_id(request_id)  # type: ignore[arg-type]  # a request's context has its id
        if (entry := self._in_flight.get(key)) is not None and entry[1] is context:
            del self._in_flight[key]
        if not context.answered:
            with contextlib.suppress(anyio.BrokenResourceError):
                if context.peer_cancelled:  # never answered; a batch it was in must not wait for it
                    if (line := self._session.settle(request_id)) is not None:
                        self._write(line)
                else:  # cancelled at shutdown, perhaps before it ran
                    self._emit(_error_answer(request_id, _CLOSED))  # type: ignore[arg-type]
        if context.inline:
            self.parked = False
            self._resume()

    @staticmethod
    def _error_of(method: str, exc: Exception) -> types.ErrorData:
        error = handler_exception_to_error_data(exc)
        if error is None:
            log.exception("handler for %r raised", method)
            error = types.ErrorData(code=0, message=str(exc))  # the SDK dispatcher's answer, kept for its clients
        return error

    @staticmethod
    async def _notify_handler(
        on_notify: OnNotify, context: _Context, method: str, params: Mapping[str, Any] | None
    ) -> None:
        await _contained(on_notify(context, method, params), f"notification handler for {method!r}")

    # -- outbound ------------------------------------------------------------------------------

    def _emit(self, payload: dict[str, Any]) -> None:
        """Write one message now (answers a batch or ``initialize`` expects go through the session).

        An answer that cannot be written as JSON is answered -32603 instead (and logged): it costs
        that request, never the batch it is in nor the connection.
        """
        answer = "result" in payload or "error" in payload
        try:
            line = _line(payload)
        except (TypeError, ValueError) as exc:  # pydantic_core's serialization error is a ValueError
            if not answer:
                raise anyio.BrokenResourceError from exc  # a notification: dropped, as for a closed pipe
            log.exception("the answer to %r cannot be written as JSON", payload.get("id"))
            payload = _error_answer(payload["id"], _UNWRITABLE)
            line = _line(payload)
        if answer and self._session.expects(payload["id"]):
            batched = self._session.collect(payload)
            if batched is None:
                return
            line = batched
        self._write(line)

    def _write(self, line: bytes) -> None:
        transport = self._writer.transport
        if transport.is_closing():
            raise anyio.BrokenResourceError
        transport.write(line)

    async def _send(self, payload: dict[str, Any]) -> None:
        """Write an answer or a notification; a client that stopped reading costs only this message."""
        try:
            self._emit(payload)
            await self._writer.drain()  # returns at once unless the pipe is over its high-water mark
        except (anyio.BrokenResourceError, ConnectionError, OSError):
            log.debug("dropped %s: stdout is closed", payload.get("method") or f"the answer to {payload.get('id')!r}")

    async def notify(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
        *,
        _related_request_id: types.RequestId | None = None,
    ) -> None:
        """Send a notification to the client (dropped once the connection is closed)."""
        if self._closed:
            log.debug("dropped %s: connection closed", method)
            return
        payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            payload["params"] = dict(params)
        await self._send(payload)

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
        *,
        _related_request_id: types.RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request to the client and wait for its answer.

        :raises MCPError: the client answered with an error; ``REQUEST_TIMEOUT`` when
            ``opts["timeout"]`` (seconds) passed first; ``CONNECTION_CLOSED`` when the connection closed.
        :raises ValueError: ``opts["request_id"]`` is already in flight.
        """
        if self._closed:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        opts = opts or {}
        request_id, key = self._outbound_id(opts.get("request_id"))
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        out_params = dict(params) if params is not None else {}
        on_progress = opts.get("on_progress")
        if on_progress is not None:  # the request id doubles as its progress token
            out_params["_meta"] = {**(out_params.get("_meta") or {}), "progressToken": request_id}
        if out_params:
            message["params"] = out_params
        pending = _Pending(asyncio.get_running_loop().create_future(), on_progress)
        self._pending[key] = pending
        try:
            outcome = await self._exchange(message, pending, opts)
        finally:
            self._pending.pop(key, None)
        if isinstance(outcome, types.ErrorData):
            raise MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
        return outcome

    async def _exchange(
        self, message: dict[str, Any], pending: _Pending, opts: CallOptions
    ) -> dict[str, Any] | types.ErrorData:
        request_id, method = message["id"], message["method"]
        try:
            self._emit(message)
        except anyio.BrokenResourceError:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
        abandon = opts.get("cancel_on_abandon", True)
        try:
            await self._writer.drain()
            with anyio.fail_after(opts.get("timeout")):
                return await pending.answer
        except TimeoutError:
            if abandon:
                await self.notify("notifications/cancelled", {"requestId": request_id, "reason": "timed out"})
            raise MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
        except asyncio.CancelledError:
            if abandon and not self._closed:
                with contextlib.suppress(anyio.BrokenResourceError):
                    payload = {"requestId": request_id, "reason": "caller cancelled"}
                    self._emit({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": payload})
            raise

    def _outbound_id(self, supplied: types.RequestId | None) -> tuple[types.RequestId, types.RequestId]:
        if supplied is not None:
            key = coerce_request_id(supplied)
            if key in self._pending:
                raise ValueError(f"request id {supplied!r} is already in flight")
            return supplied, key
        self._next_id += 1
        while self._next_id in self._pending:
            self._next_id += 1
        return self._next_id, self._next_id

    # -- the loop ------------------------------------------------------------------------------

    async def run(
        self,
        on_request: OnRequest,
        on_notify: OnNotify,
        on_notify_intercept: OnNotifyIntercept | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Dispatch until stdin ends; then cancel what is still running (answered -32000)."""
        handlers = _Handlers(on_request, on_notify, on_notify_intercept)
        self._handlers = handlers
        task_status.started()
        try:
            early, self._early = self._early, []
            self.parked = False
            for message in early:
                self.accept(message)
            if not self.parked:
                self._resume()
            await self._ended
        finally:
            await self._close()

    async def _close(self) -> None:
        self._closed = True
        for pending in self._pending.values():
            if not pending.answer.done():
                pending.answer.set_result(_CLOSED)
        requests = list(self._requests.items())
        running = [*self._tasks, *(task for task, _ in requests)]
        for task in running:
            task.cancel()
        if running:
            with anyio.CancelScope(shield=True):
                await asyncio.gather(*running, return_exceptions=True)
        for _, context in requests:  # those cancelled before their first step never ran their body
            self._settle(context)


async def _contained(work: Awaitable[None], what: str) -> None:
    """Run a callback the client triggered; its failure is logged, never the connection's."""
    try:
        await work
    except Exception:
        log.exception("%s raised", what)


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
    with _claimed_std_fds(stdout_fd) as (wire_in, wire_out):
        session = _Session()
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
        :func:`~mcp_providers._serve.transport.stdio.guarded_stdout` (the descriptor it yielded).
    :param max_line_bytes: the longest inbound line kept, in bytes; a longer one is answered -32600.
    :raises RuntimeError: stdio is already being served in this process.

    Where asyncio pipes do not apply (Windows, trio, stdin or stdout a regular file), serves
    through :func:`~mcp_providers._serve.transport.stdio.stdio_server` and ``Server.run`` instead.
    """
    if not _pipes_apply(1 if stdout_fd is None else stdout_fd):
        async with stdio_server(stdout_fd=stdout_fd, max_line_bytes=max_line_bytes) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    async with _pipes(stdout_fd, max_line_bytes) as dispatcher, server.lifespan(server) as state:
        opening = await dispatcher.opening()
        if opening is None:
            return
        if opening.method != "initialize" and _has_envelope(opening.params):
            await _serve_modern(server, dispatcher, state)
        else:
            await _serve_legacy(server, dispatcher, state)
