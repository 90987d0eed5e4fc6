"""The rows of one benchmark run and the Markdown page made of them (``--markdown FILE``).

Every row is one measured case. A row names its baseline: the case it is compared with, in the
same section (by default the section's latest row marked ``baseline``). The page's ratio column is
always ``candidate / baseline`` of the row's own measure, whatever the unit; so for times (ms,
us/read) below 1.00 means the candidate is cheaper, for rates (reads/s) above 1.00 means it is
faster. Each row's verdict is one of :data:`VERDICTS`' forms: ``met``, ``MISSED``, ``skipped: why``,
``baseline`` or ``reported (no target)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import math
import os
import platform
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HISTORY = "benchmark-runs/2026-12-01-history.md"
"""The page's earlier hand-written sections (relative to ``docs/``)."""
PROFILES = "benchmark-runs/issue29-profiles.md"
"""Where the time goes in each missed target, and what would be needed (relative to ``docs/``)."""

DIRECTION = (
    "**Ratio direction.** Every ratio on this page is *candidate / baseline* of the row's own measure, "
    "with the baseline named in the row: for times (ms, us/read, MB) below 1.00 means the candidate "
    "is cheaper; for rates (reads/s) above 1.00 means it is faster."
)
VERDICTS = ("met", "MISSED", "skipped: ", "baseline", "reported (no target)")
"""The verdict column's forms (``skipped: `` is followed by the reason)."""


@dataclass
class Row:
    section: str
    case: str
    value: float
    unit: str
    ratio: str = ""
    """The section's own comparison text (printed, and kept in the page's notes column)."""
    target: str = ""
    """``"<target>: met"``, ``"<target>: MISSED"``, ``"skipped: <why>"`` or a note."""
    vs: str | None = None
    """The baseline case of this row, in the same section; ``None``: the section's latest baseline;
    ``""``: none."""


@dataclass
class Run:
    """One run of the command: its header lines (:func:`header`) and its rows."""

    head: str
    rows: list[Row] = field(default_factory=list)


def save(path: Path, run: Run) -> None:
    """Write ``run`` as JSON (``--json FILE``), for a later run's ``--previous FILE``."""
    path.write_text(json.dumps({"head": run.head, "rows": [dataclasses.asdict(r) for r in run.rows]}, indent=1) + "\n")


def load(path: Path) -> Run:
    """The run :func:`save` wrote to ``path``.

    :raises ValueError: ``path`` cannot be read or is not such a file (the message says which).
    """
    try:
        data = json.loads(path.read_text())
        return Run(str(data["head"]), [Row(**row) for row in data["rows"]])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a run written by --json ({type(exc).__name__}: {exc})") from None


def skipped_because_missing(*tools: str) -> str | None:
    """``"skipped: wrk not installed"`` (naming every missing tool), or ``None`` if all are on PATH."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not missing:
        return None
    return f"skipped: {' and '.join(missing)} not installed"


def fmt(value: float, unit: str) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "-"
    if unit == "ms":
        return f"{value:.3f} ms"
    if unit == "MB":
        return f"{value:.2f} MB"
    if unit == "reads/s":
        return f"{value:,.0f} reads/s"
    if unit.startswith(("us", "MB", "MiB")):
        return f"{value:,.2f} {unit}"
    return f"{value:g} {unit}"


def record(
    rows: list[Row], section: str, case: str, value: float, unit: str, ratio: str = "", target: str = "",
    *, vs: str | None = None,
) -> None:  # fmt: skip
    """Append one row to ``rows`` and print it now (``vs``: its baseline case, default the section's latest)."""
    rows.append(Row(section, case, value, unit, ratio, target, vs))
    print(f"  {section:<28} {case:<58} {fmt(value, unit):>14}  {ratio:<24} {target}", flush=True)


def verdict_of(row: Row) -> str:
    """The row's verdict, in one of the :data:`VERDICTS` forms."""
    text = row.target.strip()
    if text.startswith("skipped:"):
        return text
    tail = text.rsplit(":", 1)[-1].strip() if ":" in text else ""
    if tail == "met":
        return "met"
    if tail in ("MISSED", "NOT met", "missed"):
        return "MISSED"
    return "baseline" if row.ratio == "baseline" else "reported (no target)"


def target_of(row: Row) -> str:
    """The target's own text (without its verdict), or ``""``."""
    text = row.target.strip()
    if text.startswith("skipped:"):
        return ""
    head, sep, tail = text.rpartition(":")
    if sep and tail.strip() in ("met", "MISSED", "NOT met", "missed"):
        return head.strip()
    return ""


def baselines(rows: Sequence[Row]) -> list[Row | None]:
    """Each row's baseline row (``None`` for a baseline itself, or a row with none)."""
    latest: dict[str, Row] = {}
    by_name: dict[tuple[str, str], Row] = {}
    out: list[Row | None] = []
    for row in rows:
        by_name[(row.section, row.case)] = row
        if row.ratio == "baseline":
            latest[row.section] = row
            out.append(None)
            continue
        if row.vs is None:
            out.append(latest.get(row.section))
        else:  # "": no baseline
            out.append(by_name.get((row.section, row.vs)) if row.vs else None)
    return out


def ratio(row: Row, base: Row | None) -> str:
    if base is None or base.unit != row.unit or not base.value or math.isnan(base.value) or math.isnan(row.value):
        return ""
    return f"{row.value / base.value:.2f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _shown(verdict: str) -> str:
    return f"**{verdict}**" if verdict == "MISSED" else verdict


def table(rows: Sequence[Row], earlier: Sequence[Row] | None = None) -> str:
    """The Markdown table; with ``earlier`` (another run's rows), each row's value and verdict in
    that run too, matched by section and case."""
    head = ["section", "case", "baseline", "candidate", "ratio", "target", "verdict", "notes"]
    before = {(r.section, r.case): r for r in earlier or ()}
    if earlier is not None:
        head[-1:-1] = ["earlier run", "earlier verdict"]
    lines = [
        "| " + " | ".join(head) + " |",
        "|---|---|---:|---:|---:|---|---|" + "---:|---|" * (earlier is not None) + "---|",
    ]
    for row, base in zip(rows, baselines(rows), strict=True):
        verdict = verdict_of(row)
        based = "" if base is None else f"{fmt(base.value, base.unit)} ({base.case})"
        note = "" if row.ratio == "baseline" else row.ratio
        if verdict == "reported (no target)" and row.target and row.target != "reported":
            note = f"{note}; {row.target}" if note else row.target
        cells = [row.section, row.case, based, fmt(row.value, row.unit), ratio(row, base), target_of(row),
                 _shown(verdict), note]  # fmt: skip
        if earlier is not None:
            then = before.get((row.section, row.case))
            cells[-1:-1] = (
                ["-", "not in that run"] if then is None else [fmt(then.value, then.unit), _shown(verdict_of(then))]
            )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def both_runs(rows: Sequence[Row], earlier: Sequence[Row]) -> str:
    """One paragraph: how the targets judged in both runs fared (met in both, missed in both, or
    met in one run only, named)."""
    before = {(r.section, r.case): verdict_of(r) for r in earlier}
    judged = [(r, before.get((r.section, r.case))) for r in rows if verdict_of(r) in ("met", "MISSED")]
    pairs = [(r, then) for r, then in judged if then in ("met", "MISSED")]
    met = sum(verdict_of(r) == then == "met" for r, then in pairs)
    missed = sum(verdict_of(r) == then == "MISSED" for r, then in pairs)
    split = [f"{r.section} / {r.case}" for r, then in pairs if verdict_of(r) != then]
    text = (f"**Two runs.** {len(pairs)} targets judged in both runs: {met} met in both, {missed} missed in both, "
            f"{len(split)} met in one run only")  # fmt: skip
    return text + (f" (met in one run only: {'; '.join(split)})." if split else ".")


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _commit() -> str:
    """The checkout's commit, and whether the measured code (benchmarks, core, plugins) differs from it."""
    git = ["git", "-C", str(ROOT)]
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "benchmarks", "core", "plugins"]).returncode
        return out.stdout.strip() + (" with uncommitted changes" if dirty else "")
    return "unknown"


_commit_at_start: str | None = None


def machine() -> str:
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} cores"


def load_average() -> str:
    with contextlib.suppress(OSError):
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "unknown"


def header(argv: Sequence[str], started: datetime.datetime, load_before: str, took: float) -> str:
    """The page's first lines: what ran, where, when, with which versions."""
    command = shlex.join(["python", "-m", "benchmarks", *argv])
    return "\n".join([
        f"- command: `{command}` (as `uv run --group bench {command}`)",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}, took {took:.0f} s",
        f"- machine: {machine()}; load average (1, 5, 15 min) {load_before} before, {load_average()} after",
        f"- Python {platform.python_version()}, mcp {_version('mcp')}, fastmcp {_version('fastmcp')}, "
        f"mcp-providers {_version('mcp-providers')} (commit {_commit_at_start or _commit()} when the run started)",
    ])  # fmt: skip


ABOUT = """\
## What the sections measure

Each comparison runs its baseline and candidates **interleaved**, round by round (the order
alternating), and reports the **median** over rounds; single figures on this shared machine move
by 10-30 % between runs, so compare rows of one run. The resources are the same everywhere
(`benchmarks/fixtures.py`): each generated provider owns `bench://p{i}/` with 10 fixed resources
and 2 templates answering a ~120-byte JSON document from memory; the hand-written `MCPServer`
serves the same URIs.

**Anchors, both ways.** The SDK's `MCPServer` ships with its `OpenTelemetryMiddleware` on (a span
per request even with no tracer provider); the composed server drops it by default (it traces
through its own pipeline when a tracer provider is set). Each anchor row is measured both ways in
the same run: "SDK default (OTel middleware on)" and "OTel middleware off", and the composed server
"default (OTel middleware off)" and "SDK OTel middleware put back". A target against `MCPServer` is
judged on the like-for-like pair (both off) and the user-default pair is printed beside it.

- *read, in-memory*: one `resources/read` through the SDK's in-memory `Client` (2026-07-28 `auto`
  and 2025-11-25 `legacy` eras), 50 reads per sample over many rounds (the machine drifts). Its
  floor is the SDK's low-level `Server` whose handler returns a result made in advance: each
  server's time over it is its own handler's cost (for `MCPServer`, its resource manager; for the
  composed server, the whole pipeline).
- *read, stdio (SDK client)* and *server-side read, raw stdio*: the same over a subprocess's pipes,
  through the SDK client and through a raw client writing JSON lines (floor: a process echoing lines).
- *HTTP*: reads/s over stateless streamable HTTP (JSON responses) on loopback under `serve --http`'s
  uvicorn settings; load from `wrk` (one thread, N connections) and from N `httpx2` clients in the
  benchmark process (client-bound near the floor); the floor is a raw ASGI app with a fixed body.
  A second floor is the composed server's transport and the SDK's runner around a handler that
  does no work: the most any handler inside the SDK's runner can reach behind this transport.
- *scale*: 1 to 1,000 generated providers; compose + bind is warmed once, then the median of
  several builds per size.
- *plugins installed*: 1, 10 and 100 generated plugin distributions (`.dist-info` on `PYTHONPATH`,
  as for start-up) loaded by entry point and composed by `mcp-providers serve` over stdio;
  sequential raw-stdio reads of the last plugin's resource, reads/s and p99 latency.
- *start-up*: spawning `mcp-providers serve` until it answers `initialize`, against a process that
  only imports `mcp.server`, as shipped and with the cyclic collector paused as `serve` pauses it
  while it starts (`mcp_providers._gc`); the targets are judged on that fair pair. Every process
  starts in an empty working directory, as a client launching a server gives.
- *side-effect scope*: in-memory reads in a worker process where the scope was never installed (no
  audit hook, no HTTP patches, nothing entered) against one where every read runs in it.
- *ServiceNow*: sequential reads/s of one incident from the emulator (the floor of every
  ServiceNow benchmark) with `wrk -c1` (the emulator's own rate) and with one reused `httpx2` client
  (beside that client against a fixed-body server, which bounds it), and through the composed server.
- *cluster*, *HTTP + JWT*, *traces*, *reload*: see the docstrings of `benchmarks/cluster.py`,
  `identity.py`, `traces.py`, `reload.py`.
"""


def page(rows: Sequence[Row], head: str, earlier: Run | None = None) -> str:
    """The whole ``docs/benchmarks.md``: header, direction, table, then what the sections measure;
    with ``earlier`` (``--previous``), its header and each row's value and verdict in it too."""
    runs = "one run of the command below" if earlier is None else "two runs of the command below"
    lines = ["# Benchmarks", "",
             "<!-- Generated by `python -m benchmarks --markdown docs/benchmarks.md`; do not edit by hand. -->", "",
             f"The current figures, from {runs}. Earlier runs and their analysis:",
             f"[{HISTORY.split('/')[-1]}]({HISTORY}) and the raw outputs in `docs/benchmark-runs/`. Where the",
             f"time goes in each missed target, and what would be needed: [{PROFILES.split('/')[-1]}]({PROFILES}).",
             "", head, ""]  # fmt: skip
    if earlier is not None:
        lines += ["The earlier run (its value and verdict are the two columns before the notes):", "",
                  earlier.head, "", both_runs(rows, earlier.rows), ""]  # fmt: skip
    lines += [DIRECTION, "", table(rows, None if earlier is None else earlier.rows), ABOUT]
    return "\n".join(lines)


def run_started() -> tuple[datetime.datetime, str]:
    """When the run started (UTC) and the load average then; notes the commit measured."""
    global _commit_at_start
    _commit_at_start = _commit()
    return datetime.datetime.now(datetime.UTC), load_average()
