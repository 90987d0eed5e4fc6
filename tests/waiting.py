"""Waiting for what another process does (round 4 item 25): for the event, never for a time.

A test waits until a condition on the process's observable state holds (a line in its log, an
answer on its port, a key in Redis), polling every ``every`` seconds, and fails at once, with the
process's log, when the process it waits on has exited. The only bound is :data:`HANG_SECONDS`, a
guard against a hung process far above anything load makes of a normal wait (the suite runs in
under 5 minutes): it turns a hang into a failure naming what never happened, instead of a
deadline a loaded machine can outrun.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio

T = TypeVar("T")

HANG_SECONDS = float(os.environ.get("MCP_PROVIDERS_TEST_HANG_SECONDS", "300"))
"""How long a wait may last before it is called a hang (``$MCP_PROVIDERS_TEST_HANG_SECONDS``)."""


def _check_alive(alive: subprocess.Popen[bytes] | None, what: str, log: Path | None) -> None:
    if alive is not None and alive.poll() is not None:
        tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
        raise AssertionError(f"the process exited ({alive.returncode}) before {what}\n{tail}")


def _hung(what: str, log: Path | None) -> AssertionError:
    tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
    return AssertionError(f"never happened in {HANG_SECONDS:g} s (a hang): {what}\n{tail}")


def wait_until(
    check: Callable[[], T],
    what: str,
    *,
    alive: subprocess.Popen[bytes] | None = None,
    log: Path | None = None,
    every: float = 0.05,
) -> T:
    """``check()``'s first truthy value, polled every ``every`` s.

    :raises AssertionError: ``alive`` exited first, or :data:`HANG_SECONDS` passed (a hang).
    """
    hang = time.monotonic() + HANG_SECONDS
    while True:
        found = check()
        if found:
            return found
        _check_alive(alive, what, log)
        if time.monotonic() > hang:
            raise _hung(what, log)
        time.sleep(every)


async def await_until(
    check: Callable[[], T] | Callable[[], Awaitable[T]],
    what: str,
    *,
    alive: subprocess.Popen[bytes] | None = None,
    log: Path | None = None,
    every: float = 0.05,
) -> T:
    """:func:`wait_until` for async tests (``check`` may be a coroutine function)."""
    hang = time.monotonic() + HANG_SECONDS
    while True:
        found = check()
        if isinstance(found, Awaitable):
            found = await found
        if found:
            return found  # type: ignore[return-value]
        _check_alive(alive, what, log)
        if time.monotonic() > hang:
            raise _hung(what, log)
        await anyio.sleep(every)


def log_count(log: Path, text: str) -> int:
    """How many times ``text`` occurs in the log file ``log`` so far."""
    return log.read_text(errors="replace").count(text) if log.exists() else 0
