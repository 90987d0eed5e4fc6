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
thread) and the suite's Python clients, interleaved round by round.
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

from benchmarks import fixtures

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
def _server(port: int, *extra: str) -> Iterator[str]:
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
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def _body() -> str:
    uri = fixtures.fixed_uri(0, 3)
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}})


def wrk_rate(url: str, token: str | None, clients: int, seconds: float) -> float:
    """Reads/s from ``wrk`` (one thread, ``clients`` connections); NaN without wrk."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return float("nan")
    lines = ['wrk.method = "POST"', f"wrk.body = '{_body()}'"]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in HEADERS.items()]
    if token is not None:
        lines.append(f'wrk.headers["Authorization"] = "Bearer {token}"')
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines) + "\n")
    try:
        argv = [wrk, "-t1", f"-c{clients}", f"-d{seconds}s", "-s", script.name, url]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(script.name)
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors against {url}: {out}")
    found = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    return float(found.group(1)) if found else float("nan")


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


def _interleaved(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, case in cases.items():
            samples[name].append(case())
    return {name: statistics.median(values) for name, values in samples.items()}


def run(rounds: int, emit: Emit) -> None:
    """Emit one pair of rows (without auth, with JWT) per load."""
    with _Issuer().serving() as issuer:
        plain_port, jwt_port = _free_port(), _free_port()
        with _server(plain_port) as plain, _server(jwt_port, "--jwt", issuer.issuer) as guarded:
            token = issuer.token(guarded)
            targets = {"without auth": (plain, None), "JWT validated (keys cached)": (guarded, token)}
            for url, bearer in targets.values():
                anyio.run(python_rate, url, bearer, 1, 0.5)  # warm up
            fetches = issuer.fetches
            fresh = [issuer.token(guarded, jti=str(i)) for i in range(FRESH_TOKENS * rounds)]
            loads: list[tuple[str, Callable[[str, str | None], float]]] = [
                ("wrk, 10 connections", lambda u, t: wrk_rate(u, t, 10, 2)),
                ("wrk, 50 connections", lambda u, t: wrk_rate(u, t, 50, 2)),
                ("Python clients, 10", lambda u, t: anyio.run(python_rate, u, t, 10, 1.5)),
            ]
            for load, rate in loads:
                cases = {name: (lambda u=u, t=t, r=rate: r(u, t)) for name, (u, t) in targets.items()}
                _report(f"HTTP + JWT, {load}", _interleaved(cases, rounds), emit)
            # The worst case: no request presents a token seen before, so each is verified in full.
            cases = {"without auth": lambda: anyio.run(python_rate, plain, None, 10, 1.5),
                     "JWT validated (keys cached)": lambda: anyio.run(
                         python_rate, guarded, [fresh.pop() for _ in range(FRESH_TOKENS)], 10, 1.5)}  # fmt: skip
            _report("HTTP + JWT, Python clients, 10, a new token every request", _interleaved(cases, rounds), emit)
            emit("HTTP + JWT", "JWKS fetches during the measured runs", issuer.fetches - fetches, "fetches",
                 "", "keys cached: expect 0")  # fmt: skip


def _report(section: str, result: dict[str, float], emit: Emit) -> None:
    base, ours = result["without auth"], result["JWT validated (keys cached)"]
    emit(section, "without auth", base, "reads/s", "baseline")
    ratio = ours / base
    target = f"target >= 0.9x: {'met' if ratio >= 0.9 else 'NOT met'}"
    emit(section, "JWT validated (keys cached)", ours, "reads/s", f"{ratio:.2f}x without auth", target)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.identity", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 9")
    args = parser.parse_args()

    def emit(section: str, case: str, value: float, unit: str, ratio: str = "", target: str = "") -> None:
        print(f"  {section:<34} {case:<40} {value:>12.1f} {unit:<8} {ratio:<22} {target}", flush=True)

    run(3 if args.quick else 9, emit)


if __name__ == "__main__":
    main()
