"""The test run's one bytecode cache (``tests/bytecode_cache.py``): a cold cache is warmed once."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import bytecode_cache
import pytest


def test_a_cold_cache_is_warmed_once_and_a_warm_one_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "warm_me.py").write_text(textwrap.dedent("VALUE = 1\n"))
    prefix = tmp_path / "pycache"
    monkeypatch.syspath_prepend(str(source))
    monkeypatch.setenv("PYTHONPATH", str(source))
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(prefix))
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    assert bytecode_cache.cold("warm_me")
    assert bytecode_cache.warm(["warm_me"]) is True  # compiled by the child it started
    assert not bytecode_cache.cold("warm_me")
    assert list(prefix.rglob("warm_me.*.pyc"))
    assert bytecode_cache.warm(["warm_me"]) is False  # warm already: nothing started
    assert "warm_me" not in sys.modules  # found, never imported here
