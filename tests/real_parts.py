"""Real parts the tests need, and the rule for a missing one: skip on a workstation, FAIL in CI.

The tests run against real parts (``redis-server``, ``nginx``, ``node``/``npm``, ``uv``, client
SDKs installed from npm and PyPI). On a workstation without one, its tests skip, saying what to
install. Under ``CI=true`` (``.ci/run`` sets it) a CI that lacks a part must not be green:

- :func:`require_tool` and :func:`missing` fail the test instead of skipping it;
- :func:`pytest_runtest_makereport` and :func:`pytest_make_collect_report` (hook wrappers that
  ``tests/conftest.py`` re-exports, so pytest registers them) turn *every* skip into a failure,
  ``pytest.skip``, ``skipif`` and ``importorskip`` alike, so a new skip cannot reopen the hole.
  An expected failure (``xfail``) is not a skip and is left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from waiting import wait_until

CI_VARIABLE = "CI"


def in_ci() -> bool:
    """Whether ``$CI`` says this is a CI run (``true``, ``1`` or ``yes``, any case)."""
    return os.environ.get(CI_VARIABLE, "").strip().lower() in {"true", "1", "yes"}


def missing(why: str) -> NoReturn:
    """Skip the test because a real part is missing (``why`` says which and how to install it);
    under ``CI=true`` fail it instead."""
    if in_ci():
        pytest.fail(f"{why} (CI=true: a missing real part fails the run instead of skipping)", pytrace=False)
    pytest.skip(why)


def require_tool(name: str, install: str, *, also: tuple[str, ...] = ()) -> str:
    """The path of the executable ``name`` (on ``$PATH`` or in one of the folders ``also``).

    :param install: how to get it, for the message (``"apt-get install -y redis-server"``).
    :raises pytest.skip.Exception: not found, outside CI.
    :raises pytest.fail.Exception: not found, under ``CI=true``.
    """
    found = shutil.which(name) or next((str(Path(d) / name) for d in also if (Path(d) / name).is_file()), None)
    if found is None:
        missing(f"{name} is not installed ({install}; .ci/run installs it)")
    return found


def _failed_instead(report: Any) -> None:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under CI=true, which fails the run instead: {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Under ``CI=true`` a skipped test (setup or call) is reported failed, with the skip's reason."""
    report = yield
    if in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        _failed_instead(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """Under ``CI=true`` a module skipped while collected (``importorskip``, module-level skip) fails."""
    report = yield
    if in_ci() and report.skipped:
        _failed_instead(report)
    return report


CACHE_VARIABLE = "MCP_PROVIDERS_TEST_CACHE"
STAMP = ".installed-for"
"""The file in each :func:`installed_once` folder holding the key its install was made for."""


def user_cache() -> Path:
    """Where real parts installed from a registry (npm packages, pinned) are kept between runs and
    between clones of this repository, as uv keeps its own cache: ``$MCP_PROVIDERS_TEST_CACHE``,
    else ``$XDG_CACHE_HOME/mcp-providers-tests``, else ``~/.cache/mcp-providers-tests``."""
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcp-providers-tests"


def installed_once(name: str, key: str, install: Callable[[Path], None]) -> Path:
    """The folder ``name`` of :func:`user_cache`, with ``install(folder)`` run in it first unless
    it already holds an install made for ``key`` (the pinned versions or the lock file's text).

    The install runs under a lock that other test processes and other clones wait on; only a
    finished install is stamped with ``key``, so one cut short is made again next time.

    :raises pytest.skip.Exception: what ``install`` raises when the registry cannot be reached
        (under ``CI=true`` the test fails instead).
    """
    folder = user_cache() / name
    folder.mkdir(parents=True, exist_ok=True)
    stamp = folder / STAMP
    with open(folder.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.is_file() and stamp.read_text() == key):
            stamp.unlink(missing_ok=True)
            install(folder)
            stamp.write_text(key)
    return folder


BUILT_HERE = ("__pycache__", "build", "dist")
"""Folders a build leaves in a distribution's source (with ``*.egg-info``): not its files."""


def _files_digest(source: Path) -> str:
    """A digest of the files of the distribution folder ``source`` (names and contents), without
    what a build leaves there (:data:`BUILT_HERE`, ``*.egg-info``)."""
    digest = hashlib.sha256(f"{sys.version_info[:2]}".encode())
    for path in sorted(source.rglob("*")):
        parts = path.relative_to(source).parts
        if path.is_file() and not any(p in BUILT_HERE or p.endswith(".egg-info") for p in parts):
            digest.update("/".join(parts).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def installed_distribution(source: Path, target: Path) -> Path:
    """Install the distribution folder ``source`` (no dependencies) into ``target``, as pip or uv
    would into site-packages; returns ``target``.

    The files are a copy of one install per machine of the folder's current files
    (:func:`installed_once`, keyed by their digest): each install builds a wheel, a second of CPU
    (two or three in a loaded run), and the same files were installed again by every worker and
    every test module that needed them. A changed file makes a new install.

    :raises subprocess.CalledProcessError: the install failed.
    """
    digest = _files_digest(source)

    def install(folder: Path) -> None:
        site = folder / "site"
        shutil.rmtree(site, ignore_errors=True)
        uv = shutil.which("uv")
        pip = [uv, "pip", "install", "--python", sys.executable] if uv else [sys.executable, "-m", "pip", "install"]
        cmd = [*pip, "--quiet", "--no-deps", "--target", str(site), str(source)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)

    folder = installed_once(f"dist-{source.name}-{digest[:16]}", digest, install)
    shutil.copytree(folder / "site", target, dirs_exist_ok=True)
    return target


@contextlib.contextmanager
def redis_server(password: str | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real ``redis-server`` on a free loopback port, saving nothing to disk, asking for
    ``password`` when one is given; yields its URL (with the password) and its process, ready once
    the port accepts connections (its exit first fails it), and terminates it after unless a test already did.

    :raises pytest.skip.Exception: not installed, outside CI (under ``CI=true`` the test fails).
    """
    binary = require_tool("redis-server", "apt-get install -y redis-server", also=("/usr/sbin",))
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(
        [*argv, *(("--requirepass", password) if password else ())],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        def listening() -> bool:
            with contextlib.closing(socket.socket()) as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, "redis-server listens", alive=proc)  # the event, not a deadline (round 4 item 25)
        yield f"redis://{f':{password}@' if password else ''}127.0.0.1:{port}/0", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)


INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
_INSPECTOR_LAUNCHER = Path(
    "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"
)


def inspector_cli() -> list[str]:
    """The MCP Inspector CLI's command (``node LAUNCHER --cli``), installed once per machine with npm
    (:func:`installed_once`); node and npm are needed: skipped without them, failed under CI=true."""
    node = require_tool("node", "apt-get install -y nodejs")
    require_tool("npm", "apt-get install -y npm")

    def install(prefix: Path) -> None:
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(prefix), INSPECTOR],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )

    prefix = installed_once("npm-" + INSPECTOR.replace("/", "+"), INSPECTOR, install)
    return [node, str(prefix / _INSPECTOR_LAUNCHER), "--cli"]


UPSTREAM_NPM = (
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
)
UPSTREAM_PYPI = "mcp-server-time==2026.10.19"


def upstream_servers() -> dict[str, list[str]]:
    """Commands of real upstream MCP servers, installed once per machine (:func:`installed_once`):
    ``{"everything": [node, ...], "filesystem": [node, ...], "time": [...]}``; each takes its own
    arguments after these (``stdio`` for everything, the allowed folder for filesystem). node,
    npm and uv are needed: skipped without them, failed under CI=true."""
    node = require_tool("node", "apt-get install -y nodejs")
    require_tool("npm", "apt-get install -y npm")
    uv = require_tool("uv", "pip install uv")

    def install_npm(prefix: Path) -> None:
        argv = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(prefix)]
        subprocess.run([*argv, *UPSTREAM_NPM], check=True, capture_output=True, text=True, timeout=600)

    def install_pypi(folder: Path) -> None:
        subprocess.run([uv, "venv", "-q", str(folder / "venv")], check=True, capture_output=True, timeout=300)
        python = str(folder / "venv" / "bin" / "python")
        subprocess.run(
            [uv, "pip", "install", "-q", "--python", python, UPSTREAM_PYPI],
            check=True,
            capture_output=True,
            timeout=600,
        )

    npm = installed_once("npm-upstream-servers", " ".join(UPSTREAM_NPM), install_npm)
    pypi = installed_once("pypi-mcp-server-time", UPSTREAM_PYPI, install_pypi)
    bin_ = npm / "node_modules" / "@modelcontextprotocol"
    return {
        "everything": [node, str(bin_ / "server-everything" / "dist" / "index.js")],
        "filesystem": [node, str(bin_ / "server-filesystem" / "dist" / "index.js")],
        "time": [str(pypi / "venv" / "bin" / "mcp-server-time")],
    }
