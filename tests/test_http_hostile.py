"""Hostile bodies and headers over HTTP are answered, never dropped or answered 500 with a traceback
(round 18 item 1); the server serves the next request.

Found by sending each kind on both transports and comparing: on HTTP's fast path (stateless JSON),
a lone surrogate escape (``"\\ud800"``) in a method or id failed the response's serialization (500,
a traceback in the log); in a URI or a tool argument it failed deep inside (-32603, logged); an
``Accept`` header with a byte that is not UTF-8 failed its reading (500). The SDK's 2025-era
transport answers such bodies -32700 (its parser refuses them); now every HTTP path does, as the
body is parsed once (``transport.posted``). Anything else that fails inside an exchange is answered
500 with -32603 and no internals, and logged, as stdio answers a line whose reading fails.
Raw HTTP/1.1 on loopback.
"""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
from serve_support import JSON_HEADERS, NotesPlugin, initialize, request, served

from mcp_providers._serve.composition import compose
from mcp_providers._serve.transport import http_app as http_app_module
from mcp_providers._serve.transport.posted import parse
from mcp_providers.config import Config, ServerSettings

pytestmark = pytest.mark.slow

PING = b'{"jsonrpc":"2.0","id":"after","method":"ping"}'

SURROGATES = {
    "method": b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}',
    "id": b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
    "key": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\\udBff":1}}',
    "uri": b'{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"memo://notes/\\ud800"}}',
    "tool argument": (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"value":"x\\uDFFF"}}}'
    ),
    "batch element": b'[{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}]',
    "low then high": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\udc00\\ud800"}}',
}


def _post(port: int, body: bytes, version: str | None = "2025-11-25", **extra: str) -> tuple[int, Any]:
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


@pytest.mark.parametrize("version", ["2025-11-25", "2025-03-26", "2026-07-28"])
@pytest.mark.parametrize("stateless", [True, False], ids=["stateless-json", "sessions"])
def test_a_lone_surrogate_escape_is_a_parse_error_on_every_http_path(
    stateless: bool, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    with served(stateless=stateless, json_response=True) as port:
        session = {} if stateless or version == "2026-07-28" else {"mcp_session_id": initialize(port, version)}
        for name, body in SURROGATES.items():
            status, answer = _post(port, body, version, **session)
            assert status == 400, (name, status, answer)
            assert answer["id"] is None and answer["error"]["code"] == -32700, (name, answer)
            assert "surrogate" in answer["error"]["message"], (name, answer)
        if stateless or session:
            assert _post(port, PING, "2025-11-25", **session) == (200, {"jsonrpc": "2.0", "id": "after", "result": {}})
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_surrogate_pair_and_an_escaped_backslash_are_served() -> None:
    with served(stateless=True, json_response=True) as port:
        pair = b'{"jsonrpc":"2.0","id":"\\ud83d\\ude00","method":"ping"}'
        assert _post(port, pair) == (200, {"jsonrpc": "2.0", "id": "\U0001f600", "result": {}})
        text = b'{"jsonrpc":"2.0","id":"\\\\ud800","method":"ping"}'  # a backslash, then "ud800"
        assert _post(port, text) == (200, {"jsonrpc": "2.0", "id": "\\ud800", "result": {}})


@pytest.mark.parametrize(
    "body",
    [b"\xef\xbb\xbf" + PING, PING.decode().encode("utf-16"), PING.decode().encode("utf-32")],
    ids=["utf-8 with a BOM", "utf-16", "utf-32"],
)
def test_a_body_that_is_not_utf8_json_is_a_parse_error(body: bytes) -> None:
    assert parse(body).error is not None  # json.loads of bytes would have read these
    with served(stateless=True, json_response=True) as port:
        for version in ("2025-11-25", "2026-07-28"):
            status, answer = _post(port, body, version)
            assert status == 400 and answer["error"]["code"] == -32700, (version, answer)


def _with_accept(port: int, accept: bytes) -> tuple[int, bytes]:
    """A stateless 2025-11-25 ping whose ``Accept`` header is ``accept``, bytes as given (an HTTP
    field value is opaque octets, RFC 9110 section 5.5)."""
    head = (
        f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"mcp-protocol-version: 2025-11-25\r\ncontent-length: {len(PING)}\r\nconnection: close\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head + b"accept: " + accept + b"\r\n\r\n" + PING)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def test_an_accept_header_that_is_not_utf8_is_answered(caplog: pytest.LogCaptureFixture) -> None:
    with served(stateless=True, json_response=True) as port:
        for accept in (b"\xff\xfe", b"application/json\xff, text/event-stream", b"text/html\xe9"):
            assert _with_accept(port, accept)[0] == 406, accept  # as for any Accept without JSON
        for accept in (b"application/json, text/\xe9", b"*/*;q=\xff"):
            assert _with_accept(port, accept) == (200, b'{"jsonrpc":"2.0","id":"after","result":{}}'), accept
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_failure_inside_an_exchange_is_a_json_rpc_error_without_internals(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    calls = []

    def broken(raw: bytes) -> Any:
        calls.append(raw)
        if len(calls) == 1:
            raise RuntimeError("secret internals /etc/passwd")
        return parse(raw)

    monkeypatch.setattr(http_app_module, "parse", broken)
    audited = tmp_path / "audit.jsonl"
    composed = compose(Config(server=ServerSettings(audit_log=audited)), load_entrypoints=False,
                       plugins={"notes": NotesPlugin()})  # fmt: skip
    with served(composed, stateless=True, json_response=True) as port:
        status, answer = _post(port, b'{"jsonrpc":"2.0","id":7,"method":"ping"}')
        assert status == 500, answer
        assert answer["error"]["code"] == -32603 and answer["id"] is None
        assert "secret" not in json.dumps(answer) and "RuntimeError" not in json.dumps(answer)
        assert _post(port, PING) == (200, {"jsonrpc": "2.0", "id": "after", "result": {}})  # still serving
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "mcp_providers.http"]
    assert failed and failed[0].exc_info is not None and "secret internals" in str(failed[0].exc_info[1])
    lines = [json.loads(line) for line in audited.read_text().splitlines()]
    assert lines[0]["decision"] == "error" and lines[0]["operation"] == "HTTP POST", lines
    assert lines[0]["subject"] == "anonymous" and lines[0]["reason"].startswith("-32603: RuntimeError"), lines
    assert "secret" not in audited.read_text()
    assert [line["operation"] for line in lines[1:]] == ["ping"]  # the next request, as always
