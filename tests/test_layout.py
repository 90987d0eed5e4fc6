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


def test_only_the_package_init_declares_a_public_surface() -> None:
    declaring = [
        str(path.relative_to(CORE))
        for path in sorted(CORE.rglob("*.py"))
        if any(
            isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            for node in ast.parse(path.read_text()).body
        )
    ]
    assert declaring == ["__init__.py"]
