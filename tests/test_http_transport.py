"""The HTTP app every serving path uses: stateless limits, batches, Host/Origin policy, slow clients.

Real sockets on loopback throughout; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette

from mcp_providers._serve.composition import Composition
from mcp_providers._serve.transport.http_policy import is_wildcard, transport_policy
from mcp_providers._serve.transport.limits import Limits, uvicorn_config
from mcp_providers.embedding import mount
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Resource
from mcp_providers.providers import Content, ReadRequest, ResourceProvider
from mcp_providers.testing import compose

pytestmark = pytest.mark.slow

URI = "memo://notes/one"
READ = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": URI}}


class Notes(ResourceProvider):
    name = "notes"
    prefixes = ("memo://notes/",)

    def resources(self) -> list[Resource]:
        return [Resource(uri=URI, name="one", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="hello")


class NotesPlugin:
    @hookimpl
    def register_resource_providers(self, settings: Any) -> list[ResourceProvider]:
        return [Notes()]


def _composition() -> Composition:
    return compose({"notes": NotesPlugin()})


JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _served(
    *, host: str = "127.0.0.1", stateless: bool = True, json_response: bool = True, limits: Limits | None = None
) -> Iterator[int]:
    """A composition mounted on a Starlette app, served by uvicorn (the CLI's config) on loopback."""
    import uvicorn

    app = Starlette()
    mount(app, _composition(), "/mcp", stateless=stateless, json_response=json_response, host=host)
    port = _free_port()
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, limits))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def _request(
    port: int, method: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request on a fresh socket; (status, headers, body)."""
    hdrs = {"host": f"127.0.0.1:{port}", "content-length": str(len(body)), "connection": "close", **(headers or {})}
    raw = f"{method} /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw.encode() + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    got = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), got, rest


def _post(port: int, message: Any, version: str | None = "2025-11-25", **extra: str) -> tuple[int, dict[str, str], Any]:
    headers = {**JSON_HEADERS, **extra}
    if version is not None:
        headers["mcp-protocol-version"] = version
    status, got, body = _request(port, "POST", json.dumps(message).encode(), headers)
    try:
        return status, got, json.loads(body)
    except ValueError:
        return status, got, body


# -- the fast path answers like the SDK transport --------------------------------------------------


def test_stateless_json_read_answers_through_the_pipeline_in_both_eras() -> None:
    with _served() as port:
        for version in ("2025-03-26", "2025-11-25"):
            status, headers, answer = _post(port, READ, version)
            assert status == 200 and headers["content-type"] == "application/json"
            assert answer["id"] == 1 and answer["result"]["contents"][0]["uri"] == READ["params"]["uri"]
            assert answer["result"]["_meta"]["io.mcp-providers/receipt"]["sha256"]
        status, _, answer = _post(port, {"jsonrpc": "2.0", "id": 2, "method": "nope/nope"})
        assert status == 200 and answer["error"]["code"] == -32601
        status, _, _ = _post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202
        status, _, answer = _request(port, "POST", b"{nope", {**JSON_HEADERS})[0], None, None
        assert status == 400


# -- issue 13 item 6: stateless mode holds no stream and claims no subscriptions --------------------


def test_stateless_get_and_delete_answer_405_with_allow_post() -> None:
    with _served() as port:
        status, headers, _ = _request(port, "GET", headers={"accept": "text/event-stream"})
        assert (status, headers.get("allow")) == (405, "POST")
        status, headers, _ = _request(port, "DELETE")
        assert (status, headers.get("allow")) == (405, "POST")


@pytest.mark.parametrize("stateless", [True, False])
def test_a_method_the_mcp_path_does_not_serve_answers_405_naming_no_session(stateless: bool) -> None:
    """Tester 32 (F12): on the sessions transport a PUT or PATCH was answered 405 with an
    ``Mcp-Session-Id`` naming no session (a client using it got 404): 405, ``Allow``, no id."""
    allowed = "POST" if stateless else "GET, POST, DELETE"
    with _served(stateless=stateless) as port:
        for method in ("PUT", "PATCH", "TRACE", "PROPFIND"):
            status, headers, _ = _request(port, method, headers={**JSON_HEADERS, "mcp-protocol-version": "2025-11-25"})
            assert (status, headers.get("allow")) == (405, allowed), method
            assert "mcp-session-id" not in headers, (method, headers)


def test_stateless_initialize_claims_no_subscribe_and_subscribe_is_refused() -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    with _served() as port:
        status, _, answer = _post(port, init)
        assert status == 200
        assert "subscribe" not in answer["result"]["capabilities"].get("resources", {})
        # round 4 item 23: no list changes are ever sent on stateless HTTP, so none is promised
        lists = [v for k, v in answer["result"]["capabilities"].items() if k in ("resources", "tools", "prompts")]
        assert lists and all("listChanged" not in v for v in lists), answer["result"]["capabilities"]
        sub = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": READ["params"]["uri"]}}
        _, _, answer = _post(port, sub)
        assert answer["error"]["code"] == -32601
    with _served(stateless=False) as port:  # a session can deliver: the capability is the server's to say
        status, _, answer = _post(port, init)
        assert "subscribe" in answer["result"]["capabilities"]["resources"]
        assert answer["result"]["capabilities"]["resources"]["listChanged"] is True


# -- issue 13 item 3 (HTTP): batches ----------------------------------------------------------------

BATCH = [{"jsonrpc": "2.0", "id": 7, "method": "ping"}, {"jsonrpc": "2.0", "id": 8, "method": "resources/list"}]


@pytest.mark.parametrize("stateless", [True, False], ids=["stateless", "sessions"])
def test_batch_is_answered_as_a_batch_at_2025_03_26(stateless: bool) -> None:
    with _served(stateless=stateless) as port:
        extra: dict[str, str] = {}
        if not stateless:
            init = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
            _, headers, _ = _post(port, init, None)
            extra = {"mcp-session-id": headers["mcp-session-id"]}
            _post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, None, **extra)
        for version in (None, "2025-03-26"):
            status, _, answer = _post(port, BATCH, version, **extra)
            assert status == 200 and isinstance(answer, list), answer
            assert sorted(a["id"] for a in answer) == [7, 8] and all("result" in a for a in answer), answer


def test_batch_is_refused_with_one_small_error_after_2025_03_26() -> None:
    with _served() as port:
        for version in ("2025-06-18", "2025-11-25", "2026-07-28"):  # 2026: ours too, not the SDK's -32602 dump
            status, _, body = _request(
                port, "POST", json.dumps(BATCH).encode(), {**JSON_HEADERS, "mcp-protocol-version": version}
            )
            answer = json.loads(body)
            assert status == 400 and len(body) < 300, body
            assert answer["id"] is None and answer["error"]["code"] == -32600
            assert "resources/list" not in body.decode()  # nothing of the request is echoed
            assert "only accepted at protocol version 2025-03-26" in answer["error"]["message"]
        status, _, body = _request(port, "POST", b"[]", {**JSON_HEADERS, "mcp-protocol-version": "2025-03-26"})
        assert status == 400 and "an empty JSON-RPC batch" in json.loads(body)["error"]["message"], body


def test_a_batch_of_more_than_the_bound_is_refused_whole_before_any_element_runs() -> None:
    """One POST's work is bounded (tester twenty-six: 4,000 pings took 11 s of the server's time)."""
    from mcp_providers._serve.transport.batches import MAX_BATCH_ITEMS

    pings = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(MAX_BATCH_ITEMS + 1)]
    with _served() as port:
        status, _, body = _request(
            port, "POST", json.dumps(pings).encode(), {**JSON_HEADERS, "mcp-protocol-version": "2025-03-26"}
        )
        assert status == 400, body
        message = json.loads(body)["error"]["message"]
        assert f"at most {MAX_BATCH_ITEMS} messages" in message and f"{MAX_BATCH_ITEMS + 1}" in message, message
        status, _, answer = _post(port, pings[:MAX_BATCH_ITEMS], "2025-03-26")
        assert status == 200 and len(answer) == MAX_BATCH_ITEMS  # the bound itself is served


BAD_IDS = {"object": {"a": 1}, "fraction": 1.5, "boolean": True, "null": None}


def _session(port: int, version: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    _, headers, _ = _post(port, init, version)
    extra = {"mcp-session-id": headers["mcp-session-id"]}
    _post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, version, **extra)
    return extra


@pytest.mark.parametrize(
    ("stateless", "json_response"), [(True, True), (False, False), (False, True)], ids=["fast", "sse", "json"]
)
def test_a_request_with_an_invalid_id_gets_32600_with_a_null_id_and_serving_goes_on(
    stateless: bool, json_response: bool
) -> None:
    """An id that is not a string or an integer is not a notification: -32600, ``id: null``, never a silent 202."""
    with _served(stateless=stateless, json_response=json_response) as port:
        for version in ("2025-03-26", "2025-11-25", "2026-07-28"):
            extra = _session(port, version) if not stateless and version != "2026-07-28" else {}
            for name, bad in BAD_IDS.items():
                status, _, answer = _post(port, {"jsonrpc": "2.0", "id": bad, "method": "ping"}, version, **extra)
                assert status == 400 and isinstance(answer, dict), (version, name, status, answer)
                assert answer["id"] is None and answer["error"]["code"] == -32600, (version, name, answer)
            if version == "2025-03-26":  # a batch element with a bad id gets its own error
                batch = [{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, {"jsonrpc": "2.0", "id": 9, "method": "ping"}]
                status, _, answer = _post(port, batch, version, **extra)
                assert status == 200 and isinstance(answer, list), answer
                assert sorted(str(a["id"]) for a in answer) == ["9", "None"], answer
                assert next(a for a in answer if a["id"] is None)["error"]["code"] == -32600
            status, _, answer = _post(port, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, version, **extra)
            if isinstance(answer, bytes):  # an SSE stream: the answer is its data line
                answer = json.loads(answer.split(b"data: ", 1)[1].split(b"\r\n", 1)[0])
            assert answer["id"] == 5, (version, status, answer)  # answered (2026-07-28 wants its envelope)
            assert version == "2026-07-28" or answer["result"] == {}, (version, answer)


# -- issue 13 item 7: one Host/Origin policy, every bind address -----------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "0", "192.168.1.10", "myhost.example"])
def test_mount_on_any_non_loopback_address_refuses_a_foreign_host_and_origin(host: str) -> None:
    with _served(host=host) as port:
        status, _, _ = _post(port, READ, host="evil.example")
        assert status == 421
        own = f"127.0.0.1:{port}" if is_wildcard(host) else f"{_bracketed(host)}:{port}"
        status, _, _ = _post(port, READ, host=own, origin="http://evil.example")
        assert status == 403
        assert _post(port, READ, host=own, origin=f"http://{own}")[0] == 200
        if is_wildcard(host):  # a wildcard bind listens on loopback too, and loopback names are answered
            assert _post(port, READ)[0] == 200


def test_the_policy_knows_every_spelling_of_every_interface() -> None:
    for spelling in ("0.0.0.0", "0", "::", "[::]", "0:0:0:0:0:0:0:0", ""):
        assert is_wildcard(spelling)
    lan = transport_policy("10.1.2.3", ["api.example"])
    assert lan.enable_dns_rebinding_protection
    assert "10.1.2.3:*" in lan.allowed_hosts and "api.example:*" in lan.allowed_hosts
    assert not any(h.startswith("localhost") for h in lan.allowed_hosts)


# -- issue 13 item 8: slow clients are timed out, one address cannot hold every connection --------


def _closed_within(sock: socket.socket, seconds: float) -> bytes | None:
    """What the server sent before closing ``sock`` within ``seconds``; ``None`` if still open."""
    sock.settimeout(0.1)
    data = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk
    return None


FAST = Limits(header_timeout=0.5, body_timeout=0.5, idle_timeout=1, max_connections_per_client=64)


def test_headers_never_finished_are_timed_out_even_a_byte_at_a_time() -> None:
    with _served(limits=FAST) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as quiet:
            assert _closed_within(quiet, 3) is not None
        with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
            slow.sendall(b"POST /mcp HTTP/1.1\r\n")
            closed = False
            for _ in range(30):  # a header byte every 0.1 s would keep the keep-alive timer off forever
                try:
                    slow.sendall(b"X")
                except OSError:
                    closed = True
                    break
                if _closed_within(slow, 0.1) is not None:
                    closed = True
                    break
            assert closed


def test_a_body_never_finished_gets_408_and_idle_connections_are_closed() -> None:
    with _served(limits=FAST) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            s.sendall((head + "accept: application/json\r\ncontent-length: 1000\r\n\r\n").encode() + b'{"json')
            answer = _closed_within(s, 3)
            assert answer is not None and answer.startswith(b"HTTP/1.1 408")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            body = json.dumps(READ).encode()
            head = (
                f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
                f"accept: application/json\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: {len(body)}\r\n\r\n"
            )
            s.sendall(head.encode() + body)
            answer = _closed_within(s, 4)  # answered, then closed once idle
            assert answer is not None and answer.startswith(b"HTTP/1.1 200")


def test_one_address_cannot_hold_more_than_its_share_of_connections() -> None:
    limits = Limits(header_timeout=30, body_timeout=30, idle_timeout=30, max_connections_per_client=4)
    with _served(limits=limits) as port, contextlib.ExitStack() as stack:
        held = [stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5)) for _ in range(4)]
        time.sleep(0.2)
        extra = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
        assert _closed_within(extra, 3) is not None  # refused at once
        assert all(_closed_within(s, 0.2) is None for s in held)  # the others stay open
        held[0].close()
        time.sleep(0.2)
        again = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
        assert _closed_within(again, 0.3) is None  # room again
