"""One nesting limit on every transport, answered with the request's own id (issue 24 item 12).

A message may nest :data:`MAX_NESTING` (128) levels, the envelope included, so a ``tools/call``'s
arguments may nest 126 (their own object included); one level more is -32600 carrying the
request's id, in the same words over stdio and HTTP (session, stateless, 2026-07-28), and the SDK
client's call resolves at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from prefork import python, start_up_settings
from serve_support import initialize, post, served

from mcp_providers._serve.transport.nesting import MAX_NESTING, request_id_of, too_deep

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SERVER = Path(__file__).with_name("serve_support.py")
ARGUMENT_LEVELS = 126
"""How deep a tool's arguments may nest, their own object included (the decision, written down in
docs/protocol-versions.md): the message and ``params`` take the 2 levels left of 128."""
ENVELOPE_2026 = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip


def deep(levels: int, kind: str = "list") -> Any:
    """A value ``levels`` arrays (or objects) deep around a scalar; the ``arguments`` object holds it."""
    value: Any = "leaf"
    for i in range(levels - 1):  # the arguments object itself is one level
        value = [value] if kind == "list" or (kind == "mixed" and i % 2) else {"k": value}
    return value


def call(request_id: Any, levels: int, kind: str = "list", modern: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "echo", "arguments": {"value": deep(levels, kind)}}
    if modern:
        params["_meta"] = ENVELOPE_2026
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_the_shallow_scan_finds_the_top_level_id_and_nothing_else() -> None:
    assert request_id_of(json.dumps(call(7, 500)).encode()) == 7
    assert request_id_of(b'{"params": ' + b"[" * 5000 + b"]" * 5000 + b', "id": "late"}') == "late"
    assert request_id_of(b'{"x": "\\"id\\": 3", "id": -4}') == -4
    assert request_id_of(b'{"params": {"id": 5}, "method": "m"}') is None
    assert request_id_of(b'{"ID": 5, "\\u0069d": 6}') == 6  # an escaped key is the same key
    for odd in (b'{"id": 1.5}', b'{"id": true}', b'{"id": null}', b'{"id": {"a": 1}}', b'{"id": [1]}', b"[1]",
                b'"id"', b'{"id": "unterminated', b'{"x": "\\"' * 100_000, b"", b'{"id" 5}'):  # fmt: skip
        assert request_id_of(odd) is None, odd


def test_the_limit_is_the_whole_message_and_one_more_level_is_refused() -> None:
    assert ARGUMENT_LEVELS + 2 == MAX_NESTING
    assert too_deep(json.dumps(call(1, ARGUMENT_LEVELS)).encode()) is None
    refused = too_deep(json.dumps(call("a", ARGUMENT_LEVELS + 1)).encode())
    assert refused is not None and refused["id"] == "a" and refused["error"]["code"] == -32600


async def _stdio_answers(lines: list[bytes]) -> list[dict[str, Any]]:
    def run() -> list[dict[str, Any]]:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        feed = b"".join(json.dumps(m).encode() + b"\n" for m in (init, note)) + b"".join(x + b"\n" for x in lines)
        done = subprocess.run([*python(), str(SERVER)], input=feed, capture_output=True, timeout=60)
        answers = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
        return [a for a in answers if a.get("id") != 0]

    return await anyio.to_thread.run_sync(run)


def _http_answers(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    got = []
    with served(json_response=True) as port:
        session = initialize(port)
        got += [post(port, m, mcp_session_id=session)[2] for m in messages]
    with served(stateless=True, json_response=True) as port:
        got += [post(port, m)[2] for m in messages]
        modern = [{**m, "params": {**m["params"], "_meta": ENVELOPE_2026}} for m in messages]
        got += [post(port, m, "2026-07-28", mcp_method="tools/call", mcp_name="echo")[2] for m in modern]
    return got


@pytest.mark.parametrize("kind", ["list", "dict", "mixed"])
async def test_every_transport_takes_arguments_126_deep_and_refuses_127_with_the_id(kind: str) -> None:
    fits, too = call(11, ARGUMENT_LEVELS, kind), call("too-deep", ARGUMENT_LEVELS + 1, kind)
    stdio = await _stdio_answers([json.dumps(fits).encode(), json.dumps(too).encode()])
    http = await anyio.to_thread.run_sync(_http_answers, [fits, too])
    answers = stdio + http
    assert len(answers) == 8, answers
    accepted = [a for a in answers if a.get("id") == 11]  # stdio answers in the order they finish
    refused = [a for a in answers if a.get("id") != 11]
    assert len(accepted) == len(refused) == 4
    for answer in accepted:
        assert answer["id"] == 11 and "result" in answer, str(answer)[:300]
        assert answer["result"]["content"][0]["text"] == str(ARGUMENT_LEVELS - 1)  # value's own depth
    for answer in refused:
        assert answer["id"] == "too-deep", answer
        assert answer["error"]["code"] == -32600
    assert len({a["error"]["message"] for a in refused}) == 1  # the same words everywhere
    assert f"deeper than {MAX_NESTING} levels" in refused[0]["error"]["message"]


async def test_far_too_deep_is_refused_with_the_id_on_stdio_and_http_alike() -> None:
    line = b'{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"echo","arguments":{"value":' + \
        b"[" * 20_000 + b"]" * 20_000 + b"}}}"  # fmt: skip
    (stdio,) = await _stdio_answers([line])
    with served(json_response=True) as port:
        from serve_support import JSON_HEADERS, request

        session = initialize(port)
        headers = {**JSON_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        status, _, body = request(port, "POST", line, headers)
    assert status == 400
    assert json.loads(body) == stdio and stdio["id"] == "x-1"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_sdk_clients_call_resolves_when_its_arguments_are_too_deep(transport: str) -> None:
    if transport == "stdio":
        target: Any = StdioServerParameters(
            command=sys.executable, args=[*python()[1:], str(SERVER)], env=start_up_settings()
        )
        context: Any = None
    else:
        context = served(json_response=False)
        target = f"http://127.0.0.1:{context.__enter__()}/mcp"
    try:
        async with Client(target, mode="legacy", cache=None) as client:
            ok = await client.call_tool("echo", {"value": deep(ARGUMENT_LEVELS)})
            assert ok.content[0].text == str(ARGUMENT_LEVELS - 1)  # type: ignore[union-attr]
            with anyio.fail_after(10), pytest.raises(MCPError) as refused:
                await client.call_tool("echo", {"value": deep(ARGUMENT_LEVELS + 1)})
            assert refused.value.error.code == -32600
    finally:
        if context is not None:
            context.__exit__(None, None, None)
