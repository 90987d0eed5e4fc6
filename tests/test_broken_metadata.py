"""Broken package metadata on ``sys.path`` is skipped with one warning naming its path (issue 24,
item 14): before, an empty ``.dist-info`` folder crashed every command, ``--help`` included, first in
pydantic's plugin loader (at the first model class) and then in plugin discovery."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from prefork import python

METADATA = "Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
PLUGIN = """
from mcp_providers import hookimpl, Resource, ResourceProvider, Content

class Hello(ResourceProvider):
    name = "hello"
    prefixes = ("hello://",)
    def resources(self):
        return [Resource(uri="hello://{version}", name="hello")]
    async def read(self, request):
        return Content(text="hello")

@hookimpl
def register_resource_providers():
    return [Hello()]
"""


def _dist(site: Path, folder: str, metadata: str | None = None, entry_points: bytes | None = None) -> Path:
    info = site / folder
    info.mkdir(parents=True)
    if metadata is not None:
        (info / "METADATA").write_text(metadata)
    if entry_points is not None:
        (info / "entry_points.txt").write_bytes(entry_points)
    return info


def _empty(site: Path) -> Path:
    return _dist(site, ".dist-info")


def _no_name(site: Path) -> Path:
    return _dist(site, ".dist-info", "Metadata-Version: 2.1\nVersion: 1.0\n", b"[mcp_providers]\nx = x\n")


def _not_utf8(site: Path) -> Path:
    return _dist(
        site, "acme-1.0.dist-info", METADATA.format(name="acme", version="1.0"), b"[mcp_providers]\nx = \xff\xfe\n"
    )


def _garbage(site: Path) -> Path:
    return _dist(
        site, "acme-1.0.dist-info", METADATA.format(name="acme", version="1.0"), b"[mcp_providers]\nno equals sign\n"
    )


BROKEN: dict[str, Callable[[Path], Path]] = {
    "empty .dist-info folder": _empty,
    "METADATA without a Name": _no_name,
    "entry_points.txt not UTF-8": _not_utf8,
    "entry_points.txt that does not parse": _garbage,
}


def _run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_PROVIDERS_", "PYDANTIC_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run(
        [*python(), "-m", "mcp_providers", *args], env=env, capture_output=True, text=True, timeout=60, input=""
    )


CompletedRuns = tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def broken_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], CompletedRuns]:
    """Every kind of breakage at once, each in its own folder on the path, and one ``--help`` and
    one ``plugins --json`` run over them all (two processes instead of two per kind: each kind's
    test below asserts on its own folder, so one kind that broke the others' scan still fails)."""
    root = tmp_path_factory.mktemp("broken")
    made = {kind: make(root / f"site-{n}") for n, (kind, make) in enumerate(BROKEN.items())}
    sites = Path(os.pathsep.join(str(root / f"site-{n}") for n in range(len(BROKEN))))
    return made, (_run(sites, "--help"), _run(sites, "plugins", "--json"))


@pytest.mark.parametrize("kind", BROKEN)
def test_broken_metadata_is_skipped_with_one_warning_naming_its_path(
    broken_runs: tuple[dict[str, Path], CompletedRuns], kind: str
) -> None:
    made, (help_run, plugins) = broken_runs
    broken = made[kind]
    assert help_run.returncode == 0, help_run.stderr
    assert "Traceback" not in help_run.stderr and "Usage" in help_run.stdout
    assert help_run.stderr.count(f"skipping broken package metadata at {broken} ") == 1, help_run.stderr

    assert plugins.returncode == 0, plugins.stderr
    rows = {row["name"]: row["status"] for row in json.loads(plugins.stdout)["plugins"]}
    assert rows["ssg_catalog"] == "loaded"  # every readable distribution is still found
    assert plugins.stderr.count(f"skipping broken package metadata at {broken} ") == 1, plugins.stderr
    assert plugins.stderr.count("skipping broken package metadata") == len(BROKEN), plugins.stderr  # once each


def test_an_entry_points_txt_that_is_a_folder_is_no_entry_points(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = _dist(site, "acme-1.0.dist-info", METADATA.format(name="acme", version="1.0"))
    (info / "entry_points.txt").mkdir()
    plugins = _run(site, "plugins", "--json")
    assert plugins.returncode == 0, plugins.stderr
    assert "acme" not in {row["name"] for row in json.loads(plugins.stdout)["plugins"]}


def test_one_distribution_in_two_versions_is_served_once_from_the_first_on_the_path(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for site, version in ((first, "2.0"), (second, "1.0")):
        _dist(
            site,
            f"hello_dist-{version}.dist-info",
            METADATA.format(name="hello_dist", version=version),
            b"[mcp_providers]\nhello = hello_mod\n",
        )
        (site / "hello_mod.py").write_text(PLUGIN.replace("{version}", version.replace(".", "-")))
    env_site = Path(os.pathsep.join([str(first), str(second)]))
    plugins = _run(env_site, "plugins", "--json")
    assert plugins.returncode == 0, plugins.stderr
    rows = [row for row in json.loads(plugins.stdout)["plugins"] if row["name"] == "hello"]
    assert [(r["status"], r["version"]) for r in rows] == [("loaded", "2.0")]
    check = _run(env_site, "check")
    assert "hello" not in check.stdout.replace("hello://2-0", "")  # no duplicate-entry-point complaint


def test_serve_starts_with_broken_metadata_on_the_path(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _empty(site)
    run = _run(site, "serve")  # stdin is empty: the server starts, sees end of input and stops
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
