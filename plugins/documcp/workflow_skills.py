"""The documentation workflows as skills (``io.modelcontextprotocol/skills``), beside their
``documcp://workflows/...`` resources, which stay for older clients.

Each workflow in ``workflows.json`` is the skill ``skill://documcp/workflows/<workflow id>``:

- ``SKILL.md``: frontmatter ``name`` (the workflow id), ``description`` (what it does and when to
  use it) and ``metadata`` (complexity, estimated time, the old URI), then the steps in order with
  the inputs each needs, what it yields and whether this server provides its tool, and the
  execution guidance;
- ``workflow.json``: the workflow as data, the same bytes ``documcp://workflows/<id>`` serves;
- ``templates/...``: the templates its steps use: every SSG's configuration template for a
  workflow that runs ``generate_config``, and ``diataxis-structure.json`` for one that runs
  ``setup_structure`` (the same bytes as ``documcp://templates/...``).

Everything is rendered from the validated content when the server composes, so a skill cannot
drift from the workflow it describes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from mcp_providers.plugins.documcp.config_templates import _EXTENSIONS, diataxis_text, template_text
from mcp_providers.plugins.documcp.icons import ICONS
from mcp_providers.plugins.documcp.registry import SSGS, template_uri
from mcp_providers.skills import SkillProvider, SkillSource

if TYPE_CHECKING:  # the workflows module registers this provider: its types only, to keep imports one-way
    from mcp_providers.plugins.documcp.workflows import Workflow, WorkflowContent

__all__ = ["PREFIX", "WorkflowSkills", "copies", "skill_files"]

PREFIX: Final = "skill://documcp/workflows/"
GUIDANCE: Final = "documcp://workflows/guidance"
"""The execution guidance every workflow's ``SKILL.md`` writes out (its resource)."""
_DIATAXIS: Final = "templates/diataxis-structure.json"


def _config_files() -> dict[str, tuple[str, str]]:
    """``templates/<ssg>-config.<ext>`` -> (its text, the resource URI serving it)."""
    return {
        f"templates/{s.id}-config.{_EXTENSIONS[s.config_format]}": (template_text(s.id), template_uri(s)) for s in SSGS
    }


def _templates(workflow: Workflow) -> dict[str, tuple[str, str]]:
    """``templates/...`` -> (its text, the resource URI serving it), for the tools its steps run."""
    tools = {step.tool for step in workflow.steps}
    templates: dict[str, tuple[str, str]] = {}
    if "generate_config" in tools:
        templates.update(_config_files())
    if "setup_structure" in tools:
        templates[_DIATAXIS] = (diataxis_text(), "documcp://templates/diataxis-structure")
    return templates


def skill_files(content: WorkflowContent, workflow: Workflow, workflow_json: str) -> dict[str, bytes]:
    """Path -> bytes of every file of ``workflow``'s skill (``workflow_json``: the text its
    ``documcp://workflows/<id>`` resource serves)."""
    templates = _templates(workflow)
    files = {"SKILL.md": _skill_md(content, workflow, templates).encode(), "workflow.json": workflow_json.encode()}
    files.update((path, text.encode()) for path, (text, _) in sorted(templates.items()))
    return files


def copies(workflow: Workflow, aliases: Mapping[str, str]) -> dict[str, str | tuple[str, ...]]:
    """Path -> URIs of the resources whose bytes each copied file of ``workflow``'s skill serves
    (``aliases``: short name -> workflow id, each also served at ``documcp://workflows/<short>``):
    a rule refusing any of them refuses the copy too (:attr:`SkillSource.copies`)."""
    shorts = tuple(f"documcp://workflows/{short}" for short, id_ in aliases.items() if id_ == workflow.id)
    originals = (f"documcp://workflows/{workflow.id}", *shorts)
    # SKILL.md is the workflow (its steps, inputs, presets) and the guidance, written out as prose
    out: dict[str, str | tuple[str, ...]] = {"workflow.json": originals, "SKILL.md": (*originals, GUIDANCE)}
    out.update((path, uri) for path, (_, uri) in _templates(workflow).items())
    return out


_KEY: Final = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_TEXT: Final = re.compile("[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff\\ufeff\\ufffe\\uffff]*")
_RESOLVED: Final = frozenset({"yes", "no", "true", "false", "on", "off", "null"})


def _frontmatter_text(fields: Mapping[str, str | Mapping[str, str]]) -> str:
    """``fields`` (texts, and mappings of texts one level deep) as YAML block lines, each text
    single-quoted: the form :func:`mcp_providers.skills.frontmatter_of` reads without PyYAML.
    A key or text outside that form (a line break or control character, say) is written by PyYAML.
    """
    lines: list[str] = []
    keys: list[str] = []
    texts: list[str] = []
    for key, value in fields.items():
        pairs = [(key, value)] if isinstance(value, str) else [(f"  {k}", v) for k, v in value.items()]
        if not isinstance(value, str):
            lines.append(f"{key}:\n" if value else "\0")  # an empty mapping would read as null
        lines += [f"{k}: {_quoted(v)}\n" for k, v in pairs]
        keys += [key, *(k.strip() for k, _ in pairs)]
        texts += [v for _, v in pairs]
    simple = all(_KEY.fullmatch(k) and k.lower() not in _RESOLVED for k in keys)
    if simple and all(_TEXT.fullmatch(t) for t in texts) and "\0" not in lines:
        return "".join(lines)
    import yaml  # only for a text the simple form cannot hold: never for the shipped workflows

    return yaml.safe_dump(dict(fields), sort_keys=False, allow_unicode=True, width=1000)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _skill_md(content: WorkflowContent, workflow: Workflow, templates: dict[str, tuple[str, str]]) -> str:
    frontmatter: dict[str, str | Mapping[str, str]] = {
        "name": workflow.id,
        "description": f"{workflow.description} Use for: {workflow.use_case}"[:1024],
        "metadata": {
            "complexity": workflow.complexity,
            "estimated-time": workflow.estimated_time,
            "resource": f"documcp://workflows/{workflow.id}",
        },
    }
    head = _frontmatter_text(frontmatter)
    lines = [f"---\n{head}---", "", f"# {workflow.name}", "", workflow.description, ""]
    lines += [f"Use it for: {workflow.use_case}", ""]
    lines += [f"Complexity: {workflow.complexity}. Estimated time: {workflow.estimated_time}.", ""]
    lines += ["The steps as data (inputs, presets, outputs) are in `workflow.json`.", "", "## Steps", ""]
    for number, step in enumerate(workflow.steps, 1):
        served = "provided by this server" if step.provided_by_this_server else "a DocuMCP tool this server lacks"
        kind = "optional" if step.optional else "required"
        lines.append(f"{number}. `{step.tool}` ({kind}; {served}): {step.description}")
        if step.required_inputs:
            lines.append("   - Inputs: " + ", ".join(f"`{n}`" for n in step.required_inputs))
        if step.preset_arguments:
            lines.append("   - Preset: " + ", ".join(f"`{k}` = `{v}`" for k, v in step.preset_arguments.items()))
        lines.append("   - Yields: " + ", ".join(f"`{o}`" for o in step.outputs))
        if step.alternatives:
            lines.append("   - Alternatives: " + ", ".join(f"`{a}`" for a in step.alternatives))
    if templates:
        lines += ["", "## Templates", "", "The steps fill these; each is also the resource named beside it.", ""]
        lines += [f"- [`{path}`]({path}) ({uri})" for path, (_, uri) in sorted(templates.items())]
    guidance = content.execution_guidance
    for title, items in (
        ("Carrying it out", guidance.principles),
        ("When a step fails", guidance.error_handling),
        ("Adapting it", guidance.customization),
    ):
        lines += ["", f"## {title}", ""] + [f"- {item}" for item in items]
    return "\n".join(lines) + "\n"


class WorkflowSkills(SkillProvider):
    """Each documentation workflow as a skill under ``skill://documcp/workflows/``.

    :param content: the validated workflows.
    :param workflow_json: workflow id -> the text ``documcp://workflows/<id>`` serves.
    :param aliases: short name -> workflow id, each also served at ``documcp://workflows/<short>``.
    """

    name = "workflow-skills"
    prefixes = (PREFIX,)
    icons = ICONS

    def __init__(
        self, content: WorkflowContent, workflow_json: Callable[[str], str], aliases: Mapping[str, str]
    ) -> None:
        self._files = {PREFIX + i: skill_files(content, w, workflow_json(i)) for i, w in content.workflows.items()}
        self._copies = {PREFIX + i: copies(w, aliases) for i, w in content.workflows.items()}

    def skills(self) -> Sequence[SkillSource]:
        return [SkillSource(root, tuple(files), self._copies[root]) for root, files in self._files.items()]

    def read(self, skill: SkillSource, path: str) -> bytes:
        return self._files[skill.root][path]
