"""The side-effect scope's cost per read (issue 16; target: under 5 % of the read).

Run alone: ``uv run python -m benchmarks.sideeffects [--quick]``; or in the full table with
``uv run --group bench python -m benchmarks --only sideeffects``.

The two cases run in two worker processes (``python -m benchmarks.sideeffects --worker KIND``),
driven round by round from the benchmark process, so the baseline is a process where the scope was
**never installed**: no audit hook, no HTTP patches, the invoker's ``enter_scope`` swapped for a
no-op and the server's start-up ``install`` call skipped (the worker checks at the end that nothing
installed it). The other
worker reads as the server does, every read inside the scope; a third, like the first, is the A/A
check (how far two identical processes differ here). Each worker measures:

- a whole ``resources/read`` through the SDK's in-memory client (2026-07-28);
- the provider's ``read()`` called directly, bare (never-installed worker) or entered and left as
  the invoker does (``enter_scope``/``exit_scope``): the scope's absolute cost in microseconds,
  with no client or server around it;
- the host's own ``socket.send`` (64 bytes on a socket pair, outside any scope): in the
  never-installed worker, in a fourth worker running an embedded composition as ``mount()``
  starts one by default (the audit hook only, nothing patched), and in the process-wide one
  (``serve``, or an embedder who opted in). The embedded row is the "host's sockets pay nothing"
  check (issue 43); the process-wide row is what opting in costs every send of the host.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

from benchmarks import fixtures
from benchmarks.timing import Emit, interleaved, standalone

ROOT = Path(__file__).resolve().parent.parent
BARE, SCOPED, EMBEDDED = "bare", "scoped", "embedded"
CLIENT_BARE = "client read, scope never installed (separate process)"
CLIENT_SCOPED = "client read, in the scope"
AA = "bare-2"
CLIENT_AA = "client read, scope never installed, a second such process (A/A check)"
DIRECT_BARE = "provider read() alone, scope never installed"
DIRECT_SCOPED = "provider read() alone, in the scope"
SEND_BARE = "host socket.send, nothing installed"
SEND_EMBEDDED = "host socket.send, embedded composition running (default: nothing patched)"
SEND_PROCESS = "host socket.send, process-wide guards (serve, or opted in)"
SEND_AA = "host socket.send, nothing installed, the second such process (A/A check)"
SENDS = 100  # sends per timed batch (well under a socket pair's buffer); the peer is drained between batches


def _no_scope(*_args: Any) -> tuple[None, None]:
    return None, None  # the invoker skips leaving a scope it never entered


@contextlib.contextmanager
def _scope_removed() -> Iterator[None]:
    """The invoker without the side-effect scope (it enters one through ``enter_scope``)."""
    from mcp_providers._serve.steps import invoker as server

    real = server.enter_scope
    server.enter_scope = _no_scope  # type: ignore[assignment]
    try:
        yield
    finally:
        server.enter_scope = real


async def _serve_commands(kind: str) -> None:
    """The worker: answer ``client N`` / ``direct N`` lines with ms per read, until end of input."""
    from mcp import Client

    from mcp_providers import _sideeffects
    from mcp_providers.providers import ReadRequest

    if kind == SCOPED:
        _sideeffects.install()
    elif kind == BARE:  # the running composition installs the audit hook at start-up: not in this worker
        from mcp_providers._serve import runtime

        runtime.install_scoped = lambda: None  # type: ignore[assignment]
    composition = fixtures.composed(1)
    composition.runtime.process_guards = kind == SCOPED  # as serve does; EMBEDDED keeps mount()'s default
    uri = fixtures.fixed_uri(0, 3)
    route = composition.catalog.find(uri)
    assert route is not None, uri
    provider, request = route.provider, ReadRequest(uri=uri, resource=route.declaration)
    with contextlib.nullcontext() if kind == SCOPED else _scope_removed():
        async with Client(composition.server, mode="auto", cache=None) as client:  # type: ignore[arg-type]
            await client.read_resource(uri)
            for line in sys.stdin:
                what, n = line.split()
                t0 = time.perf_counter()
                if what == "send":
                    print(_host_sends(int(n)), flush=True)  # ms per send (the driver makes it us)
                    continue
                if what == "client":
                    for _ in range(int(n)):
                        await client.read_resource(uri)
                elif kind == SCOPED:
                    for _ in range(int(n)):  # entered and left as the invoker does
                        scope, token = _sideeffects.enter_scope("gen", "gen0000", uri, "read", "enforce")
                        try:
                            await provider.read(request)
                        finally:
                            _sideeffects.exit_scope(scope, token)
                else:
                    for _ in range(int(n)):
                        await provider.read(request)
                print((time.perf_counter() - t0) / int(n) * 1000, flush=True)
    if kind != SCOPED and (_sideeffects.process_wide() or hasattr(socket.socket.send, "__wrapped__")):
        raise RuntimeError(f"the {kind} worker installed the process-wide side-effect guards")


def _host_sends(batches: int) -> float:
    """Milliseconds per ``socket.send`` of 64 bytes by the host's own code (outside any scope),
    timed in batches of :data:`SENDS` with the peer drained between them."""
    mine, peer = socket.socketpair()
    payload, total = b"x" * 64, 0.0
    try:
        for _ in range(batches):
            t0 = time.perf_counter()
            for _ in range(SENDS):
                mine.send(payload)
            total += time.perf_counter() - t0
            left = SENDS * len(payload)
            while left:
                left -= len(peer.recv(left))
    finally:
        mine.close()
        peer.close()
    return total * 1000 / (batches * SENDS)


class Worker:
    def __init__(self, kind: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.sideeffects", "--worker", kind], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip

    def ms(self, what: str, n: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{what} {n}\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"side-effect worker {self.proc.args} stopped")
        return float(answer)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        if self.proc.wait(timeout=30) != 0:
            raise RuntimeError(f"side-effect worker {self.proc.args} exited with {self.proc.returncode}")


def measure(rounds: int) -> dict[str, float]:
    """Median per read for each case (names are the keys): ms for client reads, us for direct ones."""
    workers = {BARE: Worker(BARE), SCOPED: Worker(SCOPED), AA: Worker(BARE), EMBEDDED: Worker(EMBEDDED)}
    try:
        for worker in workers.values():
            worker.ms("client", 100)  # warm up
        # short samples over many rounds: two processes drift apart more than two cases in one
        return interleaved(
            {
                CLIENT_BARE: lambda: workers[BARE].ms("client", 50),
                CLIENT_SCOPED: lambda: workers[SCOPED].ms("client", 50),
                CLIENT_AA: lambda: workers[AA].ms("client", 50),
                DIRECT_BARE: lambda: workers[BARE].ms("direct", 5_000) * 1000,
                DIRECT_SCOPED: lambda: workers[SCOPED].ms("direct", 5_000) * 1000,
                SEND_BARE: lambda: workers[BARE].ms("send", 100) * 1000,
                SEND_EMBEDDED: lambda: workers[EMBEDDED].ms("send", 100) * 1000,
                SEND_PROCESS: lambda: workers[SCOPED].ms("send", 100) * 1000,
                SEND_AA: lambda: workers[AA].ms("send", 100) * 1000,
            },
            10 * rounds,
        )
    finally:
        for worker in workers.values():
            worker.close()


def report(result: dict[str, float], emit: Emit) -> None:
    """Emit the rows: both pairs with their ratio, and the scope's cost in microseconds."""
    section = "side-effect scope"
    base, scoped = result[CLIENT_BARE], result[CLIENT_SCOPED]
    emit(section, CLIENT_BARE, base, "ms", "baseline")
    cost = (scoped - base) / base
    emit(section, CLIENT_SCOPED, scoped, "ms", f"{scoped / base:.3f}x ({cost:+.1%})",
         f"target < 5%: {'met' if cost < 0.05 else 'MISSED'}")  # fmt: skip
    aa = result[CLIENT_AA]
    emit(section, CLIENT_AA, aa, "ms", f"{aa / base:.3f}x: how far two identical processes differ")
    alone, alone_scoped = result[DIRECT_BARE], result[DIRECT_SCOPED]
    emit(section, DIRECT_BARE, alone, "us/read", "baseline")
    emit(section, DIRECT_SCOPED, alone_scoped, "us/read", f"+{alone_scoped - alone:.2f} us per scope")
    send, embedded, process = result[SEND_BARE], result[SEND_EMBEDDED], result[SEND_PROCESS]
    emit(section, SEND_BARE, send, "us/send", "baseline")
    emit(section, SEND_EMBEDDED, embedded, "us/send", f"{embedded / send:.3f}x (socket.send unpatched, checked)")
    emit(section, SEND_PROCESS, process, "us/send", f"{process / send:.3f}x ({process - send:+.2f} us per send)")
    emit(
        section,
        SEND_AA,
        result[SEND_AA],
        "us/send",
        f"{result[SEND_AA] / send:.3f}x: how far two identical processes differ",
    )


def run(rounds: int, emit: Emit) -> None:
    report(measure(rounds), emit)


if __name__ == "__main__":
    if "--worker" in sys.argv:
        parser = argparse.ArgumentParser(prog="python -m benchmarks.sideeffects")
        parser.add_argument("--worker", choices=[BARE, SCOPED, EMBEDDED], required=True)
        anyio.run(_serve_commands, parser.parse_args().worker)
    else:
        standalone("python -m benchmarks.sideeffects", __doc__, run)
