"""What one ``resources/read`` over streamable HTTP costs the server beyond its instructions (issue 43).

``uv run python -m benchmarks.http_events [--reads N] [--clients C] [--kinds K,...] [--no-strace]``
starts each server of :mod:`benchmarks.serve` (``echo``: the raw-ASGI floor, ``mcpserver`` with
OTel off, ``composed``, ``sdkfloor``) with the uvicorn settings of ``serve --http`` and sends it,
from ``C`` keep-alive connections of a client in this process, what the benchmark's wrk rows send
(:func:`benchmarks.http_instructions._send`). It prints, per request, over a window of exactly
``N`` requests after a warm-up, as :mod:`benchmarks.http_instructions` takes it (a wrapper around
the app marks request ``W + 1`` and request ``W + N + 1`` as they enter it):

- ``ctxsw v/nv``: voluntary and involuntary context switches of the process (``getrusage``);
- ``cpu us``: user and system CPU time of the process, in microseconds (``getrusage``; moves with
  the machine's load, unlike the counts);
- ``threads``: the most threads the process had at the window's two marks (a thread started
  in the window shows as ``clone`` in the system calls), and the thread-pool jobs
  (``ThreadPoolExecutor.submit``) per request;
- ``gc``: collections of the cyclic collector per request, by generation (``gc.callbacks``);
- ``timers``: ``loop.call_at`` per request (``call_later`` goes through it), and ``handles``:
  ``loop.call_soon`` per request;
- with strace (the default, a second run of the server under ``strace -f``): system calls per
  request by name, between the two marks (``getppid``, ``getpgrp``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import concurrent.futures
import contextlib
import gc
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.http_instructions import KINDS, WARM, _free_port, _send

_STRACE_LINE = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?([a-z_0-9]+)\(")


class _Counters:
    """Event counts in the server process, read at the window's two marks."""

    def __init__(self) -> None:
        self.gc = [0, 0, 0]
        self.call_at = 0
        self.call_soon = 0
        self.submits = 0
        self.threads = 0

    def install(self) -> None:
        """Count the cyclic collector's runs, the loop's timers and handles, and pool jobs."""
        gc.callbacks.append(self._collected)
        loop_class = asyncio.BaseEventLoop
        call_at, call_soon = loop_class.call_at, loop_class.call_soon
        submit = concurrent.futures.ThreadPoolExecutor.submit

        def counted_call_at(loop: Any, *args: Any, **kwargs: Any) -> Any:
            self.call_at += 1
            return call_at(loop, *args, **kwargs)

        def counted_call_soon(loop: Any, *args: Any, **kwargs: Any) -> Any:
            self.call_soon += 1
            return call_soon(loop, *args, **kwargs)

        def counted_submit(pool: Any, *args: Any, **kwargs: Any) -> Any:
            self.submits += 1
            return submit(pool, *args, **kwargs)

        loop_class.call_at = counted_call_at  # type: ignore[method-assign]
        loop_class.call_soon = counted_call_soon  # type: ignore[method-assign]
        concurrent.futures.ThreadPoolExecutor.submit = counted_submit  # type: ignore[method-assign]

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.gc[info["generation"]] += 1

    def snapshot(self) -> dict[str, Any]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.threads = max(self.threads, threading.active_count(), len(os.listdir("/proc/self/task")))
        return {
            "nvcsw": usage.ru_nvcsw,
            "nivcsw": usage.ru_nivcsw,
            "utime": usage.ru_utime,
            "stime": usage.ru_stime,
            "gc": list(self.gc),
            "call_at": self.call_at,
            "call_soon": self.call_soon,
            "submits": self.submits,
        }


def _serve(argv: list[str], port: int, reads: int, out: Path) -> None:
    """Serve ``argv``'s kind on ``port``; write the counters' difference over the window to ``out``."""
    import uvicorn

    from benchmarks import serve
    from mcp_providers._serve.transport.limits import uvicorn_config

    counters = _Counters()
    counters.install()
    app = serve.app_of(argv[0], port, no_otel="--no-otel" in argv)
    seen = 0
    start: dict[str, Any] = {}

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        nonlocal seen
        if scope["type"] == "http":
            seen += 1
            if seen == WARM + 1:
                os.getppid()  # the strace window starts
                start.update(counters.snapshot())
            elif seen == WARM + reads + 1:
                os.getpgrp()  # the strace window ends
                end = counters.snapshot()
                diff = {k: _minus(end[k], start[k]) for k in end}
                out.write_text(json.dumps({**diff, "threads": counters.threads}))
        await app(scope, receive, send)

    uvicorn.Server(uvicorn_config(counted, "127.0.0.1", port)).run()


def _minus(a: Any, b: Any) -> Any:
    return [x - y for x, y in zip(a, b, strict=True)] if isinstance(a, list) else a - b


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    import socket

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.closing(socket.socket()) as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"the server did not listen (exit {proc.poll()})")


def run(kind: str, reads: int, clients: int, *, strace: bool) -> dict[str, Any]:
    """One server's window: the counters (and, ``strace``, system calls by name), not divided."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as folder:
        out, trace = Path(folder) / "counters.json", Path(folder) / "strace.log"
        command = [sys.executable, "-m", "benchmarks.http_events", "--serve", ",".join(KINDS[kind])]
        command += ["--port", str(port), "--reads", str(reads), "--out", str(out)]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tracer = None
        try:
            _wait_listening(port, proc)
            if strace:  # attached to every thread of the server, and to those it starts
                argv = ["strace", "-f", "-qq", "-o", str(trace), "-p", str(proc.pid)]
                tracer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            asyncio.run(_send(port, clients, WARM + reads + clients))
        finally:
            proc.send_signal(2)
            proc.wait(timeout=60)
            if tracer is not None:
                tracer.wait(timeout=60)
        counts: dict[str, Any] = json.loads(out.read_text())
        if strace:
            counts["syscalls"] = _syscalls(trace.read_text().splitlines())
        return counts


def _syscalls(lines: list[str]) -> dict[str, int]:
    """System calls by name between the ``getppid`` and ``getpgrp`` marks of a ``strace -f`` log."""
    counted: collections.Counter[str] = collections.Counter()
    inside = False
    for line in lines:
        if (match := _STRACE_LINE.match(line)) is None:
            continue
        name = match.group(1)
        if name == "getppid" and not inside:
            inside = True
        elif name == "getpgrp" and inside:
            break
        elif inside:
            counted[name] += 1
    return dict(counted)


def _row(kind: str, counts: dict[str, Any], reads: int) -> str:
    per = lambda value: value / reads  # noqa: E731
    gc0, gc1, gc2 = (per(g) for g in counts["gc"])
    text = f"{kind:10} ctxsw v/nv {per(counts['nvcsw']):5.2f}/{per(counts['nivcsw']):5.2f}"
    text += f"  cpu us usr/sys {per(counts['utime']) * 1e6:6.0f}/{per(counts['stime']) * 1e6:5.0f}"
    text += f"  threads {counts['threads']} jobs {per(counts['submits']):.2f}"
    text += f"  gc {gc0:.3f}/{gc1:.4f}/{gc2:.5f}  timers {per(counts['call_at']):.2f}"
    text += f"  handles {per(counts['call_soon']):.2f}"
    if "syscalls" in counts:
        calls = counts["syscalls"]
        named = ", ".join(f"{n} {per(c):.2f}" for n, c in sorted(calls.items(), key=lambda kv: -kv[1]))
        text += f"\n{'':10} syscalls {per(sum(calls.values())):.2f}: {named}"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=2000, help="requests in the window (default 2000)")
    parser.add_argument("--clients", type=int, default=10, help="keep-alive connections (default 10)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="servers, comma-separated: " + ", ".join(KINDS))
    parser.add_argument("--no-strace", action="store_true", help="skip the system-call count")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the server process
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        _serve(args.serve.split(","), args.port, args.reads, args.out)
        return
    strace = not args.no_strace and shutil.which("strace") is not None
    print(f"streamable HTTP read, 2025-11-25 stateless JSON: per request ({args.reads} requests, "
          f"{args.clients} connections)")  # fmt: skip
    for kind in args.kinds.split(","):
        counts = run(kind, args.reads, args.clients, strace=False)
        if strace:
            counts["syscalls"] = run(kind, args.reads, args.clients, strace=True)["syscalls"]
        print(_row(kind, counts, args.reads), flush=True)


if __name__ == "__main__":
    main()
