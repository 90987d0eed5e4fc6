"""Machine instructions per in-memory read, counted by valgrind's callgrind (issue 43).

``uv run python -m benchmarks.read_instructions [--reads N]`` runs this module again under
``valgrind --tool=callgrind`` and prints, for ``MCPServer`` (OTel off), the composed server and the
SDK floor, the instructions one ``resources/read`` through the SDK ``Client`` executes (the
interpreter's and every C library's), with the cyclic garbage collector's share apart. Each server's
``N`` reads (default 200, after 200 to warm up) are one callgrind window: the counters are zeroed
when the window's first read is about to start (``os.getppid()``, through ``--zero-before``) and
written out when its last has ended (``os.getpgrp()``, ``--dump-before``).

Why count instructions: they are the same on a loaded machine as on an idle one (the CPU times of
:mod:`benchmarks.read_cost` move by 10 to 20 % when other processes run), and unlike calls per read
they weigh each call by what it does. The garbage collector is shown apart because a window of a few
hundred reads either catches a full collection (some 40 million instructions on this heap) or not,
by chance. It takes a few minutes (callgrind runs Python some 50 times slower); it needs
``valgrind`` on the ``PATH``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from benchmarks import fixtures

SERVERS = ("MCPServer (OTel off)", "composed", "SDK floor")


async def _windows(reads: int) -> None:
    """Under callgrind: one window of ``reads`` reads per server, in :data:`SERVERS` order."""
    from mcp import Client

    uri = fixtures.fixed_uri(0, 3)
    servers = (fixtures.mcpserver(1, otel=False), fixtures.composed(1).server, fixtures.sdk_floor())
    async with contextlib.AsyncExitStack() as stack:
        clients: list[Any] = [await stack.enter_async_context(Client(s, mode="auto", cache=None)) for s in servers]
        for client in clients:
            for _ in range(200):
                await client.read_resource(uri)
        for client in clients:
            os.getppid()  # callgrind --zero-before: the window starts
            for _ in range(reads):
                await client.read_resource(uri)
            os.getpgrp()  # callgrind --dump-before: the window ends


def _counted(dump: Path) -> tuple[int, int]:
    """``(instructions, of which the cyclic collector's)`` in one callgrind dump."""
    names: dict[str, str] = {}
    total = collector = 0
    callee = ""
    lines = dump.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("summary:"):
            total = int(line.split()[1])
        elif match := re.match(r"c?fn=\((\d+)\)(?: (.*))?", line):
            if match.group(2):
                names[match.group(1)] = match.group(2)
            if line.startswith("cfn="):
                callee = names.get(match.group(1), "")
        elif line.startswith("calls=") and callee.startswith("gc_collect_main"):
            collector += int(lines[i + 1].split()[1])  # the cost line after calls= is inclusive
    return total, collector


def measure(reads: int) -> None:
    """Run :func:`_windows` under callgrind and print instructions per read (see the module docstring).

    :raises SystemExit: valgrind is not installed, or the run under it failed.
    """
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on the PATH: install it (apt-get install valgrind) to count instructions")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", "--zero-before=os_getppid", "--dump-before=os_getpgrp"]
        command += [f"--callgrind-out-file={out}", sys.executable, "-m", "benchmarks.read_instructions"]
        command += ["--window", str(reads)]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        dumps = sorted(Path(folder).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        if done.returncode != 0 or len(dumps) != len(SERVERS):
            raise SystemExit(f"the run under callgrind failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        counted = {name: _counted(dump) for name, dump in zip(SERVERS, dumps, strict=True)}
    print(f"in-memory read, mode auto: instructions per read ({reads} reads per server, callgrind)")
    print(f"{'server':24} {'without GC':>11} {'cyclic GC':>10}")
    for name, (total, collector) in counted.items():
        print(f"{name:24} {(total - collector) / reads / 1000:10.1f}k {collector / reads / 1000:9.1f}k")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=200, help="reads counted per server (default 200)")
    parser.add_argument("--window", type=int, help=argparse.SUPPRESS)  # the run under callgrind
    args = parser.parse_args()
    if args.window is not None:
        anyio.run(_windows, args.window)
    else:
        measure(args.reads)


if __name__ == "__main__":
    main()
