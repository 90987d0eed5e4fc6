"""HTTP requests the SDK transport mishandles, answered by ours (issue 24 items 13, 16, 20):
``Last-Event-ID`` with nothing to replay, an ``MCP-Protocol-Version`` not served, and a chunked
body over the size cap. Served as ``serve --http`` serves it, real sockets on loopback."""

from __future__ import annotations

import json
import socket
import time

import pytest
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from serve_support import JSON_HEADERS, URI, initialize, post, request, served

pytestmark = pytest.mark.slow

PING = {"jsonrpc": "2.0", "id": "p-7", "method": "ping"}
MAX_BODY = 4 * 1024 * 1024  # the SDK's default max_request_body_size


def _head(port: int, method: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, dict[str, str]]:
    """Status and headers of a response whose body may never end (an SSE stream)."""
    hdrs = {"host": f"127.0.0.1:{port}", "content-length": str(len(body)), **headers}
    raw = f"{method} /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw.encode() + body)
        data = b""
        while b"\r\n\r\n" not in data and (chunk := s.recv(65536)):
            data += chunk
    lines = data.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    return int(lines[0].split()[1]), {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}


# -- item 13: Last-Event-ID without an event store ---------------------------------------------------


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
@pytest.mark.parametrize("last_event_id", ["abc", "0", "stream-1:42", "x" * 200])
def test_a_get_with_last_event_id_and_no_event_store_is_a_fresh_stream(json_response: bool, last_event_id: str) -> None:
    with served(json_response=json_response) as port:
        for version in ("2025-11-25", "2025-06-18"):
            session = initialize(port, version)
            base = {"accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": version}
            plain = _head(port, "GET", base)
            resumed = _head(port, "GET", {**base, "last-event-id": last_event_id})
            assert plain[0] == 200 and plain[1]["content-type"].startswith("text/event-stream")
            assert resumed[0] == plain[0] and resumed[1]["content-type"] == plain[1]["content-type"]
            # and the session still answers afterwards
            answered = post(port, PING, version, mcp_session_id=session)
            assert answered[0] == 200


def test_a_post_with_last_event_id_is_answered_as_without_it() -> None:
    with served(json_response=True) as port:
        session = initialize(port)
        status, _, body = post(port, PING, mcp_session_id=session, last_event_id="abc")
        assert status == 200 and body["id"] == "p-7"


# -- item 16: an MCP-Protocol-Version header that is not served -------------------------------------

UNSERVED = ["1999-01-01", "2025-11-26", "2026-07-28x", "latest", "2024-11-5", "2025-11-25,2026-07-28"]


def _assert_names_the_header(status: int, body: object, request_id: object) -> None:
    assert status == 400
    assert isinstance(body, dict), body
    error = body["error"]
    assert body["id"] == request_id
    assert error["code"] == -32022
    assert "MCP-Protocol-Version" in error["message"]
    assert "2025-11-25" in error["message"] and "2026-07-28" in error["message"]
    assert "_meta" not in error["message"]
    # round 4 item 23: data.supported is what server/discover lists (conformance sep-2575), the
    # handshake revisions being reached through initialize, which the message names
    assert error["data"]["supported"] == list(MODERN_PROTOCOL_VERSIONS) == ["2026-07-28"]
    assert error["data"]["requested"] == error["message"].split("'")[1]


@pytest.mark.parametrize("version", UNSERVED)
def test_an_unserved_version_header_names_the_header_and_the_versions_served(version: str) -> None:
    with served(json_response=True) as port:
        session = initialize(port)
        _assert_names_the_header(*_drop_headers(post(port, PING, version, mcp_session_id=session)), "p-7")
        read = {"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": URI}}
        _assert_names_the_header(*_drop_headers(post(port, read, version)), 9)
        status, _, body = request(port, "GET", headers={"accept": "text/event-stream", "mcp-session-id": session,
                                                         "mcp-protocol-version": version})  # fmt: skip
        _assert_names_the_header(status, json.loads(body), None)
    with served(stateless=True, json_response=True) as port:
        _assert_names_the_header(*_drop_headers(post(port, read, version)), 9)


def test_round4_item23_the_unsupported_version_error_lists_what_server_discover_lists() -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}  # fmt: skip
    discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    for stateless in (False, True):
        with served(stateless=stateless, json_response=True) as port:
            status, _, found = post(port, discover, "2026-07-28", mcp_method="server/discover")
            assert status == 200, found
            status, refused = _drop_headers(post(port, PING, "2099-01-01"))
            assert status == 400 and refused["error"]["data"]["supported"] == found["result"]["supportedVersions"]


def _drop_headers(answer: tuple[int, dict[str, str], object]) -> tuple[int, object]:
    return answer[0], answer[2]


# -- item 20: a chunked body is capped while it is read ---------------------------------------------


def _chunked_until_refused(port: int, headers: dict[str, str], first: bytes) -> tuple[int | None, float]:
    """Send a chunked POST past the cap and never finish it: the status answered and when."""
    hdrs = {"host": f"127.0.0.1:{port}", "transfer-encoding": "chunked", **JSON_HEADERS, **headers}
    raw = "POST /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    piece = b" " * 65536
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=8) as s:
        s.sendall(raw.encode() + b"%x\r\n%s\r\n" % (len(first), first))
        sent = len(first)
        try:
            while sent <= MAX_BODY + len(piece):
                s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
        except OSError:
            pass  # refused and closed while sending: the answer is already on its way
        try:
            data = s.recv(4096)
        except OSError:
            return None, time.monotonic() - started
    status = int(data.split()[1]) if data.startswith(b"HTTP/1.1") else None
    return status, time.monotonic() - started


@pytest.mark.parametrize(
    ("stateless", "first", "version"),
    [
        (True, b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "', "2025-11-25"),
        (False, b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "', "2025-11-25"),
        (True, b'[{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "', "2025-03-26"),
        (True, b'{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"x": "', "2026-07-28"),
    ],
    ids=["stateless", "session", "batch", "2026"],
)
def test_a_chunked_body_over_the_cap_is_refused_before_it_ends(stateless: bool, first: bytes, version: str) -> None:
    with served(stateless=stateless, json_response=True) as port:
        extra = {"mcp-protocol-version": version}
        if not stateless:
            extra["mcp-session-id"] = initialize(port)
        status, took = _chunked_until_refused(port, extra, first)
        assert status == 413, status
        assert took < 8
        session = {} if stateless else {"mcp_session_id": extra["mcp-session-id"]}
        assert post(port, PING, **session)[0] == 200  # serving goes on


def test_a_chunked_body_under_the_cap_is_served() -> None:
    with served(stateless=True, json_response=True) as port:
        body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": URI}}).encode()
        hdrs = {"host": f"127.0.0.1:{port}", "transfer-encoding": "chunked", "connection": "close",
                "mcp-protocol-version": "2025-11-25", **JSON_HEADERS}  # fmt: skip
        raw = "POST /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
        halves = (body[:10], body[10:])
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(h), h) for h in halves) + b"0\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(raw.encode() + chunks)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 200"), data[:200]
        assert json.loads(data.partition(b"\r\n\r\n")[2])["id"] == 3


@pytest.mark.anyio
async def test_round4_item3_an_unexpected_exception_on_the_fast_path_is_answered_without_its_text() -> None:
    """Public error bodies carry no exception text: the stateless JSON fast path's catch-all answers
    -32603 as the SDK's 2026-07-28 entry does, and the log keeps the details."""
    import mcp_types as types

    from mcp_providers._serve.transport.fast_path import respond

    class Raising:
        async def on_request(self, *args: object) -> object:
            raise RuntimeError("could not connect to postgresql://inventory:s3cret@db/inventory")

    request = types.JSONRPCRequest(jsonrpc="2.0", id=4, method="ping")
    answer = (await respond(Raising(), None, request)).model_dump(mode="json")  # type: ignore[arg-type]
    assert answer["id"] == 4 and answer["error"]["code"] == types.INTERNAL_ERROR
    assert "s3cret" not in json.dumps(answer) and "server log" in answer["error"]["message"]
