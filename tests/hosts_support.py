"""What several test files need of a process or a server beside the test: a loopback server that
accepts connections and never answers, and a host script run once per side-effect level."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


@contextlib.contextmanager
def silent_server(path: str) -> Iterator[str]:
    """``http://127.0.0.1:<port><path>`` of a server that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # closed: the test is over
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}{path}"
    finally:
        listener.close()
        for conn in held:
            conn.close()


def run_host(script: str, level: str, folder: Path) -> dict[str, Any]:
    """Run ``tests/<script> <level> <folder>`` in a process of its own (no ``MCP_PROVIDERS_``/
    ``PYDANTIC_`` variables of ours); what it printed as JSON, with its ``stderr``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_PROVIDERS_", "PYDANTIC_"))}
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, script), level, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    seen["stderr"] = done.stderr
    return seen
