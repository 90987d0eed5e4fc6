"""Messages built to cost the server or to break its reading of them (tester 27 F9, F10, F13).

Each is answered with one clean JSON-RPC error, with the request's id when it can be read, in the
same words on stdio and HTTP, and costs no more than reading it: a 5,000-digit id on a too-deep
message (F10), an integer argument past Python's 4,300-digit limit (F13).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from prefork import python
from serve_support import JSON_HEADERS, initialize, request, served

from mcp_providers._serve.transport.nesting import request_id_of, too_deep

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SERVER = Path(__file__).with_name("serve_support.py")
LONG_ID = b"9" * 5000
DEEP_LONG_ID = (
    b'{"jsonrpc":"2.0","id":' + LONG_ID + b',"method":"ping","params":{"a":' + b"[" * 140 + b"]" * 140 + b"}}"
)
PING = b'{"jsonrpc":"2.0","id":5,"method":"ping"}'
LONG_ARGUMENT = (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":'
                 b'{"value":' + b"9" * 5000 + b"}}}")  # fmt: skip


async def stdio_answers(lines: list[bytes]) -> list[dict[str, Any]]:
    """The answers of a stdio server to ``lines``, all written at once after the handshake."""

    def run() -> list[dict[str, Any]]:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        feed = b"".join(json.dumps(m).encode() + b"\n" for m in (init, note)) + b"".join(x + b"\n" for x in lines)
        done = subprocess.run([*python(), str(SERVER)], input=feed, capture_output=True, timeout=60)
        answers = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
        return [a for a in answers if a.get("id") != 0]

    return await anyio.to_thread.run_sync(run)


def http_answers(body: bytes) -> list[tuple[int, Any]]:
    """``(status, parsed body)`` for ``body`` POSTed in a 2025-11-25 session and stateless."""
    got = []
    with served(json_response=True) as port:
        session = initialize(port)
        headers = {**JSON_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        status, _, answer = request(port, "POST", body, headers)
        got.append((status, json.loads(answer)))
    with served(stateless=True, json_response=True) as port:
        status, _, answer = request(port, "POST", body, {**JSON_HEADERS, "mcp-protocol-version": "2025-11-25"})
        got.append((status, json.loads(answer)))
    return got


def test_an_id_past_the_digit_limit_is_no_id_and_raises_nothing() -> None:
    assert request_id_of(b'{"id":' + LONG_ID + b"}") is None
    assert request_id_of(b'{"id":-' + LONG_ID + b', "method": "ping"}') is None
    assert request_id_of(b'{"id":' + b"9" * 4300 + b"}") == int("9" * 4300)  # at the limit: still an id
    refused = too_deep(DEEP_LONG_ID)
    assert refused is not None and refused["id"] is None and refused["error"]["code"] == -32600


async def test_a_deep_message_with_a_long_id_is_refused_and_loses_nothing_on_stdio() -> None:
    answers = await stdio_answers([DEEP_LONG_ID, PING])
    assert sorted(answers, key=lambda a: str(a["id"])) == [
        {"jsonrpc": "2.0", "id": 5, "result": {}},
        {"jsonrpc": "2.0", "id": None, "error": too_deep(DEEP_LONG_ID)["error"]},  # type: ignore[index]
    ], answers


async def test_a_deep_message_with_a_long_id_is_refused_over_http() -> None:
    for status, answer in await anyio.to_thread.run_sync(http_answers, DEEP_LONG_ID):
        assert status == 400 and answer["id"] is None and answer["error"]["code"] == -32600, answer


def test_a_line_whose_reading_fails_is_answered_and_the_next_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_providers._serve.transport import stdio_framing

    def broken(line: bytes) -> None:
        raise RuntimeError("a bug in a guard")

    framer = stdio_framing.Framer(stdio_framing.Session(), 1 << 20)
    monkeypatch.setattr(stdio_framing, "too_deep", broken)
    messages, refusals = framer.frame(DEEP_LONG_ID)
    assert messages == [] and [json.loads(r) for r in refusals] == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32603, "message": "Internal error: the line could not be read"},
        }
    ]
    messages, refusals = framer.frame(PING)
    assert refusals == [] and messages[0].id == 5  # type: ignore[union-attr]


async def test_an_integer_past_the_digit_limit_is_invalid_params_with_the_id_on_every_transport() -> None:
    (stdio,) = await stdio_answers([LONG_ARGUMENT])
    assert stdio["id"] == 7 and stdio["error"]["code"] == -32602, stdio
    assert "5000 digits" in stdio["error"]["message"] and "4300" in stdio["error"]["message"]
    for status, answer in await anyio.to_thread.run_sync(http_answers, LONG_ARGUMENT):
        assert status == 400 and answer == stdio  # the same words on both transports


async def test_what_is_not_json_stays_a_parse_error_even_with_a_long_integer() -> None:
    broken = LONG_ARGUMENT[:-1]  # an object never closed
    (stdio,) = await stdio_answers([broken])
    assert stdio["id"] is None and stdio["error"]["code"] == -32700, stdio


def many_keys(request_id: Any, keys: int) -> bytes:
    """A ``tools/call`` of ``echo`` whose ``value`` has ``keys`` members: ``keys + 3`` commas in all,
    counted as ``keys + 4`` values."""
    value = {f"k,{i}": i for i in range(keys)}  # a comma inside a string is no separator
    params = {"name": "echo", "arguments": {"value": value}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


def test_members_and_items_are_counted_outside_strings_only() -> None:
    from mcp_providers._serve.transport.nesting import MAX_MEMBERS, too_many

    assert too_many(many_keys(1, MAX_MEMBERS - 4)) is None
    refused = too_many(many_keys("x", MAX_MEMBERS - 3))
    assert refused is not None and refused["id"] == "x" and refused["error"]["code"] == -32600
    assert f"more than {MAX_MEMBERS} " in refused["error"]["message"]
    assert too_many(b'{"id": 1, "s": "' + b"," * (2 * MAX_MEMBERS) + b'"}') is None
    assert too_many(b'{"id": 1, "s": "\\"' + b"," * (2 * MAX_MEMBERS) + b'"}') is None  # an escaped quote
    assert too_many(b"[" + b"1," * (MAX_MEMBERS - 1) + b"1]") is None  # exactly the bound in items
    assert too_many(b"[" + b"1," * MAX_MEMBERS + b"1]") is not None  # array items count too
    tester = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {f"k{i}": i for i in range(200_000)}})
    assert too_many(tester.encode()) is not None  # tester 27's ping: 2 s of the server


async def test_a_message_with_too_many_members_is_refused_with_its_id_on_every_transport() -> None:
    from mcp_providers._serve.transport.nesting import MAX_MEMBERS

    fits, over = many_keys(3, MAX_MEMBERS - 4), many_keys(4, MAX_MEMBERS - 3)
    answers = await stdio_answers([fits, over])
    assert {a["id"] for a in answers} == {3, 4}, answers
    served_, (refused,) = [a for a in answers if a["id"] == 3], [a for a in answers if a["id"] == 4]
    assert "result" in served_[0], served_
    assert refused["error"]["code"] == -32600 and f"more than {MAX_MEMBERS} " in refused["error"]["message"]
    for status, answer in await anyio.to_thread.run_sync(http_answers, over):
        assert status == 400 and answer == refused  # the same words on both transports


async def test_commas_in_a_string_argument_are_served_on_stdio_and_http() -> None:
    from mcp_providers._serve.transport.nesting import MAX_MEMBERS

    prose = {"name": "echo", "arguments": {"value": "a, b" * (2 * MAX_MEMBERS)}}
    line = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": prose}).encode()
    (stdio,) = await stdio_answers([line])
    assert stdio["id"] == 9 and stdio["result"]["content"][0]["text"] == "0", str(stdio)[:300]
    for status, answer in await anyio.to_thread.run_sync(http_answers, line):
        assert status == 200 and answer["result"]["content"][0]["text"] == "0", str(answer)[:300]
