"""One progress line per test file when the suite runs on parallel workers (``pytest-xdist``).

On one process pytest already prints a line per file. With ``-n`` the controller prints only a
stream of dots in whatever order the workers finish, so a newcomer cannot tell which file is
running long or where time goes. Here the controller counts each file's tests (from the workers'
collection) and, when the last one of a file has finished, prints::

    [ 41%] tests/test_zoo.py: 24 passed in 38.2 s

where the seconds are the sum of the file's setup, call and teardown times (worker time, not wall
time). Tests print no letter of their own (no dots); the summary at the end names every failure
and skip (``-ra``).

With ``MCP_PROVIDERS_FILE_SECONDS=<path>`` set, the controller also writes every file's seconds
there as JSON at the end of the run: how ``tests/file_seconds.json``, the order files start in
(``conftest.pytest_collection_modifyitems``), is measured again.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class _File:
    total: int
    done: int = 0
    seconds: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)


class FileProgress:
    """The controller's plugin; registered by :func:`pytest_configure` under ``-n``."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._files: dict[str, _File] = {}
        self._tests = 0
        self._finished = 0

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self._files:  # every worker collects the same ids
            return
        for name, count in Counter(test_id.split("::", 1)[0] for test_id in ids).items():
            self._files[name] = _File(count)
        self._tests = len(ids)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> Generator[None, Any, None]:
        # No letter per test: the file's line gives its counts, the summary names every failure.
        outcome = yield
        status = outcome.get_result()
        if status:
            category, _letter, word = status
            outcome.force_result((category, "", word))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        file = self._files.get(report.nodeid.split("::", 1)[0])
        if file is None:
            return
        file.seconds += report.duration
        if report.when == "call" or (report.when == "setup" and not report.passed):
            word = "xfailed" if hasattr(report, "wasxfail") else report.outcome
            file.outcomes["error" if report.when == "setup" and report.failed else word] += 1
        if report.when == "teardown":
            if report.failed:
                file.outcomes["error"] += 1
            file.done += 1
            self._finished += 1
            if file.done == file.total:
                self._print(report.nodeid.split("::", 1)[0], file)

    def pytest_sessionfinish(self) -> None:
        where = os.environ.get("MCP_PROVIDERS_FILE_SECONDS")
        if where:
            seconds = {name: round(f.seconds, 1) for name, f in sorted(self._files.items()) if f.done == f.total}
            with open(where, "w", encoding="utf-8") as out:
                json.dump(seconds, out, indent=0, sort_keys=True)

    def _print(self, name: str, file: _File) -> None:
        order = ("passed", "failed", "error", "skipped", "xfailed")
        counts = ", ".join(f"{file.outcomes[word]} {word}" for word in order if file.outcomes[word])
        percent = 100 * self._finished // max(self._tests, 1)
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"[{percent:3d}%] {name}: {counts} in {file.seconds:.1f} s")


def pytest_configure(config: pytest.Config) -> None:
    on_controller = not hasattr(config, "workerinput")
    if on_controller and getattr(config.option, "numprocesses", None) and config.option.verbose <= 0:
        config.pluginmanager.register(FileProgress(config), "file-progress")
