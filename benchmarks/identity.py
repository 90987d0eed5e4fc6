"""Reads/s over streamable HTTP with JWT validation on (keys cached) against the same server
without auth (issue 22; target: at least 0.9x).

Run alone: ``uv run python -m benchmarks.identity [--quick]``; or in the full table with
``uv run --group bench python -m benchmarks --only identity``.

Both servers are ``python -m benchmarks.serve composed --http PORT`` (stateless, JSON responses,
the CLI's uvicorn settings); the second adds ``--jwt ISSUER``: ``[server.auth] mode = "jwt"``
against a loopback identity provider in this process that publishes RFC 8414 metadata and a JWKS
(one RSA-2048 key; fetched once at start-up, then cached). Every request carries the same RS256
access token (audience: that server's URL), so each one is verified in full: header, signature,
``iss``, ``aud``, ``exp``, ``nbf``, ``iat`` the first time; a token seen before is answered from
the verifier's memory until its ``exp``. The last row is the worst case: every request presents a
token never seen (signed ahead), so every one is verified in full. The load is ``wrk`` (one
thread) and the suite's Python clients, interleaved round by round (the order alternating), and
each ratio is the median of the rounds' own ratios. Beside the wrk rows, the server's CPU time per
read (``/proc/<pid>/stat``): other processes on the machine move it far less than reads/s, and its
inverse is the throughput of a server with a core of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

from benchmarks import fixtures
from benchmarks.report import skipped_because_missing
from benchmarks.timing import interleaved_samples

Emit = Callable[..., None]
FRESH_TOKENS = 1500
"""Tokens signed ahead for each round of the new-token-every-request case (enough for 1.5 s here)."""
ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2025-11-25"}  # fmt: skip


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Issuer:
    """A loopback identity provider: metadata and a JWKS of one RSA key, and tokens signed by it."""

    def __init__(self) -> None:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = json.dumps({"keys": [{**public, "kid": "bench-1", "use": "sig"}]}).encode()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.fetches = 0

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    issuer.fetches += 1
                    body = issuer.jwks
                else:
                    body = json.dumps({"issuer": issuer.issuer, "jwks_uri": f"{issuer.issuer}/jwks"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def token(self, audience: str, **extra: Any) -> str:
        import jwt

        now = int(time.time())
        claims = {"iss": self.issuer, "sub": "bench", "aud": audience, "iat": now, "exp": now + 3600,
                  "scope": "mcp:read", "client_id": "bench", **extra}  # fmt: skip
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "bench-1"})

    @contextlib.contextmanager
    def serving(self) -> Iterator[_Issuer]:
        thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.httpd.shutdown()
            self.httpd.server_close()


@contextlib.contextmanager
def _server(port: int, *extra: str) -> Iterator[tuple[str, int]]:
    argv = [sys.executable, "-m", "benchmarks.serve", "composed", "--http", str(port), *extra]
    proc = subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.closing(socket.socket()) as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise RuntimeError(f"benchmark server exited: {proc.stderr.read() if proc.stderr else ''}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def _body() -> str:
    uri = fixtures.fixed_uri(0, 3)
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}})


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far, in seconds (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class WrkSample:
    """One ``wrk`` run: reads/s, the server's CPU microseconds per read (NaN without its pid) and
    the 50th and 99th percentile latency in ms (``wrk --latency``); all NaN without wrk."""

    rate: float
    cpu_us: float = float("nan")
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")


_WRK_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _wrk_percentile(out: str, percent: int) -> float:
    """``wrk --latency``'s ``<percent>%  <value><unit>`` line, in ms; NaN when absent."""
    found = re.search(rf"^\s*{percent}%\s+([0-9.]+)(us|ms|s)\s*$", out, re.MULTILINE)
    return float(found.group(1)) * _WRK_UNITS[found.group(2)] if found else float("nan")


def wrk_sample(url: str, token: str | None, clients: int, seconds: float, pid: int | None = None) -> WrkSample:
    """``wrk`` (one thread, ``clients`` connections) posting one ``resources/read`` for ``seconds``.

    :raises RuntimeError: wrk saw a non-2xx answer.
    """
    wrk = shutil.which("wrk")
    if wrk is None:
        return WrkSample(float("nan"))
    lines = ['wrk.method = "POST"', f"wrk.body = '{_body()}'"]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in HEADERS.items()]
    if token is not None:
        lines.append(f'wrk.headers["Authorization"] = "Bearer {token}"')
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines) + "\n")
    try:
        argv = [wrk, "-t1", f"-c{clients}", f"-d{seconds}s", "--latency", "-s", script.name, url]
        before = _cpu_seconds(pid) if pid is not None else float("nan")
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        spent = _cpu_seconds(pid) - before if pid is not None else float("nan")
    finally:
        os.unlink(script.name)
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors against {url}: {out}")
    rate, count = re.search(r"Requests/sec:\s+([0-9.]+)", out), re.search(r"(\d+) requests in", out)
    if rate is None or count is None:
        return WrkSample(float("nan"))
    cpu = spent / max(int(count.group(1)), 1) * 1e6
    return WrkSample(float(rate.group(1)), cpu, _wrk_percentile(out, 50), _wrk_percentile(out, 99))


async def python_rate(url: str, token: str | list[str] | None, clients: int, seconds: float) -> float:
    """Reads/s from ``clients`` httpx2 clients, each posting one read after another.

    :param token: one bearer token for every request, or a list used up one per request (each
        request then presents a token the server has not seen; the run ends early if they run out).
    """
    import httpx2

    fresh = list(token) if isinstance(token, list) else None
    body, count = _body(), 0

    def headers() -> dict[str, str]:
        bearer = fresh.pop() if fresh is not None else token
        return dict(HEADERS) | ({"authorization": f"Bearer {bearer}"} if bearer else {})

    async def worker(http: Any, stop: float) -> None:
        nonlocal count
        while time.perf_counter() < stop and (fresh is None or fresh):
            answer = await http.post(url, content=body, headers=headers())
            if answer.status_code != 200 or b'"result"' not in answer.content:
                raise RuntimeError(f"HTTP read failed: {answer.status_code} {answer.content[:200]!r}")
            count += 1

    async with contextlib.AsyncExitStack() as stack:
        https = [await stack.enter_async_context(httpx2.AsyncClient(timeout=30)) for _ in range(clients)]
        async with anyio.create_task_group() as tg:
            for http in https:
                tg.start_soon(worker, http, time.perf_counter() + 0.3)  # opens the connections
        count = 0
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for http in https:
                tg.start_soon(worker, http, t0 + seconds)
        return count / (time.perf_counter() - t0)


BASE, OURS = "without auth", "JWT validated (keys cached)"


IN_PROCESS_READS = 100
"""Reads per sample of the in-process row (its samples alternate case by case)."""


def _asgi_apps(issuer: _Issuer, resource: str) -> dict[str, Any]:
    """The two ASGI apps ``benchmarks.serve composed --http`` serves (without auth, JWT), in this process."""
    from mcp_providers._serve.transport.auth import http_auth
    from mcp_providers._serve.transport.http_app import http_app
    from mcp_providers._serve.transport.http_policy import transport_policy
    from mcp_providers.config import AuthConfig

    def build(auth: AuthConfig | None) -> Any:
        return http_app(fixtures.composed(1).server, stateless=True, json_response=True,
                        security=transport_policy("127.0.0.1"), auth=http_auth(auth, resource))  # fmt: skip

    return {BASE: build(None), OURS: build(AuthConfig(mode="jwt", issuer=issuer.issuer))}


async def _asgi_samples(issuer: _Issuer, rounds: int) -> dict[str, list[float]]:
    """Microseconds per read of each app called directly (no sockets, no uvicorn, no h11): only the
    server code the two cases run, the bearer gate included. The cost HTTP adds is the same for
    both apart from the longer header, so the HTTP ratio is at least this one."""
    resource = "http://127.0.0.1:9/mcp"
    apps, body = _asgi_apps(issuer, resource), _body().encode()
    base = [(b"host", b"127.0.0.1:9"), (b"content-length", str(len(body)).encode())]
    base += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
    headers = {BASE: base, OURS: [*base, (b"authorization", f"Bearer {issuer.token(resource)}".encode())]}
    async with contextlib.AsyncExitStack() as stack:
        for app in apps.values():
            await stack.enter_async_context(_lifespan(app))

        async def sample(name: str) -> float:
            started = time.perf_counter()
            for _ in range(IN_PROCESS_READS):
                await _asgi_read(apps[name], headers[name], body)
            return (time.perf_counter() - started) / IN_PROCESS_READS * 1e6

        for name in apps:
            await sample(name)  # warm up
        samples: dict[str, list[float]] = {BASE: [], OURS: []}
        for index in range(rounds * 10):
            for name in (BASE, OURS) if index % 2 == 0 else (OURS, BASE):
                samples[name].append(await sample(name))
        return samples


@contextlib.asynccontextmanager
async def _lifespan(app: Any) -> Any:
    """Run ``app``'s ASGI lifespan (startup on entry, shutdown on exit)."""
    send_in, receive_in = anyio.create_memory_object_stream[dict[str, Any]](4)
    send_out, receive_out = anyio.create_memory_object_stream[dict[str, Any]](4)
    async with anyio.create_task_group() as tasks:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        tasks.start_soon(app, scope, receive_in.receive, send_out.send)
        await send_in.send({"type": "lifespan.startup"})
        started = await receive_out.receive()
        if started["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"benchmark app did not start: {started}")
        try:
            yield
        finally:
            await send_in.send({"type": "lifespan.shutdown"})
            await receive_out.receive()


async def _asgi_read(app: Any, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 9), "state": {}}  # fmt: skip
    await app(scope, receive, send)
    if sent[0].get("status") != 200 or b'"result"' not in sent[1].get("body", b""):
        raise RuntimeError(f"in-process read failed: {sent[:2]}")


def run(rounds: int, emit: Emit) -> None:
    """Emit one pair of rows (without auth, with JWT) per load."""
    with _Issuer().serving() as issuer:
        plain_port, jwt_port = _free_port(), _free_port()
        with _server(plain_port) as (plain, plain_pid), _server(jwt_port, "--jwt", issuer.issuer) as (guarded, pid):
            token = issuer.token(guarded)
            targets = {BASE: (plain, None, plain_pid), OURS: (guarded, token, pid)}
            for url, bearer, _ in targets.values():
                anyio.run(python_rate, url, bearer, 1, 0.5)  # warm up
            fetches = issuer.fetches
            fresh = [issuer.token(guarded, jti=str(i)) for i in range(FRESH_TOKENS * rounds)]
            for clients in (10, 50):
                if skip := skipped_because_missing("wrk"):
                    for section in (f"HTTP + JWT, wrk, {clients} connections",
                                    f"HTTP + JWT, wrk, {clients} conn., server CPU"):  # fmt: skip
                        emit(section, BASE, float("nan"), "reads/s", "baseline", skip)
                        emit(section, OURS, float("nan"), "reads/s", "", skip)
                    continue
                cases = {name: (lambda u=u, t=t, p=p, c=clients: wrk_sample(u, t, c, 2, p))
                         for name, (u, t, p) in targets.items()}  # fmt: skip
                runs = interleaved_samples(cases, rounds)
                _report(
                    f"HTTP + JWT, wrk, {clients} connections", {n: [r.rate for r in v] for n, v in runs.items()}, emit
                )
                cpu = {n: [r.cpu_us for r in v] for n, v in runs.items()}
                _report_cost(f"HTTP + JWT, wrk, {clients} conn., server CPU", cpu, emit)
            rate = {
                name: (lambda u=u, t=t: anyio.run(python_rate, u, t, 10, 1.5)) for name, (u, t, _) in targets.items()
            }
            _report("HTTP + JWT, Python clients, 10", interleaved_samples(rate, rounds), emit)

            # The worst case: no request presents a token seen before, so each is verified in full.
            def unseen() -> float:
                return anyio.run(python_rate, guarded, [fresh.pop() for _ in range(FRESH_TOKENS)], 10, 1.5)

            worst = {BASE: lambda: anyio.run(python_rate, plain, None, 10, 1.5), OURS: unseen}
            _report(
                "HTTP + JWT, Python clients, 10, a new token every request", interleaved_samples(worst, rounds), emit
            )
            emit("HTTP + JWT", "JWKS fetches during the measured runs", issuer.fetches - fetches, "fetches",
                 "", "keys cached: expect 0")  # fmt: skip
            # After the count: this row's own JWT app fetches the keys once as it starts.
            _report_cost("HTTP + JWT, in process (no sockets)", anyio.run(_asgi_samples, issuer, rounds), emit)


def _paired(base: list[float], ours: list[float]) -> float:
    """The median of the rounds' own ratios: each pair ran back to back, so a machine that speeds
    up or slows down between rounds (this one drifts by a third within a minute) moves both."""
    return statistics.median(o / b for b, o in zip(base, ours, strict=True))


def _rounds(samples: dict[str, list[float]]) -> str:
    """Each round's own ratio, for the raw output (how far the rounds spread)."""
    return " ".join(f"{o / b:.2f}" for b, o in zip(samples[BASE], samples[OURS], strict=True))


def _report(section: str, samples: dict[str, list[float]], emit: Emit) -> None:
    print(f"    rounds (JWT / without): {_rounds(samples)}", flush=True)
    base, ours = statistics.median(samples[BASE]), statistics.median(samples[OURS])
    emit(section, BASE, base, "reads/s", "baseline")
    ratio = _paired(samples[BASE], samples[OURS])
    target = f"target >= 0.9x: {'met' if ratio >= 0.9 else 'NOT met'}"
    emit(section, OURS, ours, "reads/s", f"{ratio:.2f}x without auth", target)


def _report_cost(section: str, samples: dict[str, list[float]], emit: Emit) -> None:
    """Microseconds per read (server CPU, or in-process time): its inverse is the reads/s of a
    server that has a core to itself (ratio = baseline cost / JWT cost)."""
    print(f"    rounds (JWT / without cost): {_rounds(samples)}", flush=True)
    base, ours = statistics.median(samples[BASE]), statistics.median(samples[OURS])
    emit(section, BASE, base, "us/read", "baseline")
    ratio = 1 / _paired(samples[BASE], samples[OURS])
    target = f"target >= 0.9x: {'met' if ratio >= 0.9 else 'NOT met'}"
    emit(section, OURS, ours, "us/read", f"{ratio:.2f}x reads per CPU second", target)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.identity", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 9")
    args = parser.parse_args()

    def emit(section: str, case: str, value: float, unit: str, ratio: str = "", target: str = "") -> None:
        print(f"  {section:<34} {case:<40} {value:>12.1f} {unit:<8} {ratio:<22} {target}", flush=True)

    run(3 if args.quick else 9, emit)


if __name__ == "__main__":
    main()
