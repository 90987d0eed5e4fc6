"""The documentation site: it builds with --strict, and lists every built-in resource and template.

The built-in catalog page is generated from a live composition (scripts/docs_reference.py); this
test composes the built-ins independently and looks for each URI and template in the built HTML.
"""

from __future__ import annotations

import html
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_providers import compose
from mcp_providers.config import Config

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def test_site_lists_every_builtin_resource_and_template(site: Path) -> None:
    composition = compose(Config())
    builtin = {r.name for r in composition.records if r.distribution == "mcp-providers"}
    uris = [e.declaration.uri for e in composition.catalog.resources if e.plugin in builtin]
    templates = [e.declaration.uri_template for e in composition.catalog.templates if e.plugin in builtin]
    tools = [e.declaration.name for e in composition.catalog.tools if e.plugin in builtin]
    prompts = [e.declaration.name for e in composition.catalog.prompts if e.plugin in builtin]
    assert "documcp://ssgs/available" in uris and "documcp://ssgs/{ssg}" in templates
    page = html.unescape((site / "reference" / "builtins" / "index.html").read_text(encoding="utf-8"))
    missing = [name for name in (*uris, *templates, *tools, *prompts) if f"<code>{name}</code>" not in page]
    assert not missing, f"not on the built-ins page: {missing}"


def test_site_documents_every_hook_and_config_key(site: Path) -> None:
    from mcp_providers import hookspecs
    from mcp_providers.config import ServerSettings

    hooks_page = (site / "reference" / "hookspecs" / "index.html").read_text(encoding="utf-8")
    specs = [name for name, f in vars(hookspecs).items() if callable(f) and hasattr(f, "mcp_providers_spec")]
    assert specs and all(name in hooks_page for name in specs)
    config_page = (site / "reference" / "configuration" / "index.html").read_text(encoding="utf-8")
    assert all(f"<code>{key}</code>" in config_page for key in ServerSettings.model_fields)
