"""Cancelling over HTTP (issue 24 item 15): a request its 2025-era client cancelled is never
answered on a session (no -32800 for the client to drop as an unknown id), and stateless HTTP,
which has no session to find the request in, refuses ``notifications/cancelled`` instead of
accepting and ignoring it. Raw HTTP/1.1 on loopback, served as ``serve --http`` serves it."""

from __future__ import annotations

import json
import socket
import time

import pytest
from serve_support import JSON_HEADERS, initialize, post, served

pytestmark = pytest.mark.slow


def _cancel(request_id: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id, "reason": "t"}}


def _wait(request_id: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}


def _open_post(port: int, message: object, session: str, version: str) -> socket.socket:
    body = json.dumps(message).encode()
    hdrs = {"host": f"127.0.0.1:{port}", "content-length": str(len(body)), "connection": "close",
            "mcp-session-id": session, "mcp-protocol-version": version, **JSON_HEADERS}  # fmt: skip
    raw = "POST /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(raw.encode() + body)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    with sock:
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _answers_for(data: bytes, request_id: object) -> list[dict[str, object]]:
    found = []
    for line in data.split(b"\n"):
        text = line.strip()
        if text.startswith(b"data:"):
            text = text[5:].strip()
        if text.startswith(b"{"):
            message = json.loads(text)
            if message.get("id") == request_id and ("result" in message or "error" in message):
                found.append(message)
    return found


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
@pytest.mark.parametrize("request_id", [5, "call-5"])
def test_a_cancelled_request_is_not_answered_on_a_session(
    json_response: bool, version: str, request_id: object
) -> None:
    with served(json_response=json_response) as port:
        session = initialize(port, version)
        waiting = _open_post(port, _wait(request_id), session, version)
        time.sleep(0.3)  # the call is running
        assert post(port, _cancel(request_id), version, mcp_session_id=session)[0] == 202
        data = _read_all(waiting)
        assert data.startswith((b"HTTP/1.1 200", b"HTTP/1.1 202")), data[:200]
        assert _answers_for(data, request_id) == [], data[-500:]
        assert b"-32800" not in data
        # the session goes on, and requests that are not cancelled are answered
        status, _, answer = post(port, {"jsonrpc": "2.0", "id": 6, "method": "ping"}, version, mcp_session_id=session)
        assert status == 200
        assert _answers_for(answer if isinstance(answer, bytes) else json.dumps(answer).encode(), 6)


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", None])
def test_stateless_http_refuses_a_cancel_it_cannot_honour(json_response: bool, version: str | None) -> None:
    with served(stateless=True, json_response=json_response) as port:
        status, _, body = post(port, _cancel(5), version)
        assert status == 400
        assert isinstance(body, dict) and body["error"]["code"] == -32600
        assert "stateless" in body["error"]["message"] and "notifications/cancelled" in body["error"]["message"]
        # other notifications are still accepted, and requests answered
        assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, version)[0] == 202
        assert post(port, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, version)[0] == 200


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
@pytest.mark.parametrize("where", [0, 1], ids=["first", "last"])
def test_stateless_http_refuses_a_batch_holding_a_cancel(json_response: bool, where: int) -> None:
    """A 2025-03-26 batch carrying ``notifications/cancelled`` is refused whole, before any element
    runs: answering the others and dropping the cancel would be the accepted-and-ignored case again."""
    with served(stateless=True, json_response=json_response) as port:
        batch: list[object] = [{"jsonrpc": "2.0", "id": 7, "method": "ping"}]
        batch.insert(where, _cancel(5))
        status, _, body = post(port, batch, "2025-03-26")
        assert status == 400, body
        assert isinstance(body, dict) and body["error"]["code"] == -32600
        message = body["error"]["message"]
        assert "notifications/cancelled" in message and f"batch element {where}" in message
        # a batch without one is still answered element by element
        status, _, body = post(port, [{"jsonrpc": "2.0", "id": 8, "method": "ping"}], "2025-03-26")
        assert status == 200 and isinstance(body, list) and body[0]["id"] == 8
