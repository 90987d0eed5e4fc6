"""An upstream's oversize stdio answer is bounded while it is read (issue 40, round 8 brief F): a
line over the limit ``max_bytes`` sets is discarded as it comes (never held: a 200 MiB line left
the reader's buffer at the limit), the request it answered fails at once naming the upstream and the
size (no read_timeout waited out), and the connection keeps serving. Against a raw stdio upstream
(``oversize_stdio_upstream.py``), real processes."""

from __future__ import annotations

import io
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError
from upstream_support import link_of, refusal

from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream import stdio
from mcp_providers.plugins.upstream.answered import first_members, last_id
from mcp_providers.plugins.upstream.stdio import CHUNK_BYTES, Ended, Lines, Over, line_limit
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

SCRIPT = str(Path(__file__).with_name("oversize_stdio_upstream.py"))
MAX_BYTES = 1024
LIMIT = line_limit(MAX_BYTES)
MIB = 1024 * 1024
QUICK = 30.0  # seconds an answer may take here; read_timeout is far longer, so only a timely error passes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime hosts providers in an asyncio task of its own


def _composed(**env: str) -> Any:
    server = {"name": "big", "command": sys.executable, "args": [SCRIPT], "prefixes": ["big://a/"],
              "tool_prefix": "b_", "read_timeout": 300, "max_bytes": MAX_BYTES}  # fmt: skip
    return compose({"upstream": upstream}, {"upstream": {"servers": [server]}})


async def _refusal(call: Any) -> str:
    return await refusal(call, QUICK)


def _said(what: str) -> str:
    return f"upstream 'big' (stdio) answered {what} with more than {LIMIT} bytes, over the line limit its max_bytes"


def test_the_line_limit_leaves_room_for_any_answer_max_bytes_accepts() -> None:
    assert LIMIT == 6 * MAX_BYTES + 8 * MIB  # a control character is 6 bytes of JSON: \u00XX


def test_lines_are_cut_whole_across_chunks_and_a_line_at_the_limit_is_kept() -> None:
    lines = Lines(10)
    got = [
        bytes(e) if isinstance(e, bytearray) else e for c in (b"ab", b"c\nd", b"\n0123456789\n") for e in lines.feed(c)
    ]
    assert got == [b"abc", b"d", b"0123456789"]


def test_a_line_over_the_limit_is_not_held_and_its_ends_are_kept() -> None:
    lines = Lines(1000)
    events = list(lines.feed(b'{"id": 7, "result": "' + b"y" * 5000))
    assert len(events) == 1 and isinstance(events[0], Over) and events[0].head.startswith(b'{"id": 7,')
    assert not list(lines.feed(b"y" * 5000))
    events = list(lines.feed(b'y"}\n{"id": 8}\n'))
    assert isinstance(events[0], Ended) and events[0].tail.endswith(b'y"}')
    assert [bytes(e) for e in events[1:] if isinstance(e, bytearray)] == [b'{"id": 8}']
    assert lines.largest <= 1000 + 5000  # the limit, plus at most the chunk that crossed it


def test_the_id_is_found_among_the_first_or_last_members_only_at_the_top_level() -> None:
    assert first_members(b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"text": "yyy') == {
        "jsonrpc": "2.0", "id": 7, "result": ...}  # fmt: skip
    assert first_members(b'{"result": {"id": 5, "content": "yyyy') == {"result": ...}
    assert first_members(b'{"jsonrpc": "2.0", "id": 12') == {"jsonrpc": "2.0", "id": ...}  # cut: maybe 123
    assert first_members(b"DeprecationWarning: yyy") is None
    assert last_id(b'yyy"}]}, "jsonrpc": "2.0", "id": 7}') == 7
    assert last_id(b'yyy"}]}, "id": "a-1", "jsonrpc": "2.0"}\r') == "a-1"
    assert last_id(b'yyy", "inner": {"id": 7}}') is None  # a nested object's id
    assert last_id(b'yyy \\"id\\": 7}"}') is None  # inside a string


async def test_a_tool_answer_over_the_line_limit_fails_at_once_and_the_connection_serves_on() -> None:
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool("b_big", {"mib": 9}))
        assert _said("tools/call big") in said
        assert "raise max_bytes" in said
        assert (await client.call_tool("b_hello", {})).content[0].text == "hello"  # type: ignore[union-attr]
        assert link_of(composed).restarts == 0


async def test_a_read_answer_over_the_line_limit_fails_at_once_and_the_connection_serves_on() -> None:
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        with pytest.raises(MCPError) as refused:
            with anyio.fail_after(QUICK):
                await client.read_resource("big://a/huge")
        assert _said("resources/read big://a/huge") in refused.value.message
        assert (await client.read_resource("big://a/one")).contents[0].text == "one"  # type: ignore[union-attr]


async def test_a_200_mib_answer_is_never_held(monkeypatch: pytest.MonkeyPatch) -> None:
    readers: list[Lines] = []

    class Recorded(Lines):
        def __init__(self, limit: int) -> None:
            super().__init__(limit)
            readers.append(self)

    monkeypatch.setattr(stdio, "Lines", Recorded)
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool("b_big", {"mib": 200}))
        assert _said("tools/call big") in said
        assert (await client.call_tool("b_hello", {})).content[0].text == "hello"  # type: ignore[union-attr]
    assert readers and all(r.limit == LIMIT for r in readers)
    assert max(r.largest for r in readers) <= LIMIT + CHUNK_BYTES


async def test_an_answer_naming_its_id_last_fails_only_its_own_request() -> None:
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool("b_big_last", {"mib": 9}))  # the one request pending
        assert _said("tools/call big_last") in said
        small: list[str] = []

        async def slow() -> None:
            result = await client.call_tool("b_slow_small", {"until": "hello"})
            small.append(result.content[0].text)  # type: ignore[union-attr]

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.3)  # slow_small is pending upstream: two requests, the id comes last
            said = await _refusal(client.call_tool("b_big_last", {"mib": 9}))
            assert _said("tools/call big_last") in said
            assert not small  # it was not failed for the other's line
            assert (await client.call_tool("b_hello", {})).content[0].text == "hello"  # type: ignore[union-attr]
        assert small == ["small"]  # answered just after hello


async def test_an_oversize_notification_is_dropped_and_the_request_answered(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        with anyio.fail_after(QUICK):
            result = await client.call_tool("b_shout", {"mib": 9})
        assert result.content[0].text == "shouted"  # type: ignore[union-attr]
    assert any("sent a message (notifications/message) over" in r.getMessage() for r in caplog.records)


async def test_an_answer_naming_no_id_fails_every_pending_request_at_once() -> None:
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        failed: list[str] = []

        async def slow() -> None:
            failed.append(await _refusal(client.call_tool("b_slow_small", {"seconds": 60})))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.3)  # two requests pending: the line cannot say whose it is
            failed.append(await _refusal(client.call_tool("b_big_anon", {"mib": 9})))
        assert len(failed) == 2
        assert all("with more than" in f and "raise max_bytes" in f for f in failed), failed
        assert (await client.call_tool("b_hello", {})).content[0].text == "hello"  # type: ignore[union-attr]


async def test_an_oversize_line_that_is_no_json_is_dropped_and_the_request_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        with anyio.fail_after(QUICK):
            result = await client.call_tool("b_noise", {"mib": 9})
        assert result.content[0].text == "after the noise"  # type: ignore[union-attr]
    assert any("that is no JSON object; dropped" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("prefix", "suffix"),
    [
        ("{'debug': '", "'}"),
        ('{\'sent\': \'{"jsonrpc": "2.0", "id": 1, "text": "', "\"}'}"),  # a dict quoting a message
        ('{"debug": "', '"}'),
        ('{"log": {"n": 1}, "text": "', '"}'),
        ("[1, ", "]"),
        ('{"level": "info", "message": "', '", "id": "job-42"}'),  # a JSON log line: its id is no request's
        ('{"level": "debug", "data": {"jsonrpc": "2.0", "id": 1, "x": "', '"}}'),  # quoting a request
        ('{"event": "', '", "id": 1, "level": "debug"}'),  # an id among its last members, no result
    ],
    ids=[
        "dict-repr",
        "dict-repr-quoting-a-message",
        "json-object",
        "nested",
        "array",
        "winston",
        "quoting-a-request",
        "structlog",
    ],
)
async def test_an_oversize_stray_line_fails_no_request(
    prefix: str, suffix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A debug print over the limit that cannot be JSON-RPC (not `{"` first, or no "jsonrpc"/"id"
    member name in its kept ends) while two requests are pending: it is dropped, both are answered."""
    caplog.set_level(logging.WARNING)
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        small: list[str] = []

        async def slow() -> None:
            with anyio.fail_after(QUICK):
                small.append((await client.call_tool("b_slow_small", {"until": "big_stray"})).content[0].text)  # type: ignore[union-attr]

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.3)
            with anyio.fail_after(QUICK):
                result = await client.call_tool("b_big_stray", {"mib": 9, "prefix": prefix, "suffix": suffix})
            assert result.content[0].text == "after the stray line"  # type: ignore[union-attr]
        assert small == ["small"]
    assert any("bytes that is no JSON" in r.getMessage() and "dropped" in r.getMessage() for r in caplog.records)


def test_a_stand_in_for_stderr_hands_the_process_the_real_one() -> None:
    assert stdio._descriptor(io.StringIO()) is sys.__stderr__  # a capture has no descriptor
    assert stdio._descriptor(sys.__stderr__) is sys.__stderr__


def _gone(pid: int) -> bool:
    """Whether ``pid`` is dead (a zombie not yet reaped by whoever inherited it counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" in status.read_text()


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX process group")
async def test_a_process_that_outlives_its_stdin_is_stopped_with_its_children(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    code = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(120)\n"  # never reads stdin: only the escalation stops it
    )
    transport = stdio.stdio_transport(sys.executable, ["-c", code], env={}, cwd=None, limit=LIMIT, who="t")
    with anyio.fail_after(20):
        async with transport:
            while not pids.exists() or " " not in pids.read_text():
                await anyio.sleep(0.05)
        started = [int(p) for p in pids.read_text().split()]
        while not all(_gone(p) for p in started):  # the child is killed with its group, not left behind
            await anyio.sleep(0.05)


async def test_a_process_that_exits_ends_the_read_stream() -> None:
    transport = stdio.stdio_transport(sys.executable, ["-c", "print('bye')"], env={}, cwd=None, limit=LIMIT, who="t")
    with anyio.fail_after(20):
        async with transport as (read, _write):
            assert isinstance(await read.receive(), ValueError)  # "bye" is no JSON-RPC: handed on as the SDK does
            with pytest.raises(anyio.EndOfStream):
                await read.receive()


async def test_a_process_that_exits_while_its_child_holds_stdout_still_ends_the_read_stream() -> None:
    """Tester, third pass: an upstream that exited leaving a child with its pipes open kept every
    request waiting for its timeout, and was never reopened."""
    marker = "time.sleep(61.25)"
    child = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; {marker}'])"
    transport = stdio.stdio_transport(sys.executable, ["-c", child], env={}, cwd=None, limit=LIMIT, who="t")
    with anyio.fail_after(20):
        async with transport as (read, _write):
            with pytest.raises(anyio.EndOfStream):
                await read.receive()  # within the grace after the exit, not the child's 61 s
    with anyio.move_on_after(10):  # a signalled process leaves /proc a moment later under load
        while _alive(marker):
            await anyio.sleep(0.05)
    assert _alive(marker) == [], "the child outlived its upstream: its group was not stopped"


def _alive(marker: str) -> list[Path]:
    return [p for p in Path("/proc").glob("[0-9]*") if marker.encode() in _cmdline(p)]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
