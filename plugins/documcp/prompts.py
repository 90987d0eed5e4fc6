"""Built-in plugin: user-controlled prompts for the common documentation jobs.

Prompts (names and arguments follow DocuMCP's, so a client's saved invocations keep working):

- ``setup-documentation``: set up a documentation site for a project;
- ``tutorial-writer``, ``howto-guide-writer``, ``reference-writer``, ``explanation-writer``: write
  one page of that Diataxis kind.

Every prompt takes ``project_path`` (required) and ``ssg_type`` (optional; completion offers the
registry's SSG ids). Arguments with a closed vocabulary complete to it and are checked on render.
The Diataxis wording comes from ``documcp://templates/diataxis-structure`` and the SSG facts from
the registry, so the prompts say what those resources say.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from mcp_providers import policy
from mcp_providers.errors import InvalidParams
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Prompt, PromptArgument
from mcp_providers.plugins.documcp.config_templates import (
    DIATAXIS_URI,
    DiataxisStructure,
    Section,
    diataxis_text,
)
from mcp_providers.plugins.documcp.icons import ICONS
from mcp_providers.plugins.documcp.registry import SSG, SSG_IDS, by_id, template_uri
from mcp_providers.providers import Message, PromptProvider

__all__ = ["PROMPTS", "DocumentationPrompts"]

_PROJECT_PATH = PromptArgument(
    name="project_path",
    description="Path of the project's repository, e.g. ./ or ~/src/widgets.",
    required=True,
)
_SSG = PromptArgument(
    name="ssg_type",
    # no list of ids in prose: prompts/list is the same for every caller, completion offers each the ids it may read
    description="Static site generator the docs use: an id of documcp://ssgs/available, e.g. mkdocs.",
    completions=SSG_IDS,
    resource="documcp://ssgs/{ssg_type}",  # a value names that SSG's catalog entry: the caller must read it
)

_CLOSED: Final[dict[str, tuple[str, ...]]] = {
    "ssg_type": SSG_IDS,
    "include_examples": ("true", "false"),
    "user_experience": ("beginner", "intermediate", "advanced"),
    "reference_type": ("api", "cli", "configuration", "data-format"),
    "completeness": ("essential", "comprehensive"),
    "depth": ("overview", "in-depth"),
}
"""Arguments whose values come from a fixed list: offered by completion, checked on render."""


def _arg(name: str, description: str) -> PromptArgument:
    return PromptArgument(name=name, description=description, completions=_CLOSED.get(name, ()))


PROMPTS: Final[tuple[Prompt, ...]] = (
    Prompt(
        name="setup-documentation",
        icons=ICONS,
        title="Set up documentation for a project",
        description="Plan and set up a Diataxis-structured documentation site for a project, "
        "with a static site generator chosen or recommended.",
        arguments=(
            _PROJECT_PATH,
            _SSG,
            _arg("include_examples", "Whether to draft example pages (true or false; default true)."),
        ),
    ),
    Prompt(
        name="tutorial-writer",
        icons=ICONS,
        title="Write a tutorial",
        description="Write a learning-oriented tutorial page (Diataxis) for the project.",
        arguments=(
            _PROJECT_PATH,
            _SSG,
            _arg("target_audience", "Who the learner is, e.g. 'Python developers new to the tool'."),
            _arg("learning_goal", "What the learner can do at the end."),
        ),
    ),
    Prompt(
        name="howto-guide-writer",
        icons=ICONS,
        title="Write a how-to guide",
        description="Write a goal-oriented how-to guide (Diataxis) for one real task.",
        arguments=(
            _PROJECT_PATH,
            _SSG,
            _arg("problem", "The task or problem the guide solves."),
            _arg("user_experience", "Reader's experience: beginner, intermediate or advanced."),
        ),
    ),
    Prompt(
        name="reference-writer",
        icons=ICONS,
        title="Write a reference page",
        description="Write an information-oriented reference page (Diataxis) describing the machinery.",
        arguments=(
            _PROJECT_PATH,
            _SSG,
            _arg("reference_type", "What is described: api, cli, configuration or data-format."),
            _arg("completeness", "essential (the common parts) or comprehensive (everything)."),
        ),
    ),
    Prompt(
        name="explanation-writer",
        icons=ICONS,
        title="Write an explanation page",
        description="Write an understanding-oriented explanation (Diataxis) of a concept or design decision.",
        arguments=(
            _PROJECT_PATH,
            _SSG,
            _arg("concept", "The concept, design decision or trade-off to explain."),
            _arg("depth", "overview or in-depth."),
        ),
    ),
)
"""The prompts :class:`DocumentationPrompts` declares."""

_KIND: Final[dict[str, Section]] = {
    "tutorial-writer": "tutorials",
    "howto-guide-writer": "how-to-guides",
    "reference-writer": "reference",
    "explanation-writer": "explanation",
}

_SINGULAR: Final[dict[Section, str]] = {
    "tutorials": "tutorial",
    "how-to-guides": "how-to guide",
    "reference": "reference",
    "explanation": "explanation",
}


def _checked(arguments: Mapping[str, str]) -> None:
    for name, allowed in _CLOSED.items():
        value = arguments.get(name)
        if value is not None and value != "" and value not in allowed:
            shown = [v for v in allowed if name != "ssg_type" or policy.allowed("read", f"documcp://ssgs/{v}")]
            raise InvalidParams(f"{name} {value!r} is not one of: {', '.join(shown)}")


def _ssg_lines(ssg: SSG | None) -> list[str]:
    if ssg is None:
        return [
            "No static site generator was named: find the one the project uses from its configuration "
            "files, or call the recommend_ssg tool and say which one you chose and why."
        ]
    return [
        f"The site uses {ssg.name}: configuration in {ssg.config_file}, pages under {ssg.content_dir}/, "
        f"preview with `{ssg.serve}`, build with `{ssg.build}` (reference: {ssg.docs_url}).",
    ]


class DocumentationPrompts(PromptProvider):
    """Serves :data:`PROMPTS`."""

    name = "documcp-prompts"

    def __init__(self) -> None:
        self._diataxis = DiataxisStructure.model_validate_json(diataxis_text())

    def prompts(self) -> Sequence[Prompt]:
        """:data:`PROMPTS`."""
        return PROMPTS

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        """One user message with the job, the SSG's facts and the Diataxis rules for the page kind.

        :raises InvalidParams: an argument with a fixed vocabulary (``ssg_type``,
            ``include_examples``, ``user_experience``, ``reference_type``, ``completeness``,
            ``depth``) has another value; the message lists the allowed ones.
        """
        _checked(arguments)
        ssg = by_id(arguments.get("ssg_type") or "")
        path = arguments["project_path"]
        if prompt.name == "setup-documentation":
            return [Message(role="user", text=self._setup(path, ssg, arguments))]
        kind = _KIND.get(prompt.name)
        if kind is None:
            raise InvalidParams(f"no prompt {prompt.name!r}; prompts: {', '.join(p.name for p in PROMPTS)}")
        return [Message(role="user", text=self._page(prompt, kind, path, ssg, arguments))]

    def _setup(self, path: str, ssg: SSG | None, arguments: Mapping[str, str]) -> str:
        examples = arguments.get("include_examples", "true") != "false"
        sections = self._diataxis.structure
        lines = [
            f"Set up documentation for the project at {path}.",
            "",
            "1. Read the repository: what it does, who uses it, its language and existing docs.",
            *(f"2. {line}" for line in _ssg_lines(ssg)),
            "3. Create the configuration with the generate_config tool"
            + (f" (template: {template_uri(ssg)})." if ssg and policy.allowed("read", template_uri(ssg)) else "."),
            *self._sections(sections),
            "5. "
            + (
                "Draft one starting page per section from what the repository shows, marking guesses."
                if examples
                else "Create only index pages; do not draft content."
            ),
            "6. Say which files you will create before writing them, and finish with how to preview the site.",
        ]
        return "\n".join(lines)

    @staticmethod
    def _sections(sections: Mapping[Any, Any]) -> list[str]:
        """The Diataxis section list, only for a caller who may read the resource it comes from."""
        if not policy.allowed("read", DIATAXIS_URI):
            return ["4. Lay out the documentation in the four Diataxis sections."]
        return [
            f"4. Lay out the four Diataxis sections (see {DIATAXIS_URI}):",
            *(f"   - {name}/: {section.description}" for name, section in sections.items()),
        ]

    def _page(self, prompt: Prompt, kind: Section, path: str, ssg: SSG | None, arguments: Mapping[str, str]) -> str:
        section = self._diataxis.structure[kind]
        details = {
            a.name: arguments[a.name]
            for a in prompt.arguments
            if a.name not in ("project_path", "ssg_type") and arguments.get(a.name)
        }
        lines = [
            f"Write one {_SINGULAR[kind]} page for the project at {path}.",
            f'Diataxis: {section.description} It answers the reader\'s question: "{section.answers}"',
            f"Avoid: {section.avoid}",
            *_ssg_lines(ssg),
        ]
        if ssg is not None:
            lines.append(f"Save it under {ssg.content_dir}/{kind}/ with YAML front matter giving its title.")
        if details:
            lines.append("Details from the user (JSON): " + json.dumps(details, ensure_ascii=False))
        lines.append("Base every statement on the project's code and docs; mark anything you could not verify.")
        return "\n".join(lines)


@hookimpl
def register_prompt_providers() -> list[PromptProvider]:
    """The documentation prompts."""
    return [DocumentationPrompts()]
