"""Packaging: the import layout, the explicit package list and the hook contract's docs."""

from __future__ import annotations

import inspect
import subprocess
import sys
import tomllib
from pathlib import Path

from mcp_providers import hookspecs

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for top, name in (
        ("core", "mcp_providers"),
        ("plugins", "mcp_providers.plugins"),
        ("plugin_template", "mcp_providers.plugin_template"),
    ):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([name, *rel.parts]))
    assert found == listed, (
        f"add to [tool.setuptools] packages: {sorted(found - listed)}; stale: {sorted(listed - found)}"
    )


def test_no_top_level_core_or_plugins_package_is_importable() -> None:
    code = "import importlib.util as u; print(u.find_spec('core'), u.find_spec('plugins'))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True)
    assert run.stdout.strip() == "None None"


def test_every_hookspec_has_a_docstring_saying_what_to_return() -> None:
    specs = [f for _, f in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(f, "mcp_providers_spec")]
    assert {f.__name__ for f in specs} == {
        "settings_model",
        "register_resource_providers",
        "register_tool_providers",
        "register_prompt_providers",
        "register_prompts",
        "register_extension_providers",
        "register_extensions",
        "register_skill_providers",
        "demo_settings",
        "authorize",
        "check_composition",
    }
    for f in specs:
        doc = inspect.getdoc(f) or ""
        assert doc, f"no docstring for hookspec {f.__name__}"
        assert ":returns:" in doc, f"hookspec {f.__name__} does not say what to return"
        for name in inspect.signature(f).parameters:
            assert f":param {name}:" in doc, f"hookspec {f.__name__} does not document {name}"
    # authorize combines every answer (any deny wins), so it must not stop at the first one.
    assert hookspecs.authorize.mcp_providers_spec["firstresult"] is False  # type: ignore[attr-defined]
