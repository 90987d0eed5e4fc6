"""An HTTP upstream's answers bounded while they are read (the stdio transport's line limit, for
streamable HTTP: :mod:`~mcp_providers.plugins.upstream.stdio`).

The SDK's streamable HTTP client reads a JSON answer whole (``response.aread()``) before it parses
it, so an upstream answering 200 MiB in one body was held whole before ``max_bytes`` could be
checked; and its server-sent-event limit (1 MiB unless set) cut answers ``max_bytes`` accepts.
:class:`Bounds` is a response hook of the upstream's ``httpx2`` client (every response: a POST's
JSON or SSE answer, the standalone GET stream, a redirect's, an auth flow's) that replaces the
response's body stream with one that counts DECODED bytes (it decodes ``gzip`` and ``deflate``
itself, in pieces of at most :data:`PIECE_BYTES`, so a small compressed body cannot inflate past
the limit) and raises, before handing on the piece that crosses it:

- for ``text/event-stream``: when one event (the bytes since the last blank line) passes
  ``limit``; a long-lived stream is not bounded in total, only per event;
- for anything else: when the body passes ``limit`` in total.

A body that never ends (bytes drip-fed without a line end) meets the same count, and the request's
``read_timeout`` (:class:`~mcp_providers.plugins.upstream.link.Link`). The error is an
``httpx2.SSEError`` (event streams) or ``httpx2.StreamError`` (bodies): the exceptions the SDK turns
into an error for the request the response answered, at once, leaving the session serving (the
standalone GET stream, which answers no request, is opened again by the SDK). Which request it was
is noted (:attr:`Bounds.refused`, from the POST's JSON-RPC body) so the sieve can give it an error
carrying :data:`~mcp_providers.plugins.upstream.stdio.LINE_LIMIT_KEY`, worded by the link. A body
whose gzip or deflate encoding is broken is refused the same way (httpx2's own ``DecodingError``
there ended the whole session), with the SDK's error naming the upstream.
"""

from __future__ import annotations

import json
import logging
import re
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Final

import httpx2
import mcp_types as types

from mcp_providers.plugins.upstream.stdio import LINE_LIMIT_KEY

__all__ = ["ACCEPT_ENCODING", "PIECE_BYTES", "AnswerRefused", "BodyRefused", "Bounds", "Counted", "EventRefused"]

log = logging.getLogger(__name__)

PIECE_BYTES: Final = 65536
"""Most decoded bytes one step of decompression makes (so a count is over by at most this)."""
ACCEPT_ENCODING: Final = "gzip, deflate"
"""The encodings asked for: those :class:`Counted` decodes itself (httpx2 would ask for brotli
and zstd too when they are installed, and decode them uncounted)."""
_LF, _CR = ord("\n"), ord("\r")
_DECODED = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


class AnswerRefused(Exception):
    """A response was refused while it was read: over ``limit`` bytes, or (``limit`` None) its
    gzip or deflate encoding is broken."""

    limit: int | None


class EventRefused(AnswerRefused, httpx2.SSEError):
    """An event stream refused (the SDK fails the request the stream answered)."""

    def __init__(self, message: str, limit: int | None) -> None:
        super().__init__(message)
        self.limit = limit


class BodyRefused(AnswerRefused, httpx2.StreamError):
    """A response body refused (the SDK fails the request it answered; an exception of another
    kind there, such as ``httpx2.DecodingError``, would end the whole session)."""

    def __init__(self, message: str, limit: int | None) -> None:
        super().__init__(message)
        self.limit = limit


class _Inflater:
    """``gzip`` or ``deflate`` decoded in pieces of at most :data:`PIECE_BYTES` (a zlib stream, or
    a raw deflate one, as servers send either for ``deflate``)."""

    def __init__(self, wbits: int) -> None:
        self.wbits, self.first = wbits, True
        self.inflater = zlib.decompressobj(wbits)

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            yield from self._pieces(data)
        except zlib.error:
            if not (self.first and self.wbits == zlib.MAX_WBITS):
                raise httpx2.DecodingError("the answer's deflate or gzip encoding is broken") from None
            self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # a raw deflate stream
            yield from self._pieces(data)
        finally:
            self.first = False

    def _pieces(self, data: bytes) -> Iterator[bytes]:
        piece = self.inflater.decompress(data, PIECE_BYTES)
        while piece:
            yield piece
            piece = self.inflater.decompress(self.inflater.unconsumed_tail, PIECE_BYTES)


class Counted(httpx2.AsyncByteStream):
    """``raw`` decoded (``wbits``: a zlib window for :class:`_Inflater`, or None: as it came) and
    counted: per event when ``events``, else in total. ``refuse(limit)`` makes the error raised
    when the count passes ``limit``, ``refuse(None)`` when the encoding is broken.
    :attr:`largest` is the most bytes one count reached (at most ``limit``: the piece that crosses
    it is never handed on), :attr:`read` all decoded bytes."""

    def __init__(
        self,
        raw: httpx2.AsyncByteStream,
        *,
        limit: int,
        events: bool,
        wbits: int | None,
        refuse: Callable[[int | None], AnswerRefused],
    ) -> None:
        self.raw, self.limit, self.events, self.refuse = raw, limit, events, refuse
        self.inflater = None if wbits is None else _Inflater(wbits)
        self.count = self.largest = self.read = 0
        self._last = b""  # the byte before the current piece (an event's end may straddle pieces)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.raw:
            for piece in self._decoded(chunk):
                self.counted(piece)
                yield piece
        if self.inflater is not None and (rest := self.inflater.inflater.flush()):
            self.counted(rest)  # at most what one step holds back: the pieces drained the input
            yield rest

    def _decoded(self, chunk: bytes) -> Iterator[bytes]:
        if self.inflater is None:
            yield chunk
            return
        try:
            yield from self.inflater.feed(chunk)
        except httpx2.DecodingError:
            raise self.refuse(None) from None

    def counted(self, piece: bytes) -> None:
        """Add ``piece`` to the count; raise ``refuse(limit)`` when it passes the limit: for events,
        when any event it ends, holds or starts does (one in one piece, one across pieces, many in one)."""
        self.read += len(piece)
        if not self.events:
            self.count += len(piece)
        elif self.count + len(piece) <= self.limit:  # no event in it can pass: only the last one's count
            after = _after_blank_line(self._last + piece)
            self.count = self.count + len(piece) if after is None else after
        else:
            self.count = self._events_counted(self._last + piece, len(self._last))
        self._last = piece[-1:]
        if self.count > self.limit:
            raise self.refuse(self.limit)
        self.largest = max(self.largest, self.count)

    def _events_counted(self, data: bytes, start: int) -> int:
        """The count after ``data[start:]`` (``data[:start]``: the byte before it), each event in
        it checked: its bytes up to its blank line (the current count first) are at most ``limit``.
        Returns ``limit + 1`` for one that is not."""
        used = self.count
        while (end := _BLANK_LINE.search(data, start, start + self.limit - used + 1)) is not None:
            self.largest = max(self.largest, used + end.start() - start)
            start, used = end.end(), 0  # the next event starts after the blank line's last line end
        used += len(data) - start
        return used if used <= self.limit else self.limit + 1

    async def aclose(self) -> None:
        await self.raw.aclose()


class Bounds:
    """The response hook bounding an upstream's answers (module docstring); ``who`` names it in
    errors, ``hint`` says what to change. :attr:`refused` maps the JSON-RPC id of each request
    whose answer went over to the error it gets (taken by the sieve: the SDK's own error for it names
    neither the upstream nor the limit)."""

    def __init__(self, limit: int, who: str, hint: str = "") -> None:
        self.limit, self.who, self.hint = limit, who, hint
        self.refused: dict[int | str, types.ErrorData] = {}

    async def __call__(self, response: httpx2.Response) -> None:
        """Give ``response`` (nothing of its body read yet) a :class:`Counted` body stream."""
        media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        events = media == "text/event-stream"
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        wbits = _DECODED.get(encoding)
        if encoding != "identity":  # decoded here and counted as decoded (one not asked for is left
            del response.headers["content-encoding"]  # as it came: it fails to parse): never by httpx2
            response.headers.pop("content-length", None)
        response.stream = Counted(
            response.stream,  # type: ignore[arg-type]  # an async client's responses stream asynchronously
            limit=self.limit,
            events=events,
            wbits=wbits,
            refuse=lambda limit: self._refused(response.request, events, limit),
        )

    def _refused(self, request: httpx2.Request, events: bool, limit: int | None) -> AnswerRefused:
        if limit is None:  # the SDK's error for it says what this says
            message = f"{self.who} answered with a broken gzip or deflate encoding; the answer was discarded"
            log.warning("%s", message)
            return EventRefused(message, limit) if events else BodyRefused(message, limit)
        where = "in one server-sent event" if events else "in one body"
        message = f"{self.who} answered with more than {limit} bytes {where}; the answer was discarded{self.hint}"
        ident = _request_id(request)
        log.warning("%s (%s)", message, f"request {ident!r}" if ident is not None else "no request to fail")
        if ident is not None:
            if len(self.refused) >= 1024:  # never taken (the session ended first): forgotten
                del self.refused[next(iter(self.refused))]
            data = {LINE_LIMIT_KEY: limit}
            self.refused[ident] = types.ErrorData(code=types.INTERNAL_ERROR, message=message, data=data)
        return EventRefused(message, limit) if events else BodyRefused(message, limit)


_BLANK_LINE = re.compile(rb"(?<=\n)[\n\r]|(?<=\r)\r")
"""The line end that ends a blank line (so an event), as :func:`_after_blank_line` finds it: a line
end right after a line end (``\n\n``, ``\n\r``, ``\r\r``; the ``\n`` of a ``\r\n`` after it
counts to the next event). The byte before ``pos`` is seen, so one straddling two pieces is found."""


def _after_blank_line(data: bytes) -> int | None:
    """How many bytes of ``data`` follow its last blank line (an event's end), or None if it has
    none. A blank line is a line end right after a line end (``\\n``, ``\\r`` or ``\\r\\n``):
    ``\\n\\n``, ``\\n\\r`` or ``\\r\\r``. Found line end by line end from the back with
    one-byte ``rfind`` (a scan in C): a regular expression took 1.4 ms per 64 KiB of answer."""
    end = len(data)
    while (at := max(data.rfind(b"\n", 0, end), data.rfind(b"\r", 0, end))) > 0:
        before = data[at - 1]
        if before == _LF or (before == _CR and data[at] == _CR):
            return len(data) - at - 1
        end = at
    return None


def _request_id(request: httpx2.Request) -> int | str | None:
    """The id of the JSON-RPC request ``request`` POSTed (ours: small), else None."""
    if request.method != "POST":
        return None
    try:
        sent = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    ident = sent.get("id") if isinstance(sent, dict) and "method" in sent else None
    return ident if isinstance(ident, int | str) and not isinstance(ident, bool) else None
