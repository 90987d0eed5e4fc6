"""The dispatcher of the stdio loop (:mod:`~mcp_providers._serve.transport.stdio_loop`): each request
read from the pipe handed to its handler task at once, each answer written to the pipe by its handler.

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
(without it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Final

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.dispatcher import (
    CallOptions,
    OnNotify,
    OnNotifyIntercept,
    OnRequest,
    coerce_request_id,
    run_notify_intercept,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import (
    cancelled_request_id_from_params,
    handler_exception_to_error_data,
    progress_token_from_params,
)
from mcp.shared.transport_context import TransportContext

from mcp_providers._serve.transport.stdio_context import Handlers, PendingRequest, RequestContext
from mcp_providers._serve.transport.stdio_framing import Session, json_line

log = logging.getLogger("mcp_providers.stdio")

PRE_REQUEST_FRAMES: Final = 8
"""Frames kept from before the client's first request (the SDK keeps as many); more are dropped."""


_CLOSED = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
_UNWRITABLE = types.ErrorData(code=types.INTERNAL_ERROR, message="internal error; the server log has the details")


def _error_answer(request_id: types.RequestId, error: types.ErrorData) -> dict[str, Any]:
    reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
    return reply.model_dump(by_alias=True, exclude_unset=True, mode="json")


class StdioDispatcher:
    """The SDK ``Dispatcher`` of one stdio connection, fed message by message from the read pipe.

    :meth:`accept` is called with each inbound message (synchronously, from the pipe's protocol)
    while :attr:`parked` is false; :meth:`end_of_input` when stdin closes. :meth:`opening` waits
    for the first request, which decides the era before :meth:`run` is called.
    """

    def __init__(self, writer: asyncio.StreamWriter, session: Session, resume: Callable[[], None]) -> None:
        self._writer = writer
        self._session = session
        self._resume = resume
        self.transport = TransportContext(kind="stdio", can_send_request=True)
        self.parked = False
        self._handlers: Handlers | None = None
        self._early: list[types.JSONRPCMessage] = []
        loop = asyncio.get_running_loop()
        self._opening: asyncio.Future[types.JSONRPCRequest | None] = loop.create_future()
        self._ended: asyncio.Future[None] = loop.create_future()
        self._in_flight: dict[types.RequestId, tuple[asyncio.Task[None], RequestContext]] = {}
        self._requests: dict[asyncio.Task[None], RequestContext] = {}
        """Every request's task, even one whose id a later request reused, until it is settled."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = loop
        self._pending: dict[types.RequestId, PendingRequest] = {}
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

    def _request(self, request: types.JSONRPCRequest, handlers: Handlers) -> None:
        context = RequestContext(self, request.id, progress_token_from_params(request.params))
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

    def _notification(self, message: types.JSONRPCNotification, handlers: Handlers) -> None:
        params = message.params
        if message.method == "notifications/cancelled":
            self._peer_cancel(params)
        elif message.method == "notifications/progress":
            self._progress(params)
        if run_notify_intercept(handlers.intercept, message.method, params):
            return
        self._spawn(self._notify_handler(handlers.on_notify, RequestContext(self, None), message.method, params))

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

    async def _handle(self, request: types.JSONRPCRequest, context: RequestContext, on_request: OnRequest) -> None:
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

    def _settle(self, context: RequestContext) -> None:
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
        on_notify: OnNotify, context: RequestContext, method: str, params: Mapping[str, Any] | None
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
            line = json_line(payload)
        except (TypeError, ValueError) as exc:  # pydantic_core's serialization error is a ValueError
            if not answer:
                raise anyio.BrokenResourceError from exc  # a notification: dropped, as for a closed pipe
            log.exception("the answer to %r cannot be written as JSON", payload.get("id"))
            payload = _error_answer(payload["id"], _UNWRITABLE)
            line = json_line(payload)
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
        pending = PendingRequest(asyncio.get_running_loop().create_future(), on_progress)
        self._pending[key] = pending
        try:
            outcome = await self._exchange(message, pending, opts)
        finally:
            self._pending.pop(key, None)
        if isinstance(outcome, types.ErrorData):
            raise MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
        return outcome

    async def _exchange(
        self, message: dict[str, Any], pending: PendingRequest, opts: CallOptions
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
        handlers = Handlers(on_request, on_notify, on_notify_intercept)
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
