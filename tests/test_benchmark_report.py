"""The page ``python -m benchmarks --markdown FILE`` writes: its header, the one stated ratio
direction, a verdict on every row, and rows that say "skipped: wrk not installed" (not NaN, not
MISSED) when ``wrk`` is missing. Built from a fake row set and the sections' real skip paths, so
no server starts."""

from __future__ import annotations

import datetime
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks package sits beside tests/
import benchmarks.__main__ as bench
from benchmarks import cluster, report
from benchmarks.report import Row

FAKE = [
    Row("read", "MCPServer", 0.5, "ms", "baseline"),
    Row("read", "composed", 0.4, "ms", "0.80x", "target <= 1.0x: met"),
    Row("read", "composed, slow", 0.6, "ms", "1.20x", "target <= 1.0x: MISSED"),
    Row("HTTP", "MCPServer", 1000.0, "reads/s", "baseline"),
    Row("HTTP", "composed", 2500.0, "reads/s", "2.50x", "target >= 2x: met"),
    Row("HTTP", "other", 900.0, "reads/s", "", "target >= 0.9x: NOT met"),
    Row("memory", "after 1,000 reads", 60.0, "MB RSS", "baseline"),
    Row("memory", "after 100,000 reads", 60.0, "MB RSS", "+0.00 MB"),
]


def table_rows(page: str) -> list[list[str]]:
    lines = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| section")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


def verdict_column(page: str) -> list[str]:
    header = next(line for line in page.splitlines() if line.startswith("| section"))
    index = [c.strip() for c in header.strip("|").split("|")].index("verdict")
    return [cells[index].strip("*") for cells in table_rows(page)]


def page_of(rows: list[Row]) -> str:
    started = datetime.datetime(2026, 12, 1, 21, 0, tzinfo=datetime.UTC)
    head = report.header(["--quick", "--markdown", "docs/benchmarks.md"], started, "0.50 0.40 0.30", 12.0)
    return report.page(rows, head)


def test_the_page_has_the_header_the_direction_and_a_verdict_per_row() -> None:
    page = page_of(FAKE)
    assert page.startswith("# Benchmarks\n")
    assert "- command: `python -m benchmarks --quick --markdown docs/benchmarks.md`" in page
    assert "- date: 2026-12-01 21:00 UTC" in page
    assert "- machine: " in page and "load average" in page
    assert "Python 3." in page and "mcp 2." in page
    assert report.DIRECTION in page
    assert "*candidate / baseline*" in report.DIRECTION
    assert "benchmark-runs/" in page  # the history is linked
    verdicts = verdict_column(page)
    assert len(verdicts) == len(FAKE)
    assert verdicts == ["baseline", "met", "MISSED", "baseline", "met", "MISSED", "baseline", "reported (no target)"]


def test_ratios_are_candidate_over_baseline_for_times_and_rates_alike() -> None:
    rows = table_rows(page_of(FAKE))
    ratios = {(cells[0], cells[1]): cells[4] for cells in rows}
    assert ratios[("read", "composed")] == "0.80"
    assert ratios[("read", "composed, slow")] == "1.20"
    assert ratios[("HTTP", "composed")] == "2.50"  # a rate: candidate rate / baseline rate
    assert ratios[("HTTP", "other")] == "0.90"
    assert ratios[("read", "MCPServer")] == ""  # a baseline has no ratio


def test_a_row_names_its_own_baseline_when_a_section_has_two() -> None:
    rows = [
        Row("pairs", "SDK on", 1.0, "ms", "baseline"),
        Row("pairs", "SDK off", 0.5, "ms", "baseline"),
        Row("pairs", "ours on", 0.8, "ms", "", vs="SDK on"),
        Row("pairs", "ours off", 0.4, "ms", ""),
        Row("pairs", "no baseline", 0.1, "ms", "", vs=""),
    ]
    cells = {c[1]: c for c in table_rows(page_of(rows))}
    assert cells["ours on"][2].endswith("(SDK on)") and cells["ours on"][4] == "0.80"
    assert cells["ours off"][2].endswith("(SDK off)") and cells["ours off"][4] == "0.80"
    assert cells["no baseline"][2] == "" and cells["no baseline"][4] == ""


@pytest.fixture
def no_wrk(monkeypatch: pytest.MonkeyPatch) -> list[Row]:
    real = shutil.which

    def which(name: str, *args: Any, **kwargs: Any) -> str | None:
        return None if name == "wrk" else real(name, *args, **kwargs)

    monkeypatch.setattr(shutil, "which", which)
    rows: list[Row] = []
    monkeypatch.setattr(bench, "ROWS", rows)
    return rows


def test_without_wrk_the_http_rows_say_skipped_not_nan_or_missed(no_wrk: list[Row]) -> None:
    urls = {name: "http://127.0.0.1:9/mcp" for name in bench.HTTP_KINDS}  # nothing listens: never contacted
    bench.http_wrk(urls, rounds=1)
    assert len(no_wrk) == len(urls) * len(bench.WRK_CLIENTS)
    page = page_of(no_wrk)
    assert set(verdict_column(page)) == {"skipped: wrk not installed"}
    assert "nan" not in page.lower() and "MISSED" not in page.split("## What the sections")[0].split("|---")[1]


def test_without_wrk_the_cluster_rows_say_skipped(no_wrk: list[Row]) -> None:
    cluster.run(1, bench.emit)
    page = page_of(no_wrk)
    assert no_wrk and all(v.startswith("skipped: ") and "wrk" in v for v in verdict_column(page))
    assert "nan" not in page.lower()


def test_without_wrk_the_emulator_row_says_skipped(no_wrk: list[Row]) -> None:
    import anyio

    anyio.run(bench._emulator_alone, "http://127.0.0.1:9/", "u", "p", 1)
    assert [verdict_column(page_of(no_wrk))] == [["skipped: wrk not installed"]]


def test_the_markdown_option_writes_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "ROWS", [])

    def fake_sections(only: set[str], rounds: int) -> None:
        assert only == {"memory"} and rounds == 3
        for row in FAKE:
            bench.emit(row.section, row.case, row.value, row.unit, row.ratio, row.target)

    monkeypatch.setattr(bench, "run_sections", fake_sections)
    out = tmp_path / "benchmarks.md"
    bench.main(["--quick", "--only", "memory", "--markdown", str(out)])
    page = out.read_text()
    assert f"- command: `python -m benchmarks --quick --only memory --markdown {out}`" in page
    assert report.DIRECTION in page and len(verdict_column(page)) == len(FAKE)


def test_a_failing_section_leaves_a_row_saying_so_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    rows: list[Row] = []
    monkeypatch.setattr(bench, "ROWS", rows)

    def broken() -> None:
        raise RuntimeError("wrk saw errors against http://127.0.0.1:9/mcp: 12 non-2xx\nmore detail")

    bench.run_section("cluster", broken)
    bench.run_section("memory", lambda: bench.emit("memory", "after 1,000 reads", 60.0, "MB RSS", "baseline"))
    assert [verdict_column(page_of(rows))] == [
        ["skipped: failed (RuntimeError: wrk saw errors against http://127.0.0.1:9/mcp: 12 non-2xx)", "baseline"]
    ]


EARLIER = [
    Row("read", "MCPServer", 0.52, "ms", "baseline"),
    Row("read", "composed", 0.55, "ms", "1.06x", "target <= 1.0x: MISSED"),
    Row("read", "composed, slow", 0.61, "ms", "1.17x", "target <= 1.0x: MISSED"),
    Row("HTTP", "MCPServer", 990.0, "reads/s", "baseline"),
    Row("HTTP", "composed", 2400.0, "reads/s", "2.42x", "target >= 2x: met"),
]


def test_a_page_from_two_runs_shows_each_rows_earlier_value_and_verdict_and_counts_the_targets() -> None:
    earlier = report.Run("- command: `python -m benchmarks`\n- date: 2026-12-01 20:00 UTC", EARLIER)
    page = report.page(FAKE, "- date: 2026-12-01 21:00 UTC", earlier)
    header = next(line for line in page.splitlines() if line.startswith("| section"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns[-3:-1] == ["earlier run", "earlier verdict"]
    cells = {(c[0], c[1]): c for c in table_rows(page)}
    assert cells[("read", "composed")][-3:-1] == ["0.550 ms", "**MISSED**"]  # missed before, met now
    assert cells[("HTTP", "composed")][-3:-1] == ["2,400 reads/s", "met"]
    assert cells[("HTTP", "other")][-3:-1] == ["-", "not in that run"]
    assert "- date: 2026-12-01 20:00 UTC" in page.split("| section")[0]  # the earlier run's header too
    # Targets judged in both runs: composed (MISSED then met), composed, slow (MISSED twice), HTTP composed (met twice).
    assert "3 targets judged in both runs: 1 met in both, 1 missed in both, 1 met in one run only" in page
    assert "met in one run only: read / composed" in page


def test_the_rows_of_a_run_round_trip_through_its_json_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    report.save(path, report.Run("- date: x", FAKE))
    again = report.load(path)
    assert again.head == "- date: x" and again.rows == FAKE


def test_the_json_and_previous_options_write_a_run_and_compare_with_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "ROWS", [])
    monkeypatch.setattr(bench, "run_sections", lambda only, rounds: bench.ROWS.extend(FAKE))
    first, out = tmp_path / "first.json", tmp_path / "page.md"
    bench.main(["--quick", "--only", "memory", "--json", str(first)])
    assert report.load(first).rows == FAKE
    monkeypatch.setattr(bench, "ROWS", [])
    bench.main(["--quick", "--only", "memory", "--previous", str(first), "--markdown", str(out)])
    page = out.read_text()
    assert "8 targets" not in page and "4 targets judged in both runs: 2 met in both, 2 missed in both" in page


def test_an_unreadable_previous_run_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[object] = []
    monkeypatch.setattr(bench, "run_sections", lambda only, rounds: ran.append(only))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit):
        bench.main(["--only", "memory", "--previous", str(bad)])
    assert ran == []
    assert f"--previous {bad}: not a run written by --json" in capsys.readouterr().err


@pytest.mark.parametrize(("ours", "verdict"), [(1200.0, "met"), (1199.0, "MISSED")])
def test_the_wrk_rows_judge_the_composed_rate_against_the_floor_too(
    ours: float, verdict: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows: list[Row] = []
    monkeypatch.setattr(bench, "ROWS", rows)
    rates = {bench.HTTP_FLOOR: 2000.0, bench.RUNNER_FLOOR: 1500.0, bench.SDK_ON: 400.0, bench.SDK_OFF: 450.0,
             bench.OURS_ON: 1000.0, bench.OURS_OFF: ours}  # fmt: skip
    bench._report_http("HTTP, wrk, 10 concurrent clients", rates)
    cells = {c[1]: c for c in table_rows(page_of(rows))}
    floor_row = cells[f"{bench.OURS_OFF}, against the floor"]
    assert floor_row[2] == f"2,000 reads/s ({bench.HTTP_FLOOR})"
    assert floor_row[5] == ">= 0.6x the floor's rate (raw ASGI)" and floor_row[6].strip("*") == verdict
    assert cells[bench.OURS_OFF][6] == "met"  # the 2.5x MCPServer target is judged on its own row still
    assert cells[bench.OURS_OFF][5] == f"target >= {bench.MCPSERVER_SHARE}x MCPServer's rate (both off)"


def test_wrk_is_pinned_to_the_last_cpu_with_taskset_and_not_pinned_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert cluster.pinning() == cluster.Pinning(
        ["taskset", "-c", "2"], ["taskset", "-c", "0-1"], "wrk on CPU 2, servers on 0-1"
    )
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert cluster.pinning() == cluster.Pinning(["taskset", "-c", "1"], [], "wrk on CPU 1, servers unpinned (2 CPUs)")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert cluster.pinning() is None  # one CPU: nothing to keep apart
    real = shutil.which
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "taskset" else real(name, *a, **k))
    assert cluster.pinning() is None


def test_a_pinned_wrk_run_starts_wrk_under_taskset(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    seen: list[list[str]] = []

    def run(args: list[str], **kwargs: Any) -> Any:
        seen.append(args)
        return subprocess.CompletedProcess(args, 0, "  1000 requests in 1.00s\nRequests/sec:   1000.00\n", "")

    monkeypatch.setattr(subprocess, "run", run)
    assert cluster.wrk("http://127.0.0.1:9/mcp", 1, ["taskset", "-c", "1"]) == (1000.0, 1000)
    assert seen[0][:4] == ["taskset", "-c", "1", "wrk"]
    cluster.wrk("http://127.0.0.1:9/mcp", 1)
    assert seen[1][0] == "wrk"


def test_the_cluster_target_is_the_issues_one_and_five_tenths(monkeypatch: pytest.MonkeyPatch) -> None:
    rows: list[Row] = []
    monkeypatch.setattr(bench, "ROWS", rows)
    cluster.report_pair({"1 replica": [1000.0], "2 replicas": [1490.0]}, "", bench.emit)
    cluster.report_pair({"1 replica": [1000.0], "2 replicas": [1500.0]}, "wrk on CPU 1", bench.emit)
    verdicts = verdict_column(page_of(rows))
    assert verdicts == ["baseline", "MISSED", "baseline", "met"]
    assert "2 replicas >= 1.5x 1" in page_of(rows)
    assert [r.case for r in rows][1:4:2] == [
        "reads/s through nginx, wrk 32 conns: 2 replicas",
        "reads/s through nginx, wrk 32 conns, wrk on CPU 1: 2 replicas",
    ]


@pytest.mark.parametrize(("ours", "verdict"), [(1125.0, "met"), (1124.0, "MISSED")])
def test_the_wrk_rows_judge_issue_43s_two_and_a_half_times_mcpserver(
    ours: float, verdict: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows: list[Row] = []
    monkeypatch.setattr(bench, "ROWS", rows)
    rates = {bench.HTTP_FLOOR: 5000.0, bench.RUNNER_FLOOR: 1500.0, bench.SDK_ON: 400.0, bench.SDK_OFF: 450.0,
             bench.OURS_ON: 1000.0, bench.OURS_OFF: ours}  # fmt: skip
    bench._report_http("HTTP, wrk, 50 concurrent clients", rates)
    cells = {c[1]: c for c in table_rows(page_of(rows))}
    assert cells[bench.OURS_OFF][6].strip("*") == verdict


def test_the_floors_show_what_the_sdks_runner_leaves_a_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's floor is read against the raw ASGI floor and MCPServer, and the composed rate against it;
    the in-memory floor splits each server's time over it into its own handler's cost."""
    rows: list[Row] = []
    monkeypatch.setattr(bench, "ROWS", rows)
    rates = {bench.HTTP_FLOOR: 5000.0, bench.RUNNER_FLOOR: 2500.0, bench.SDK_ON: 400.0, bench.SDK_OFF: 1000.0,
             bench.OURS_ON: 1000.0, bench.OURS_OFF: 2000.0}  # fmt: skip
    bench._report_http("HTTP, wrk, 10 concurrent clients", rates)
    cells = {c[1]: c for c in table_rows(page_of(rows))}
    assert cells[bench.RUNNER_FLOOR][7].startswith("0.50x floor, 2.50x MCPServer (off)")
    assert "0.40x floor, 0.80x the runner's floor" in cells[bench.OURS_OFF][7]
    rows.clear()
    bench.report_floor("read, in-memory auto", {bench.SDK_FLOOR: 0.100, bench.SDK_OFF: 0.125, bench.OURS_OFF: 0.160})
    (note,) = [r.ratio for r in rows]
    assert note == "0.80x MCPServer (off); over it: MCPServer's handler 25 us, the composed pipeline 60 us"
