"""A stdio upstream's stderr reaches ours masked first and cut after, across line boundaries
(tester 30 F2): a real process writes its stderr, the relay reads it as the stdio transport does.

A secret straddling the 64 KiB cut of a long line reached stderr in part (cut, then masked); one
wrapped over two or more lines was written whole in pieces (each line masked alone)."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
import textwrap

import anyio
import pytest

from mcp_providers.plugins._masking import MASK, Secrets
from mcp_providers.plugins.upstream.connect import reason
from mcp_providers.plugins.upstream.stderr import CONTEXT_CHARS
from mcp_providers.plugins.upstream.stdio import STDERR_LINE_BYTES, _relay_stderr

pytestmark = pytest.mark.anyio

SECRET = "ghp_Z9f8e7d6c5b4a3Z9f8e7d6c5b4a3Z9f8e7d6"


async def relayed(script: str) -> str:
    """What the relay writes of the stderr of ``python -c script`` (``SECRET`` held)."""
    secrets = Secrets("upstream 'test'")
    secrets.add(SECRET)
    out = io.StringIO()
    process = await anyio.open_process([sys.executable, "-c", script], stderr=subprocess.PIPE)
    async with process:
        await _relay_stderr(process, secrets.masked, out)
    return out.getvalue()


def leaked(written: str) -> int:
    """The longest piece of ``SECRET`` (6 characters or more) in ``written``, 0 for none."""
    return max(
        (n for n in range(6, len(SECRET) + 1) for at in range(len(SECRET) - n + 1) if SECRET[at : at + n] in written),
        default=0,
    )


def _writes(*parts: str) -> str:
    """A script writing each of ``parts`` to stderr (one write each)."""
    return "import sys\n" + "".join(f"sys.stderr.write({p!r}); sys.stderr.flush()\n" for p in parts)


@pytest.mark.parametrize("tail", [5, 3 * STDERR_LINE_BYTES])
@pytest.mark.parametrize("before", [STDERR_LINE_BYTES - 20, STDERR_LINE_BYTES - 1, STDERR_LINE_BYTES - 39])
async def test_a_secret_straddling_the_long_line_cut_is_masked_before_the_cut(before: int, tail: int) -> None:
    """The line ends just after the secret, or goes on far past the cut (read only up to the cut
    and the context after it: the secret is in what is masked either way)."""
    script = f"import sys\nsys.stderr.write('x' * {before} + {SECRET!r} + 'z' * {tail} + '\\n')\n"
    written = await relayed(script + _writes("next line\n"))
    assert leaked(written) == 0, written[-80:]
    first, second = written.splitlines()
    assert len(first.encode()) <= STDERR_LINE_BYTES and second == "next line"


async def test_a_line_far_longer_than_the_cut_is_cut_and_the_next_line_follows() -> None:
    script = f"import sys\nsys.stderr.write('y' * {5 * STDERR_LINE_BYTES} + {SECRET!r} + '\\n')\n"
    written = await relayed(script + _writes("after " + SECRET + "\n"))
    first, second = written.splitlines()
    assert first == "y" * STDERR_LINE_BYTES and second == f"after {MASK}"


@pytest.mark.parametrize("width", [20, 13, 7])
async def test_a_secret_wrapped_over_lines_is_never_written_in_pieces(width: int) -> None:
    wrapped = "\n".join(textwrap.wrap("token=" + SECRET, width)) + "\n"
    written = await relayed(_writes("starting\n", wrapped, "ready\n"))
    assert leaked(written) == 0, written


@pytest.mark.parametrize("short", [10, 30, 50])
async def test_a_secret_wrapped_after_a_long_log_is_never_written_in_pieces(short: int) -> None:
    """The lines held for context are written in batches once twice the context is held: the batch
    that starts while a wrapped secret comes in keeps its lines held (``short``: how far before the
    secret's lines that point falls)."""
    filler = 2 * CONTEXT_CHARS - short
    script = f"import sys\nsys.stderr.write(('f' * 99 + '\\n') * {filler // 100} + 'g' * {filler % 100} + '\\n')\n"
    wrapped = "\n".join(textwrap.wrap("token=" + SECRET, 7)) + "\n"
    written = await relayed(script + _writes(wrapped, "ready\n"))
    assert leaked(written) == 0, written[-200:]


async def test_a_secret_base64_wrapped_at_76_columns_is_never_written_in_pieces() -> None:
    blob = base64.b64encode(b"config: {token: " + SECRET.encode() + b"} " + b"z" * 120).decode()
    wrapped = "\n".join(textwrap.wrap(blob, 76)) + "\n"
    written = await relayed(_writes(wrapped))
    decoded = base64.b64decode("".join(line for line in written.splitlines() if MASK not in line) or "")
    assert SECRET.encode()[:12] not in decoded, written


async def test_lines_without_a_secret_are_written_as_they_came_and_in_order() -> None:
    lines = [f"line {n} of the log" for n in range(2000)]
    written = await relayed(_writes("\n".join(lines[:1000]) + "\n", "\n".join(lines[1000:]) + "\nsaid " + SECRET))
    assert written.splitlines() == [*lines, f"said {MASK}"]


async def test_a_line_the_upstream_leaves_standing_is_written_while_it_runs() -> None:
    """Lines held for context are written once the stream is quiet, not only when it ends."""
    out = io.StringIO()
    secrets = Secrets()
    secrets.add(SECRET)
    script = _writes("listening with " + SECRET + "\n") + "import time; time.sleep(30)\n"
    process = await anyio.open_process([sys.executable, "-c", script], stderr=subprocess.PIPE)
    async with process, anyio.create_task_group() as tg:
        tg.start_soon(_relay_stderr, process, secrets.masked, out)
        with anyio.fail_after(10):
            while not out.getvalue():
                await anyio.sleep(0.05)
        process.kill()
    assert out.getvalue() == f"listening with {MASK}\n"


def test_a_failure_from_the_upstream_is_masked_whole_before_its_first_line_is_kept() -> None:
    """The same order wherever an upstream's text is cut (tester 30 F2, "check every other place"):
    an exception's message was cut to its first line, then masked, so a secret wrapped onto the
    second line kept its head readable."""
    secrets = Secrets()
    secrets.add(SECRET)
    said = reason(RuntimeError(f"upstream dumped token={SECRET[:22]}\n{SECRET[22:]} and failed"), secrets.masked)
    assert leaked(said) == 0, said
    assert reason(RuntimeError(f"refused {SECRET}\nsecond line"), secrets.masked) == f"RuntimeError: refused {MASK}"
