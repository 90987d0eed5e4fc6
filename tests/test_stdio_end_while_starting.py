"""A client that closes stdin while a provider is still starting is not kept waiting.

``serve`` over stdio starts every provider's ``lifespan`` before it reads the first request, each
bounded by :data:`~mcp_providers._serve.runtime.START_SECONDS` (60 s). A client that gave up and
closed stdin in that time (the first step of the spec's stdio shutdown) kept the process alive
until the bound ran out. Input that ends before any request now stops the start: the providers on
their way in are cancelled and left, and the process exits at once.

Where the pipe transport does not apply (stdout a regular file or a terminal), the SDK's stdio
transport serves instead; it enters the lifespan inside ``Server.run`` before it reads, so there
the start bound still applies (a forwarding stream in front of it lost a request sent just before
the end of input: tester twenty-three F4). Either way a request sent before the end is answered.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
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


@pytest.mark.parametrize("stdout", ["pipe", "file"])
def test_a_request_sent_just_before_stdin_closes_during_the_start_is_answered(tmp_path: Path, stdout: str) -> None:
    """A provider that takes a second to start; ``ping`` then the end of input while it starts: the
    answer comes once it has started (pipe: this project's transport; file: the SDK's)."""
    marker, out = tmp_path / "marker", tmp_path / "out"
    with (
        out.open("wb") as file,
        subprocess.Popen(
            [*python(), str(SERVER), str(marker), "1.0"],
            stdin=subprocess.PIPE,
            stdout=file if stdout == "file" else subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as process,
    ):
        try:
            _wait_for(marker, "started")
            assert process.stdin is not None
            process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}).encode() + b"\n")
            process.stdin.close()
            written = process.stdout.read() if process.stdout is not None else b""
            process.wait(START_WAIT)
        finally:
            process.kill()
    lines = (written or out.read_bytes()).splitlines()
    assert [json.loads(line).get("id") for line in lines] == [9]
