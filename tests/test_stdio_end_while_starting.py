"""A client that closes stdin while a provider is still starting is not kept waiting.

``serve`` over stdio starts every provider's ``lifespan`` before it reads the first request, each
bounded by :data:`~mcp_providers._serve.runtime.START_SECONDS` (60 s). A client that gave up and
closed stdin in that time (the first step of the spec's stdio shutdown) kept the process alive
until the bound ran out. Input that ends before any request now stops the start: the providers on
their way in are cancelled and left, and the process exits at once.

Where the pipe transport does not apply (stdout a regular file or a terminal), the SDK's stdio
transport serves instead; input that ends before any message stops it the same way.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from prefork import python
from reliability_support import INIT

SERVER = Path(__file__).with_name("stdio_starting_server.py")
START_WAIT = 30.0  # a loaded machine's process start-up
EXIT_SECONDS = 5.0  # far under START_SECONDS (60 s) and STOP_SECONDS (10 s, a lifespan's stop)


def _wait_for(marker: Path, text: str) -> None:
    deadline = time.monotonic() + START_WAIT
    while marker.read_text() != text if marker.exists() else True:
        assert time.monotonic() < deadline, f"the provider's lifespan never wrote {text!r}"
        time.sleep(0.02)


def _server(marker: Path) -> subprocess.Popen[bytes]:
    """The server, its stdout a pipe: the pipe transport ``serve`` uses (see above for a file)."""
    return subprocess.Popen(
        [*python(), str(SERVER), str(marker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_stdin_closed_while_a_provider_starts_ends_the_process_at_once(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with _server(marker) as process:
        try:
            _wait_for(marker, "started")
            assert process.stdin is not None
            process.stdin.close()
            code = process.wait(EXIT_SECONDS)
        finally:
            process.kill()
    assert code == 0
    assert marker.read_text() == "stopped"  # left, not abandoned: its clean-up ran


def test_a_request_sent_before_stdin_closes_still_waits_for_the_start(tmp_path: Path) -> None:
    """``echo '{...}' | serve``: a request then the end of input is not a client that gave up; the
    start goes on (the provider never starts here, so the process is still running a second on)."""
    marker = tmp_path / "marker"
    with _server(marker) as process:
        try:
            _wait_for(marker, "started")
            assert process.stdin is not None
            process.stdin.write(json.dumps(INIT).encode() + b"\n")
            process.stdin.close()
            time.sleep(1.0)
            assert process.poll() is None
            assert marker.read_text() == "started"
        finally:
            process.kill()
