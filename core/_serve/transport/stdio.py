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
import json
import os
import stat
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, Final, Self

import anyio
import mcp_types as types
import pydantic_core
from mcp.shared.message import SessionMessage

from mcp_providers._serve.transport.nesting import MAX_NESTING, too_deep

DEFAULT_MAX_LINE_BYTES: Final = 4 * 1024 * 1024
"""The longest JSON-RPC line accepted, in bytes (4 MiB); a longer line is discarded and answered
with -32600 (``id: null``), without ever being buffered whole."""

BATCH_VERSION: Final = "2025-03-26"
"""The only protocol version with JSON-RPC batches (added in 2025-03-26, removed in 2025-06-18)."""

_BOM: Final = b"\xef\xbb\xbf"

_claim_lock = threading.Lock()
_claimed = False

RequestId = int | str


class _Session:
    """What the transport learns from the exchange: the negotiated protocol version and the open batches.

    ``version`` is read from the answer to ``initialize`` as it is written; a batch holds the ids of
    its requests and the answers collected so far, written as one JSON array when the last arrives.
    """

    __slots__ = ("batches", "init_id", "version")

    def __init__(self) -> None:
        self.init_id: RequestId | None = None
        self.version: str | None = None
        self.batches: list[tuple[list[RequestId], list[dict[str, Any]]]] = []

    def expects(self, request_id: Any) -> bool:
        """Whether the answer to ``request_id`` is one this session must see before it is written."""
        if request_id is None:
            return False
        return request_id == self.init_id or any(request_id in ids for ids, _ in self.batches)

    def collect(self, answer: dict[str, Any]) -> bytes | None:
        """The line to write for an expected answer (a JSON-RPC response or error object): itself,
        a completed batch, or nothing yet."""
        request_id = answer.get("id")
        if request_id == self.init_id:  # answered either way: a later request may reuse the id
            if "result" in answer:
                self.version = str(answer["result"].get("protocolVersion") or "") or None
            self.init_id = None
        found, line = self._into_batch(request_id, answer)
        return line if found else _line(answer)

    def settle(self, request_id: Any) -> bytes | None:
        """A request that will never be answered (the client cancelled it): the line of its batch
        if that completes the batch, else nothing."""
        if request_id == self.init_id:
            self.init_id = None
        return self._into_batch(request_id, None)[1]

    def _into_batch(self, request_id: Any, answer: dict[str, Any] | None) -> tuple[bool, bytes | None]:
        """Close ``request_id`` in its batch, with its answer (``None``: it has none):
        ``(whether it was in a batch, the batch's line once complete and not empty)``."""
        for batch in self.batches:
            ids, answers = batch
            if request_id in ids:
                ids.remove(request_id)
                if answer is not None:
                    answers.append(answer)
                if ids:
                    return True, None
                self.batches.remove(batch)
                return True, _line(answers) if answers else None  # nothing at all to answer: nothing written
        return False, None


def _line(payload: Any) -> bytes:
    # What the dispatcher writes a single answer with (a non-finite float as null, as the SDK's models do).
    return pydantic_core.to_json(payload, inf_nan_mode="null") + b"\n"


def _error(code: int, message: str, request_id: RequestId | None = None) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response object (``id`` null when no id could be read)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _unreadable(line: bytes) -> dict[str, Any] | None:
    """The error for a line that cannot be taken as JSON at all (encoding, BOM, nesting), else None."""
    if line.startswith(_BOM):
        return _error(
            types.PARSE_ERROR,
            "Parse error: the line starts with a byte-order mark (U+FEFF); send UTF-8 JSON without one",
        )
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error(
            types.PARSE_ERROR, f"Parse error: the line is not valid UTF-8 (byte {exc.start}); send UTF-8 encoded JSON"
        )
    return too_deep(line)  # with the request's own id, so the client's call resolves


class Framer:
    """One inbound line in; the JSON-RPC messages on it out, with the lines answering what was not one.

    A line that is not a JSON-RPC message gets its JSON-RPC error (-32700 does not parse, -32600 not
    a request, too deep, too long, or a batch the session's version does not allow); a 2025-03-26
    session's batch is split into its messages and registered with the session, whose answers are
    then written as one array. ``None`` stands for a line over the length limit (already discarded).
    """

    __slots__ = ("_limit", "_session")

    def __init__(self, session: _Session, limit: int) -> None:
        self._session = session
        self._limit = limit

    def frame(self, line: bytes | None) -> tuple[list[types.JSONRPCMessage], list[bytes]]:
        """``(messages, refusals)``: the messages to dispatch and the error lines to write now."""
        if line is None:
            message = f"Invalid request: a line over {self._limit} bytes was discarded; send smaller messages"
            return [], [_line(_error(types.INVALID_REQUEST, message))]
        if line[:1] == b"{" and line.count(b"{") + line.count(b"[") <= MAX_NESTING:
            # The common case: one flat message, parsed once. The parser refuses what is not UTF-8
            # and no line this flat can nest too deep, so nothing _unreadable looks for can pass.
            try:
                parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception:
                pass  # worked out below, with the error that says why
            else:
                if not isinstance(parsed, types.JSONRPCNotification):  # a bad id reads as a notification
                    return [self._accepted(parsed)], []
        if line.isspace():
            return [], []
        if (problem := _unreadable(line)) is not None:
            return [], [_line(problem)]
        try:
            data = json.loads(line)
        except (ValueError, RecursionError) as exc:
            return [], [_line(_error(types.PARSE_ERROR, f"Parse error: the line is not JSON ({exc!s:.200})"))]
        if isinstance(data, list):
            return self._batch(data)
        one = self._message(data, line)
        if isinstance(one, dict):
            return [], [_line(one)]
        return [one], []

    def _message(self, data: Any, raw: bytes) -> types.JSONRPCMessage | dict[str, Any]:
        """One JSON value as a message, or the -32600 error answering it."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
        except Exception:
            return _error(
                types.INVALID_REQUEST,
                'Invalid request: not a JSON-RPC 2.0 message (expected an object with "jsonrpc": "2.0" and '
                "a method, or a response; check for unpaired surrogate escapes and the params' shape)",
                _request_id(data),
            )
        if isinstance(message, types.JSONRPCNotification) and isinstance(data, dict) and "id" in data:
            # The model reads an id that is not a string or an integer as a notification's extra field.
            return _error(types.INVALID_REQUEST, "Invalid request: a request id must be a string or an integer")
        return self._accepted(message)

    def _accepted(self, message: types.JSONRPCMessage) -> types.JSONRPCMessage:
        if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
            self._session.init_id = message.id
        return message

    def _batch(self, items: list[Any]) -> tuple[list[types.JSONRPCMessage], list[bytes]]:
        if not items:
            return [], [_line(_error(types.INVALID_REQUEST, "Invalid request: an empty batch"))]
        if self._session.version != BATCH_VERSION:
            message = (
                f"Invalid request: JSON-RPC batches are allowed only in protocol {BATCH_VERSION} sessions "
                f"(this session: {self._session.version or 'not initialized'}); send one message per line"
            )
            return [], [_line(_error(types.INVALID_REQUEST, message))]
        messages: list[types.JSONRPCMessage] = []
        errors: list[dict[str, Any]] = []
        for item in items:
            one = self._message(item, json.dumps(item).encode())
            (errors if isinstance(one, dict) else messages).append(one)  # type: ignore[arg-type]
        ids = [m.id for m in messages if isinstance(m, types.JSONRPCRequest)]
        if ids:
            self._session.batches.append((ids, errors))
            return messages, []
        return messages, [_line(errors)] if errors else []


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


def _request_id(data: Any) -> int | str | None:
    """The id of a JSON-RPC request the message model refused, if it has a usable one."""
    if not isinstance(data, dict) or "method" not in data:
        return None
    request_id = data.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return request_id


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


@contextlib.contextmanager
def guarded_stdout() -> Iterator[int]:
    """Point fd 1 (and so ``print``, and any child process started meanwhile) at stderr.

    Yields a private, close-on-exec duplicate of the original stdout: the only place
    machine-readable output (the MCP wire, ``plugins --json``) may be written. Enter it before any
    plugin is imported; on exit fd 1 is pointed back at the original stdout.
    """
    with contextlib.suppress(ValueError, OSError):
        sys.stdout.flush()
    saved = _dup_private(1)
    os.dup2(2, 1)
    try:
        yield saved
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()  # what plugins printed belongs to stderr, where fd 1 pointed
        os.dup2(saved, 1)
        os.close(saved)


def _pipes_apply(stdout_fd: int) -> bool:
    if sys.platform == "win32":
        return False
    try:
        asyncio.get_running_loop()  # under trio there is none
    except RuntimeError:
        return False
    for fd in (0, stdout_fd):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return False
        # Pipes, sockets and terminals can be polled; other character devices (/dev/null) cannot.
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))):
            return False
    return True


@contextlib.contextmanager
def _claimed_std_fds(stdout_fd: int | None = None) -> Iterator[tuple[int, int]]:
    """Move the wire to private descriptors; point fd 0 at the null device and fd 1 at stderr.

    Yields the private ``(stdin, stdout)`` descriptors (close-on-exec, so children never inherit
    the wire). On exit fds 0 and 1 are pointed back at the wire and their blocking mode restored
    (asyncio sets the shared file description non-blocking, which would surprise a parent shell).
    The caller owns closing the private descriptors. With ``stdout_fd`` (fd 1 already moved aside
    by :func:`guarded_stdout`), the wire's output is a duplicate of it and fd 1 is left alone.
    """
    global _claimed
    with _claim_lock:
        if _claimed:
            raise RuntimeError("stdio is already being served by mcp_providers.stdio.stdio_server in this process")
        _claimed = True
    try:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()  # bytes printed before serving belong to the old stdout, not the wire
        out_fd = 1 if stdout_fd is None else stdout_fd
        blocking = {fd: os.get_blocking(fd) for fd in (0, out_fd)}
        wire_in = _dup_private(0)
        wire_out = _dup_private(out_fd)
        # Dups of the wire that outlive the transports (which close wire_in/wire_out) so the
        # descriptors can be pointed back at the wire on exit.
        keeps = [(0, _dup_private(0))] + ([(1, _dup_private(1))] if stdout_fd is None else [])
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        if stdout_fd is None:
            os.dup2(2, 1)
        try:
            yield wire_in, wire_out
        finally:
            with contextlib.suppress(ValueError, OSError):
                sys.stdout.flush()  # stray prints still buffered go to stderr, as they were written
            for fd, keep in reversed(keeps):
                os.dup2(keep, fd)
                os.close(keep)
            for fd, was in blocking.items():
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, was)
    finally:
        with _claim_lock:
            _claimed = False


def _dup_private(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
