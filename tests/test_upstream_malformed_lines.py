"""An upstream's stdio answer line that does not parse as a JSON-RPC message fails the request it
answered at once (issue 40: "Malformed or oversize answers become errors naming the upstream"),
by the oversize lines' rule (the id among its first members, else the only pending request, else
the id among its last members, else every pending request), with an error saying what was wrong
and never the line itself (it may hold a secret); the connection keeps serving. A line that cannot
be JSON-RPC (not ``{"`` first, or no ``"jsonrpc"``/``"id"`` member name: a stray debug print), or
is not recognisably a message (no top-level ``jsonrpc``, and no pending call's id as its top-level
``id`` beside a ``result`` or ``error``: a JSON log line), fails nothing: it is warned of, as a
banner is. Against a raw
stdio upstream (``malformed_stdio_upstream.py``), real processes, read_timeout far beyond
:data:`QUICK`."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from upstream_support import link_of, refusal

from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream import stdio
from mcp_providers.plugins.upstream.sieve import Sieve
from mcp_providers.plugins.upstream.stdio import line_limit
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

SCRIPT = str(Path(__file__).with_name("malformed_stdio_upstream.py"))
SECRET = "sekret-echoed-7f3a9c"
LIMIT = line_limit(1024)
QUICK = 20.0  # seconds an answer may take here; read_timeout is 300: only a timely error passes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALFORMED_ECHOED", SECRET)


def _composed() -> Any:
    server = {"name": "bad", "command": sys.executable, "args": [SCRIPT], "prefixes": ["bad://a/"],
              "tool_prefix": "m_", "read_timeout": 300, "env": {"ECHOED": "MALFORMED_ECHOED"}}  # fmt: skip
    return compose({"upstream": upstream}, {"upstream": {"servers": [server]}})


async def _refusal(call: Any) -> str:
    return await refusal(call, QUICK)


async def _hello(client: Any) -> str:
    with anyio.fail_after(QUICK):
        result = await client.call_tool("m_hello", {})
    return str(result.content[0].text)


# tool -> what the error says was wrong
KINDS = {
    "bad_utf8": "invalid unicode code point",
    "bad_nul": "control character",
    "bad_truncated": "EOF while parsing",
    "bad_array": "is a list, not a JSON-RPC message",
    "bad_no_jsonrpc": 'it has no jsonrpc member "2.0"',
    "bad_version": 'its jsonrpc member is not "2.0"',
    "bad_id_type": "its id is a boolean, not a string or an integer",
    "bad_unknown_id": "an id no request of ours had",
    "bad_null_id": "an id no request of ours had",
    "bad_surrogate": "hex escape",
    "bad_nested": "recursion limit exceeded",
    "bad_big_int": "number out of range",
    "bad_id_last": "control character",
    "bad_no_id": "control character",
}


@pytest.mark.parametrize("tool", list(KINDS))
async def test_a_malformed_answer_fails_its_call_at_once_and_the_connection_serves_on(tool: str) -> None:
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        said = await _refusal(client.call_tool(f"m_{tool}", {}))
        assert f"upstream 'bad' (stdio) answered tools/call {tool}" in said, said
        assert KINDS[tool] in said, said
        assert SECRET not in said and "\x00" not in said
        assert await _hello(client) == "hello"
        assert link_of(composed).restarts == 0


async def test_a_number_too_large_for_a_float_is_no_malformed_answer() -> None:
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        with anyio.fail_after(QUICK):
            result = await client.call_tool("m_bad_big_float", {})
        assert not result.is_error, result
        assert await _hello(client) == "hello"


async def test_an_anonymous_malformed_answer_fails_every_pending_call_at_once() -> None:
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        failed: list[str] = []

        async def slow() -> None:
            failed.append(await _refusal(client.call_tool("m_slow", {"seconds": 120})))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.5)  # two calls pending: a line naming no request cannot say whose it is
            failed.append(await _refusal(client.call_tool("m_bad_no_id", {})))
        assert len(failed) == 2
        assert all("naming none of our requests is not JSON" in f for f in failed), failed
        assert await _hello(client) == "hello"


# lines that cannot be JSON-RPC: not `{"` (or a batch's `[{"`) first, or no "jsonrpc"/"id" member name,
# or neither a top-level "jsonrpc" nor a pending call's id as its "id" beside a "result" or "error"
STRAY = {
    "dict-repr": "{'debug': 'SECRET', 'n': 1}",  # a Python dict printed (the tester's case)
    "dict-repr-quoting-a-message": """{'sent': '{"jsonrpc": "2.0", "id": 1, "result": "SECRET"}'}""",
    "json-object": '{"debug": "SECRET", "n": 1}',  # a JSON object that is no JSON-RPC message
    "cut-json-object": '{"debug": "SECRET',
    "json-string": '"SECRET"',  # was bad_scalar, which failed its call: no JSON-RPC message can be a string
    "json-array": "[1, 2]",
    "json-number": "42",
    "json-null": "null",
    "list-repr": "[{'id': 1}]",
    "spaced-dict-repr": "{ 'jsonrpc': '2.0', 'id': 1 }",
    "text": "Traceback (most recent call last): SECRET",
    # JSON log lines (tester 7, t16): a top-level "id" that is no JSON-RPC id, or names the pending
    # call without a result or error, or a nested one (a request quoted): stray output, no answer
    "winston": '{"level":"info","message":"job finished","id":"job-42"}',
    "structlog": '{"event": "cache refreshed", "id": 99, "level": "info"}',
    "names-the-call": '{"event": "handling tools/call", "id": <ID>, "level": "debug"}',
    "quotes-the-request": '{"level":"debug","msg":"recv","data":{"jsonrpc":"2.0","id":<ID>,"method":"tools/call"}}',
    "bunyan": '{"name":"srv","hostname":"h","pid":1,"level":30,"msg":"ok","time":"2026-12-06T00:00:00Z","v":0,'
    '"id":"a1"}',
    "result-naming-no-pending-id": '{"id": "job-42", "result": "SECRET", "level": "info"}',
    "method-without-jsonrpc": '{"method": "log", "id": <ID>, "msg": "SECRET"}',
    # the same that do not parse (a raw control character, cut): still no top-level jsonrpc, no result
    "winston-control-char": '{"level":"info","message":"SECRET \x00","id":"job-42"}',
    "names-the-call-control-char": '{"event": "SECRET \x01", "id": <ID>, "level": "debug"}',
    "cut-array-of-objects": '[{"debug": "SECRET"',  # no "jsonrpc"/"id" member name at all
    "cut-array-of-log-lines": '[{"level": "info", "id": <ID>, "msg": "SECRET',
    "text-quoting-a-message": 'INFO sent {"jsonrpc": "2.0", "id": <ID>, "result": {}}',  # not `{"` first
    "cut-quoting-the-request": '{"level":"debug","data":{"jsonrpc":"2.0","id":<ID>,"method":"tools/call","x":"SECRET',
}


@pytest.mark.parametrize("name", list(STRAY))
async def test_a_stray_line_that_cannot_be_json_rpc_fails_no_call(name: str, caplog: pytest.LogCaptureFixture) -> None:
    """A debug print on stdout while two calls are in flight: both are answered, the line is warned of."""
    caplog.set_level(logging.DEBUG)
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        done: list[str] = []

        async def slow() -> None:
            with anyio.fail_after(QUICK):
                done.append(str((await client.call_tool("m_slow", {"paired": True})).content[0].text))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            # paired: the upstream answers neither call until it has both, then the stray line first
            with anyio.fail_after(QUICK):
                result = await client.call_tool("m_stray", {"line": STRAY[name], "paired": True})
            assert not result.is_error and result.content[0].text == "after the stray line", result
        assert done == ["slow"]
        assert link_of(composed).restarts == 0
    assert any("upstream 'bad' (stdio)" in r.getMessage() and "could not be parsed" in r.getMessage()
               for r in caplog.records if r.levelno >= logging.WARNING), caplog.text  # fmt: skip
    assert SECRET not in caplog.text


async def test_a_malformed_answer_naming_its_id_fails_only_its_own_call() -> None:
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        done: list[str] = []

        async def slow() -> None:
            with anyio.fail_after(QUICK):
                done.append(str((await client.call_tool("m_slow", {"until_hello": True})).content[0].text))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.5)
            for tool in ("bad_nul", "bad_id_last"):  # its id first, and last
                assert "control character" in await _refusal(client.call_tool(f"m_{tool}", {}))
            assert not done
            assert await _hello(client) == "hello"  # the upstream answers the held slow call first
        assert done == ["slow"]


async def test_a_malformed_notification_is_logged_masked_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        with anyio.fail_after(QUICK):
            result = await client.call_tool("m_notify_bad", {})
        assert result.content[0].text == "after the notification"  # type: ignore[union-attr]
    dropped = [r.getMessage() for r in caplog.records if "notifications/message" in r.getMessage()]
    assert any("upstream 'bad' (stdio)" in d and "dropped" in d for d in dropped), dropped
    assert SECRET not in caplog.text


async def test_no_secret_of_a_malformed_line_reaches_any_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    composed = _composed()
    async with composed.running(), connect(composed) as client:
        for tool in KINDS:
            await _refusal(client.call_tool(f"m_{tool}", {}))
    assert SECRET not in caplog.text


LATE = (
    "import sys\n"
    "ident = __import__('json').loads(sys.stdin.readline())['id']\n"
    'for line in (\'{"jsonrpc": "2.0", "id": %d, "result": {}}\', \'{"jsonrpc": "2.0", "id": %d, "result": "\\x00\','
    ' \'{"jsonrpc": "2.0", "id": 2, "result": {}}\'):\n'
    "    print(line % ident if '%d' in line else line, flush=True)\n"
    "sys.stdin.read()\n"
)


async def test_a_late_malformed_answer_to_a_request_no_longer_pending_fails_no_other() -> None:
    """Its id was sent (and answered): it answers nothing pending, so request 2 is not failed for it."""
    pending = {2: "tools/call"}
    transport = stdio.stdio_transport(sys.executable, ["-c", LATE], env={}, cwd=None, limit=LIMIT, who="t",
                                      pending=lambda: pending)  # fmt: skip
    request = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")
    with anyio.fail_after(QUICK):
        async with transport as (read, write):
            await write.send(SessionMessage(request))
            got = [(await read.receive()).message for _ in range(2)]
    assert [(type(m).__name__, m.id) for m in got] == [("JSONRPCResponse", 1), ("JSONRPCResponse", 2)]


def test_an_answer_the_sdk_cannot_parse_is_failed_by_the_sieve_too() -> None:
    """The sieve words the same fault for a transport that hands the parse error on (streamable HTTP)."""
    sieve = Sieve()
    sieve.sent(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=4, method="tools/call")))
    try:
        types.jsonrpc_message_adapter.validate_json(b'{"jsonrpc": "2.0", "id": 4, "result": 12345}', by_name=False)
    except ValidationError as exc:
        item = sieve.received(exc)
    assert isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCError), item
    assert (
        item.message.error.message
        == "the tools/call answer is not a JSON-RPC answer: its result is an int, not an object"
    )


@pytest.mark.parametrize(
    "line",
    [
        b'{"level": "info", "message": "job finished", "id": 4}',  # names the pending id, no result
        b'{"level": "debug", "data": {"jsonrpc": "2.0", "id": 4, "result": 1}}',  # quotes an answer
        b'{"id": 5, "result": 12345}',  # a result without jsonrpc naming no request pending
    ],
    ids=["log-naming-the-id", "nested-answer", "unasked-id"],
)
def test_a_json_log_line_the_sdk_cannot_parse_is_handed_on_by_the_sieve(line: bytes) -> None:
    """Streamable HTTP hands parse errors on too: only a recognisable answer fails a request."""
    sieve = Sieve()
    sieve.sent(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=4, method="tools/call")))
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        item = sieve.received(exc)
    assert isinstance(item, ValidationError), item
    try:  # a pending id beside a result that is no object still fails its request, with no jsonrpc
        types.jsonrpc_message_adapter.validate_json(b'{"id": 4, "result": 12345}', by_name=False)
    except ValidationError as exc:
        failed = sieve.received(exc)
    assert isinstance(failed, SessionMessage) and isinstance(failed.message, types.JSONRPCError), failed
