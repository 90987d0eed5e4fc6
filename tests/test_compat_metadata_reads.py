"""The core-version check reads a plugin distribution's metadata files as ``Distribution.read_text``
does (issue 43: for a folder on disk, without making a path object per file)."""

from __future__ import annotations

import importlib.metadata
import zipfile
from pathlib import Path

import pytest

from mcp_providers._host import compat
from mcp_providers._host.compat import _read_text, may_require_core


def _folder(where: Path) -> importlib.metadata.PathDistribution:
    info = where / "plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_bytes("Name: plugin\r\nVersion: 1.0\r\nSummary: caf\u00e9\r\n".encode())
    (info / "requires.txt").mkdir()  # a folder where a file is looked for
    (info / "PKG-INFO").write_bytes(b"\xff\xfe not utf-8")
    dist = importlib.metadata.Distribution.at(info)
    assert type(dist) is importlib.metadata.PathDistribution
    return dist


@pytest.mark.parametrize("name", ["METADATA", "requires.txt", "entry_points.txt", "missing/below"])
def test_a_folder_distribution_reads_as_read_text_does(tmp_path: Path, name: str) -> None:
    dist = _folder(tmp_path)
    assert _read_text(dist, name) == dist.read_text(name)


def test_undecodable_metadata_fails_as_read_text_fails(tmp_path: Path) -> None:
    dist = _folder(tmp_path)
    with pytest.raises(UnicodeDecodeError):
        dist.read_text("PKG-INFO")
    with pytest.raises(UnicodeDecodeError):
        _read_text(dist, "PKG-INFO")


def test_other_distributions_read_their_own_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "plugin.zip"
    with zipfile.ZipFile(archive, "w") as out:
        metadata = "Name: plugin\nVersion: 1.0\nRequires-Dist: mcp-providers<0.0.1\n"
        out.writestr("plugin-1.0.dist-info/METADATA", metadata)
    zipped = importlib.metadata.PathDistribution(zipfile.Path(archive, "plugin-1.0.dist-info/"))  # type: ignore[arg-type]
    assert _read_text(zipped, "METADATA") == zipped.read_text("METADATA") is not None
    assert may_require_core(zipped) is True

    class Own(importlib.metadata.Distribution):
        def read_text(self, filename: str) -> str | None:
            return "Requires-Dist: mcp-providers<0.0.1\n" if filename == "METADATA" else None

        def locate_file(self, path: str | object) -> Path:
            return tmp_path

    assert may_require_core(Own()) is True
    opened: list[object] = []
    monkeypatch.setattr(compat, "open", lambda *a, **k: opened.append(a), raising=False)
    assert _read_text(Own(), "METADATA") is not None and opened == []
