"""Operating a served composition over HTTP: ``/healthz``, ``/readyz`` and Prometheus ``/metrics``.

:func:`ops_routes` gives the three Starlette routes (unauthenticated, like any load balancer probe;
they carry no content) and puts a request-counting middleware on the composition's SDK server:

- ``/healthz``: 200 while the process serves MCP over HTTP; 503 once the SDK's session manager
  has stopped (every MCP request would fail), so a supervisor restarts the process;
- ``/readyz``: 200 once the composition is served (its providers started), 503 with the reason
  before; with ``[cluster]`` and Redis not answering a ping within ``timeout_seconds`` it stays 200
  with ``"status": "degraded"`` and the reason in ``degraded`` (the replica still serves reads and
  tool calls; a probe pulling every replica at once would stop the service for Redis's sake);
- ``/metrics``: ``mcp_providers_requests_total{method,outcome}`` (outcome ``ok``, ``tool_error``
  for an ``isError`` tool answer, or the JSON-RPC code; each served method's known outcomes start
  at 0), ``mcp_providers_request_seconds{method}``, ``mcp_providers_tool_seconds{tool,plugin,outcome}``,
  the process's own metrics (``prometheus_client``'s process, GC and platform collectors),
  ``mcp_providers_read_seconds`` (histogram of ``resources/read``), ``mcp_providers_subscriptions``
  (watches held by this replica), ``mcp_providers_poll_leases`` (live sources this replica polls),
  ``mcp_providers_cluster_connected``, ``mcp_providers_degraded``, ``mcp_providers_cluster_outages_total``,
  ``mcp_providers_provider_threads{state}`` (``busy``, ``past_deadline``, ``limit``: the threads
  running plugins' plain functions, :mod:`mcp_providers._threads`),
  ``mcp_providers_cluster_recoveries_total``, ``mcp_providers_cluster_reannounced_total`` (with
  ``[cluster]``: see :mod:`..state.outage`) and ``mcp_providers_audit_dropped_total{sink}`` (audit
  lines a shipped sink dropped); with a reloader, ``mcp_providers_reload_total{outcome}``,
  ``mcp_providers_config_info{digest}`` (the config served, so drift between replicas shows) and
  ``mcp_providers_generation``. ``/readyz`` then names the digest, the generation and the last
  reload attempt: a failed one leaves the replica ready (the old composition serves); how many
  problems it had is public, their text is not (:func:`public_attempt`).

No route here carries exception text, and each keeps the MCP path's Host/Origin policy
(:func:`rebinding_refusal`).

:func:`pin_sessions` makes 2025-era sessions routable by a load balancer: with
``MCP_PROVIDERS_REPLICA=replica1`` the session ids this replica hands out read ``replica1.<id>``,
and nginx routes a request carrying one to that replica (``deploy/nginx.conf``). 2026-07-28
requests carry no session: any replica serves them.
"""

from __future__ import annotations

import ipaddress
import os
import re
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from mcp_providers._serve.binding import served_methods
from mcp_providers._serve.transport.admin import AdminGate, admit
from mcp_providers._serve.transport.http_policy import explained
from mcp_providers._serve.transport.manager import run_ended, session_manager_of

REQUEST_CANCELLED = -32800
"""What the 2025-era HTTP wire answers a cancelled request with (``mcp.server.streamable_http``)."""

if TYPE_CHECKING:
    from mcp_providers._serve.composition import Composition
    from mcp_providers._serve.reload import Attempt, Reloader
    from mcp_providers._serve.runtime import Runtime
    from mcp_providers._serve.transport.status import RecentRequests


DEGRADED_REDIS = (
    "the cluster backend (Redis) does not answer: reads and tool calls are served; updates reach this "
    "replica's watchers only, and every watched URI is re-announced once it is back"
)
"""Why ``/readyz`` says ``degraded`` (200): the replica still serves, so a probe keeps it in."""

OTHER_METHOD = "other"
"""The ``method`` label of every request for a method the server does not serve (client-chosen
names would make the label set, and ``/metrics``, grow without bound)."""
LISTEN = "subscriptions/listen"
TOOL_ERROR = "tool_error"
"""The outcome of a ``tools/call`` answered with ``isError: true`` (the tool failed)."""
KNOWN_OUTCOMES = ("ok", TOOL_ERROR, "-32602", "-32003", "-32004", "-32005", "-32006", "-32009", "-32010", "-32603")
"""Outcomes every served method's counter starts with at 0 (others appear when first counted)."""


def _process_collectors(registry: Any) -> None:
    """The process's own metrics (memory, CPU, open files, start time; Python's GC and version),
    from ``prometheus_client``'s collectors, on ``registry``."""
    from prometheus_client import GCCollector, PlatformCollector, ProcessCollector

    ProcessCollector(registry=registry)
    GCCollector(registry=registry)
    PlatformCollector(registry=registry)


class Metrics:
    """One registry per served runtime (several compositions may share a test process).

    :param served: whether the server serves a method (a handler is registered); only those are
        labels, every other name is :data:`OTHER_METHOD`.
    :param recent: also counts each request there, by the same label (``/status``).
    """

    def __init__(
        self,
        runtime: Runtime,
        served: Callable[[str], bool],
        reloader: Reloader | None = None,
        recent: RecentRequests | None = None,
    ) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        _process_collectors(self.registry)
        self.requests = Counter(
            "mcp_providers_requests", "MCP requests by method and outcome (ok, tool_error or the JSON-RPC "
            "error code)", ["method", "outcome"], registry=self.registry,
        )  # fmt: skip
        self.reads = Histogram("mcp_providers_read_seconds", "resources/read latency", registry=self.registry)
        self.latency = Histogram("mcp_providers_request_seconds", "MCP request latency by method (not "
                                 "subscriptions/listen, a stream)", ["method"], registry=self.registry)  # fmt: skip
        self.tools = Histogram("mcp_providers_tool_seconds", "tools/call latency by tool, its plugin and outcome",
                               ["tool", "plugin", "outcome"], registry=self.registry)  # fmt: skip
        self.registry.register(_Gauges(runtime, reloader))
        self._runtime = runtime
        self._served = served
        self._recent = recent

    def start_at_zero(self, methods: list[str]) -> None:
        """Make every known series exist at 0 before its first event, so ``rate()`` and ``increase()``
        see the first one: each of ``methods`` with each of :data:`KNOWN_OUTCOMES`, unknown methods'
        ``-32601``, and each served tool's ``ok`` and ``tool_error``."""
        for method in methods:
            for outcome in KNOWN_OUTCOMES:
                self.requests.labels(method, outcome)
            if method != LISTEN:
                self.latency.labels(method)
        self.requests.labels(OTHER_METHOD, str(types.METHOD_NOT_FOUND))
        for entry in self._runtime.assembly.catalog.tools:
            for outcome in ("ok", TOOL_ERROR):
                self.tools.labels(entry.declaration.name, entry.plugin, outcome)

    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        """SDK server middleware: count every request by method and outcome, time the reads."""
        if ctx.request_id is None:  # a notification
            return await call_next(ctx)
        started, outcome = time.perf_counter(), "ok"
        try:
            result = await call_next(ctx)
            if _failed_tool(result):  # a tool's failure is an answer, not a JSON-RPC error
                outcome = TOOL_ERROR
            return result
        except BaseException as exc:
            outcome = _outcome(ctx.method, exc)
            raise
        finally:
            method = ctx.method if isinstance(ctx.method, str) and self._served(ctx.method) else OTHER_METHOD
            self.requests.labels(method, outcome).inc()
            seconds = time.perf_counter() - started
            if self._recent is not None:  # a listen stream's length is no latency
                self._recent.count(method, outcome != "ok", None if method == LISTEN else seconds)
            self._observe(ctx, method, outcome, seconds)

    def _observe(self, ctx: Any, method: str, outcome: str, seconds: float) -> None:
        if method == "resources/read":
            self.reads.observe(seconds)
        if method != LISTEN:
            self.latency.labels(method).observe(seconds)
        if method == "tools/call":
            name = ctx.params.get("name") if isinstance(ctx.params, dict) else None
            entry = self._runtime.assembly.catalog.tool(name) if isinstance(name, str) else None
            if entry is not None:  # a served tool: the label set stays the catalog's
                self.tools.labels(name, entry.plugin, outcome if outcome in ("ok", TOOL_ERROR) else "error").observe(
                    seconds
                )


def _failed_tool(result: Any) -> bool:
    """Whether ``result`` (the wire dict, or a model) is a tool call's ``isError: true`` answer."""
    if isinstance(result, dict):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


def _outcome(method: Any, exc: BaseException) -> str:
    """``ok`` or the JSON-RPC error code the wire carries for ``exc`` (bounded, unlike type names).

    A listen stream ends by its client closing it (its request is cancelled): that is its normal
    end, ``ok``; any other cancelled request is ``-32800``, the code the 2025-era wire answers it
    with (``mcp.server.streamable_http.REQUEST_CANCELLED``); an unexpected error is ``-32603``.
    """
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "ok" if method == LISTEN else str(REQUEST_CANCELLED)
    error = handler_exception_to_error_data(exc) if isinstance(exc, Exception) else None
    return str(error.code if error is not None else types.INTERNAL_ERROR)


class _Gauges:
    """Values read at scrape time from the runtime."""

    def __init__(self, runtime: Runtime, reloader: Reloader | None = None) -> None:
        self._runtime = runtime
        self._reloader = reloader

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        runtime = self._runtime
        yield GaugeMetricFamily("mcp_providers_subscriptions", "Watches held by this replica",
                                value=runtime.hub.watch_count())  # fmt: skip
        yield GaugeMetricFamily("mcp_providers_poll_leases", "Live sources this replica polls",
                                value=len(runtime.shared.held))  # fmt: skip
        connected = getattr(runtime.shared, "connected", True)
        yield GaugeMetricFamily("mcp_providers_cluster_connected", "1 when the cluster backend is reachable "
                                "(always 1 without [cluster])", value=1 if connected else 0)  # fmt: skip
        yield GaugeMetricFamily("mcp_providers_degraded", "1 while the replica serves without its cluster backend "
                                "(/readyz says degraded, still 200)", value=0 if connected else 1)  # fmt: skip
        yield from _outage_metrics(runtime.shared)
        yield CounterMetricFamily("mcp_providers_credentials_obtained", "Upstream credentials this replica "
                                  "obtained for callers (cache misses of the credential broker)",
                                  value=runtime.credentials.obtained)  # fmt: skip
        dropped = CounterMetricFamily("mcp_providers_audit_dropped", "Audit lines a syslog or webhook sink dropped "
                                      "(queue full, retries exhausted, unsent at stop)", labels=["sink"])  # fmt: skip
        for sink, count in runtime.audit.dropped().items():
            dropped.add_metric([sink], count)
        yield dropped
        yield GaugeMetricFamily("mcp_providers_generation", "Assemblies served since start-up (1 + reloads applied)",
                                value=runtime.generation.number)  # fmt: skip
        yield GaugeMetricFamily("mcp_providers_tasks_running", "Tool calls running as tasks on this replica",
                                value=runtime.tasks.running)  # fmt: skip
        threads = runtime.invoker.threads
        held = GaugeMetricFamily("mcp_providers_provider_threads", "Threads running plugins' plain functions: "
                                 "busy, past_deadline (still running after their request was answered), and "
                                 "limit ([server.limits] provider_threads)", labels=["state"])  # fmt: skip
        for state, value in (
            ("busy", threads.busy),
            ("past_deadline", threads.past_deadline),
            ("limit", threads.bound),
        ):
            held.add_metric([state], value)
        yield held
        yield CounterMetricFamily("mcp_providers_tasks_evicted", "Ended tasks this replica dropped to stay within "
                                  "[server.tasks] max_ended_bytes_per_subject / max_ended_bytes",
                                  value=getattr(runtime.tasks.store, "evicted", 0))  # fmt: skip
        if self._reloader is not None:
            yield from _reload_metrics(self._reloader)


def _outage_metrics(shared: Any) -> Iterator[Any]:
    """With ``[cluster]``: the bus outages this replica lived through (:mod:`..state.outage`)."""
    from prometheus_client.core import CounterMetricFamily

    outages = getattr(shared, "outages", None)
    if outages is None:
        return
    for name, value, text in (
        ("outages", outages.outages, "Outages of the cluster bus (Redis) this replica saw begin"),
        ("recoveries", outages.recoveries, "Outages of the cluster bus that ended, watched URIs re-announced"),
        ("reannounced", outages.reannounced, "URIs re-announced to this replica's watchers after bus outages"),
    ):
        yield CounterMetricFamily(f"mcp_providers_cluster_{name}", text, value=value)


def _reload_metrics(reloader: Reloader) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    total = CounterMetricFamily("mcp_providers_reload", "Reload attempts by outcome", labels=["outcome"])
    for outcome in ("applied", "unchanged", "failed"):
        total.add_metric([outcome], reloader.outcomes[outcome])
    yield total
    info = GaugeMetricFamily("mcp_providers_config_info", "The digest of the config served (value 1)",
                             labels=["digest"])  # fmt: skip
    info.add_metric([reloader.digest], 1)
    yield info


DETAILS = "the text is in the server log, and on /status.json with an admin token ([server.admin])"


def public_attempt(attempt: Attempt) -> dict[str, Any]:
    """What ``/readyz`` (no token) says of a reload attempt: when, what, its outcome and how many
    problems and warnings it had (``problem_count``, ``warning_count``; ``problems`` and
    ``warnings`` hold one line saying where to read them), never their text. A problem may quote
    what a plugin's hook raised (a database URL with its password, say) or a config value: that is
    for the log, ``/status.json`` and ``POST /admin/reload``, behind ``[server.admin]`` (round 4 item 3)."""
    shown: dict[str, Any] = attempt.as_dict()
    for key, noun in (("problems", "problem"), ("warnings", "warning")):
        count = len(shown[key])
        shown[f"{noun}_count"] = count
        shown[key] = [f"{count} {noun}{'s' if count > 1 else ''}; {DETAILS}"] if count else []
    return shown


def transport_stopped(server: Any) -> str | None:
    """Why the SDK's streamable HTTP session manager can no longer serve requests, or ``None``.

    The manager runs every request in a task group it opens in ``run()`` and drops when ``run()``
    ends; after that every MCP request is a 500 (``mcp.server.streamable_http_manager``). The SDK
    offers no liveness probe: the manager's ``run()`` is watched (:mod:`.manager`).
    """
    manager = session_manager_of(server)
    if manager is not None and run_ended(manager):
        return "the streamable HTTP session manager has stopped; MCP requests cannot be served"
    return None  # serving, or not served over HTTP (yet)


def ops_routes(
    composition: Composition,
    reloader: Reloader | None = None,
    recent: RecentRequests | None = None,
    gate: AdminGate | None = None,
) -> list[Route]:
    """``/healthz``, ``/readyz`` and ``/metrics`` for ``composition``; installs the request metrics
    (counted in ``recent`` too, for ``/status``, when given). With ``gate`` (``[server.admin]
    metrics = true``) ``/metrics`` answers only a token the admin gate admits (401, 403 otherwise).

    Mount them next to the MCP endpoint (``custom_starlette_routes=`` of the SDK's
    ``streamable_http_app``). Call once per served composition.
    """
    runtime = composition.runtime
    server = composition.server

    def served(method: str) -> bool:
        return method == "initialize" or server.get_request_handler(method) is not None

    metrics = Metrics(runtime, served, reloader, recent)
    metrics.start_at_zero(["initialize", *served_methods(server)])
    server.middleware.insert(0, metrics.middleware)

    async def healthz(request: Request) -> Response:
        problem = transport_stopped(server)
        if problem is not None:
            return JSONResponse({"status": "failing", "problems": [problem]}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        problems, degraded = [], []
        if not runtime.serving:
            problems.append("the composition is not served yet")
        shared = runtime.shared  # the listener subscribed (what the gauge says), and Redis answering now
        if shared.configured and not (getattr(shared, "connected", True) and await shared.ping()):
            degraded.append(DEGRADED_REDIS)
        failed = sorted(runtime.startup_failures)
        status = "not ready" if problems else "degraded" if degraded else "ready"
        body: dict[str, Any] = {"status": status, "problems": problems, "degraded": degraded,
                                "failed_providers": failed, "generation": runtime.generation.number}  # fmt: skip
        if reloader is not None:
            body["config_digest"] = reloader.digest
            body["last_reload"] = public_attempt(reloader.last) if reloader.last is not None else None
        return JSONResponse(body, status_code=200 if not problems else 503)

    async def metrics_page(request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if gate is not None:
            admitted = await admit(gate, request, runtime.audit, "admin/metrics", "read the metrics")
            if isinstance(admitted, Response):
                return admitted

        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_page, methods=["GET"]),
    ]


def _address_literal(host: str) -> bool:
    """Whether the ``Host`` value ``host`` names an IP address (``10.1.2.3``, ``10.1.2.3:8000``,
    ``[fd00::5]:8000``), not a name."""
    name, port = host, ""
    if host.startswith("["):
        name, _, port = host[1:].partition("]")
        port = port.removeprefix(":")
    elif host.count(":") == 1:
        name, _, port = host.partition(":")
    if port and not port.isdigit():
        return False
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return host.startswith("[") or ":" not in name  # an IPv6 address is bracketed in a Host (RFC 9110 §7.2)


async def rebinding_refusal(security: TransportSecuritySettings, request: Request) -> Response | None:
    """The 421 (Host) or 403 (Origin) refusing a request to a route beside the MCP path (``/healthz``,
    ``/readyz``, ``/metrics``, ``/status``, ``/admin/reload``, the RFC 9728 metadata), else ``None``.

    The MCP path's policy (``http_app.transport_policy``) decides, with one addition: a ``Host``
    that is an IP address literal is accepted, since a DNS-rebinding page cannot send one (its
    requests carry the name it rebound) while the kubelet's probes and a Prometheus scrape by pod
    address do. ``Origin`` is judged as on the MCP path: a page on another origin is refused.
    """
    if not security.enable_dns_rebinding_protection:
        return None
    host = request.headers.get("host", "")
    if host and host not in security.allowed_hosts and _address_literal(host):
        security = security.model_copy(update={"allowed_hosts": [*security.allowed_hosts, host]})
    refused = await TransportSecurityMiddleware(security).validate_request(request, is_post=False)
    return None if refused is None else explained(refused, request)


_SESSION_HEADER = b"mcp-session-id"
_REPLICA = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


def pin_sessions(app: Any, replica: str | None = None) -> Any:
    """Wrap the HTTP app so session ids name this replica (``MCP_PROVIDERS_REPLICA``); unchanged
    when it is not set.

    Outgoing ``Mcp-Session-Id: S`` becomes ``<replica>.S``; incoming ``<replica>.S`` is given to the
    SDK as ``S``. An id naming another replica is passed on as it is (the SDK answers 404 and the
    client starts a new session), so a misrouted request never reaches another session.

    :raises ValueError: the replica name is not 1-32 letters, digits, ``_`` or ``-``.
    """
    replica = replica if replica is not None else os.environ.get("MCP_PROVIDERS_REPLICA")
    if not replica:
        return app
    if not _REPLICA.fullmatch(replica):
        raise ValueError(f"MCP_PROVIDERS_REPLICA={replica!r}: use 1-32 letters, digits, '_' or '-'")
    prefix = replica.encode() + b"."

    async def pinned(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = [(k, v[len(prefix) :] if k == _SESSION_HEADER and v.startswith(prefix) else v)
                   for k, v in scope["headers"]]  # fmt: skip

        async def tagged(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [(k, prefix + v if k.lower() == _SESSION_HEADER else v)
                                                  for k, v in message.get("headers", [])]}  # fmt: skip
            await send(message)

        await app({**scope, "headers": headers}, receive, tagged)

    return pinned
