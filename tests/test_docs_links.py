"""No dead links in the documentation source: every relative link in ``docs/**/*.md`` and
``README.md`` names a file or a page the docs build generates, and every ``#anchor`` an id on it.

Pages are rendered with Python-Markdown and the extensions ``mkdocs.yml`` lists (so links in code
blocks are not links, and heading ids are the ones the site gets). The generated pages are
``scripts/docs_reference.py``'s ``PAGES`` (the mkdocs hook adds them to every build); a page of
mkdocstrings directives (``::: mcp_providers.x``) has an id per documented object, so an anchor
on it must name an object that imports. ``README.md`` is read the same way (GitHub's heading ids
agree with these for the headings used here).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import markdown
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)", re.M)


class _Links(HTMLParser):
    """The link targets (``href``/``src``) and element ids of one rendered page."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.add(value)
            elif (tag, name) in {("a", "href"), ("img", "src")}:
                self.targets.append(value)


@functools.cache
def _extensions() -> tuple[list[str], dict[str, dict[str, object]]]:
    """``markdown_extensions`` from mkdocs.yml, as Python-Markdown takes them."""
    listed = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8")).get("markdown_extensions", [])
    names: list[str] = []
    configs: dict[str, dict[str, object]] = {}
    for entry in listed:
        name, config = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        names.append(name)
        if config:
            configs[name] = config
    return names, configs


@functools.cache  # a page is the target of many links: rendered once (the extensions are slow)
def parse(text: str) -> _Links:
    """Render Markdown ``text`` as the site does and collect its links and ids (do not change the result)."""
    names, configs = _extensions()
    parser = _Links()
    parser.feed(markdown.Markdown(extensions=names, extension_configs=configs).convert(text))
    return parser


@functools.cache
def generated_pages() -> dict[str, str]:
    """``{docs-relative path: Markdown}`` of the pages the docs build generates."""
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {path: make() for path, make in module.PAGES.items()}


def _object_exists(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                found = getattr(found, attribute)
        except AttributeError:
            return False
        return True
    return False


def _anchor_ok(text: str, anchor: str) -> bool:
    if anchor in parse(text).ids:
        return True
    # mkdocstrings gives each documented object an id: its dotted path under a directive.
    roots = DIRECTIVE.findall(text)
    return any(anchor == r or anchor.startswith(f"{r}.") for r in roots) and _object_exists(anchor)


def _read_target(path: Path, docs_root: Path, generated: dict[str, str]) -> str | None:
    """The Markdown at ``path`` (a file, or a generated page under ``docs_root``); None if neither."""
    if path.is_file():
        return path.read_text(encoding="utf-8") if path.suffix == ".md" else ""
    try:
        relative = path.relative_to(docs_root).as_posix()
    except ValueError:
        return None
    return generated.get(relative)


def dead_links(page: Path, text: str, docs_root: Path, generated: dict[str, str], top: Path) -> list[str]:
    """One line per link in ``page`` (Markdown ``text``) that names nothing: a missing file or page,
    a missing ``#anchor``, or (for a page under ``docs_root``) a file outside ``docs_root``, which
    the site would not have. ``top`` is the folder nothing may point above."""
    problems: list[str] = []
    for target in parse(text).targets:
        split = urlsplit(target)
        if split.scheme or split.netloc or target.startswith("/"):
            continue  # absolute URLs are not this checker's business
        path = (page.parent / unquote(split.path)).resolve() if split.path else page
        body = text if not split.path else _read_target(path, docs_root, generated)
        outside = page.is_relative_to(docs_root) and not path.is_relative_to(docs_root)
        if body is None or outside or not path.is_relative_to(top):
            where = "outside docs/, so not in the site" if outside and body is not None else "no such file or page"
            problems.append(f"{page.relative_to(top)}: {target}: {where}")
        elif split.fragment and path.suffix == ".md" and not _anchor_ok(body, unquote(split.fragment)):
            problems.append(f"{page.relative_to(top)}: {target}: no #{split.fragment} on that page")
    return problems


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_no_generated_page_is_written_into_the_source() -> None:
    # The hook generates them at build time; a copy in docs/ would hide a broken hook.
    for path in generated_pages():
        assert not (DOCS / path).exists(), f"docs/{path} is generated by the docs build; remove it"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    problems = dead_links(page, page.read_text(encoding="utf-8"), DOCS, generated_pages(), ROOT)
    assert not problems, "\n".join(problems)


def test_the_checker_reports_each_kind_of_dead_link(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "reference").mkdir(parents=True)
    (docs / "other.md").write_text("# Other\n\n## A section\n")
    (tmp_path / "outside.md").write_text("# Outside\n")
    page = docs / "index.md"
    text = "\n".join(
        [
            "# Home",
            "[ok](other.md#a-section) [ok](reference/gen.md#made) [ok](#home) [web](https://example.org/x.md)",
            "[gone](missing.md) [anchor](other.md#no-such-section) [self](#nowhere)",
            "[out](../outside.md) [gen](reference/gen.md#absent)",
            "```",
            "[in code](not-a-link.md)",
            "```",
        ]
    )
    found = dead_links(page, text, docs, {"reference/gen.md": "# Made\n"}, tmp_path)
    assert found == [
        "docs/index.md: missing.md: no such file or page",
        "docs/index.md: other.md#no-such-section: no #no-such-section on that page",
        "docs/index.md: #nowhere: no #nowhere on that page",
        "docs/index.md: ../outside.md: outside docs/, so not in the site",
        "docs/index.md: reference/gen.md#absent: no #absent on that page",
    ]


def test_an_anchor_on_a_mkdocstrings_page_must_name_an_object() -> None:
    page = "# API\n\n::: mcp_providers.hookspecs\n"
    assert _anchor_ok(page, "mcp_providers.hookspecs.register_resource_providers")
    assert not _anchor_ok(page, "mcp_providers.hookspecs.no_such_hook")
    assert not _anchor_ok(page, "mcp_providers.config.Config")  # not under this page's directives
