"""The plugin template, end to end, as a third-party author meets it.

Render it with copier, install the rendered distribution and mcp-providers (built from this
checkout, not editable) into a fresh virtual environment, and use it there: ``plugins`` lists it,
``check`` passes, a stdio MCP client reads its resource and calls its tool, and the rendered
package's own tests and ``ruff check`` pass untouched. One venv serves the whole module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from real_parts import require_tool
from typer.testing import CliRunner

from mcp_providers._cli.scaffold import ScaffoldError, render_plugin_package

ROOT = Path(__file__).resolve().parent.parent
NAME = "team_notes"
MCP_ENV_CONFIG = "MCP_PROVIDERS_CONFIG"

pytestmark = [pytest.mark.slow]


@pytest.fixture(autouse=True)
def _uv() -> None:
    require_tool("uv", "pip install uv; it makes the plugin's venv")


def _run(
    cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_plugin_package(NAME, tmp_path_factory.mktemp("rendered") / "pkg")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, rendered: Path) -> Path:
    """A fresh venv with mcp-providers (from this checkout), the rendered package, pytest and ruff."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    uv = shutil.which("uv")
    assert uv is not None
    made = _run([uv, "venv", "--quiet", "--python", sys.executable, str(where)])
    assert made.returncode == 0, made.stderr
    python = where / "bin" / "python"
    installed = _run(
        [uv, "pip", "install", "--quiet", "--python", str(python), str(ROOT), str(rendered), "pytest", "anyio", "ruff"]
    )
    assert installed.returncode == 0, installed.stderr
    return where


def _env(venv: Path) -> dict[str, str]:
    # The venv's own interpreter and scripts, and nothing of this test run's sys.path.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", MCP_ENV_CONFIG)}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    return env


def test_rendered_package_has_the_promised_files(rendered: Path) -> None:
    package = rendered / "src" / f"mcp_providers_{NAME}"
    for path in ("pyproject.toml", "README.md", "tests/conftest.py", f"tests/test_{NAME}.py"):
        assert (rendered / path).is_file(), path
    for module in ("__init__.py", "plugin.py", "settings.py", "py.typed"):
        assert (package / module).is_file(), module
    pyproject = (rendered / "pyproject.toml").read_text()
    assert f'[project.entry-points.mcp_providers]\n{NAME} = "mcp_providers_{NAME}:plugin"' in pyproject
    plugin = (package / "plugin.py").read_text()
    assert "from mcp_providers.plugin import" in plugin and "@plugin.template(" in plugin  # the decorator form


def test_plugins_lists_the_rendered_plugin(venv: Path) -> None:
    run = _run([str(venv / "bin" / "mcp-providers"), "plugins", "--json"], env=_env(venv))
    assert run.returncode == 0, run.stderr
    rows = {row["name"]: row for row in json.loads(run.stdout)["plugins"]}
    assert rows[NAME]["status"] == "loaded"
    assert rows[NAME]["distribution"] == "mcp-providers-team-notes"
    assert rows[NAME]["providers"] == ["team-notes", "team-notes-tools"]


def test_check_passes_in_the_fresh_venv(venv: Path) -> None:
    run = _run([str(venv / "bin" / "mcp-providers"), "check"], env=_env(venv))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1].startswith("check passed:")


@pytest.mark.anyio
async def test_a_stdio_client_reads_the_resource_and_calls_the_tool(venv: Path) -> None:
    params = StdioServerParameters(
        command=str(venv / "bin" / "mcp-providers"), args=["serve", "--strict"], env=_env(venv)
    )
    async with Client(params, cache=None) as client:
        uris = [r.uri for r in (await client.list_resources()).resources]
        assert "team-notes://notes/index" in uris
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert "team-notes://notes/by-id/{note_id}" in templates
        index = await client.read_resource("team-notes://notes/index")
        assert json.loads(index.contents[0].text) == ["todo", "welcome"]
        note = await client.read_resource("team-notes://notes/by-id/welcome")
        assert note.contents[0].text == "Hello from team_notes."
        result = await client.call_tool("team_notes_count_words", {"note_id": "welcome"})
        assert not result.is_error
        assert result.structured_content == {"note_id": "welcome", "words": 3}


def test_the_rendered_package_passes_its_own_tests_and_ruff(venv: Path, rendered: Path) -> None:
    env = _env(venv)
    tests = _run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=rendered, env=env)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "failed" not in tests.stdout
    lint = _run([str(venv / "bin" / "ruff"), "check", "--no-cache", "."], cwd=rendered, env=env)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_new_without_copier_says_how_to_get_it(venv: Path, tmp_path: Path) -> None:
    # The fresh venv has mcp-providers without the [new] extra, so copier is missing there.
    run = _run([str(venv / "bin" / "mcp-providers"), "new", "weather", "--dest", str(tmp_path / "w")], env=_env(venv))
    assert run.returncode == 1
    assert "install it next to mcp-providers with `uv pip install copier`" in run.stderr
    assert not (tmp_path / "w").exists()


def test_new_renders_through_the_cli(tmp_path: Path) -> None:
    from mcp_providers.cli import app

    result = CliRunner().invoke(app, ["new", "weather", "--dest", str(tmp_path / "w")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "w" / "src" / "mcp_providers_weather" / "plugin.py").is_file()
    assert 'weather = "mcp_providers_weather:plugin"' in (tmp_path / "w" / "pyproject.toml").read_text()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Weather", "is not a lowercase Python identifier"),
        ("9lives", "is not a lowercase Python identifier"),
        ("team-notes", "is not a lowercase Python identifier"),
        ("policy", "is already an installed plugin's entry-point name"),
        ("servicenow", "is already an installed plugin's entry-point name"),
    ],
)
def test_new_rejects_a_bad_name(name: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match=message):
        render_plugin_package(name, tmp_path / "x")


def test_new_refuses_a_folder_that_holds_files(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="already exists and is not an empty folder; pass --dest"):
        render_plugin_package("weather", tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"
