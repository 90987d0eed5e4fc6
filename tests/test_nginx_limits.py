"""``deploy/nginx.conf`` limits its own clients (issue 24 item 21): the replicas behind it run
without a per-address connection limit, so the proxy must refuse what a replica would.

A real nginx runs the deployed file (upstreams pointed at a loopback stand-in that holds every
request open, so requests stay in flight), on a free loopback port.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_support import free_port
from waiting import wait_until

pytestmark = pytest.mark.slow

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
CONF = Path(__file__).resolve().parents[1] / "deploy" / "nginx.conf"
MAX_BODY = 4 * 1024 * 1024


def _setting(pattern: str) -> str:
    found = re.search(pattern, CONF.read_text())
    assert found, f"deploy/nginx.conf has no {pattern!r}"
    return found[1]


@contextlib.contextmanager
def _holding_upstream() -> Iterator[tuple[int, list[socket.socket]]]:
    """A TCP server that accepts and never answers: every request sent to it stays in flight."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], held
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


@contextlib.contextmanager
def _nginx(upstream: int) -> Iterator[int]:
    if NGINX is None:
        if os.environ.get("CI") == "true":
            pytest.fail("nginx is not installed; .ci/run installs it (apt-get install -y nginx)")
        pytest.skip("nginx is not installed (apt-get install -y nginx; .ci/run installs it)")
    text = re.sub(r"server replica\d:8000;", f"server 127.0.0.1:{upstream};", CONF.read_text())
    port = free_port()
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    prefix = Path(tempfile.mkdtemp(prefix="nginx-limits-"))
    (prefix / "nginx.conf").write_text(text)
    globals_ = f"pid {prefix}/nginx.pid; error_log {prefix}/error.log; daemon off;"
    proc = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", globals_],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:

        def listening() -> bool:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "nginx exited"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
            return False

        wait_until(listening, "nginx listens")  # the event, not a deadline (round 4 item 25)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()
        shutil.rmtree(prefix, ignore_errors=True)


def _status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split()[1])


def _send(port: int, head: str, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def _get(port: int) -> str:
    return (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
            "Mcp-Session-Id: replica1.abc\r\n")  # fmt: skip


def test_a_client_address_cannot_hold_more_requests_in_flight_than_its_share() -> None:
    per_client = int(_setting(r"limit_conn mcp_conn_per_client (\d+);"))
    assert 0 < per_client <= 64  # no more than a replica's own max_connections_per_client
    with _holding_upstream() as (upstream, held), _nginx(upstream) as port:
        streams = [_send(port, _get(port)) for _ in range(per_client)]
        wait_until(lambda: len(held) >= per_client, "every request reached the upstream")
        with _send(port, _get(port)) as extra:
            assert _status(extra) == 429
        post = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
        with _send(port, post, b"{}") as another:  # another method, the same address
            assert _status(another) == 429
        for stream in streams:
            stream.close()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_over_the_replicas_cap_is_refused_by_the_proxy(chunked: bool) -> None:
    assert _setting(r"client_max_body_size (\w+);") == "4m"
    with _holding_upstream() as (upstream, held), _nginx(upstream) as port:
        body = b"x" * (MAX_BODY + 1)
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        if chunked:
            head += "Transfer-Encoding: chunked\r\n"
            payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:MAX_BODY], body[MAX_BODY:])) + b"0\r\n\r\n"
        else:
            head += f"Content-Length: {len(body)}\r\n"
            payload = body
        with _send(port, head) as sock:
            with contextlib.suppress(OSError):
                sock.sendall(payload)  # nginx may answer and close before the body is all sent
            assert _status(sock) == 413
        assert held == []  # never reached a replica
        ok = f"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {MAX_BODY}\r\n"
        with _send(port, ok, b"x" * MAX_BODY):
            wait_until(lambda: bool(held), "a body at the cap is passed on")
        assert held


def test_slow_clients_are_timed_out_as_a_replica_would() -> None:
    assert _setting(r"client_header_timeout (\d+)s;") == "10"
    assert _setting(r"client_body_timeout (\d+)s;") == "30"
    assert int(_setting(r"keepalive_timeout (\d+)s;")) <= 5
