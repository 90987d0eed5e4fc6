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

Example::

    from mcp_providers._serve.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Final, Self

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

DEFAULT_MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""The longest JSON-RPC line accepted, in bytes (64 MiB); longer lines are dropped and reported."""

_claim_lock = threading.Lock()
_claimed = False


class PipeReadStream:
    """Inbound messages: one line of stdin parsed per :meth:`receive`, in the receiving task.

    Satisfies the SDK's ``ReadStream[SessionMessage | Exception]``. A line that is not a valid
    JSON-RPC message yields the validation ``Exception`` (the dispatcher reports it and reads on);
    end of input ends iteration.
    """

    __slots__ = ("_answer", "_closed", "_limit", "_reader")

    def __init__(
        self,
        reader: asyncio.StreamReader,
        limit: int,
        answer: Callable[[bytes], Awaitable[None]] | None = None,
    ) -> None:
        self._reader = reader
        self._limit = limit
        self._answer = answer
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        """The next message, or the exception its line raised.

        :raises anyio.EndOfStream: stdin reached end of file.
        :raises anyio.ClosedResourceError: this stream was closed.
        """
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                line = await self._reader.readline()
            except ValueError:  # over the limit: asyncio dropped the line (or what it had of it)
                return ValueError(f"dropped a JSON-RPC line over {self._limit} bytes")
            if not line:
                raise anyio.EndOfStream
            if line.isspace():
                continue
            try:
                return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except Exception as exc:  # reported to the dispatcher, like the SDK transport does
                if self._answer is not None and (request_id := _request_id(line)) is not None:
                    # A request the message model refuses (e.g. a lone surrogate escape) still has an id:
                    # answer it, so the client is not left waiting for its deadline.
                    await self._answer(_invalid_request(request_id))
                return exc

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
    so concurrent senders never interleave lines; ``send`` waits only when the pipe is full.
    """

    __slots__ = ("_closed", "_writer")

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        """Write ``item`` as one JSON line.

        :raises anyio.ClosedResourceError: this stream was closed.
        :raises anyio.BrokenResourceError: the reader of stdout went away.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
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
    *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> AsyncIterator[tuple[PipeReadStream, PipeWriteStream]]:
    """Serve MCP over this process's stdin and stdout; yields ``(read_stream, write_stream)``.

    :param max_line_bytes: the longest inbound line kept, in bytes.
    :raises RuntimeError: another :func:`stdio_server` of this module is already serving.

    Falls back to the SDK's :func:`mcp.server.stdio.stdio_server` (same streams contract) where
    asyncio pipes do not apply; see the module docstring.
    """
    if not _pipes_apply():
        from mcp.server.stdio import stdio_server as sdk_stdio_server

        async with sdk_stdio_server() as streams:
            yield streams  # the SDK's context streams satisfy the same protocols
        return
    loop = asyncio.get_running_loop()
    with _claimed_std_fds() as (wire_in, wire_out):
        reader = asyncio.StreamReader(limit=max_line_bytes)
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
            write_stream = PipeWriteStream(writer)
            yield PipeReadStream(reader, max_line_bytes, write_stream.send_raw), write_stream
        finally:
            read_transport.close()
            # close() flushes what is buffered before closing; give it a bounded moment.
            writer.close()
            with contextlib.suppress(Exception), anyio.move_on_after(5, shield=True):
                await writer.wait_closed()


def _request_id(line: bytes) -> int | str | None:
    """The id of a JSON-RPC request line the message model refused, if it has a usable one."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or "method" not in data:
        return None
    request_id = data.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return request_id


def _invalid_request(request_id: int | str) -> bytes:
    """A JSON-RPC 2.0 ``-32600 Invalid Request`` response line for ``request_id``."""
    error = {
        "code": types.INVALID_REQUEST,
        "message": "Invalid request: the message is not valid MCP JSON-RPC "
        "(check for unpaired surrogate escapes and the params' shape)",
    }
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n"


def _pipes_apply() -> bool:
    if sys.platform == "win32":
        return False
    try:
        asyncio.get_running_loop()  # under trio there is none
    except RuntimeError:
        return False
    for fd in (0, 1):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return False
        # Pipes, sockets and terminals can be polled; other character devices (/dev/null) cannot.
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))):
            return False
    return True


@contextlib.contextmanager
def _claimed_std_fds() -> Iterator[tuple[int, int]]:
    """Move the wire to private descriptors; point fd 0 at the null device and fd 1 at stderr.

    Yields the private ``(stdin, stdout)`` descriptors (close-on-exec, so children never inherit
    the wire). On exit fds 0 and 1 are pointed back at the wire and their blocking mode restored
    (asyncio sets the shared file description non-blocking, which would surprise a parent shell).
    The caller owns closing the private descriptors.
    """
    global _claimed
    with _claim_lock:
        if _claimed:
            raise RuntimeError("stdio is already being served by mcp_providers.stdio.stdio_server in this process")
        _claimed = True
    try:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()  # bytes printed before serving belong to the old stdout, not the wire
        blocking = {fd: os.get_blocking(fd) for fd in (0, 1)}
        wire_in = _dup_private(0)
        wire_out = _dup_private(1)
        # Dups of the wire that outlive the transports (which close wire_in/wire_out) so the
        # descriptors can be pointed back at the wire on exit.
        keep_in, keep_out = _dup_private(0), _dup_private(1)
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
        try:
            yield wire_in, wire_out
        finally:
            with contextlib.suppress(ValueError, OSError):
                sys.stdout.flush()  # stray prints still buffered go to stderr, as they were written
            for fd, keep in ((1, keep_out), (0, keep_in)):
                os.dup2(keep, fd)
                os.close(keep)
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, blocking[fd])
    finally:
        with _claim_lock:
            _claimed = False


def _dup_private(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
