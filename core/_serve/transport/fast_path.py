"""The fast path's call into the SDK's per-request kernel (:class:`mcp.server.runner.ServerRunner`):
the dispatch context of one exchange that has no stream (:class:`OneExchange`), the exit stack that
says whether anything was pushed on it (:class:`Watched`), and one request answered as a message
(:func:`respond`). ``transport/http_app.py`` drives them."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from pydantic import ValidationError

from mcp_providers._serve.transport.http_outcome import Answer, Answered, error_data


class Watched(contextlib.AsyncExitStack):
    """An exit stack that knows whether anything was pushed on it (``used``), through any of its
    public methods: a one-exchange connection with nothing to unwind skips the shielded unwind."""

    used = False

    def push(self, *args: Any, **kwargs: Any) -> Any:
        self.used = True
        return super().push(*args, **kwargs)

    def enter_context(self, *args: Any, **kwargs: Any) -> Any:
        self.used = True
        return super().enter_context(*args, **kwargs)

    def callback(self, *args: Any, **kwargs: Any) -> Any:
        self.used = True
        return super().callback(*args, **kwargs)

    async def enter_async_context(self, *args: Any, **kwargs: Any) -> Any:
        self.used = True
        return await super().enter_async_context(*args, **kwargs)

    def push_async_exit(self, *args: Any, **kwargs: Any) -> Any:
        self.used = True
        return super().push_async_exit(*args, **kwargs)

    def push_async_callback(self, *args: Any, **kwargs: Any) -> Any:
        self.used = True
        return super().push_async_callback(*args, **kwargs)


_REQUEST_MEMBERS = frozenset({"jsonrpc", "id", "method", "params"})


def message_of(value: Any) -> types.JSONRPCMessage:
    """``value`` (parsed JSON) as the SDK's ``jsonrpc_message_adapter`` validates it.

    A dict holding an ``id`` and no member but a request's is validated as a
    :class:`~mcp_types.JSONRPCRequest` first: when that succeeds the union picks it too (a
    response or an error needs ``result`` or ``error``; a notification sets one field fewer), at
    about half the instructions. Anything else, and a request that fails, goes to the union.

    :raises pydantic.ValidationError: ``value`` is no JSON-RPC message.
    """
    if type(value) is dict and "id" in value and value.keys() <= _REQUEST_MEMBERS:
        try:
            return types.JSONRPCRequest.model_validate(value, by_name=False)
        except ValidationError:
            pass
    return types.jsonrpc_message_adapter.validate_python(value, by_name=False)


@functools.cache
def _no_channel() -> Any:
    """The SDK's no-channel outbound (``from_envelope``'s default), read off a connection it made."""
    return Connection.from_envelope(DEFAULT_NEGOTIATED_VERSION, None, None).outbound


class Ready(anyio.Event):
    """An ``anyio.Event`` that is set from the start and stays set (``set`` changes nothing): the
    ``initialized`` of every fast-path connection, born ready as ``from_envelope`` makes it.

    It holds no state, so one instance serves every exchange, on any backend. ``anyio.Event()``
    asks which backend runs (``asyncio.current_task``: a ``getpid`` system call under Python 3.11)
    and makes that backend's event, each time (about 16k instructions per request)."""

    __slots__ = ()

    def __new__(cls) -> Ready:
        return object.__new__(cls)

    def set(self) -> None:
        return None  # set already, and never unset

    def is_set(self) -> bool:
        return True

    async def wait(self) -> None:
        await anyio.lowlevel.checkpoint()  # what a set anyio event's wait does: one checkpoint

    def statistics(self) -> anyio.EventStatistics:
        return anyio.EventStatistics(tasks_waiting=0)


READY = Ready()
"""The one :class:`Ready` event."""


def fresh_connection(version: str) -> Connection:
    """A born-ready connection for one exchange, as ``Connection.from_envelope(version, None, None)``
    makes it (no channel, initialized, no client info or capabilities), with a :class:`Watched`
    exit stack and :data:`READY` as ``initialized``.

    It is not made by the SDK's constructor, which would make an event and an exit stack to be
    replaced: each attribute that constructor sets is set here
    (``tests/test_fast_path_connection.py`` compares them with ``from_envelope``'s). Nor by
    ``from_envelope``, which validates the two absent envelope values, each a raised and caught
    ``ValidationError`` (about half of that call's instructions)."""
    connection = object.__new__(Connection)
    connection.outbound = _no_channel()
    connection.protocol_version = version
    connection.session_id = None
    connection.client_capabilities = None
    connection.client_params = None
    connection.initialized = READY
    connection.state = {}
    connection.exit_stack = Watched()
    return connection


def pushed(stack: contextlib.AsyncExitStack) -> bool:
    """Whether ``stack`` may hold callbacks: a :class:`Watched` one says; any other (replaced by a
    handler) is assumed to."""
    return not isinstance(stack, Watched) or stack.used


@dataclass(slots=True)
class OneExchange:
    """The dispatch context of one fast-path request (``mcp.shared.dispatcher.DispatchContext``)."""

    transport: TransportContext
    request_id: Any
    message_metadata: ServerMessageMetadata
    progress_token: Any = None
    can_send_request: bool = False
    _cancel: anyio.Event | None = None

    @property
    def cancel_requested(self) -> anyio.Event:
        """Never set (a JSON response has no cancellation channel); made on first use, as most
        requests never look."""
        if self._cancel is None:
            self._cancel = anyio.Event()
        return self._cancel

    async def send_raw_request(self, method: str, params: Any, opts: Any = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Any, opts: Any = None) -> None:
        return None  # JSON-response mode: nothing but the response has a wire

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


async def respond(runner: ServerRunner[Any], exchange: OneExchange, message: types.JSONRPCRequest) -> Answer:
    """Run one request through the SDK kernel; the JSON-RPC response (errors mapped as the SDK maps them,
    an unexpected exception as -32603 without its text)."""
    try:
        result = await runner.on_request(exchange, message.method, message.params)
    except Exception as exc:  # handler internals never reach the wire
        return types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error_data(exc, logged_as=message.method))
    return Answered(message.id, result)  # both valid already: the request's id, the runner's wire dict
