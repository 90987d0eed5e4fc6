"""A loopback ``http.server`` sink and request heads, for the side-effect escape tests."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp_providers import _sideeffects


@contextlib.contextmanager
def sink() -> Iterator[tuple[tuple[str, int], list[str]]]:
    """A loopback ``http.server`` recording ``"METHOD /path"`` of every request it takes."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield ("127.0.0.1", server.server_address[1]), seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _post(address: tuple[str, int], path: str, line: bytes | None = None) -> bytes:
    first = line if line is not None else f"POST {path} HTTP/1.1".encode()
    return first + f"\r\nHost: {address[0]}:{address[1]}\r\nContent-Length: 4\r\nConnection: close\r\n\r\nDATA".encode()


def _scope() -> contextlib.AbstractContextManager[_sideeffects.Scope]:
    return _sideeffects.side_effect_scope(provider="p", plugin="plugin", target="mem://x")


def _finish(sock: socket.socket) -> None:
    """Read the answer, if any, so the server has taken the request before the test looks."""
    sock.settimeout(5)
    with contextlib.suppress(OSError):
        while sock.recv(1024):
            pass
