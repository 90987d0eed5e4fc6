"""The serving core stays readable: no function in core/ is longer than 60 lines, the old
``build_server`` closure is gone, and internal modules keep no ``__all__`` of their own."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "core"
LIMIT = 60


def test_no_function_in_core_is_longer_than_60_lines() -> None:
    long = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LIMIT:
                    long.append(f"{path.relative_to(CORE)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, "split these functions:\n" + "\n".join(long)


def _declaring() -> list[str]:
    return [
        str(path.relative_to(CORE))
        for path in sorted(CORE.rglob("*.py"))
        if any(
            isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            for node in ast.parse(path.read_text()).body
        )
    ]


def test_no_internal_module_declares_a_public_surface() -> None:
    internal = [
        p for p in _declaring() if any(part.startswith("_") and part != "__init__.py" for part in Path(p).parts)
    ]
    assert internal == []


def test_the_package_and_the_authors_module_declare_their_surface() -> None:
    assert {"__init__.py", "plugin.py"} <= set(_declaring())
