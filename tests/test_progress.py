"""The suite's progress line per test file under parallel workers (tests/progress.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_a.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    (tmp_path / "test_b.py").write_text(
        "import pytest\n\ndef test_ok():\n    pass\n\ndef test_broken():\n    assert False\n\n"
        "@pytest.mark.skip(reason='x')\ndef test_skipped():\n    pass\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    env.pop("CI", None)  # the skip above is the plugin's input here, not a missing real part
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "progress", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "-c", os.devnull, *args, str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip


def test_each_file_gets_one_line_with_its_counts_when_its_last_test_ends(tmp_path: Path) -> None:
    run = _run(tmp_path, "-n", "2", "-ra")
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    a = [line for line in lines if re.search(r"\btest_a\.py: ", line)]
    b = [line for line in lines if re.search(r"\btest_b\.py: ", line)]
    assert len(a) == 1 and re.fullmatch(r"\[ *\d+%\] test_a\.py: 2 passed in \d+\.\d s", a[0]), run.stdout
    b_counts = r"\[ *\d+%\] test_b\.py: 1 passed, 1 failed, 1 skipped in \d+\.\d s"
    assert len(b) == 1 and re.fullmatch(b_counts, b[0]), run.stdout
    assert "[100%]" in a[0] + b[0], run.stdout  # the file that ended last says so
    assert not [line for line in lines if line.strip() and set(line.strip()) <= {".", "F", "s"}], run.stdout
    assert "FAILED test_b.py::test_broken" in run.stdout and "SKIPPED" in run.stdout  # the summary names them


def test_one_process_keeps_pytests_own_lines(tmp_path: Path) -> None:
    run = _run(tmp_path, "-n", "0")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "test_a.py .." in run.stdout and "test_a.py: 2 passed" not in run.stdout, run.stdout


def test_the_suite_runs_without_pytest_xdist() -> None:
    """scripts/sdk_drift runs tests in a venv without pytest-xdist: its hooks must be optional there."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "-o", "addopts=",
         str(TESTS / "test_auth_tokens.py")],
        capture_output=True, text=True, timeout=120, cwd=TESTS.parent,
    )  # fmt: skip
    assert run.returncode == 0 and "passed" in run.stdout, run.stdout + run.stderr
