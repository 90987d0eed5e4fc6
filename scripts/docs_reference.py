"""Generated documentation pages, and the mkdocs hook that adds them to the site.

Two pages are never written by hand, so they cannot drift from the code:

- ``reference/configuration.md``: every field of the config file, from the pydantic models
  (:class:`mcp_providers.config.Config` and the models it nests, then each built-in plugin's
  ``settings_model``): name, type, default and the field's docstring;
- ``reference/builtins.md``: every resource URI, resource template, tool and prompt the built-in
  plugins serve, from a live composition of the installed built-ins.

``mkdocs.yml`` names this file under ``hooks:``; :func:`on_files` adds both pages to the build.
``python scripts/docs_reference.py OUT_DIR`` writes them to ``OUT_DIR`` instead, for reading.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

BUILTIN_DISTRIBUTION = "mcp-providers"


# -- configuration reference ----------------------------------------------------------------------


def _attribute_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """``{field: docstring}`` from the string literal under each field in the class source."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, following in itertools.pairwise(body):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _nested_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _nested_models(arg)
    return found


def _type_name(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return "None"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    name = getattr(origin, "__name__", str(origin))
    if args:
        shown = [("..." if a is Ellipsis else _type_name(a)) for a in args]
        return f"{name}[{', '.join(shown)}]"
    return name


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
        if isinstance(value, BaseModel):
            return "(table defaults)"
        return f"`{value!r}`"
    if field.default_factory is not None:
        return f"`{field.default_factory()!r}`"
    return "required"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _heading(path: str, array: bool) -> str:
    if not path:
        return "Top level"
    return f"`[[{path}]]`" if array else f"`[{path}]`"


def model_section(
    model: type[BaseModel], path: str, seen: set[type[BaseModel]], array: bool = False, variant: bool = False
) -> list[str]:
    """Markdown for ``model`` as the TOML table at dotted ``path`` (``""``: the top level), then
    every model it nests. ``array``: the table is an array of tables (``[[path]]``); ``variant``:
    the table takes one of several shapes, this is one."""
    seen.add(model)
    shape = f" as {model.__name__}" if variant else ""
    lines = [f"### {_heading(path, array)}{shape}", ""]
    doc = inspect.getdoc(model)
    if doc:
        lines += [doc.split("\n\n")[0], ""]
    docs = _attribute_docstrings(model)
    lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
    nested: list[tuple[str, bool, bool, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        meaning = docs.get(name) or field.description or ""
        lines.append(
            f"| `{key}` | `{_cell(_type_name(field.annotation))}` | {_cell(_default(field))} | {_cell(meaning)} |"
        )
        containers = {typing.get_origin(a) for a in (field.annotation, *typing.get_args(field.annotation))}
        sub_path = f"{path}.{key}" if path else key
        subs = _nested_models(field.annotation)
        for sub in subs:
            if sub in seen:
                continue
            if dict in containers:
                nested.append((f"{sub_path}.<name>", False, len(subs) > 1, sub))
            else:
                nested.append((sub_path, bool(containers & {tuple, list}), len(subs) > 1, sub))
    lines.append("")
    for sub_path, sub_array, sub_variant, sub in nested:
        lines += model_section(sub, sub_path, seen, sub_array, sub_variant)
    return lines


def configuration_page() -> str:
    """The configuration reference, generated from the pydantic models."""
    from mcp_providers._serve.composition import compose
    from mcp_providers.config import Config

    composition = compose(Config())
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by scripts/docs_reference.py from the pydantic models; do not edit. -->",
        "",
        "The config file is TOML (or JSON with the same shape), passed with `--config FILE` or the",
        "`MCP_PROVIDERS_CONFIG` environment variable. Without one, every installed plugin is served",
        "with its defaults. Unknown keys are errors that name the key.",
        "",
        "## The file",
        "",
    ]
    seen: set[type[BaseModel]] = set()
    lines += model_section(Config, "", seen)
    lines += ["## Built-in plugin settings", ""]
    any_settings = False
    for record in composition.records:
        if record.distribution != BUILTIN_DISTRIBUTION or record.plugin is None:
            continue
        hook = getattr(record.plugin, "settings_model", None)
        model = hook() if callable(hook) else None
        if isinstance(model, type) and issubclass(model, BaseModel):
            any_settings = True
            lines += model_section(model, f"plugins.{record.name}", seen)
    if not any_settings:
        lines += ["No built-in plugin takes settings.", ""]
    return "\n".join(lines)


# -- built-in catalog -----------------------------------------------------------------------------


def builtin_catalog() -> dict[str, list[tuple[str, str, str]]]:
    """``{"resources"|"templates"|"tools"|"prompts"|"skills": [(name or URI, plugin, description)]}``
    for the built-in plugins, from a live composition."""
    from mcp_providers._serve.composition import compose
    from mcp_providers.config import Config

    composition = compose(Config())
    builtin = {r.name for r in composition.records if r.distribution == BUILTIN_DISTRIBUTION}
    c = composition.catalog

    def rows(entries: Any, key: str) -> list[tuple[str, str, str]]:
        return [
            (getattr(e.declaration, key), e.plugin, e.declaration.description or e.declaration.title or "")
            for e in entries
            if e.plugin in builtin
        ]

    return {
        "resources": rows(c.resources, "uri"),
        "templates": rows(c.templates, "uri_template"),
        "tools": rows(c.tools, "name"),
        "prompts": rows(c.prompts, "name"),
        "skills": [
            (e.declaration.uri, e.plugin, str(e.declaration.frontmatter["description"]))
            for e in c.skills
            if e.plugin in builtin
        ],
    }


def builtins_page() -> str:
    """Every built-in URI, template, tool and prompt, generated from a live composition."""
    catalog = builtin_catalog()
    lines = [
        "# Built-in resources, tools, prompts and skills",
        "",
        "<!-- Generated by scripts/docs_reference.py from a live composition; do not edit. -->",
        "",
        "What `mcp-providers serve` offers with only the built-in plugins installed and no config.",
        "Plugins that need settings (ServiceNow instances) serve more once configured.",
        "",
    ]
    headings = {
        "resources": ("Resources", "URI"),
        "templates": ("Resource templates", "URI template"),
        "tools": ("Tools", "name"),
        "prompts": ("Prompts", "name"),
        "skills": ("Skills", "SKILL.md"),
    }
    for kind, (heading, column) in headings.items():
        lines += [f"## {heading}", ""]
        if not catalog[kind]:
            lines += ["None.", ""]
            continue
        lines += [f"| {column} | plugin | description |", "|---|---|---|"]
        lines += [f"| `{name}` | `{plugin}` | {_cell(desc)} |" for name, plugin, desc in catalog[kind]]
        lines.append("")
    return "\n".join(lines)


PAGES = {
    "reference/configuration.md": configuration_page,
    "reference/builtins.md": builtins_page,
}


# -- mkdocs hook ----------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages to the build."""
    from mkdocs.structure.files import File

    for path, make in PAGES.items():
        files.append(File.generated(config, path, content=make()))
    return files


GUIDES = {
    "plugin-authors.md": "Writing a provider plugin",
    "hooks.md": "Hooks, by example",
    "embedding.md": "Embedding in an existing server or app",
}
"""Guide pages written under issue 6; the home page links each one that exists."""


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs hook: fill the home page's guide list with the guides present in ``docs/``."""
    marker = "<!-- issue-6-pages -->"
    if marker not in markdown:
        return markdown
    present = [(path, title) for path, title in GUIDES.items() if files.get_file_from_path(path) is not None]
    missing = [path for path in GUIDES if files.get_file_from_path(path) is None]
    lines = ["## Guides", ""] + [f"- [{title}]({path})" for path, title in present]
    if missing:
        lines += ["", f"Not written yet: {', '.join(f'`docs/{p}`' for p in missing)}."]
    return markdown.replace(marker, "\n".join(lines))


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "generated-docs")
    for path, make in PAGES.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(make(), encoding="utf-8")
        print(target)
