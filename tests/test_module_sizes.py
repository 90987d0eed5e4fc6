"""One concept per module (issue 43, "Must show" 4): no module of the package, in ``core/`` or
``plugins/``, is longer than 500 lines. A module that grows past it is split where its concepts part
(``plugins/_masking.py`` and ``plugins/_library_logs.py`` were one module of 516 lines)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOST_LINES = 500


def test_no_module_of_core_or_plugins_is_longer_than_500_lines() -> None:
    modules = [p for folder in ("core", "plugins") for p in (ROOT / folder).rglob("*.py")]
    assert len(modules) > 100  # the package's modules were found, not an empty folder
    longer = {str(p.relative_to(ROOT)): n for p in modules if (n := len(p.read_text().splitlines())) > MOST_LINES}
    assert longer == {}, f"split these modules where their concepts part: {longer}"
