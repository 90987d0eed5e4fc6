"""Helpers for the reliability tests: install a test distribution, and a raw stdio JSON-RPC peer.

:class:`RawStdio` runs ``python -m mcp_providers serve`` and speaks newline-delimited JSON-RPC to
it byte for byte, with no SDK client in between, so a test sees exactly what is on stdout.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from prefork import python
from real_parts import installed_distribution

WAIT_SECONDS = 60
"""Upper bound on waiting for one answer (a bound on the test, not an assertion about speed)."""


INIT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
"""A raw ``initialize`` request (id 1, protocol 2025-11-25)."""
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def install_target(source: Path, target: Path) -> None:
    """Install a distribution (no dependencies) into ``target``, as pip/uv would into site-packages
    (a copy of the one install per machine of its current files: :func:`real_parts.installed_distribution`)."""
    installed_distribution(source, target)


class RawStdio:
    """``mcp-providers serve`` over stdio, driven with raw JSON-RPC lines.

    Every stdout line must parse as JSON-RPC; any line that does not, or that answers no request
    this peer sent, lands in :attr:`stray_lines` (tests assert it stays empty).
    """

    def __init__(self, env: dict[str, str], stderr_path: Path, *args: str) -> None:
        self._env = env
        self._stderr_path = stderr_path
        self._args = args
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 0
        self.stray_lines: list[bytes] = []
        self.notifications: list[dict[str, Any]] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._pump_thread: threading.Thread | None = None

    def __enter__(self) -> RawStdio:
        self._stderr = self._stderr_path.open("wb")
        self._process = subprocess.Popen(
            [*python(), "-m", "mcp_providers", "serve", *self._args],
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        process = self.process
        if process.stdin:
            process.stdin.close()
        try:
            process.wait(timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if self._pump_thread is not None:
            self._pump_thread.join(timeout=WAIT_SECONDS)
        if process.stdout:
            process.stdout.close()
        if self._stderr:
            self._stderr.close()

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self._process is not None, "use RawStdio as a context manager"
        return self._process

    def _pump(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for line in stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send_raw(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def send(self, message: dict[str, Any], *, line_end: bytes = b"\n") -> None:
        self.send_raw(json.dumps(message).encode() + line_end)

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def receive(self, request_id: int | str | None) -> dict[str, Any]:
        """The next answer to ``request_id`` (``None``: an answer whose id is null, e.g. a parse error)."""
        while True:
            try:
                line = self._lines.get(timeout=WAIT_SECONDS)
            except queue.Empty:
                raise AssertionError(f"no answer to request {request_id!r} within {WAIT_SECONDS} s") from None
            if line is None:
                raise AssertionError(f"the server closed stdout before answering request {request_id!r}")
            try:
                message = json.loads(line)
            except ValueError:
                self.stray_lines.append(line)
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                self.stray_lines.append(line)
                continue
            if "method" in message and "id" not in message:
                self.notifications.append(message)
                continue
            if message.get("id") == request_id:
                return message
            self.stray_lines.append(line)

    def request(self, method: str, params: dict[str, Any] | None = None, *, line_end: bytes = b"\n") -> dict[str, Any]:
        request_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message, line_end=line_end)
        return self.receive(request_id)

    def initialize(self, protocol_version: str = "2025-11-25") -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": {},
                "clientInfo": {"name": "raw-stdio-test", "version": "0"},
            },
        )
        assert "result" in answer, answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer
