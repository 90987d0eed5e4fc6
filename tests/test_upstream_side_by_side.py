"""Upstreams that never answer start and stop side by side (round 12, brief U): a host mounting a
composition did not answer its own /health for 28 s with four hung stdio upstreams at read_timeout
5 s, each one's connection waited for in turn; shutdown took 2 s per hung stdio upstream. Real
processes (a Python script that never answers) and a loopback HTTP server that accepts and is silent.

The bounds are about concurrency, not speed: N hung upstreams at ``read_timeout`` T take about T,
where one after another would take N*T; the margins are generous."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream.providers import UpstreamResources
from mcp_providers.plugins.upstream.stdio import TERMINATION_SECONDS
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

TINY = str(Path(__file__).with_name("tiny_stdio_upstream.py"))
HUNG = "import time; time.sleep(1000)"  # a process that never answers, nor leaves when its stdin closes
TIMEOUT = 2.0
# A hung stdio upstream's failed handshake costs T plus the grace its process gets to leave once its
# stdin is closed (then it is killed): one attempt, side by side, is about 4 s.
START_BOUND = TIMEOUT + TERMINATION_SECONDS + 2.5
STOP_BOUND = TERMINATION_SECONDS + 2.5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime hosts providers in an asyncio task of its own


@pytest.fixture
def silent_url() -> Iterator[str]:
    """An HTTP upstream on loopback that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # closed: the test is over
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    listener.close()
    for conn in held:
        conn.close()


def _servers(hung: int, silent_url: str | None) -> list[dict[str, object]]:
    good = {"name": "good", "command": sys.executable, "args": [TINY, "good"], "prefixes": ["good://"],
            "tool_prefix": "g_", "read_timeout": TIMEOUT}  # fmt: skip
    servers: list[dict[str, object]] = [good]
    for n in range(hung):
        servers.append({"name": f"hung{n}", "command": sys.executable, "args": ["-c", HUNG],
                        "prefixes": [f"hung{n}://"], "tool_prefix": f"h{n}_", "read_timeout": TIMEOUT})  # fmt: skip
    if silent_url is not None:
        servers.append({"name": "silent", "url": silent_url, "prefixes": ["silent://"], "tool_prefix": "s_",
                        "read_timeout": TIMEOUT})  # fmt: skip
    return servers


async def _served_beside(hung: int, silent_url: str | None) -> tuple[float, float]:
    """Seconds the composition of ``hung`` hung stdio upstreams (and the silent HTTP one) and one
    good upstream took to start and to stop, once the good one served a read in between."""
    composed = compose({"upstream": upstream}, {"upstream": {"servers": _servers(hung, silent_url)}})
    began = time.monotonic()
    async with composed.running():
        started = time.monotonic() - began
        async with connect(composed) as client:
            with anyio.fail_after(10):
                read = await client.read_resource("good://note")
        assert read.contents[0].text == "note of good"  # type: ignore[union-attr]
        names = {d.provider.name for d in composed.assembly.declared if isinstance(d.provider, UpstreamResources)}
        assert "upstream-good" in names and "upstream-good" not in composed.runtime.startup_failures
        leaving = time.monotonic()
    return started, time.monotonic() - leaving


async def test_hung_upstreams_start_and_stop_in_about_one_timeout(silent_url: str) -> None:
    """Three hung stdio upstreams and a silent HTTP one beside a good one: one after another, the
    start took 3 * (T + the grace) + T, about 14 s, and the stop about 3 graces."""
    started, stopped = await _served_beside(3, silent_url)
    assert started < START_BOUND, f"start took {started:.1f} s: the upstreams were waited for one after another"
    assert stopped < STOP_BOUND, f"stop took {stopped:.1f} s: the hung processes were closed one after another"
