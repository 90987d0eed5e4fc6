"""The plugin author's path, exactly as the docs write it, from a fresh clone of this repository.

``docs/plugin-authors.md`` holds the commands in fenced blocks marked with an HTML comment
(``<!-- author-path: ...``, ``<!-- release-path: ...``, ``<!-- author-test: ...``). These tests read
the blocks from the page, replace the placeholder ``/path/to/mcp-providers`` with a fresh clone
and run each line as written, in order: ``cd`` lines move the working folder, the others run in
bash and must exit 0, and the last line (``... serve``) is the command a real stdio MCP client
starts, then reads the new plugin's resource through. So the page cannot drift from what works:
put back ``uv pip install -e /path/to/mcp-providers -e .`` and the walk fails.

The "fresh clone" is :func:`clone_support.fresh_clone`: the files git knows here, copied into a
temporary folder, without ``.venv``, ``site/`` or caches.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from clone_support import fresh_clone
from mcp import Client, StdioServerParameters
from real_parts import require_tool

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "plugin-authors.md"
README = ROOT / "README.md"
PLACEHOLDER = "/path/to/mcp-providers"
INDEX_URI = "weather://notes/index"
WHERE_FROM = "import mcp_providers as c, mcp_providers_weather as w; print(c.__file__); print(w.__file__)"


def marked_block(text: str, marker: str) -> str:
    """The body of the first fenced block after ``<!-- marker:`` in ``text``, dedented.

    :raises AssertionError: no such marker, or no fenced block after it.
    """
    at = text.find(f"<!-- {marker}:")
    assert at >= 0, f"no '<!-- {marker}: ...' comment marks a block"
    fence = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S).search(text, at)
    assert fence is not None, f"no fenced block after the {marker} marker"
    return textwrap.dedent(fence.group(1))


def commands(block: str) -> list[str]:
    """The block's command lines (``\\`` continuations joined; blank and comment lines left out)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def words(line: str) -> list[str]:
    """A command line as the shell splits it, its trailing ``# comment`` dropped."""
    return shlex.split(line, comments=True)


def author_env() -> dict[str, str]:
    """This environment without what ties a command to this test run's venv, config or pytest.

    ``uv run pytest`` puts this venv's ``bin`` first on ``PATH``; left there, a ``uv pip install``
    in the walk would find its ``python`` and install into this venv."""
    drop = {"VIRTUAL_ENV", "PYTHONPATH", "MCP_PROVIDERS_CONFIG", "UV_PROJECT_ENVIRONMENT", "UV_FROZEN", "UV_LOCKED"}
    drop |= {"UV_NO_SYNC", "UV_OFFLINE", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
    if sys.prefix != sys.base_prefix:
        ours = Path(sys.prefix).resolve()
        kept = [d for d in env.get("PATH", "").split(os.pathsep) if d and not Path(d).resolve().is_relative_to(ours)]
        env["PATH"] = os.pathsep.join(kept)
    return env


@dataclass
class Walk:
    """Where the commands left the author, and what each printed (``{command line: result}``)."""

    cwd: Path
    env: dict[str, str]
    ran: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)

    def run(self, lines: list[str]) -> None:
        """Run each line as the author would type it; ``cd`` moves :attr:`cwd`."""
        for line in lines:
            argv = words(line)
            if argv[0] == "cd":
                assert len(argv) == 2, f"{line!r}: cd takes one folder"
                self.cwd = (self.cwd / argv[1]).resolve()
                assert self.cwd.is_dir(), f"{line!r}: no folder {self.cwd}"
                continue
            done = subprocess.run(
                ["bash", "-c", line], cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=600
            )
            assert done.returncode == 0, f"{line!r} in {self.cwd} exited {done.returncode}:\n{done.stdout}{done.stderr}"
            self.ran[line] = done

    def output(self, prefix: str) -> str:
        """The stdout of the one command that starts with ``prefix``."""
        found = [done.stdout for line, done in self.ran.items() if line.startswith(prefix)]
        assert len(found) == 1, f"expected one command starting {prefix!r}, ran {list(self.ran)}"
        return found[0]


def block_commands(marker: str, clone: Path, text: str | None = None) -> list[str]:
    block = marked_block(DOCS.read_text(encoding="utf-8") if text is None else text, marker)
    return commands(block.replace(PLACEHOLDER, str(clone)))


async def read_through_client(line: str, walk: Walk) -> tuple[list[str], str]:
    """Start ``line`` (a ``serve`` command) as a stdio server in the walk's folder; read the index
    and the ``welcome`` note with a real MCP client."""
    argv = words(line)
    assert "serve" in argv, f"the block's last line should serve: {line!r}"
    command = str((walk.cwd / argv[0]).resolve()) if "/" in argv[0] else argv[0]
    params = StdioServerParameters(command=command, args=argv[1:], env=walk.env, cwd=str(walk.cwd))
    async with Client(params, cache=None) as client:
        uris = [r.uri for r in (await client.list_resources()).resources]
        assert INDEX_URI in uris
        index = await client.read_resource(INDEX_URI)
        note = await client.read_resource("weather://notes/by-id/welcome")
    return json.loads(index.contents[0].text), note.contents[0].text


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Walk, Path, list[str]]:
    """The author-path block run up to (not including) its last line, from a fresh clone."""
    require_tool("uv", "pip install uv; the documented path runs uv")
    require_tool("git", "apt-get install -y git; the fresh clone lists git's files")
    clone = fresh_clone(tmp_path_factory.mktemp("author") / "mcp-providers")
    lines = block_commands("author-path", clone)
    walk = Walk(cwd=clone, env=author_env())
    walk.run(lines[:-1])
    return walk, clone, lines


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_documented_author_path_works_verbatim(walked: tuple[Walk, Path, list[str]]) -> None:
    walk, _, lines = walked
    assert walk.cwd.name == "mcp-providers-weather"
    assert re.search(r"\b\d+ passed\b", walk.output("uv run pytest")) and "failed" not in walk.output("uv run pytest")
    assert "weather" in walk.output("uv run mcp-providers plugins")
    assert walk.output("uv run mcp-providers check").strip().splitlines()[-1].startswith("check passed:")
    listed = subprocess.run(
        ["uv", "run", "mcp-providers", "plugins", "--json"], cwd=walk.cwd, env=walk.env, capture_output=True, text=True
    )
    rows = {row["name"]: row for row in json.loads(listed.stdout)["plugins"]}
    assert rows["weather"]["status"] == "loaded" and rows["weather"]["distribution"] == "mcp-providers-weather"
    assert await read_through_client(lines[-1], walk) == (["todo", "welcome"], "Hello from weather.")
    # The walk happened in its own projects: nothing was installed into this test run's venv.
    assert "weather" not in {ep.name for ep in importlib.metadata.entry_points(group="mcp_providers")}


@pytest.mark.slow
def test_new_prints_the_documented_next_steps(walked: tuple[Walk, Path, list[str]]) -> None:
    walk, _, lines = walked
    new = next(line for line in lines if " new " in line)
    printed = walk.output(new).split("next, in order:", 1)[1]
    hint = [words(line) for line in printed.strip().splitlines()]
    after_new = [words(line) for line in lines[lines.index(new) + 1 :]]
    assert hint == after_new


def test_the_readme_shows_the_same_author_path(tmp_path: Path) -> None:
    readme = block_commands("author-path", tmp_path, README.read_text(encoding="utf-8"))
    assert [words(line) for line in readme] == [words(line) for line in block_commands("author-path", tmp_path)]


@pytest.mark.slow
def test_the_rendered_readme_shows_commands_the_docs_run(walked: tuple[Walk, Path, list[str]]) -> None:
    walk, clone, lines = walked
    readme = marked_block((walk.cwd / "README.md").read_text(encoding="utf-8"), "develop")
    develop = commands(readme.replace(PLACEHOLDER, str(clone)))
    ran = [words(line) for line in lines]
    assert develop and [line for line in develop if words(line) not in ran] == []


@pytest.mark.slow
def test_the_documented_test_file_passes_in_the_rendered_package(walked: tuple[Walk, Path, list[str]]) -> None:
    walk, _, _ = walked
    (walk.cwd / "tests" / "test_from_docs.py").write_text(marked_block(DOCS.read_text(), "author-test"))
    done = subprocess.run(
        ["uv", "run", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_from_docs.py"],
        cwd=walk.cwd,
        env=walk.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b3 passed\b", done.stdout), done.stdout


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_documented_release_path_serves_from_wheels(walked: tuple[Walk, Path, list[str]]) -> None:
    walk, clone, _ = walked
    release = Walk(cwd=walk.cwd, env=walk.env)
    lines = block_commands("release-path", clone)
    release.run(lines[:-1])
    wheels = sorted(p.name for p in (walk.cwd.parent / "wheels").glob("*.whl"))
    assert [w.split("-")[0] for w in wheels] == ["mcp_providers", "mcp_providers_weather"], wheels
    venv = walk.cwd.parent / "release"
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", WHERE_FROM],
        capture_output=True,
        text=True,
        env=walk.env,
    )
    # Installed from the wheels, not linked to the clone or the rendered folder.
    assert where.returncode == 0, where.stderr
    assert all(Path(line).is_relative_to(venv) for line in where.stdout.split()), where.stdout
    assert "weather" in release.output("../release/bin/mcp-providers plugins")
    assert await read_through_client(lines[-1], release) == (["todo", "welcome"], "Hello from weather.")


class _Distribution:
    def __init__(self, direct_url: str | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return self.direct_url


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        ('{"url": "file:///src/core", "dir_info": {"editable": true}}', "uv add --editable /src/core"),
        ('{"url": "file:///my%20src/core", "dir_info": {}}', "uv add --editable '/my src/core'"),
        (
            '{"url": "file:///w/mcp_providers-0.1-py3-none-any.whl", "archive_info": {}}',
            "uv add /w/mcp_providers-0.1-py3-none-any.whl",
        ),
        ('{"url": "https://example.org/mcp_providers-0.1.0.tar.gz", "archive_info": {}}', None),
        ("not json", None),
        (None, None),
    ],
)
def test_the_hint_installs_the_core_the_way_it_was_installed(
    direct_url: str | None, expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_providers._cli import scaffold

    monkeypatch.setattr(scaffold.importlib.metadata, "distribution", lambda name: _Distribution(direct_url))
    assert scaffold.core_install_command() == expected
    steps = scaffold.next_steps(Path("../mcp-providers-x"))
    assert steps[0] == "cd ../mcp-providers-x"
    assert steps[-3:] == ["uv run mcp-providers plugins", "uv run mcp-providers check", "uv run mcp-providers serve"]
    assert (expected in steps) if expected else steps[1] == "uv run pytest"
