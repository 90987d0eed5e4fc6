"""Start-up work that grows with the installed plugin distributions, counted (never timed; issue 43):
what discovery reads of each distribution's metadata, and what it builds per plugin."""

from __future__ import annotations

import collections
import importlib.metadata
from pathlib import Path

import pytest

from mcp_providers._host.groups import entry_points
from mcp_providers._metadata import forget_installed


def _distributions(where: Path, count: int) -> list[str]:
    """``count`` plugin distributions (a module and a ``.dist-info`` each), as the start-up benchmark makes them."""
    names = []
    for i in range(count):
        module = f"counted_plugin_{i:02d}"
        info = where / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: counted-plugin-{i:02d}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[mcp_providers]\ncounted_{i:02d} = {module}\n")
        (where / f"{module}.py").write_text("")
        names.append(info.name)
    return names


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> collections.Counter[tuple[str, str]]:
    """Each metadata file read from a distribution under ``tmp_path``: (dist-info folder, file) -> times."""
    counted: collections.Counter[tuple[str, str]] = collections.Counter()
    read_text = importlib.metadata.PathDistribution.read_text

    def counting(self: importlib.metadata.PathDistribution, filename: str) -> str | None:
        where = Path(str(self._path))  # type: ignore[attr-defined]
        if where.parent == tmp_path:
            counted[(where.name, filename)] += 1
        return read_text(self, filename)

    monkeypatch.setattr(importlib.metadata.PathDistribution, "read_text", counting)
    monkeypatch.syspath_prepend(str(tmp_path))
    forget_installed()
    yield counted
    forget_installed()


def test_both_groups_are_read_in_one_pass_over_the_distributions(
    tmp_path: Path, reads: collections.Counter[tuple[str, str]]
) -> None:
    infos = _distributions(tmp_path, 5)
    found = {ep.name for ep in entry_points()}
    assert {f"counted_{i:02d}" for i in range(5)} <= found
    assert {info: reads[(info, "entry_points.txt")] for info in infos} == dict.fromkeys(infos, 1)


def test_no_configured_upstream_starts_no_listing_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The upstream plugin lists its servers in a thread with an event loop of its own; with none
    configured (every ``serve`` without ``[plugins.upstream]``) it starts neither."""
    from mcp_providers.plugins.upstream import listing, providers
    from mcp_providers.plugins.upstream.settings import UpstreamSettings

    started: list[object] = []
    monkeypatch.setattr(listing.threading, "Thread", lambda *a, **k: started.append(k) or pytest.fail("a thread"))
    assert listing.list_at_start([]) == {}
    built = providers(UpstreamSettings())
    assert (built.resources, built.tools, built.prompts) == ((), (), ())
    assert started == []
