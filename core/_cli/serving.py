"""What ``serve`` does once the config is read: the composed server (or exit 1), its reloader, traces,
``--workers``, and serving it over HTTP with uvicorn."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import anyio

from mcp_providers._cli.console import err, escape
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.sources import source_problems, unavailable
from mcp_providers.config import CONFIG_ENV, load_config
from mcp_providers.errors import CompositionError, ConfigError


def refuse() -> NoReturn:
    """End the command with exit status 1, its reason already printed (``SystemExit``: typer lets
    it through unchanged, so ``serve`` run by typer and by :func:`mcp_providers._cli.stdio.main`
    without it end alike)."""
    raise SystemExit(1)


def bracketed(host: str) -> str:
    """``::1`` -> ``[::1]`` (IPv6 literals need brackets in URLs and Host headers)."""
    return f"[{host}]" if ":" in host else host


def reloads(composition: Composition, config: Path | None, plugin_set: str | None, watched: str | None) -> Any:
    """The composition's :class:`~mcp_providers._serve.reload.Reloader`, reloading on SIGHUP (and
    on changes of ``watched``) while it serves; the config is read as at start-up."""
    from mcp_providers._serve import reload

    logging.getLogger("mcp_providers.reload").setLevel(logging.INFO)  # what a reload did is always said
    path = str(config) if config is not None else os.environ.get(CONFIG_ENV) or None
    load = reload.guard_config_file(path, functools.partial(load_config, config, plugin_set=plugin_set))
    reloader = reload.Reloader(composition, load)
    composition.runtime.background.append(functools.partial(reload.on_sighup, reloader))
    composition.runtime.background.append(functools.partial(reload.on_announce, reloader))  # [cluster] only
    if watched is not None:
        composition.runtime.background.append(functools.partial(reload.on_file_change, reloader, watched))
    return reloader


@contextlib.contextmanager
def traces() -> Iterator[None]:
    """OpenTelemetry traces when the ``OTEL_*`` variables ask for them (docs/operations.md,
    "Traces"), set up before the server is built and flushed when serving ends; exit 1 when they
    ask but the ``telemetry`` extra is missing."""
    from mcp_providers._serve.steps import tracing

    try:
        on = tracing.configure_from_env()
    except RuntimeError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        refuse()
    try:
        yield
    finally:
        if on:
            tracing.shutdown()


def server_of(composition: Composition, strict: bool) -> Any:
    """The composed server, or exit 1: under ``--strict`` when a static read fails or a configured
    source is unavailable, and always (fail closed) when a plugin that could carry authorization is
    not in force. Without ``--strict`` an unavailable source is a warning: the rest is served."""
    if strict:  # --strict means every check passes, including the static reads `check` makes
        from mcp_providers._serve.statics import static_read_problems  # --strict only: not on stdio's start-up

        problems = anyio.run(static_read_problems, composition)
        problems += source_problems(composition)  # after the static reads: they started every provider
        if problems:
            err.print("[red]refusing to start (--strict):[/red]", highlight=False)
            for line in problems:
                err.print(f"  {line}", highlight=False, markup=False)
            refuse()
    for line in composition.failures:
        err.print(f"[yellow]not served:[/yellow] {escape(line)}", highlight=False)
    for left in composition.assembly.left_out:  # a listed declaration that collided: only it is not served
        err.print(f"[yellow]left out:[/yellow] {escape(str(left))}", highlight=False)
    for line in unavailable(composition):  # its provider starts and retries where its plugin does
        err.print(f"[yellow]unavailable:[/yellow] {escape(line)}", highlight=False)
    for r in composition.records:
        for line in r.deprecations:
            err.print(f"[yellow]deprecated:[/yellow] {escape(f'{r.name}: {line}')}", highlight=False)
    try:
        return composition.server
    except CompositionError as exc:
        _refuse(exc)
    except ConfigError as exc:  # found while binding, e.g. a requestState key too short
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        refuse()


def _refuse(exc: CompositionError) -> NoReturn:
    for line in exc.problems:
        err.print(line if line.endswith(":") else f"  {line}", highlight=False, markup=False)
    refuse()


def serve_http(
    composition: Composition,
    server: Any,
    address: tuple[str, int],
    stateless: bool,
    json_response: bool,
    allow_host: list[str] | None,
    reloader: Any = None,
) -> None:
    from mcp_providers._serve.transport.admin import admin_gate, admin_routes
    from mcp_providers._serve.transport.auth import http_auth
    from mcp_providers._serve.transport.http_app import http_app
    from mcp_providers._serve.transport.http_policy import is_loopback, is_wildcard, transport_policy

    host, port = address
    if not is_loopback(host):
        err.print(f"[yellow]warning:[/yellow] serving on {host}, not loopback; anyone who can reach it can connect")
    own_url = None if is_wildcard(host) else f"http://{bracketed(host)}:{port}/mcp"
    try:
        auth = http_auth(composition.config.server.auth, own_url)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        refuse()
    from mcp_providers._serve.transport.ops import (  # /healthz, /readyz, /metrics; docs/deploy.md
        ops_routes,
        pin_sessions,
    )
    from mcp_providers._serve.transport.status import RecentRequests, status_routes  # /status; docs/operations.md

    recent = RecentRequests()
    try:
        gate = admin_gate(composition.config.server.admin, auth)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        refuse()
    admin = admin_routes(reloader, composition.config.server.admin, auth, gate) if reloader is not None else []
    admin += status_routes(composition, reloader, gate, recent)
    asgi = http_app(
        server,
        stateless=stateless,
        json_response=json_response,
        security=transport_policy(host, allow_host),
        auth=auth,
        routes=ops_routes(composition, reloader, recent, gate if _metrics_guarded(composition) else None) + admin,
        event_store=None if stateless else _event_store(composition),
        limits=composition.config.server.limits,
        audit=composition.runtime.audit,
    )
    _run_http(pin_sessions(asgi), composition, host, port)  # session ids name the replica (MCP_PROVIDERS_REPLICA)


def _metrics_guarded(composition: Composition) -> bool:
    """Whether ``[server.admin] metrics`` puts ``/metrics`` behind the admin gate."""
    admin = composition.config.server.admin
    return admin is not None and admin.metrics


def _run_http(served: Any, composition: Composition, host: str, port: int) -> None:
    """uvicorn on ``host:port`` (or a ``--workers`` worker's inherited socket), saying so once it listens."""
    from mcp_providers._cli.workers import FD_ENV
    from mcp_providers._serve.seams import check_seams
    from mcp_providers._serve.transport.limits import Limits, run_uvicorn
    from mcp_providers._serve.transport.shutdown import stream_ender

    try:
        check_seams("http")  # uvicorn's, which the connection limits subclass
    except CompositionError as exc:
        _refuse(exc)
    worker_fd = os.environ.get(FD_ENV)  # a --workers worker serves the socket it inherited
    settings = composition.config.server
    limits = Limits(max_connections_per_client=settings.max_connections_per_client)
    fd = int(worker_fd) if worker_fd else None

    def listening(bound_host: str, bound_port: int) -> None:  # said once the socket listens, not before
        err.print(f"serving MCP on http://{bracketed(bound_host)}:{bound_port}/mcp", highlight=False)

    if fd is not None:
        listening(host, port)
    try:
        run_uvicorn(served, host, port, limits, fd=fd, trusted_proxies=settings.trusted_proxies, listening=listening,
                    ending=stream_ender(composition))  # fmt: skip
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot listen on {escape(f'{host}:{port}')}: {escape(exc.strerror or str(exc))}")
        refuse()


def _event_store(composition: Composition) -> Any:
    """With ``[cluster]``, the Redis store making session streams resumable (``Last-Event-ID``)."""
    from mcp_providers._serve.state.cluster import RedisBackend
    from mcp_providers._serve.state.events import RedisEventStore

    shared = composition.runtime.shared
    return RedisEventStore(shared) if isinstance(shared, RedisBackend) else None
