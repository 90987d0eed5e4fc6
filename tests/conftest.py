"""Shared fixtures: the anyio backend and the installed test distribution of plugins; and the rule
that under ``CI=true`` every skip fails (:mod:`real_parts`); one bytecode cache for every process of
the run (:mod:`bytecode_cache`); and a fork server per test process for the ``python -m
mcp_providers`` runs the tests start (:mod:`prefork`); one default TLS context per test process
(:mod:`tls_once`)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import prefork
import progress
import pytest
from bytecode_cache import use_one_bytecode_cache
from real_parts import installed_distribution, pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401 (hooks found here)
from tls_once import use_one_tls_context

TESTS = Path(__file__).parent
TEST_DISTRIBUTION = TESTS / "distributions" / "test_plugins"


def pytest_configure(config: pytest.Config) -> None:
    use_one_bytecode_cache()  # before the xdist controller starts its workers (at session start)
    use_one_tls_context()  # httpx2 clients made in this process read the CA bundle once
    progress.pytest_configure(config)
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        prefork.start()  # each process that runs tests has one (an xdist controller runs none)


def pytest_unconfigure(config: pytest.Config) -> None:
    prefork.stop()


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown where it is not installed
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: three workers per usable CPU, since many tests wait on a server they started (a
    subprocess, redis-server, nginx, an authorization server) rather than compute. On 2 CPUs the
    whole suite took 278 s with 3 workers, 230 s with 4 and 208 s with 6 (2 December 2026, fork
    server in place; the machine's CPUs were idle 149, 81 and 50 CPU-seconds of those runs)."""
    return 3 * len(os.sched_getaffinity(0))


FILE_SECONDS = TESTS / "file_seconds.json"
"""Each test file's seconds in a whole run (worker time; written by :mod:`progress` under
``MCP_PROVIDERS_FILE_SECONDS``): the longest files start first."""

UNMEASURED_SECONDS = 60.0
"""Where a file not yet measured (a new one) goes in the order: early, since it may be long."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest files first: xdist hands files out in this order (``--no-loadscope-reorder``; its
    default reorders by the number of tests, which started one-test files of 30 s last and set the
    run's end), so the short ones fill the workers at the end."""
    seconds = json.loads(FILE_SECONDS.read_text()) if FILE_SECONDS.exists() else {}
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], UNMEASURED_SECONDS))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def install_target(source: Path, target: Path) -> None:
    """Install a distribution (no dependencies) into ``target``, as pip/uv would into site-packages
    (a copy of the one install per machine of its current files: :func:`real_parts.installed_distribution`)."""
    installed_distribution(source, target)


@pytest.fixture(scope="session")
def test_plugins_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the installed ``mcp-providers-test-plugins`` distribution."""
    target = tmp_path_factory.mktemp("test-plugins-site")
    install_target(TEST_DISTRIBUTION, target)
    return target


@pytest.fixture
def with_test_plugins(test_plugins_site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Put the test distribution on sys.path (in-process) and on PYTHONPATH (subprocesses)."""
    monkeypatch.syspath_prepend(str(test_plugins_site))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(test_plugins_site), env.get("PYTHONPATH")]))
    yield env
    for name in [m for m in sys.modules if m.startswith("mcp_providers_test_plugins")]:
        del sys.modules[name]
