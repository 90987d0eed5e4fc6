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
