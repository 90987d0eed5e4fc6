"""Machine instructions per ``resources/read`` over streamable HTTP, counted by callgrind (issue 43).

``uv run python -m benchmarks.http_instructions [--reads N] [--clients C] [--kinds K,...]`` starts
each benchmark server of :mod:`benchmarks.serve` (``echo``: the raw-ASGI floor, ``mcpserver``
with OTel off, ``composed``, ``sdkfloor``) under ``valgrind --tool=callgrind``, on the same
uvicorn settings as ``serve --http``, and sends it, from ``C`` keep-alive connections of a small
client in this process (not under valgrind), the bytes ``wrk`` sends in the benchmark's wrk rows
(:data:`benchmarks.identity.HEADERS`, a 2025-11-25 stateless JSON read). It prints the server's
instructions per request, the cyclic garbage collector's share apart.

The window is counted inside the server: a wrapper around the served app zeroes the counters as
request ``W + 1`` enters the app (``os.getppid()``, through ``--zero-before``) and writes them out as
request ``W + N + 1`` enters it (``os.getpgrp()``, ``--dump-before``), so the window holds exactly
``N`` whole request cycles (uvicorn's parsing and writing included) after ``W`` warm-up requests.
The wrapper's own cost (one Python call and a counter per request) is in every server's figure.

Why instructions: they do not move with the machine's load, unlike the reads/s of ``wrk``
(see ``docs/benchmark-runs/2026-12-07-http-cost.md``). Needs ``valgrind`` on the ``PATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.identity import HEADERS, _body
from benchmarks.read_instructions import _counted

KINDS = {"echo": ["echo"], "mcpserver": ["mcpserver", "--no-otel"], "composed": ["composed"], "sdkfloor": ["sdkfloor"]}
WARM = 300


def _serve(argv: list[str], port: int, warm: int, reads: int) -> None:
    """Under callgrind: serve ``argv``'s kind on ``port``, the window around requests ``warm + 1``
    to ``warm + reads``."""
    import uvicorn

    from benchmarks import serve
    from mcp_providers._serve.transport.limits import uvicorn_config

    app = serve.app_of(argv[0], port, no_otel="--no-otel" in argv)
    seen = 0

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        nonlocal seen
        if scope["type"] == "http":
            seen += 1
            if seen == warm + 1:
                os.getppid()  # callgrind --zero-before: the window starts
            elif seen == warm + reads + 1:
                os.getpgrp()  # callgrind --dump-before: the window ends
        await app(scope, receive, send)

    uvicorn.Server(uvicorn_config(counted, "127.0.0.1", port)).run()


def _request(port: int) -> bytes:
    body = _body().encode()
    lines = [b"POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}".encode()]
    lines += [f"{k}: {v}".encode() for k, v in HEADERS.items()]
    lines += [f"Content-Length: {len(body)}".encode(), b"", body]
    return b"\r\n".join(lines)


async def _send(port: int, clients: int, total: int) -> None:
    """``total`` requests over ``clients`` keep-alive connections, each waiting for its answer.

    :raises RuntimeError: an answer was not ``200``.
    """
    request, left = _request(port), total

    async def one() -> None:
        nonlocal left
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while left > 0:
                left -= 1
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"answer: {head[:200]!r}")
                length = next(
                    int(h.split(b":")[1]) for h in head.lower().split(b"\r\n") if h.startswith(b"content-length")
                )
                await reader.readexactly(length)
        finally:
            writer.close()

    await asyncio.gather(*(one() for _ in range(clients)))


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.closing(socket.socket()) as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise SystemExit(f"the server under callgrind did not listen (exit {proc.poll()})")


def count(kind: str, reads: int, clients: int, keep: Path | None = None) -> tuple[int, int]:
    """``(instructions, of which the cyclic collector's)`` in the window of ``reads`` requests."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", "--zero-before=os_getppid", "--dump-before=os_getpgrp"]
        command += ["--instr-atstart=no"]  # start-up runs uncounted, at a few times the speed
        command += [f"--callgrind-out-file={out}", sys.executable, "-m", "benchmarks.http_instructions"]
        command += ["--serve", ",".join(KINDS[kind]), "--port", str(port), "--reads", str(reads)]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait(port, proc)
            subprocess.run(["callgrind_control", "--instr=on", str(proc.pid)], check=True, capture_output=True)
            asyncio.run(_send(port, clients, WARM + reads + clients))
        finally:
            proc.send_signal(2)
            proc.wait(timeout=300)
        dumps = sorted(Path(folder).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        if not dumps:
            raise SystemExit(f"{kind}: no callgrind window was written")
        if keep is not None:
            shutil.copy(dumps[0], keep)
        return _counted(dumps[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=500, help="requests counted per server (default 500)")
    parser.add_argument("--clients", type=int, default=10, help="keep-alive connections (default 10)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="servers, comma-separated: " + ", ".join(KINDS))
    parser.add_argument("--keep", type=Path, help="copy each window's callgrind file to KEEP.<kind>")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the server under callgrind
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        _serve(args.serve.split(","), args.port, WARM, args.reads)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on the PATH: install it (apt-get install valgrind) to count instructions")
    print(f"streamable HTTP read, 2025-11-25 stateless JSON: instructions per request ({args.reads} requests, "
          f"{args.clients} connections, callgrind)")  # fmt: skip
    print(f"{'server':12} {'without GC':>11} {'cyclic GC':>10}")
    for kind in args.kinds.split(","):
        keep = None if args.keep is None else args.keep.with_name(f"{args.keep.name}.{kind}")
        total, collector = count(kind, args.reads, args.clients, keep)
        print(
            f"{kind:12} {(total - collector) / args.reads / 1000:10.1f}k {collector / args.reads / 1000:9.1f}k",
            flush=True,
        )


if __name__ == "__main__":
    main()
