"""A stdio upstream's stderr, relayed to ours with the secrets held for it masked.

Masking comes first and cutting after, and lines are masked in context, not one by one: a secret
an upstream prints is found whole even when its line is longer than :data:`STDERR_LINE_BYTES`
(it straddles the cut) or when it is wrapped over several lines (a wrapped dump, base64 at 76
columns). So a complete line is not written at once: it is held while the lines after it hold
fewer than :data:`CONTEXT_CHARS` characters, and the held lines are masked as one text
(:meth:`~mcp_providers.plugins._masking.Secrets.masked` finds a wrapped spelling in a text it is
given whole; a secret it cannot cut out replaces the whole held text by ``[redacted]``). Held lines
are written when the stream is quiet for :data:`QUIET_SECONDS` (an upstream that logs one line and
waits is still heard) or ends. A line is read up to :data:`STDERR_LINE_BYTES` plus
:data:`CONTEXT_CHARS` bytes, masked, and only then cut to :data:`STDERR_LINE_BYTES`; the rest of a
longer line is dropped unread (it is a log, not an answer).

What stays out of reach: a secret whose spelling is longer than :data:`CONTEXT_CHARS`, and one
wrapped over lines written more than :data:`QUIET_SECONDS` apart (the first part was written
before the second came).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Final, TextIO

import anyio
from anyio.abc import Process

__all__ = ["CONTEXT_CHARS", "QUIET_SECONDS", "STDERR_LINE_BYTES", "relay_stderr"]

STDERR_LINE_BYTES: Final = 64 * 1024
"""The longest stderr line relayed, in bytes (UTF-8, after masking); the rest is dropped."""
CONTEXT_CHARS: Final = 8 * 1024
"""How much text around a line, in characters (bytes past a long line's cut), is masked with it:
more than any held secret's longest spelling (a 2 KB token URL-encoded), wrapping included."""
QUIET_SECONDS: Final = 0.25
"""How long the stream may be quiet before the lines held for context are written anyway."""
_MASK = "[redacted]"


class _Held:
    """Complete lines not yet written, each with whether it was cut (read up to the cap only)."""

    def __init__(self, masked: Callable[[str], str], out: TextIO) -> None:
        self.masked, self.out = masked, out
        self.lines: list[tuple[str, bool]] = []

    def add(self, line: str, cut: bool) -> None:
        """Hold ``line``; once twice :data:`CONTEXT_CHARS` are held, write the oldest lines that
        more than :data:`CONTEXT_CHARS` follow (one masking for many lines, not one per line)."""
        self.lines.append((line, cut))
        if sum(len(text) + 1 for text, _ in self.lines) <= 2 * CONTEXT_CHARS:
            return
        count, after = 0, sum(len(text) + 1 for text, _ in self.lines)
        for text, _ in self.lines[:-1]:
            after -= len(text) + 1
            if after <= CONTEXT_CHARS:
                break
            count += 1
        if count:
            self.flush(count)

    def flush(self, count: int | None = None) -> None:
        """Write the first ``count`` held lines (all when ``None``), masked with every held line
        as their context; a text the masker replaced whole is written as one masked line."""
        if not self.lines:
            return
        lines = self.lines
        count = len(lines) if count is None else count
        masked = self.masked("\n".join(text for text, _ in lines))
        parts = masked.split("\n")
        if len(parts) != len(lines):
            # Fail closed: the masker replaced the whole text (a secret it could not cut out).
            _said(self.out, _MASK)
            self.lines = []
            return
        for (_, cut), part in zip(lines[:count], parts[:count], strict=True):
            _said(self.out, _clipped(part) if cut else part)
        self.lines = lines[count:]


def _clipped(text: str) -> str:
    """``text`` cut to :data:`STDERR_LINE_BYTES` bytes of UTF-8 (never inside a character)."""
    return text.encode()[:STDERR_LINE_BYTES].decode("utf-8", "ignore")


def _said(out: TextIO, line: str) -> None:
    with contextlib.suppress(Exception):  # a closed or broken stderr must not end the connection
        out.write(line.rstrip("\r") + "\n")
        out.flush()


_QUIET: Final = b""
"""What :func:`_next` answers for a quiet spell (a chunk read is never empty)."""


async def _next(source: AsyncIterator[bytes], wait: bool) -> bytes | None:
    """The stderr's next chunk, ``None`` when it ended, or (with ``wait``) :data:`_QUIET` after
    :data:`QUIET_SECONDS` without one."""
    if wait:
        with anyio.move_on_after(QUIET_SECONDS):
            return await anext(source, None)
        return _QUIET
    return await anext(source, None)


async def relay_stderr(process: Process, masked: Callable[[str], str], out: TextIO) -> None:
    """The process's stderr to ``out``, line by line, masked in context (the module docstring).

    :param masked: the masker of the secrets held for the upstream (``Secrets.masked``).
    """
    assert process.stderr is not None
    held = _Held(masked, out)
    buffer = bytearray()
    skipping = False  # the rest of a line already cut
    cap = STDERR_LINE_BYTES + CONTEXT_CHARS
    try:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            source = aiter(process.stderr)
            while (chunk := await _next(source, bool(held.lines or buffer))) is not None:
                if chunk is _QUIET:  # a line written in parts with a pause between is two lines
                    if buffer:
                        held.add(buffer.decode("utf-8", "replace"), False)
                        buffer.clear()
                    held.flush()
                    continue
                buffer += chunk
                *whole, rest = buffer.split(b"\n")
                for line in whole:
                    if not skipping:
                        held.add(line.decode("utf-8", "replace"), len(line) > STDERR_LINE_BYTES)
                    skipping = False
                if skipping:
                    rest = bytearray()
                elif len(rest) > cap:
                    held.add(rest[:cap].decode("utf-8", "replace"), True)
                    rest, skipping = bytearray(), True
                buffer = bytearray(rest)
    finally:  # ended, or cancelled as the upstream stops with us: what is held is still written
        if buffer:
            held.add(buffer.decode("utf-8", "replace"), len(buffer) > STDERR_LINE_BYTES)
        held.flush()
