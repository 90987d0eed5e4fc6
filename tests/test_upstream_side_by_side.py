"""Upstreams that never answer start and stop side by side (round 12, brief U): a host mounting a
composition did not answer its own /health for 28 s with four hung stdio upstreams at read_timeout
5 s, each one's connection waited for in turn; shutdown took 2 s per hung stdio upstream. Real
processes (a Python script that never answers) and a loopback HTTP server that accepts and is silent.

The bounds are about concurrency, not speed: N hung upstreams at ``read_timeout`` T take about T,
where one after another would take N*T; the margins are generous."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import prefork
import pytest
from hosts_support import silent_server

from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream.link import BACKOFF
from mcp_providers.plugins.upstream.providers import UpstreamResources
from mcp_providers.plugins.upstream.stdio import TERMINATION_SECONDS
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

TINY = str(Path(__file__).with_name("tiny_stdio_upstream.py"))
RAW = str(Path(__file__).with_name("raw_stdio_upstream.py"))  # no SDK to import: it answers at once
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
    with silent_server("/mcp") as url:
        yield url


# Answers once (its listing at composition), then never: each later start finds its flag and hangs.
ONCE = (
    "import os, sys, time\n"
    "flag, raw, here = sys.argv[1:]\n"
    "if os.path.exists(flag):\n    time.sleep(1000)\n"
    "open(flag, 'w').close()\n"
    "os.execv(sys.executable, [sys.executable, raw, here])\n"
)


def _servers(hung: int, silent_url: str | None) -> list[dict[str, object]]:
    # the good one's own timeout is not what is measured: generous, for a loaded machine's SDK imports
    good = {"name": "good", **prefork.upstream_script(TINY, "good"), "prefixes": ["good://"],
            "tool_prefix": "g_", "read_timeout": 30}  # fmt: skip
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
    composed = compose({"upstream": upstream}, {"upstream": {"servers": _servers(hung, silent_url)}}, strict=False)
    began = time.monotonic()
    async with composed.running():
        started = time.monotonic() - began
        async with connect(composed) as client:
            with anyio.fail_after(10):
                read = await client.read_resource("good://note")
        assert read.contents[0].text == "note of good"  # type: ignore[union-attr]
        names = {d.provider.name for d in composed.assembly.declared if isinstance(d.provider, UpstreamResources)}
        assert "upstream-good" in names and "upstream-good" not in composed.runtime.startup_failures
        # each hung one failed its first handshake, waits BACKOFF[0] and is then in its second: its
        # process is open, and closing it takes TERMINATION_SECONDS (it ignores its stdin's end)
        await anyio.sleep(BACKOFF[0] + 0.8)
        leaving = time.monotonic()
    return started, time.monotonic() - leaving


async def test_hung_upstreams_start_and_stop_in_about_one_timeout(silent_url: str) -> None:
    """Four hung stdio upstreams and a silent HTTP one beside a good one: one after another, the
    start took 4 * (T + the grace) + T, about 18 s, and the stop about 4 graces, 7 s."""
    started, stopped = await _served_beside(4, silent_url)
    assert started < START_BOUND, f"start took {started:.1f} s: the upstreams were waited for one after another"
    assert stopped < STOP_BOUND, f"stop took {stopped:.1f} s: the hung processes were closed one after another"


async def test_upstreams_listed_at_composition_that_hang_at_start_each_fail_alone_side_by_side(tmp_path: Path) -> None:
    """Listed at composition, then hung: each must answer at start, so each fails to start, alone,
    recorded as before, while the good one serves; one after another that took 3 * (T + the grace)."""
    servers = _servers(0, None)
    for n in range(3):
        (tmp_path / str(n)).mkdir()
        servers.append({"name": f"hung{n}", "command": sys.executable, "prefixes": [f"raw://{n}/"],
                        "args": ["-c", ONCE, str(tmp_path / f"hung{n}"), RAW, str(tmp_path / str(n))],
                        "tool_prefix": f"h{n}_", "read_timeout": TIMEOUT})  # fmt: skip
    composed = compose({"upstream": upstream}, {"upstream": {"servers": servers}}, strict=False)  # hung ones too
    began = time.monotonic()
    async with composed.running():
        started = time.monotonic() - began
        failures = dict(composed.runtime.startup_failures)
        async with connect(composed) as client:
            with anyio.fail_after(10):
                read = await client.read_resource("good://note")
        assert read.contents[0].text == "note of good"  # type: ignore[union-attr]
    assert started < START_BOUND, f"start took {started:.1f} s: the upstreams were waited for one after another"
    assert sorted(failures) == ["upstream-hung0", "upstream-hung1", "upstream-hung2"]
    for n in range(3):
        assert f"upstream 'hung{n}' (stdio) could not be started" in failures[f"upstream-hung{n}"]
