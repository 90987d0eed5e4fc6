"""A header that may be sent once, sent twice, is refused before anything reads it (tester fourteen):
two ``MCP-Protocol-Version`` lines were read differently by different layers (our transport took
the last, the SDK's the first), so one request was refused, answered for another revision, or
served, depending on their order. RFC 9110 section 5.3: a field that is not a list may not be sent
twice; RFC 9112 section 3.2: a request with more than one ``Host`` is answered 400. Every such
header is refused with a 400 naming it, on the MCP path and beside it, served as ``serve --http``.
"""

from __future__ import annotations

import json

import pytest
from serve_support import JSON_HEADERS, initialize, request, served

pytestmark = pytest.mark.slow

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


def _raw(port: int, path: str, lines: list[tuple[str, str]], body: bytes = b"") -> tuple[int, bytes]:
    status, _, answer = request(port, "POST" if body else "GET", body, lines, path=path)
    return status, answer


SINGLE = {
    "mcp-protocol-version": ("2025-11-25", "2024-11-05"),
    "mcp-session-id": None,  # the session's own id, then another
    "authorization": ("Bearer a", "Bearer b"),
    "content-type": ("application/json", "application/json"),
    "origin": (None, "http://localhost"),  # this server's own origin, then another
    "host": None,  # 127.0.0.1:PORT twice
    "last-event-id": ("1", "2"),
    "mcp-method": ("ping", "ping"),
    "mcp-name": ("a", "b"),
}


@pytest.mark.parametrize("name", [n for n in SINGLE if n != "host"])
def test_a_header_sent_twice_that_may_be_sent_once_is_refused_naming_it(name: str) -> None:
    with served(json_response=True) as port:
        session = initialize(port)
        values = SINGLE[name] or (session, "other")
        if name == "origin":
            values = (f"http://127.0.0.1:{port}", values[1])
        host = ("host", f"127.0.0.1:{port}")
        base = {**JSON_HEADERS, "mcp-protocol-version": "2025-11-25", "mcp-session-id": session}
        once = [host, *{**base, name: values[0]}.items()]
        base.pop(name, None)
        lines = [host, *base.items(), *((name, v) for v in values)]
        for order in (lines, [*lines[:-2], lines[-1], lines[-2]]):
            status, body = _raw(port, "/mcp", order, PING)
            assert status == 400, (status, body)
            assert name in body.decode().lower() and "once" in body.decode(), body
        status, body = _raw(port, "/healthz", [host, *((name, v) for v in values)])
        assert status == 400 and name in body.decode().lower(), (status, body)
        assert _raw(port, "/mcp", once, PING)[0] == 200  # the same request with each header once is served


def test_two_host_lines_are_refused_before_any_layer_reads_them() -> None:
    """h11 refuses them itself (RFC 9112 section 3.2); the transport's own check stands behind it."""
    with served(json_response=True) as port:
        host = ("host", f"127.0.0.1:{port}")
        status, _ = _raw(port, "/mcp", [host, host, *JSON_HEADERS.items()], PING)
        assert status == 400


def test_a_list_header_sent_as_two_lines_is_read_as_one_by_every_layer() -> None:
    """``Accept`` is a list: two lines mean what one comma-joined line means (RFC 9110 section 5.3).
    Tester fifteen: our check read the last line and the SDK's the first, so ``text/html`` first
    was refused by one and served by the other. Both orders are now served alike."""
    with served(json_response=True, stateless=True) as port:
        host = ("host", f"127.0.0.1:{port}")
        base = [host, ("content-type", "application/json"), ("mcp-protocol-version", "2025-11-25")]
        accepts = [("accept", "text/html"), ("accept", "application/json, text/event-stream")]
        answers = [_raw(port, "/mcp", [*base, *order], PING) for order in (accepts, accepts[::-1])]
        assert [status for status, _ in answers] == [200, 200], answers
        broken = [_raw(port, "/mcp", [*base, *order], b"{") for order in (accepts, accepts[::-1])]
        assert [status for status, _ in broken] == [400, 400] and all(b"-32700" in body for _, body in broken)


def test_an_empty_protocol_version_header_is_refused_naming_it() -> None:
    """Tester fifteen: an empty MCP-Protocol-Version was read as no header by our transport and as a
    version by the SDK's."""
    with served(json_response=True) as port:
        lines = [("host", f"127.0.0.1:{port}"), *JSON_HEADERS.items(), ("mcp-protocol-version", "")]
        status, body = _raw(port, "/mcp", lines, PING)
        assert status == 400 and b"MCP-Protocol-Version header is empty" in body, (status, body)
        # with a list header sent as two lines too (the headers are then read line by line)
        lines = [*lines[:-1], ("x-trace", "a"), ("x-trace", "b"), ("mcp-protocol-version", " ")]
        status, body = _raw(port, "/mcp", lines, PING)
        assert status == 400 and b"MCP-Protocol-Version header is empty" in body, (status, body)
