"""docs/hooks.md is generated from the hookspecs' docstrings and must match them.

Regenerate after changing core/hookspecs.py::

    MCP_PROVIDERS_WRITE_DOCS=1 uv run pytest tests/test_hooks_doc.py
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

from mcp_providers import hookspecs

HOOKS_MD = Path(__file__).resolve().parent.parent / "docs" / "hooks.md"


def render_hooks_markdown() -> str:
    """One section per hookspec, in source order: signature, firstresult note, docstring."""
    specs = [f for _, f in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(f, "mcp_providers_spec")]
    specs.sort(key=lambda f: f.__code__.co_firstlineno)
    lines = [
        "# Hook reference",
        "",
        "<!-- Generated from core/hookspecs.py by tests/test_hooks_doc.py; do not edit by hand. -->",
        "",
        "A plugin implements any subset of these hooks with `@hookimpl` (`from mcp_providers import hookimpl`)",
        "and may accept any subset of each hook's arguments. See the [plugin author guide](plugin-authors.md).",
        "",
    ]
    for f in specs:
        signature = str(inspect.signature(f)).replace("'", "")
        lines += [f"## `{f.__name__}`", "", "```python", f"def {f.__name__}{signature}", "```", ""]
        if f.mcp_providers_spec.get("firstresult"):  # type: ignore[attr-defined]
            lines += ["*firstresult*: the first non-`None` answer wins.", ""]
        lines += [inspect.getdoc(f) or "", ""]
    return "\n".join(lines).rstrip() + "\n"


def test_hooks_md_matches_the_hookspecs() -> None:
    expected = render_hooks_markdown()
    if os.environ.get("MCP_PROVIDERS_WRITE_DOCS"):
        HOOKS_MD.write_text(expected)
    assert HOOKS_MD.read_text() == expected, (
        "docs/hooks.md is stale; regenerate with MCP_PROVIDERS_WRITE_DOCS=1 uv run pytest tests/test_hooks_doc.py"
    )
