"""``serve --http HOST:PORT --workers N``: N server processes sharing one listening socket.

The parent binds the socket, starts N copies of its own command line with the socket's file
descriptor in ``MCP_PROVIDERS_HTTP_FD`` (each serves it with uvicorn's ``fd=``), and waits. A
signal to the parent stops every worker (``SIGHUP`` is passed on: each worker reloads); a worker
that exits stops the others, and the parent exits with its status. The workers share their live
state through the ``[cluster]`` backend, which ``serve`` requires for N > 1, with ``--stateless``
(see :data:`WHY_STATELESS`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from types import FrameType

FD_ENV = "MCP_PROVIDERS_HTTP_FD"
"""Set in a worker: the inherited listening socket to serve (``serve`` then starts no workers)."""

WHY_STATELESS = (
    "a 2025-11-25 session lives in the worker that created it, and the kernel hands each connection to "
    "any worker, so its later requests would reach workers that do not know it. 2026-07-28 clients "
    "need no session; for stateful 2025-era sessions run replicas behind a load balancer that routes "
    "by Mcp-Session-Id (deploy/nginx.conf)"
)

WHY_CLUSTER = (
    "each worker is a separate process: without a shared backend a subscription made through one "
    "worker never hears of a change published by another, and every worker would poll every live "
    'source itself. Add a [cluster] section (redis_url = "redis://..."; see docs/deploy.md), or '
    "serve with --workers 1"
)


def serve_workers(count: int, host: str, port: int) -> int:
    """Run ``count`` workers on ``host:port`` until a signal or a worker's exit; their status."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(2048)
    listener.set_inheritable(True)
    env = {**os.environ, FD_ENV: str(listener.fileno())}
    argv = [sys.executable, "-m", "mcp_providers", *sys.argv[1:]]
    # Each worker starts with SIGHUP ignored (an ignored signal stays ignored across exec) until
    # serve holds it: a SIGHUP passed on while a worker still imports would otherwise end it, and
    # the parent with it. A worker that is still starting reads the config as it is anyway.
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    workers = [subprocess.Popen(argv, env=env, pass_fds=(listener.fileno(),)) for _ in range(count)]
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    def forward(signum: int, frame: FrameType | None) -> None:
        for worker in workers:  # each worker reloads its own composition
            if worker.poll() is None:
                worker.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, forward)
    status = 0
    try:
        while not stopping:
            ended = [w for w in workers if w.poll() is not None]
            if ended:
                status = ended[0].returncode or 0
                break
            time.sleep(0.2)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.kill()
        listener.close()
    return status
