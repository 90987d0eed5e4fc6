"""What the stdio dispatcher (:mod:`~mcp_providers._serve.transport.stdio_dispatch`) keeps per message:
the SDK's ``DispatchContext`` of an inbound request, a server-to-client request awaiting its answer,
and the handlers of a connection."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.dispatcher import (
    CallOptions,
    OnNotify,
    OnNotifyIntercept,
    OnRequest,
    Outbound,
    ProgressFnT,
)
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.transport_context import TransportContext

log = logging.getLogger("mcp_providers.stdio")


class _Dispatcher(Outbound, Protocol):
    """What a context needs of its dispatcher (:class:`~.stdio_dispatch.StdioDispatcher`), named here
    so that this module need not import that one."""

    transport: TransportContext


class RequestContext:
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

    def __init__(self, dispatcher: _Dispatcher, request_id: types.RequestId | None, progress_token: Any = None) -> None:
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


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class PendingRequest:
    """A server-to-client request waiting for the client's answer."""

    __slots__ = ("answer", "on_progress")

    answer: asyncio.Future[dict[str, Any] | types.ErrorData]
    on_progress: ProgressFnT | None

    def __init__(
        self, answer: asyncio.Future[dict[str, Any] | types.ErrorData], on_progress: ProgressFnT | None
    ) -> None:
        self.answer = answer
        self.on_progress = on_progress


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Handlers:
    __slots__ = ("intercept", "on_notify", "on_request")

    on_request: OnRequest
    on_notify: OnNotify
    intercept: OnNotifyIntercept | None

    def __init__(self, on_request: OnRequest, on_notify: OnNotify, intercept: OnNotifyIntercept | None) -> None:
        self.on_request = on_request
        self.on_notify = on_notify
        self.intercept = intercept
