"""The stdio transport to an upstream: the SDK's ``stdio_client`` behaviour, with each line bounded.

The SDK's client reads stdout as text and joins each chunk to what came before it, with no limit on
a line, so an upstream answering 200 MiB on one line was held whole (and every chunk copied it
again) before ``max_bytes`` could be checked. Here stdout is read as bytes into one ``bytearray``
per line, and a line longer than ``limit`` bytes is discarded while it is read: only its first and
last :data:`KEPT_BYTES` are kept, to learn which request it answered, and that request fails at
once with an error naming the limit (:data:`LINE_LIMIT_KEY` in its data; :mod:`.link` words it).

Which request: by the rule of :mod:`.answered` (the id among the line's first members, else the
only request pending, else the id among its last members, else every request pending). The same
rule fails at once the request a whole line answered that is no JSON-RPC message (not UTF-8, not
JSON, not an object, not JSON-RPC, nested too deep, a number out of range ...) or that answers an
id no request of ours had (:class:`_Bad`): with a parse error (-32700) saying what was wrong, never
the line. A message of the upstream's own that cannot be delivered is dropped, logged; a line that
is no message (:func:`~.answered.stray`, :func:`~.answered.recognised`: a banner, a JSON log line)
is handed on as the SDK hands it and fails nothing; an oversize one is dropped, logged.

The rest is the SDK's: environment from ``get_default_environment()`` plus the configured one,
``cwd``, the process's stderr to ours (relayed line by line with the secrets held for the upstream
masked in context, while any is held: :mod:`.stderr`), UTF-8, its own process group, and the shutdown sequence
(close stdin, wait, SIGTERM the group, wait, SIGKILL, drain stdout), shielded and bounded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TextIO

import anyio
import anyio.lowlevel
import mcp_types as types
import pydantic_core
from anyio.abc import Process
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_providers.plugins.upstream.answered import (
    Fault,
    Undelivered,
    answer_problem,
    first_members,
    kind,
    last_id,
    recognised,
    recognised_value,
    same,
    stray,
)
from mcp_providers.plugins.upstream.answered import said as said_of
from mcp_providers.plugins.upstream.sieve import LIST_FIELDS
from mcp_providers.plugins.upstream.stderr import STDERR_LINE_BYTES as STDERR_LINE_BYTES
from mcp_providers.plugins.upstream.stderr import relay_stderr

__all__ = [
    "CHUNK_BYTES",
    "ESCAPE_FACTOR",
    "KEPT_BYTES",
    "LINE_LIMIT_KEY",
    "LINE_SLACK",
    "Ended",
    "Lines",
    "Over",
    "line_limit",
    "stdio_transport",
]

log = logging.getLogger(__name__)
_relay_stderr = relay_stderr  # its name (and STDERR_LINE_BYTES's home) before .stderr: repros import both

ESCAPE_FACTOR: Final = 6
"""How many bytes of JSON one byte of an answer may take: a control character is written as
``\\u00XX`` (6 bytes for 1), the most any string escape costs per byte (a 4-byte emoji as two
``\\uXXXX`` escapes costs 3 per byte; base64 with ``\\/`` escaped, under 3). So no answer that
``max_bytes`` accepts is cut here; the line limit bounds memory, ``max_bytes`` stays the exact check."""
LINE_SLACK: Final = 8 * 1024 * 1024
"""Bytes allowed on a line beyond ``ESCAPE_FACTOR * max_bytes``: the JSON-RPC envelope, ``_meta``,
and list pages, which ``max_bytes`` does not bound (the sieve takes items up to 1 MiB each)."""
KEPT_BYTES: Final = 4096
"""Bytes kept of an oversize line's start and of its end, to find the request it answers."""
LINE_LIMIT_KEY: Final = "io.mcp-providers/line-limit"
"""Where an error this transport made carries the line limit (bytes) that the answer went over."""
CHUNK_BYTES: Final = 65536
"""Most bytes read from stdout at once (so a line's buffer holds at most ``limit`` plus this)."""
TERMINATION_SECONDS: Final = 2.0  # the SDK's: for the process to exit after stdin closes
KILL_SECONDS: Final = 2.0  # the SDK's: after SIGTERM before SIGKILL, and for the loop to see the death
FLUSH_SECONDS: Final = 0.5  # the SDK's: for the writer to flush what it accepted before stdin closes
_POLL_SECONDS: Final = 0.01


def line_limit(max_bytes: int) -> int:
    """The longest line (bytes) taken from an upstream whose ``max_bytes`` is ``max_bytes``."""
    return ESCAPE_FACTOR * max_bytes + LINE_SLACK


@dataclass(frozen=True)
class Over:
    """A line went over the limit (it is being discarded): its first bytes."""

    head: bytes


@dataclass(frozen=True)
class Ended:
    """The oversize line ended: its last bytes."""

    tail: bytes


class Lines:
    """Bytes from a pipe cut into lines in linear time; a line over ``limit`` bytes is not held.

    :meth:`feed` yields each whole line (a ``bytearray`` without its ``\\n``), or :class:`Over`
    when the current line passes ``limit`` (then :class:`Ended` when it ends).
    :attr:`largest` is the most bytes one line's buffer ever held (at most ``limit`` plus a chunk).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.largest = 0
        self._buffer = bytearray()
        self._over = False
        self._tail = b""

    def feed(self, chunk: bytes) -> Iterator[bytearray | Over | Ended]:
        """What ``chunk`` completes or starts, in order (a yielded line is the caller's to keep)."""
        view, start = memoryview(chunk), 0
        while True:
            end = chunk.find(b"\n", start)
            piece = view[start : len(chunk) if end < 0 else end]
            if self._over:
                self._tail = (self._tail + bytes(piece[-KEPT_BYTES:]))[-KEPT_BYTES:]
            else:
                self._buffer += piece
                self.largest = max(self.largest, len(self._buffer))
                if len(self._buffer) > self.limit:
                    head, self._tail = bytes(self._buffer[:KEPT_BYTES]), bytes(self._buffer[-KEPT_BYTES:])
                    self._over, self._buffer = True, bytearray()
                    yield Over(head)
            if end < 0:
                return
            if self._over:
                self._over = False
                yield Ended(self._tail)
            else:
                line, self._buffer = self._buffer, bytearray()
                yield line
            start = end + 1


class _Bad:
    """The lines that cannot be delivered (over the limit, or not a JSON-RPC message, or answering an
    id no request of ours had) and the requests they fail (:mod:`.answered`); what the session sent."""

    SENT_KEPT = 4096
    """Ids of requests sent remembered (answered ones too): an answer naming one came late."""

    def __init__(
        self, who: str, limit: int, pending: Callable[[], Mapping[int | str, str]], masked: Callable[[str], str]
    ) -> None:
        self.who, self.limit, self.sent = who, limit, dict[int | str, None]()
        self.rule = Undelivered(who, pending, self.sent, masked)
        self._settled = True  # whether the current oversize line needs nothing more
        self._head = b""  # the current oversize line's first bytes
        # its first members; whether they were a message's (else its tail may say whether it is one)
        self._members, self._tried = dict[str, Any](), True

    def note(self, item: SessionMessage) -> None:
        """Remember the id of a request sent."""
        if isinstance(item.message, types.JSONRPCRequest):
            self.sent[item.message.id] = None
            if len(self.sent) > self.SENT_KEPT:
                del self.sent[next(iter(self.sent))]

    def _oversize(self, method: str, named: bool) -> types.ErrorData:
        why = "" if named else " that named no request; it may have answered this one"
        message = f"answered with more than {self.limit} bytes on one line{why}; the line was discarded"
        return types.ErrorData(code=types.INTERNAL_ERROR, message=message, data={LINE_LIMIT_KEY: self.limit})

    def over(self, head: bytes) -> list[SessionMessage]:
        members, self._settled, self._head = first_members(head), True, head
        if members is None:
            log.warning("%s wrote a line over %d bytes that is no JSON object; dropped", self.who, self.limit)
            return []
        self._members, self._tried = members, recognised(members, self.rule.pending())
        failed = self.rule.first(members, self._oversize, f"over {self.limit} bytes") if self._tried else None
        self._settled = failed is not None
        return failed or []

    def ended(self, tail: bytes) -> list[SessionMessage]:
        if self._settled:
            return []
        self._settled = True
        if stray(self._head, tail) or not recognised(self._members, self.rule.pending(), tail):
            log.warning("%s wrote a line over %d bytes that is no JSON-RPC message; dropped", self.who, self.limit)
            return []
        found = None if self._tried else self.rule.first(self._members, self._oversize, f"over {self.limit} bytes")
        return found if found is not None else self.rule.last(last_id(tail), self._oversize)

    def line(self, line: bytearray) -> list[SessionMessage | Exception]:
        """One whole line as the session gets it: the message, or the errors of the requests it fails,
        or (a line that answers nothing: a banner) the parse error, as the SDK hands it on."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError as exc:
            return self._malformed(line, exc)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and self._unasked(message.id):
            failed = self.rule.anonymous(_fault(lambda _method: "answers an id no request of ours had"))
            if not failed:
                log.warning("%s sent an answer naming an id no request of ours had; dropped", self.who)
            return [*failed]
        return [SessionMessage(message)]

    def _unasked(self, ident: int | str | None) -> bool:
        """Whether an answer's id is none of a request sent (the SDK sends integers; ``"7"`` is ``7``)."""
        return ident is None or (same(ident) not in self.sent and same(ident) not in self.rule.pending())

    def _malformed(self, line: bytearray, exc: ValidationError) -> list[SessionMessage | Exception]:
        if stray(line):  # a banner, a debug print of a dict, a bare JSON value: answers nothing
            return [exc]
        first = exc.errors(include_url=False, include_input=False)[0]
        if first["type"] == "json_invalid":
            said = first["msg"].removeprefix("Invalid JSON: ")
            fault = _fault(lambda _method: f"is not JSON ({said})")
            head, tail = bytes(line[:KEPT_BYTES]).lstrip(), bytes(line[-KEPT_BYTES:])
            members = first_members(head.removeprefix(b"[")) or {}  # a batch's `[{"`: its first object's
            if not recognised(members, self.rule.pending(), tail):
                return [exc]  # a log line cut or holding a raw control character: stray output
            if head.startswith(b"{"):
                found = self.rule.first(members, fault, f"that is not JSON ({said})")
                return [*(found if found is not None else self.rule.last(last_id(tail), fault))]
            return [*self.rule.anonymous(fault)]  # a batch's `[{"`
        try:
            value = pydantic_core.from_json(line)  # it parsed once: the same parser takes it again
        except ValueError:
            return [*self.rule.anonymous(_fault(lambda _method: f"is not a JSON-RPC message: {said_of(exc)}"))]
        if not recognised_value(value, self.rule.pending()):
            return [exc]  # a JSON log line (a nested "id" or "jsonrpc" counts for nothing): stray output
        if not isinstance(value, dict):
            return [
                *self.rule.anonymous(_fault(lambda _method: f"is {kind(value)}, not a JSON-RPC message (an object)"))
            ]

        def what(method: str) -> str:
            found = None if "method" in value else answer_problem(value, paged=method in LIST_FIELDS)
            return found or f"is not a JSON-RPC message: {said_of(exc, '(message)')}"

        fault = _fault(what)
        found = self.rule.first(value, fault, f"that {what('message')}")
        return [*(found if found is not None else self.rule.anonymous(fault))]


def _fault(what: Callable[[str], str]) -> Fault:
    """The parse error (-32700) a request gets for a line that ``what(method)`` (``is not JSON (...)``)."""

    def fault(method: str, named: bool) -> types.ErrorData:
        said = f"the {method} answer {what(method)}"
        if not named:
            said = f"a line naming none of our requests {what(method)}; it may have answered this {method}"
        return types.ErrorData(code=types.PARSE_ERROR, message=said)

    return fault


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    limit: int,
    who: str,
    pending: Callable[[], Mapping[int | str, str]] = dict,
    errlog: TextIO | None = None,
    masked: Callable[[str], str] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """The started process ``command args`` as ``(read, write)`` streams of ``SessionMessage``;
    a line longer than ``limit`` bytes fails the request it answers (module docstring).

    :param env: set over ``get_default_environment()``.
    :param who: the upstream as messages name it.
    :param pending: the ids of requests sent and not answered (with their methods), read when an
        oversize line does not say its id.
    :param errlog: where the process's stderr goes (default: ours).
    :param masked: applied to each line of the process's stderr on its way to ``errlog`` (the
        secrets held for the upstream); ``None``: its stderr is handed the process as it is.
    :raises OSError: the process could not be started.
    """
    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | dict(env),
        stderr=_descriptor(errlog) if masked is None else subprocess.PIPE,
        cwd=cwd,
        start_new_session=True,
    )
    # no await until the task group is entered: a cancellation there would leak the process
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    lines, bad = Lines(limit), _Bad(who, limit, pending, masked or str)
    shutting_down, writer_done = False, anyio.Event()

    async def reader() -> None:
        try:
            async with to_session:
                try:
                    await _read(process, lines, bad, to_session)
                finally:
                    await _drain(process)
        except anyio.ClosedResourceError:
            pass  # our own shutdown closed stdout under the read
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                log.exception("%s: reading its stdout failed mid-session", who)

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(_write, process, from_session, to_session, writer_done, bad.note)
        if masked is not None:
            tg.start_soon(relay_stderr, process, masked, errlog or sys.stderr)
        tg.start_soon(_exit_ends_session, process, to_session)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):  # every wait inside is bounded
                read_stream.close()  # the reader drains: a process stuck writing can then read
                write_stream.close()
                with anyio.move_on_after(FLUSH_SECONDS):
                    await writer_done.wait()
                await _stop(process)
                for stream in (read_stream, write_stream, to_session, from_session):
                    await stream.aclose()
                await anyio.lowlevel.checkpoint()  # the unblocked tasks leave by their except paths
            tg.cancel_scope.cancel()


async def _write(
    process: Process, from_session: Any, to_session: Any, done: anyio.Event, note: Callable[[SessionMessage], None]
) -> None:
    """Each message from the session as one UTF-8 line on stdin; a broken stdin ends the session's
    read stream (the process may live on: no request may hang on it)."""
    assert process.stdin is not None
    try:
        async with from_session:
            async for item in from_session:
                note(item)
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await to_session.aclose()
    finally:
        done.set()


def _descriptor(errlog: TextIO | None) -> TextIO | None:
    """``errlog`` (else our ``sys.stderr`` now) when it is a file, else the process's real stderr:
    a stand-in for stderr (a test's capture, a notebook's) has no descriptor to hand a process."""
    for candidate in (errlog or sys.stderr, sys.__stderr__):
        try:
            if candidate is not None and candidate.fileno() >= 0:
                return candidate
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is an OSError
            continue
    return None


async def _read(process: Process, lines: Lines, bad: _Bad, to_session: Any) -> None:
    """Hand each line on (one at a time: nothing is read ahead while a delivery waits)."""
    assert process.stdout is not None
    while True:
        try:
            chunk = await process.stdout.receive(CHUNK_BYTES)
        except anyio.EndOfStream:
            return
        for event in lines.feed(chunk):
            if isinstance(event, Over):
                items: list[SessionMessage | Exception] = [*bad.over(event.head)]
            elif isinstance(event, Ended):
                items = [*bad.ended(event.tail)]
            else:
                items = bad.line(event)
            for item in items:
                try:
                    await to_session.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return  # the session is gone; only the drain remains


EXITED_GRACE_SECONDS: Final = 1.0
"""How long the session outlives its process while something else (a child it started) keeps the
pipe open: the answers the process wrote before it exited are read meanwhile."""


async def _exit_ends_session(process: Process, to_session: Any) -> None:
    """End the session's read stream once the process has exited (after the grace): a child holding
    stdout open must not keep every request waiting for its timeout, nor the link from reopening."""
    await process.wait()
    await anyio.sleep(EXITED_GRACE_SECONDS)
    await to_session.aclose()


async def _drain(process: Process) -> None:
    """Read and discard what stdout still holds, so a process flushing output can exit."""
    assert process.stdout is not None
    with (
        anyio.CancelScope(shield=True),
        contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError
        ),
    ):
        while True:
            await process.stdout.receive(CHUNK_BYTES)


async def _exited(process: Process, seconds: float) -> bool:
    """Whether the process exited within ``seconds`` (polled: ``wait()`` would also wait for the
    pipes' end, which a child that inherited them holds)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(_POLL_SECONDS)
    return process.returncode is not None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # unsignalable members or unreaped zombies: not proof the group is gone
    return True


async def _terminate_group(process: Process) -> None:
    """SIGTERM the process's group (it leads its own session), SIGKILL what is left after
    :data:`KILL_SECONDS`."""
    pgid = process.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        log.warning("no permission to signal some of process group %d; waiting for it anyway", pgid)
    with anyio.move_on_after(KILL_SECONDS):
        while _group_alive(pgid):
            _ = process.returncode  # reaps the leader where reading it does (trio)
            await anyio.sleep(_POLL_SECONDS)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _stop(process: Process) -> None:
    """Close stdin, wait, SIGTERM then SIGKILL the group, close stdout (the spec's sequence)."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, TERMINATION_SECONDS) or _group_alive(process.pid):  # its children too
        await _terminate_group(process)
        if not await _exited(process, KILL_SECONDS):
            log.warning("upstream process %d is still alive after SIGKILL; abandoned", process.pid)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    # asyncio's subprocess transport stays open (warning at GC) while a survivor holds a pipe;
    # nothing public reaches it (as in the SDK): no-op where the attributes are absent
    close = getattr(getattr(getattr(process, "_process", None), "_transport", None), "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError):
            close()
