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


PUBLIC = (
    "__init__.py", "checks.py", "cli.py", "config.py", "credentials.py", "embedding.py", "errors.py", "hookspecs.py",
    "http.py", "identity.py", "models.py", "plugin.py", "policy.py", "providers.py", "skills.py", "testing.py",
    "uris.py",
)  # fmt: skip


def _public() -> list[str]:
    """Public modules: top-level files and packages (``config/``, ``providers/``) not named ``_*``."""
    files = [p.name for p in CORE.glob("*.py") if not p.name.startswith("_") or p.name == "__init__.py"]
    packages = [
        p.name + ".py"
        for p in CORE.iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and not p.name.startswith("_")
    ]
    return sorted(files + packages)


def test_every_public_module_declares_its_surface() -> None:
    assert _public() == sorted(PUBLIC)
    declaring = {p.replace("/__init__.py", ".py") for p in _declaring()}
    assert set(PUBLIC) <= declaring


def test_every_name_in_a_surface_exists() -> None:
    import importlib

    for name in PUBLIC:
        module = importlib.import_module("mcp_providers" + ("" if name == "__init__.py" else "." + name[:-3]))
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert missing == [], f"{name}: {missing}"
