"""Shared fixtures: the anyio backend and the installed test distribution of plugins; and the rule
that under ``CI=true`` every skip fails (:mod:`real_parts`); one bytecode cache for every process of
the run (:mod:`bytecode_cache`); and a fork server per test process for the ``python -m
mcp_providers`` runs the tests start (:mod:`prefork`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import prefork
import progress
import pytest
from bytecode_cache import use_one_bytecode_cache
from real_parts import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401 (hooks found here)

TESTS = Path(__file__).parent
TEST_DISTRIBUTION = TESTS / "distributions" / "test_plugins"


def pytest_configure(config: pytest.Config) -> None:
    use_one_bytecode_cache()  # before the xdist controller starts its workers (at session start)
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


SLOW_FIRST = (
    "test_author_path.py", "test_inspector.py", "test_client_matrix.py", "test_hostile_input.py",
    "test_plugin_template.py", "test_zoo.py", "test_reload_attacks_served.py", "test_input_rounds_ts.py",
    "test_cluster.py", "test_skills_inspector.py", "test_reload_served.py", "test_stdio_dispatch.py",
    "test_chaos.py", "test_audit_sinks.py", "test_upstream_http.py", "test_upstream_stdio.py",
)  # fmt: skip
"""The longest files of a run (each over 35 s in the fresh-clone run of 3 December 2026), started first:
xdist hands files out in collection order, and one of these started last set the run's end."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def install_target(source: Path, target: Path) -> None:
    """Install a distribution (no dependencies) into ``target``, as pip/uv would into site-packages."""
    uv = shutil.which("uv")
    if uv:
        cmd = [
            uv,
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--python",
            sys.executable,
            "--target",
            str(target),
            str(source),
        ]
    else:
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(source)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


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
