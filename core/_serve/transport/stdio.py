"""MCP over stdin/stdout on asyncio pipes, for the SDK's ``Server.run``.

The SDK's :func:`mcp.server.stdio.stdio_server` reads stdin and writes stdout through
``anyio.wrap_file``: every line read and every message written is a hop to a worker thread and
back, plus two memory-stream hand-offs through relay tasks. Over a pipe that is most of the
server-side cost of a small read. :func:`stdio_server` here serves the same wire with the
process's pipes registered on the event loop (``loop.connect_read_pipe`` /
``connect_write_pipe``): a line is parsed in the task that receives it and a message is written by
the task that sends it, with no thread and no relay task.

What is kept from the SDK transport:

- the message types: items are :class:`~mcp.shared.message.SessionMessage` (or the ``Exception``
  a bad line raised, which the dispatcher reports), parsed with ``mcp_types.jsonrpc_message_adapter``
  and written as ``model_dump_json(by_alias=True, exclude_unset=True)`` plus ``"\\n"``;
- the stdout guarantee: while serving, fd 1 points at stderr and fd 0 at the null device, so a
  provider's stray ``print`` (or a child process inheriting the descriptors) never corrupts the
  protocol stream; the wire is served from private duplicates and both descriptors are restored
  on exit.

Where this transport cannot apply, :func:`stdio_server` falls back to the SDK's: on Windows, on
an event loop other than asyncio, and when stdin or stdout is a regular file (asyncio pipes need
a pipe, socket or character device).

Differences, both deliberate: blank lines are skipped instead of reported as parse errors, and a
line longer than ``max_line_bytes`` is dropped and reported as a ``ValueError`` item instead of
being buffered without bound.

Framing lines into messages is in :mod:`.stdio_framing`, claiming the process's descriptors in
:mod:`.stdio_fds`.

Example::

    from mcp_providers._serve.transport.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from mcp_providers._serve.transport.stdio_fds import _claimed_std_fds, _pipes_apply
from mcp_providers._serve.transport.stdio_framing import DEFAULT_MAX_LINE_BYTES, Framer, _Session


class PipeReadStream:
    """Inbound messages: one line of stdin parsed per :meth:`receive`, in the receiving task.

    Satisfies the SDK's ``ReadStream[SessionMessage | Exception]``. Lines are framed by
    :class:`Framer`; what is not a message is answered here and reading goes on. End of input ends
    iteration.
    """

    __slots__ = ("_answer", "_closed", "_framer", "_pending", "_reader")

    def __init__(
        self,
        reader: asyncio.StreamReader,
        limit: int,
        answer: Callable[[bytes], Awaitable[None]] | None = None,
        session: _Session | None = None,
    ) -> None:
        self._reader = reader
        self._framer = Framer(session or _Session(), limit)
        self._answer = answer
        self._pending: collections.deque[SessionMessage] = collections.deque()
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        """The next message (bad lines are answered here and skipped).

        :raises anyio.EndOfStream: stdin reached end of file.
        :raises anyio.ClosedResourceError: this stream was closed.
        """
        while not self._pending:
            if self._closed:
                raise anyio.ClosedResourceError
            line = await self._readline()
            if line == b"":
                raise anyio.EndOfStream
            messages, refusals = self._framer.frame(line)
            for refusal in refusals:
                if self._answer is not None:
                    await self._answer(refusal)
            self._pending.extend(SessionMessage(message) for message in messages)
        return self._pending.popleft()

    async def _readline(self) -> bytes | None:
        """The next line (``b""`` at end of input), or None for a line over the limit (discarded)."""
        too_long = False
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # end of input, maybe after an unterminated line
                return None if too_long and exc.partial else exc.partial
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)  # drop what is buffered; keep reading to the newline
                too_long = True
                continue
            return None if too_long else line

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class PipeWriteStream:
    """Outbound messages: each :meth:`send` serializes and writes one line in the sending task.

    Satisfies the SDK's ``WriteStream[SessionMessage]``. A pipe transport write is atomic per call,
    so concurrent senders never interleave lines; ``send`` waits only when the pipe is full. Answers
    to a batch's requests are held and written together as one array.
    """

    __slots__ = ("_closed", "_session", "_writer")

    def __init__(self, writer: asyncio.StreamWriter, session: _Session | None = None) -> None:
        self._writer = writer
        self._session = session or _Session()
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        """Write ``item`` as one JSON line (or hold it for its batch's array).

        :raises anyio.ClosedResourceError: this stream was closed.
        :raises anyio.BrokenResourceError: the reader of stdout went away.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and self._session.expects(message.id):
            data = self._session.collect(message.model_dump(by_alias=True, exclude_unset=True, mode="json"))
            if data is None:
                return
        else:
            data = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        if self._writer.transport.is_closing():
            raise anyio.BrokenResourceError
        self._writer.write(data)
        try:
            await self._writer.drain()  # returns at once unless the pipe is over its high-water mark
        except (ConnectionError, OSError) as exc:
            raise anyio.BrokenResourceError from exc

    async def send_raw(self, line: bytes) -> None:
        """Write one already-serialized JSON-RPC line (``line`` ends with ``\\n``)."""
        if self._closed or self._writer.transport.is_closing():
            return
        self._writer.write(line)
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.drain()

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def stdio_server(
    *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, stdout_fd: int | None = None
) -> AsyncIterator[tuple[PipeReadStream, PipeWriteStream]]:
    """Serve MCP over this process's stdin and stdout; yields ``(read_stream, write_stream)``.

    :param max_line_bytes: the longest inbound line kept, in bytes.
    :param stdout_fd: the wire's output when fd 1 was already moved aside by :func:`guarded_stdout`
        (the descriptor it yielded); default: fd 1, moved aside here.
    :raises RuntimeError: another :func:`stdio_server` of this module is already serving.

    Falls back to the SDK's :func:`mcp.server.stdio.stdio_server` (same streams contract) where
    asyncio pipes do not apply; see the module docstring.
    """
    if not _pipes_apply(1 if stdout_fd is None else stdout_fd):
        async with sdk_stdio(stdout_fd) as streams:
            yield streams  # the SDK's context streams satisfy the same protocols
        return
    loop = asyncio.get_running_loop()
    with _claimed_std_fds(stdout_fd) as (wire_in, wire_out):
        reader = asyncio.StreamReader(limit=max_line_bytes + 1)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
        )
        try:
            write_transport, write_protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
            )
        except BaseException:
            read_transport.close()
            raise
        writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
        try:
            session = _Session()
            write_stream = PipeWriteStream(writer, session)
            yield PipeReadStream(reader, max_line_bytes, write_stream.send_raw, session), write_stream
        finally:
            read_transport.close()
            # close() flushes what is buffered before closing; give it a bounded moment.
            writer.close()
            with contextlib.suppress(Exception), anyio.move_on_after(5, shield=True):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def sdk_stdio(stdout_fd: int | None) -> AsyncIterator[Any]:
    """The SDK's transport, writing to ``stdout_fd`` when fd 1 was moved aside already."""
    from mcp.server.stdio import stdio_server as sdk_stdio_server

    if stdout_fd is None:
        async with sdk_stdio_server() as streams:
            yield streams
        return
    stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(os.dup(0), "rb"), encoding="utf-8", errors="replace"))
    stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(os.dup(stdout_fd), "wb"), encoding="utf-8"))
    try:
        async with sdk_stdio_server(stdin, stdout) as streams:
            yield streams
    finally:
        await stdin.aclose()
        await stdout.aclose()
