"""Render the plugin template into a new third-party provider distribution (``mcp-providers new``).

The template is ``plugin_template/`` in the source tree, installed as the package data
``mcp_providers.plugin_template``, so an installed mcp-providers can render it without a checkout.
copier is an optional dependency (the ``new`` extra; a clone's dev group has it).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse

from mcp_providers import hookspecs
from mcp_providers.errors import MCPProvidersError

PLUGIN_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
"""What a plugin (entry-point) name may look like: a lowercase Python identifier."""


class ScaffoldError(MCPProvidersError):
    """The package could not be rendered: bad name, occupied destination or copier missing."""


def template_path() -> Path:
    """The folder holding the template's ``copier.yml``."""
    from mcp_providers import plugin_template

    return plugin_template.path()


def render_plugin_package(name: str, dest: Path | None = None, data: Mapping[str, str] | None = None) -> Path:
    """Render the template for plugin ``name`` into ``dest``, answering every question by default.

    :param name: the entry-point name, e.g. ``"weather"`` (a lowercase Python identifier).
    :param dest: target folder; default ``./mcp-providers-<name with dashes>``. It must not exist
        or be empty.
    :param data: answers overriding the defaults (``distribution_name``, ``package_name``,
        ``uri_scheme``, ``description``, ``author``, ``framework_requirement``).
    :returns: the rendered folder.
    :raises ScaffoldError: the name is not a lowercase identifier, ``dest`` holds files, or copier
        is not installed.
    """
    if not PLUGIN_NAME.match(name):
        raise ScaffoldError(
            f"plugin name {name!r} is not a lowercase Python identifier; use letters, digits and "
            "underscores, starting with a letter, e.g. 'weather' or 'team_notes'"
        )
    groups = (hookspecs.PROJECT, hookspecs.POLICY_GROUP)
    taken = {ep.name for group in groups for ep in importlib.metadata.entry_points(group=group)}
    if name in taken:
        # Two distributions declaring one entry-point name are both rejected at discovery.
        raise ScaffoldError(
            f"plugin name {name!r} is already an installed plugin's entry-point name; pick another, "
            f"e.g. {name}_extra (installed: {', '.join(sorted(taken))})"
        )
    dest = dest if dest is not None else Path.cwd() / f"mcp-providers-{name.replace('_', '-')}"
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ScaffoldError(f"{dest} already exists and is not an empty folder; pass --dest with a new folder")
    try:
        import copier
    except ImportError:
        raise ScaffoldError(
            "mcp-providers new needs copier, an optional dependency; install it next to mcp-providers "
            "with `uv pip install copier` (or `pip install copier`), or run `uv run mcp-providers new` "
            "in a clone of mcp-providers, whose dev group has it"
        ) from None
    answers = {"plugin_name": name, **(data or {})}
    try:
        copier.run_copy(
            str(template_path()),
            str(dest),
            data=answers,
            defaults=True,
            quiet=True,
            unsafe=False,
        )
    except copier.errors.CopierError as exc:  # e.g. an answer rejected by a validator
        raise ScaffoldError(f"copier could not render the template: {exc}") from None
    return dest


def core_install_command() -> str | None:
    """The command that installs this running mcp-providers into a rendered package's project.

    Read from the distribution's ``direct_url.json`` (PEP 610, written by pip and uv for a
    directory or file install): a checkout gives ``uv add --editable DIR``, a wheel file
    ``uv add WHEEL``. ``None`` when the core came from a package index: the rendered
    ``dependencies`` already name it, so ``uv run`` resolves it there.
    """
    try:
        raw = importlib.metadata.distribution("mcp-providers").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        origin = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return None
    url = urlparse(str(origin.get("url", "")))
    if url.scheme != "file":
        return None
    where = shlex.quote(unquote(url.path))
    if "dir_info" in origin:
        return f"uv add --editable {where}"
    return f"uv add {where}"


def next_steps(where: Path) -> list[str]:
    """The shell commands a new author types after ``mcp-providers new``, in order: into the
    rendered folder, the core into its project (when not from an index), its tests, ruff, and
    ``plugins``/``check`` as an operator would, and ``serve`` (the command an MCP client starts).
    ``docs/plugin-authors.md`` shows the same ones."""
    install = core_install_command()
    return [
        f"cd {shlex.quote(str(where))}",
        *([install] if install else []),
        "uv run pytest",
        "uv run ruff check .",
        "uv run mcp-providers plugins",
        "uv run mcp-providers check",
        "uv run mcp-providers serve",
    ]
