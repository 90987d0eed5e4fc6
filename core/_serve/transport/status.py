"""``GET /status`` (an HTML page) and ``GET /status.json`` (the same facts): what this replica serves.

For the person on call: the plugins with their distribution, version, state (``loaded``,
``rejected``, ``disabled``) and reason; what each declared (resources, resource templates, tools,
prompts, skills); what was left out because a listed component (an upstream's, an OpenAPI
operation's) collided, one line each naming both sides; the config digest, the generation and the
last reload attempt; the cluster backend (configured, connected), this replica's name
(``MCP_PROVIDERS_REPLICA``, else ``HOSTNAME``: the pod's name) and the poll leases it holds;
upstream health (each provider's calls and failures, when it last answered, since when it fails:
:mod:`..steps.health`); the threads running plugins' plain functions (busy, past their deadline, the
limit); requests, errors and latency per method over the last
:data:`WINDOW_MINUTES` minutes, every minute shown; the last denials (operation, action, target,
subject, issuer, reason, time; from the audit layer, kept with or without sinks, at most a few per
caller so that no one caller's refusals push the others' off: ``steps.audit.RecentDenials``).

Both routes sit beside ``/readyz`` and behind ``[server.admin]``, as ``POST /admin/reload``:
without that table they answer 404 saying how to turn them on; without a bearer token 401; with a
token the admin gate does not accept 403 (refusals are audited as ``admin/status``). A browser
sends the token as ``Authorization: Bearer`` (a header set by the operator's tooling or a proxy);
the page is plain server-rendered HTML with one inline style sheet allowed by hash, no script, no
external asset, every value escaped, and ``Cache-Control: no-store``. Nothing on it is content,
an argument or a secret: the facts come from the plugin records, the declarations, the reloader
and the runtime, none of which holds one.
"""

from __future__ import annotations

import base64
import bisect
import collections
import hashlib
import html
import math
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from mcp_providers._serve.state.replica import replica_name
from mcp_providers._serve.steps.health import FAILURES
from mcp_providers._serve.transport.admin import AdminGate, admit

if TYPE_CHECKING:
    from mcp_providers._serve.composition import Composition
    from mcp_providers._serve.reload import Reloader

WINDOW_MINUTES = 10
"""How many minutes of per-method counts :class:`RecentRequests` keeps (the current one included)."""
_KINDS = ("resources", "templates", "tools", "prompts", "skills")
OFF = 'the status page is off; add [server.admin] (docs/operations.md, "Status page")'


LATENCY_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds of the latency buckets :class:`RecentRequests` counts in, in seconds (those of
``prometheus_client``'s histograms, so the page and ``/metrics`` agree); one more bucket holds the
rest."""


class RecentRequests:
    """Requests, errors and latency per method, per wall-clock minute, for the last ``minutes``
    minutes: a ring of at most ``minutes`` buckets, so its size is bounded by ``minutes`` times the
    number of method labels (served methods and ``other``, as in ``/metrics``).

    Fed by :class:`~mcp_providers._serve.transport.ops.Metrics` (one call per request answered).
    """

    def __init__(self, minutes: int = WINDOW_MINUTES, clock: Callable[[], float] = time.time) -> None:
        self.minutes = minutes
        self._clock = clock
        self._buckets: collections.deque[tuple[int, dict[str, _Cell]]] = collections.deque(maxlen=minutes)

    def count(self, method: str, error: bool, seconds: float | None = None) -> None:
        """Count one request of ``method`` (a bounded label), an error when ``error``, that took
        ``seconds`` (``None``: not timed, such as a listen stream)."""
        minute = int(self._clock() // 60)
        buckets = self._buckets
        if not buckets or minute > buckets[-1][0]:  # a clock set back counts into the newest minute
            buckets.append((minute, {}))
        cell = buckets[-1][1].get(method)
        if cell is None:
            cell = buckets[-1][1][method] = _Cell()
        cell.add(error, seconds)

    def snapshot(self) -> dict[str, Any]:
        """``{"window_minutes": n, "totals": {method: {"requests", "errors", "latency_ms"}},
        "minutes": [{"start": ISO 8601 UTC, "methods": {method: {"requests", "errors"}}}, ...]}``:
        every minute of the window, oldest first, a quiet one with no methods. ``latency_ms`` is
        ``{"mean", "p95", "max"}`` in milliseconds over the window (``p95``: the upper bound of the
        :data:`LATENCY_BOUNDS` bucket holding the 95th percentile, or the max past the last bound),
        ``None`` when nothing was timed."""
        now = int(self._clock() // 60)
        kept = {minute: methods for minute, methods in list(self._buckets)}
        minutes: list[dict[str, Any]] = []
        totals: collections.defaultdict[str, _Cell] = collections.defaultdict(_Cell)
        for minute in range(now - self.minutes + 1, now + 1):
            methods = kept.get(minute, {})
            for method, cell in methods.items():
                totals[method].merge(cell)
            start = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(minute * 60))
            counts = {m: {"requests": c.requests, "errors": c.errors} for m, c in sorted(methods.items())}
            minutes.append({"start": start, "methods": counts})
        summary = {m: {"requests": c.requests, "errors": c.errors, "latency_ms": c.latency_ms()}
                   for m, c in sorted(totals.items())}  # fmt: skip
        return {"window_minutes": self.minutes, "totals": summary, "minutes": minutes}


class _Cell:
    """One method's counts in one minute (or, merged, over the window)."""

    __slots__ = ("buckets", "errors", "requests", "slowest", "timed", "total")

    def __init__(self) -> None:
        self.requests = self.errors = self.timed = 0
        self.total = self.slowest = 0.0
        self.buckets = [0] * (len(LATENCY_BOUNDS) + 1)

    def add(self, error: bool, seconds: float | None) -> None:
        self.requests += 1
        self.errors += error
        if seconds is not None:
            self.timed += 1
            self.total += seconds
            self.slowest = max(self.slowest, seconds)
            self.buckets[bisect.bisect_left(LATENCY_BOUNDS, seconds)] += 1

    def merge(self, other: _Cell) -> None:
        self.requests += other.requests
        self.errors += other.errors
        self.timed += other.timed
        self.total += other.total
        self.slowest = max(self.slowest, other.slowest)
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]

    def latency_ms(self) -> dict[str, float] | None:
        if not self.timed:
            return None
        rank, seen, p95 = math.ceil(0.95 * self.timed), 0, self.slowest
        for bound, n in zip(LATENCY_BOUNDS, self.buckets, strict=False):
            seen += n
            if seen >= rank:
                p95 = min(bound, self.slowest)
                break
        return {"mean": _ms(self.total / self.timed), "p95": _ms(p95), "max": _ms(self.slowest)}


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def facts(composition: Composition, reloader: Reloader | None, recent: RecentRequests | None) -> dict[str, Any]:
    """Everything ``/status.json`` answers (see the module docstring), as JSON-ready data."""
    runtime = composition.runtime
    last = reloader.last if reloader is not None else None
    return {
        "server": {"name": composition.config.server.name, "version": _core_version()},
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "serving": runtime.serving,
        "config_digest": reloader.digest if reloader is not None else None,
        "generation": runtime.generation.number,
        "last_reload": last.as_dict() if last is not None else None,
        "plugins": plugins(composition),
        "left_out": [str(p) for p in composition.assembly.left_out],
        "failed_providers": dict(sorted(runtime.startup_failures.items())),
        "cluster": cluster(composition),
        "requests": recent.snapshot() if recent is not None else None,
        "upstreams": runtime.invoker.health.snapshot(),
        "provider_threads": provider_threads(composition),
        "recent_denials": list(runtime.audit.recent_denials)[::-1],  # newest first
    }


def provider_threads(composition: Composition) -> dict[str, int]:
    """The threads running plugins' plain functions now: ``busy`` (holding a slot), ``past_deadline``
    (still running after their request was answered) and ``limit`` (``[server.limits]
    provider_threads``), as ``/metrics`` gives them (``mcp_providers_provider_threads``)."""
    threads = composition.runtime.invoker.threads
    return {"busy": threads.busy, "past_deadline": threads.past_deadline, "limit": threads.bound}


def plugins(composition: Composition) -> list[dict[str, Any]]:
    """Each plugin record (:meth:`~mcp_providers._host.discovery.PluginRecord.as_dict`) with
    ``catalog``: how many resources, templates, tools, prompts and skills its providers declared."""
    counts: dict[str, dict[str, int]] = {}
    for declared in composition.declared:
        mine = counts.setdefault(declared.plugin, dict.fromkeys(_KINDS, 0))
        mine["resources"] += len(declared.resources)
        mine["templates"] += len(declared.templates)
        mine["tools"] += len(declared.tools)
        mine["prompts"] += len(declared.prompts)
        mine["skills"] += len(declared.skills)
    empty = dict.fromkeys(_KINDS, 0)
    return [{**r.as_dict(), "catalog": counts.get(r.name, empty)} for r in composition.records]


def cluster(composition: Composition) -> dict[str, Any]:
    """``backend`` (``redis`` or ``in-process``), ``configured``, ``connected`` (``None`` without
    ``[cluster]``), ``replica`` (this replica's name: ``MCP_PROVIDERS_REPLICA``, else ``HOSTNAME``,
    the pod's name; :func:`~mcp_providers._serve.state.replica.replica_name`), ``cluster_id`` (the
    process's id on the cluster, ``None`` without ``[cluster]``) and ``leases``: the live sources
    whose poll lease this replica holds."""
    shared = composition.runtime.shared
    configured = bool(shared.configured)
    return {
        "backend": "redis" if configured else "in-process",
        "configured": configured,
        "connected": bool(getattr(shared, "connected", False)) if configured else None,
        "replica": replica_name(),
        "cluster_id": getattr(shared, "replica", None),
        "leases": sorted(shared.held),
    }


def _core_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp-providers")
    except PackageNotFoundError:
        return "0+unknown"


def status_routes(
    composition: Composition, reloader: Reloader | None, gate: AdminGate | None, recent: RecentRequests | None
) -> list[Route]:
    """``GET /status`` and ``GET /status.json`` for ``composition``, behind ``gate`` (the admin
    gate, :func:`~mcp_providers._serve.transport.admin.admin_gate`; ``None``: both answer 404)."""
    audit = composition.runtime.audit

    async def answer(request: Request, page: bool) -> Response:
        if gate is None:
            return JSONResponse({"error": OFF}, 404)
        principal = await admit(gate, request, audit, "admin/status", "see the status page")
        if isinstance(principal, Response):
            return principal
        body = facts(composition, reloader, recent)
        if not page:
            return JSONResponse(body, headers={"Cache-Control": "no-store"})
        return HTMLResponse(render(body), headers=_PAGE_HEADERS)

    async def status_page(request: Request) -> Response:
        return await answer(request, True)

    async def status_json(request: Request) -> Response:
        return await answer(request, False)

    return [Route("/status", status_page, methods=["GET"]), Route("/status.json", status_json, methods=["GET"])]


# -- the page -------------------------------------------------------------------------------------------

STYLE = (
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "th,td{border:1px solid #bbb;padding:.25em .6em;text-align:left;vertical-align:top}"
    "th{background:#eee}.rejected,.failing{background:#fdd}.disabled{color:#666}"
    "code{font-size:12px}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; frame-ancestors 'none'; "
    "form-action 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _e(value: Any) -> str:
    """``value`` as escaped HTML text (``None`` as an em dash)."""
    return "—" if value is None else html.escape(str(value), quote=True)


def _table(head: Iterable[str], rows: Iterable[Iterable[str]], row_class: Iterable[str] = ()) -> str:
    """A table of already-escaped cells; ``row_class`` (escaped here) names each row's class."""
    classes = iter(row_class)
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join(
        f'<tr class="{_e(next(classes, ""))}">' + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _pairs(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table of labels (escaped here) and already-escaped values."""
    return "<table>" + "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def render(body: dict[str, Any]) -> str:
    """The HTML page of :func:`facts` ``body``: every value escaped, no script."""
    server = body["server"]
    title = f"{server['name']} status: {body['cluster']['replica']}"
    sections = [
        f"<h1>{_e(title)}</h1>",
        f"<p>mcp-providers {_e(server['version'])} · {_e(body['time'])} · "
        f"{'serving' if body['serving'] else 'not serving yet'}</p>",
        _config_section(body),
        _plugins_section(body["plugins"], body["failed_providers"]),
        _left_out_section(body["left_out"]),
        _cluster_section(body["cluster"]),
        _upstreams_section(body["upstreams"]),
        _threads_section(body["provider_threads"]),
        _requests_section(body["requests"]),
        _denials_section(body["recent_denials"]),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>" + "".join(sections) + "</body></html>"
    )


def _config_section(body: dict[str, Any]) -> str:
    last = body["last_reload"]
    rows = [("config digest", f"<code>{_e(body['config_digest'])}</code>"), ("generation", _e(body["generation"]))]
    if last is None:
        rows.append(("last reload", "none since start-up"))
    else:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(last["at"]))
        rows.append(("last reload", f"{_e(last['outcome'])} ({_e(last['trigger'])}, {_e(when)})"))
        for label in ("problems", "warnings", "changed"):
            if last[label]:
                rows.append((label, "<br>".join(_e(item) for item in last[label])))
    return "<h2>Configuration</h2>" + _pairs(rows)


def _plugins_section(records: list[dict[str, Any]], failed: dict[str, str]) -> str:
    head = ["plugin", "distribution", "version", "state", "reason", *_KINDS]
    rows = []
    for r in records:
        counts = [_e(r["catalog"][k]) for k in _KINDS]
        rows.append([_e(r["name"]), _e(r["distribution"]), _e(r["version"]), _e(r["status"]),
                     _e(r["reason"] or r["selection"]), *counts])  # fmt: skip
    out = "<h2>Plugins</h2>" + _table(head, rows, (r["status"] for r in records))
    if failed:
        out += "<h3>Providers that failed to start</h3>" + _table(
            ["provider", "reason"], ([_e(k), _e(v)] for k, v in failed.items())
        )
    return out


def _left_out_section(lines: list[str]) -> str:
    """Listed declarations left out because they collided (their plugins serve the rest)."""
    if not lines:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return f"<h2>Left out (collisions of listed components)</h2><ul>{items}</ul>"


def _cluster_section(c: dict[str, Any]) -> str:
    connected = "n/a" if c["connected"] is None else ("yes" if c["connected"] else "no")
    rows = [("backend", _e(c["backend"])), ("configured", "yes" if c["configured"] else "no"),
            ("connected", connected), ("replica", _e(c["replica"])), ("cluster id", _e(c["cluster_id"])),
            ("leases held", "<br>".join(_e(s) for s in c["leases"]) or "none")]  # fmt: skip
    return "<h2>Cluster</h2>" + _pairs(rows)


def _threads_section(threads: dict[str, int]) -> str:
    rows = [("busy", _e(threads["busy"])), ("past their deadline", _e(threads["past_deadline"])),
            ("limit ([server.limits] provider_threads)", _e(threads["limit"]))]  # fmt: skip
    return "<h2>Provider threads (plugins' plain functions running now)</h2>" + _pairs(rows)


def _upstreams_section(upstreams: list[dict[str, Any]]) -> str:
    head = ["provider", "plugin", "state", "calls", *FAILURES, "last answered", "last failure", "failing since"]
    rows = []
    for u in upstreams:
        last = None if u["last_failure"] is None else f"{u['last_failure']} ({u['last_failure_kind']})"
        rows.append([_e(u["provider"]), _e(u["plugin"]), _e(u["state"]), _e(u["calls"]),
                     *(_e(u["failures"][k]) for k in FAILURES), _e(u["last_ok"]), _e(last),
                     _e(u["failing_since"])])  # fmt: skip
    title = "<h2>Upstream health (each provider's calls since start-up)</h2>"
    return title + (_table(head, rows, (u["state"] for u in upstreams)) if rows else "<p>no provider called yet</p>")


def _requests_section(requests: dict[str, Any] | None) -> str:
    if requests is None:
        return "<h2>Requests</h2><p>not counted here</p>"
    minutes = requests["minutes"]
    head = ["method", "requests", "errors", "mean ms", "p95 ms", "max ms", *(m["start"][11:16] for m in minutes)]
    rows = []
    for method, total in requests["totals"].items():
        per_minute = [m["methods"].get(method, {"requests": 0, "errors": 0}) for m in minutes]
        latency = total["latency_ms"] or {}
        rows.append([_e(method), _e(total["requests"]), _e(total["errors"]),
                     *(_e(latency.get(k)) for k in ("mean", "p95", "max")),
                     *(f"{_e(p['requests'])}/{_e(p['errors'])}" for p in per_minute)])  # fmt: skip
    title = f"<h2>Requests, last {_e(requests['window_minutes'])} minutes (UTC; per minute: requests/errors)</h2>"
    return title + (_table(head, rows) if rows else "<p>none</p>")


def _denials_section(denials: list[dict[str, Any]]) -> str:
    head = ["time", "operation", "action", "target", "subject", "issuer", "reason"]
    rows = ([_e(d[k]) for k in head] for d in denials)
    return "<h2>Recent denials (newest first)</h2>" + (_table(head, rows) if denials else "<p>none</p>")
