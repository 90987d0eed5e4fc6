"""Round 4 item 16: the HTTP guards judge the parsed body, never its bytes.

A guard that first looked for ``b'"tasks/'``, ``b'"id"'`` or ``b"notifications/cancelled"`` in the
raw body was skipped by a JSON escape of the same string (RFC 8259 §7: ``"tasks\\/get"`` and
``"\\u0074asks/get"`` are ``"tasks/get"``). Each case here sends an escaped spelling the plain
one is refused for, and expects the same refusal; and a body the guards cannot parse is refused
instead of handed to a parser that could read it. Raw HTTP/1.1 on loopback.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from serve_support import JSON_HEADERS, initialize, request, served

from mcp_providers._serve.transport.posted import invalid_id, is_cancel_notification, parse, parse_error

pytestmark = pytest.mark.slow

MODERN = "2026-07-28"
_META = {types.PROTOCOL_VERSION_META_KEY: MODERN, types.CLIENT_CAPABILITIES_META_KEY: {}}


def _raw_post(port: int, body: bytes, version: str | None, **extra: str) -> tuple[int, Any]:
    headers = {**JSON_HEADERS, **{k.replace("_", "-"): v for k, v in extra.items()}}
    if version is not None:
        headers["mcp-protocol-version"] = version
    status, _, answer = request(port, "POST", body, headers)
    if b"data: " in answer:  # an SSE response: its data line
        answer = answer.split(b"data: ", 1)[1].split(b"\r\n", 1)[0]
    try:
        return status, json.loads(answer)
    except ValueError:
        return status, answer


def _spelled(message: dict[str, Any], plain: str, escaped: str) -> bytes:
    """``message`` as JSON with the JSON string ``plain`` written as ``escaped`` (same value)."""
    text = json.dumps(message)
    assert f'"{plain}"' in text
    body = text.replace(f'"{plain}"', f'"{escaped}"').encode()
    assert json.loads(body) == message  # the same JSON value, other bytes
    return body


# the method name and the member names the guards read, each escaped as JSON allows
TASK_SPELLINGS = [
    ("tasks/get", "tasks\\/get"),
    ("tasks/get", "\\u0074asks/get"),
    ("tasks/cancel", "tasks\\u002fcancel"),
    ("method", "\\u006dethod"),
    ("taskId", "task\\u0049d"),
]


@pytest.mark.parametrize(("stateless", "json_response"), [(True, True), (False, False)], ids=["fast-path", "sdk-path"])
def test_round4_item16_an_escaped_tasks_request_still_must_name_its_task(stateless: bool, json_response: bool) -> None:
    with served(stateless=stateless, json_response=json_response) as port:
        for plain, escaped in TASK_SPELLINGS:
            method = plain if plain.startswith("tasks/") else "tasks/get"
            message = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"taskId": "t-1", "_meta": _META}}
            body = _spelled(message, plain, escaped)
            status, answer = _raw_post(port, body, MODERN, mcp_method=method, mcp_name="another-task")
            assert status == 400, (escaped, status, answer)
            assert answer["error"]["code"] == types.HEADER_MISMATCH and answer["id"] == 7, (escaped, answer)


ID_SPELLINGS = ["\\u0069d", "i\\u0064", "\\u0069\\u0064"]


@pytest.mark.parametrize(
    ("stateless", "json_response"), [(True, True), (False, False), (False, True)], ids=["fast", "sse", "json"]
)
def test_round4_item16_an_escaped_id_key_holding_a_bad_id_is_refused(stateless: bool, json_response: bool) -> None:
    """An id that is not a string or an integer is -32600, ``id: null``, however its key is spelled
    (never a silent 202 the client waits on for ever)."""
    with served(stateless=stateless, json_response=json_response) as port:
        extra = {} if stateless else {"mcp_session_id": initialize(port)}
        for escaped in ID_SPELLINGS:
            body = _spelled({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, "id", escaped)
            status, answer = _raw_post(port, body, "2025-11-25", **extra)
            assert status == 400, (escaped, status, answer)
            assert answer["id"] is None and answer["error"]["code"] == types.INVALID_REQUEST, (escaped, answer)
        # a duplicate key: every parser here takes the last, so the guard judges the id that is served
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "\\u0069d": 1.5}'
        status, answer = _raw_post(port, body, "2025-11-25", **extra)
        assert status == 400 and answer["error"]["code"] == types.INVALID_REQUEST, (status, answer)


CANCEL_SPELLINGS = [
    ("notifications/cancelled", "notifications\\/cancelled"),
    ("notifications/cancelled", "notifications\\u002Fcancelled"),
    ("notifications/cancelled", "\\u006eotifications/cancelled"),
    ("method", "m\\u0065thod"),
]


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
def test_round4_item16_an_escaped_cancel_is_refused_on_stateless_http(json_response: bool) -> None:
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
    with served(stateless=True, json_response=json_response) as port:
        for plain, escaped in CANCEL_SPELLINGS:
            status, answer = _raw_post(port, _spelled(cancel, plain, escaped), "2025-11-25")
            assert status == 400, (escaped, status, answer)
            assert "notifications/cancelled" in answer["error"]["message"], answer
        # a batch holding an escaped one is refused whole too
        batch = b"[" + _spelled(cancel, "notifications/cancelled", "notifications\\/cancelled") + b"]"
        status, answer = _raw_post(port, batch, "2025-03-26")
        assert status == 400 and "batch element 0" in answer["error"]["message"], answer


@pytest.mark.parametrize(
    ("stateless", "json_response"), [(True, True), (False, False), (False, True)], ids=["fast", "sse", "json"]
)
def test_round4_item16_a_body_the_guards_cannot_parse_is_refused(stateless: bool, json_response: bool) -> None:
    """Refused by the guards' own parse, saying the body is not JSON, whichever path would serve
    it: no guard is skipped because it could not read a body another parser might accept."""
    with served(stateless=stateless, json_response=json_response) as port:
        extra = {} if stateless else {"mcp_session_id": initialize(port)}
        for body in (
            b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping", "params": {"n": %s}}' % (b"9" * 5000),  # too long
            b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5},}',  # trailing comma
            b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',  # truncated
        ):
            status, answer = _raw_post(port, body, "2025-11-25", **extra)
            assert status == 400, (body[:60], status, answer)
            if b"9" * 5000 in body:  # JSON, but no Python int: refused as such (tester 27 F13)
                assert answer["id"] is None and answer["error"]["code"] == types.INVALID_PARAMS, answer
                assert "an integer of 5000 digits" in answer["error"]["message"], answer
                continue
            assert answer["id"] is None and answer["error"]["code"] == types.PARSE_ERROR, answer
            assert "the request body is not JSON" in answer["error"]["message"], answer
        # a plain request is still served
        status, answer = _raw_post(port, b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}', "2025-11-25", **extra)
        assert status == 200 and answer["id"] == 2, answer


def test_round4_item16_the_record_judges_values() -> None:
    escaped = parse(b'{"jsonrpc": "2.0", "\\u0069d": [], "m\\u0065thod": "notifications\\/cancelled"}')
    assert escaped.method == "notifications/cancelled" and parse_error(escaped) is None
    assert invalid_id(escaped) is not None  # an id that is an array
    assert not is_cancel_notification(escaped.value)  # it has an id: a request, not the notification
    assert parse(b"[1, 2]").batch == [1, 2] and parse(b"[1, 2]").message is None
    assert parse_error(parse(b"\xff{}")) is not None  # not UTF-8
