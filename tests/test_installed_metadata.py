"""Installed distributions are read with the standard library's ``importlib.metadata`` (issue 43,
"house"): nothing is put on ``sys.meta_path`` (``test_embedded_guards`` checks that in a host
process), a distribution found twice on ``sys.path`` is one plugin, and a reload sees what was
installed since the last read even when the folder's mtime did not move.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from reload_support import install, site

from mcp_providers._host import groups
from mcp_providers._metadata import forget_installed
from mcp_providers._serve.composition import compose
from mcp_providers._serve.reload import Reloader
from mcp_providers.config import load_config


def _same_mtime(folder: Path, stat: os.stat_result) -> None:
    """Put ``folder``'s mtime back to ``stat``'s: as if the change happened within one clock tick."""
    os.utime(folder, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_distribution_on_sys_path_twice_is_one_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for where in ("first", "second"):
        monkeypatch.syspath_prepend(str(site(tmp_path / where, ("notes",), dist="twice-on-path")))
    forget_installed()
    found = [ep for ep in groups.entry_points() if ep.name == "notes"]
    assert [(ep.value, ep.dist.name if ep.dist else None) for ep in found] == [
        ("reload_plugins:notes", "twice-on-path")
    ]
    composition = compose(load_config(_config(tmp_path, '["notes"]')))
    assert [(r.name, r.status) for r in composition.records if r.name == "notes"] == [("notes", "loaded")]


def test_an_install_within_one_mtime_tick_is_seen_after_forget_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = site(tmp_path / "site", ("notes",), dist="tick-first")
    monkeypatch.syspath_prepend(str(root))
    assert "notes" in {ep.name for ep in groups.entry_points()}
    before = os.stat(root)
    install(root, "tick-second", {"extra": "reload_plugins:extra"})
    _same_mtime(root, before)
    assert "extra" not in {ep.name for ep in groups.entry_points()}  # the folder's listing is cached by mtime
    forget_installed()
    assert "extra" in {ep.name for ep in groups.entry_points()}


@pytest.mark.anyio
async def test_a_reload_sees_a_distribution_installed_within_one_mtime_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = site(tmp_path / "site", ("notes",), dist="reload-tick-first")
    monkeypatch.syspath_prepend(str(root))
    path = _config(tmp_path, '["notes"]')
    composition = compose(load_config(path))
    reloader = Reloader(composition, lambda: load_config(path))
    before = os.stat(root)
    install(root, "reload-tick-second", {"extra": "reload_plugins:extra"})
    _same_mtime(root, before)
    _config(tmp_path, '["notes", "extra"]')
    attempt = await reloader.reload()
    assert attempt.problems == ()
    assert attempt.outcome == "applied"
    assert {r.name: r.status for r in composition.records if r.name in ("notes", "extra")} == {
        "notes": "loaded",
        "extra": "loaded",
    }


def _config(tmp_path: Path, allow: str) -> Path:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(f"allow = {allow}\n")
    return path
