"""Built-in plugin: documentation workflows at ``documcp://workflows/``, and the documentation tools.

Each workflow is also served as a skill, ``skill://documcp/workflows/<id>/SKILL.md`` with its
``workflow.json`` and the templates its steps use (:mod:`.workflow_skills`).

Resources (all ``static``, ``application/json``):

- ``documcp://workflows/all``: ``{"workflows": {<id>: Workflow}, "executionGuidance": {...},
  "metadata": {totalWorkflows, workflowNames, complexityLevels, estimatedTimeRange, toolsUsed,
  toolsProvidedByThisServer}}``;
- ``documcp://workflows/guidance``: ``{"executionGuidance", "recommendationEngine",
  "recommendationRules"}``;
- ``documcp://workflows/quick-setup`` and ``documcp://workflows/full-setup``: the bare
  ``quick-documentation-setup`` and ``full-documentation-setup`` workflows (DocuMCP's aliases);
- template ``documcp://workflows/{workflowId}`` with completion over the five workflow ids, so the
  workflows DocuMCP served but never listed are discoverable.

``all`` and the aliases gather other resources' data and declare them as their members: ``all``
holds only the workflows (``documcp://workflows/{workflowId}``) and the guidance
(``documcp://workflows/guidance``) the caller may read, its ``metadata`` computed over those; an
alias is refused when its workflow is; ``guidance`` keeps only the recommendation rules naming a
workflow the caller may read.

A workflow is ``{id, name, description, useCase, complexity, estimatedTime, steps[]}``; a step is
``{tool, description, requiredInputs[], presetArguments{}, outputs[], optional, alternatives[],
providedByThisServer}``. DocuMCP's shapes (tosin2013/documcp
``src/workflows/documentation-workflow.ts``) with two repairs: values DocuMCP wrote into
``requiredInputs`` as strings (``"preserveExisting: true"``) are ``presetArguments``, and
``providedByThisServer`` is computed from the tools this plugin actually declares
(:data:`~.tools.TOOLS`), never typed by hand. For those tools, ``requiredInputs`` are checked
against the tool's input model when the content loads.

The content is authored in ``workflows.json`` (package data) and validated by the models here.
"""

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib.resources import files
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, computed_field, model_validator

from mcp_providers import policy
from mcp_providers.errors import NotFound
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Freshness, Members, Resource, ResourceTemplate
from mcp_providers.plugins.documcp.icons import ICONS
from mcp_providers.plugins.documcp.tools import TOOLS, DocumentationTools
from mcp_providers.plugins.documcp.workflow_skills import WorkflowSkills
from mcp_providers.providers import Content, ReadRequest, ResourceProvider, ToolProvider
from mcp_providers.skills import SkillProvider

__all__ = [
    "ALIASES",
    "WORKFLOW_IDS",
    "Step",
    "Workflow",
    "WorkflowContent",
    "Workflows",
    "content",
    "workflow_text",
]

_PREFIX: Final = "documcp://workflows/"
ALL: Final = _PREFIX + "all"
GUIDANCE: Final = _PREFIX + "guidance"
ONE: Final = _PREFIX + "{workflowId}"
ALIASES: Final[Mapping[str, str]] = {
    "quick-setup": "quick-documentation-setup",
    "full-setup": "full-documentation-setup",
}
"""DocuMCP's short fixed URIs (``documcp://workflows/<alias>``) and the workflow each serves."""

_PROVIDED: Final[frozenset[str]] = frozenset(t.name for t in TOOLS)
_INPUTS: Final[dict[str, type[BaseModel]]] = {t.name: t.input_model for t in TOOLS}
_TOOL_NAME = r"^[a-z][a-z0-9_]*$"
_MINUTES = re.compile(r"^(\d+)-(\d+) minutes$")

_MODEL = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Step(BaseModel):
    """One step of a workflow: a tool call and what it needs and yields."""

    model_config = ConfigDict(**_MODEL, defer_build=True)  # built at first use (issue 43)

    tool: str = Field(pattern=_TOOL_NAME)
    """Name of the tool the step calls (this server's, or DocuMCP's)."""
    description: str = Field(min_length=1)
    required_inputs: tuple[str, ...] = Field(alias="requiredInputs")
    """Argument names the caller must supply (plain identifiers)."""
    preset_arguments: dict[str, JsonValue] = Field(default_factory=dict, alias="presetArguments")
    """Argument values the workflow fixes, e.g. ``{"preserveExisting": true}``."""
    outputs: tuple[str, ...] = Field(min_length=1)
    optional: bool
    alternatives: tuple[str, ...] = ()
    """Other tools that can stand in for :attr:`tool`."""

    @model_validator(mode="after")
    def _check(self) -> "Step":
        for name in (*self.required_inputs, *self.preset_arguments):
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
                raise ValueError(f"step {self.tool}: {name!r} is not an argument name (letters, digits, _)")
        overlap = set(self.required_inputs) & set(self.preset_arguments)
        if overlap:
            raise ValueError(f"step {self.tool}: {sorted(overlap)} are both required inputs and preset")
        if self.tool in self.alternatives:
            raise ValueError(f"step {self.tool}: a tool cannot be its own alternative")
        for alternative in self.alternatives:
            if not re.fullmatch(_TOOL_NAME, alternative):
                raise ValueError(f"step {self.tool}: alternative {alternative!r} is not a tool name")
        model = _INPUTS.get(self.tool)
        if model is not None:
            fields = set(model.model_fields)
            unknown = (set(self.required_inputs) | set(self.preset_arguments)) - fields
            if unknown:
                raise ValueError(
                    f"step {self.tool}: {sorted(unknown)} are not arguments of {self.tool}; it takes {sorted(fields)}"
                )
            required = {n for n, f in model.model_fields.items() if f.is_required()}
            missing = required - set(self.required_inputs) - set(self.preset_arguments)
            if missing:
                raise ValueError(f"step {self.tool}: {self.tool} requires {sorted(missing)}; list them")
        return self

    @computed_field(alias="providedByThisServer")  # type: ignore[prop-decorator]
    @property
    def provided_by_this_server(self) -> bool:
        """Whether this server declares :attr:`tool`: computed from the declared tools, so the
        JSON cannot claim it (``extra="forbid"`` rejects the key there)."""
        return self.tool in _PROVIDED


class Workflow(BaseModel):
    """A named sequence of steps for one documentation job."""

    model_config = _MODEL

    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    use_case: str = Field(alias="useCase", min_length=1)
    complexity: Literal["simple", "moderate", "complex"]
    estimated_time: str = Field(alias="estimatedTime", pattern=_MINUTES.pattern)
    """``"<min>-<max> minutes"``, e.g. ``"2-3 minutes"``."""
    steps: tuple[Step, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> "Workflow":
        low, high = self.minutes()
        if low > high:
            raise ValueError(f"workflow {self.id}: estimatedTime {self.estimated_time!r} runs backwards")
        if all(step.optional for step in self.steps):
            raise ValueError(f"workflow {self.id}: every step is optional; at least one must run")
        return self

    def minutes(self) -> tuple[int, int]:
        """The estimated time as ``(min, max)`` minutes."""
        match = _MINUTES.match(self.estimated_time)
        if match is None:  # the field pattern already guarantees it
            raise ValueError(f"estimatedTime {self.estimated_time!r} is not '<min>-<max> minutes'")
        return int(match.group(1)), int(match.group(2))


class ExecutionGuidance(BaseModel):
    """How to carry out a workflow: principles, error handling and customization, as prose lists."""

    model_config = _MODEL

    description: str = Field(min_length=1)
    principles: tuple[str, ...] = Field(min_length=1)
    error_handling: tuple[str, ...] = Field(alias="errorHandling", min_length=1)
    customization: tuple[str, ...] = Field(min_length=1)


class RecommendationRule(BaseModel):
    """``projectStatus`` (and ``timeConstraint``, ``null`` = any) selects ``workflow``."""

    model_config = _MODEL

    project_status: Literal["new", "existing-no-docs", "existing-basic-docs", "existing-full-docs"] = Field(
        alias="projectStatus"
    )
    time_constraint: Literal["minimal", "moderate", "comprehensive"] | None = Field(alias="timeConstraint")
    workflow: str
    reason: str = Field(min_length=1)


class WorkflowContent(BaseModel):
    """Everything ``workflows.json`` holds, validated as a whole."""

    model_config = _MODEL

    workflows: dict[str, Workflow]
    execution_guidance: ExecutionGuidance = Field(alias="executionGuidance")
    recommendation_engine: str = Field(alias="recommendationEngine", min_length=1)
    recommendation_rules: tuple[RecommendationRule, ...] = Field(alias="recommendationRules", min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _ids_from_keys(cls, data: Any) -> Any:
        # The JSON keys workflows by id; each record carries its id too, so fill it from the key.
        if isinstance(data, dict) and isinstance(data.get("workflows"), dict):
            data = {**data, "workflows": {k: {"id": k, **v} for k, v in data["workflows"].items()}}
        return data

    @model_validator(mode="after")
    def _check(self) -> "WorkflowContent":
        for key, workflow in self.workflows.items():
            if key != workflow.id:
                raise ValueError(f"workflow keyed {key!r} says its id is {workflow.id!r}")
        for alias, target in ALIASES.items():
            if target not in self.workflows:
                raise ValueError(f"alias {alias!r} points at {target!r}, which is not a workflow")
        for rule in self.recommendation_rules:
            if rule.workflow not in self.workflows:
                raise ValueError(
                    f"recommendation rule for {rule.project_status!r} names unknown workflow "
                    f"{rule.workflow!r}; known: {sorted(self.workflows)}"
                )
        statuses = {r.project_status for r in self.recommendation_rules if r.time_constraint is None}
        uncovered = {"new", "existing-no-docs", "existing-basic-docs", "existing-full-docs"} - statuses
        if uncovered:
            raise ValueError(f"no catch-all recommendation rule for project status {sorted(uncovered)}")
        return self

    def metadata(self) -> dict[str, Any]:
        """Summary computed from the workflows (never typed by hand)."""
        return summary(self.workflows)


def summary(workflows: Mapping[str, Workflow]) -> dict[str, Any]:
    """The ``metadata`` of ``documcp://workflows/all`` over ``workflows`` (id -> workflow):
    ``{totalWorkflows, workflowNames, complexityLevels, estimatedTimeRange, toolsUsed,
    toolsProvidedByThisServer}``; ``estimatedTimeRange`` is ``None`` for no workflows."""
    spans = [w.minutes() for w in workflows.values()]
    used = sorted({s.tool for w in workflows.values() for s in w.steps})
    span = None
    if spans:
        span = f"{min(a for a, _ in spans)}-{max(b for _, b in spans)} minutes depending on workflow and project size"
    return {
        "totalWorkflows": len(workflows),
        "workflowNames": list(workflows),
        "complexityLevels": ["simple", "moderate", "complex"],
        "estimatedTimeRange": span,
        "toolsUsed": used,
        "toolsProvidedByThisServer": [t for t in used if t in _PROVIDED],
    }


@cache
def content() -> WorkflowContent:
    """The validated workflow content.

    :raises pydantic.ValidationError: ``workflows.json`` breaks a rule above; the error names it.
    """
    text = files("mcp_providers.plugins.documcp").joinpath("workflows.json").read_text(encoding="utf-8")
    return WorkflowContent.model_validate_json(text)


WORKFLOW_IDS: Final[tuple[str, ...]] = tuple(content().workflows)
"""The workflow ids, in the order ``workflows.json`` lists them."""


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)


class Workflows(ResourceProvider):
    """Serves the workflows, the execution guidance, and each workflow by id."""

    name = "workflows"
    prefixes = (_PREFIX,)

    def __init__(self) -> None:
        c = content()
        self._texts: dict[str, str] = {
            ALL: _json(
                {
                    "workflows": {k: _dump(w) for k, w in c.workflows.items()},
                    "executionGuidance": _dump(c.execution_guidance),
                    "metadata": c.metadata(),
                }
            ),
            GUIDANCE: _json(
                {
                    "executionGuidance": _dump(c.execution_guidance),
                    "recommendationEngine": c.recommendation_engine,
                    "recommendationRules": [_dump(r) for r in c.recommendation_rules],
                }
            ),
        }
        for alias, target in ALIASES.items():
            self._texts[_PREFIX + alias] = _json(_dump(c.workflows[target]))
        self._one = {k: workflow_text(k) for k in c.workflows}

    def resources(self) -> Sequence[Resource]:
        """``all``, ``guidance``, ``quick-setup`` and ``full-setup``."""
        c = content()
        described = {
            ALL: (
                "workflows-all",
                "All documentation workflows",
                "Every workflow with its steps, the execution guidance and a computed summary.",
            ),
            GUIDANCE: (
                "workflows-guidance",
                "Workflow execution guidance",
                "How to run the workflows, and rules for choosing one from the project's status.",
            ),
        }
        for alias, target in ALIASES.items():
            w = c.workflows[target]
            described[_PREFIX + alias] = (f"workflow-{alias}", w.name, f"{w.description} ({target})")
        members = {ALL: Members(uris=(ONE, GUIDANCE), filtered=True), GUIDANCE: Members(uris=(ONE,), filtered=True)}
        members.update({_PREFIX + a: Members(uris=(_one(t),), filtered=True) for a, t in ALIASES.items()})
        return [
            Resource(
                uri=uri,
                name=name,
                title=title,
                description=description,
                mime_type="application/json",
                size=None if uri in (ALL, GUIDANCE) else len(self._texts[uri].encode()),  # these vary by caller
                freshness=Freshness.static(),
                icons=ICONS,
                members=members.get(uri),
            )
            for uri, (name, title, description) in described.items()
        ]

    def templates(self) -> Sequence[ResourceTemplate]:
        """``documcp://workflows/{workflowId}``, completing the five workflow ids."""
        return [
            ResourceTemplate(
                uri_template=ONE,
                name="workflow",
                title="One documentation workflow",
                description="One workflow by id: " + ", ".join(WORKFLOW_IDS) + ".",
                mime_type="application/json",
                freshness=Freshness.static(),
                icons=ICONS,
                completions={"workflowId": WORKFLOW_IDS},
            )
        ]

    async def read(self, request: ReadRequest) -> Content:
        """A fixed resource, or one workflow by ``workflowId``.

        :raises NotFound: ``workflowId`` names no workflow; the message lists the ids.
        """
        if request.uri == ALL:
            return Content(text=self._all())
        if request.uri == GUIDANCE:
            return Content(text=self._guidance())
        alias = ALIASES.get(request.uri.removeprefix(_PREFIX))
        if alias is not None:  # the alias serves its workflow's data: only to who may read that
            policy.require("read", _one(alias), asked_by=f"alias {request.uri}")
        text = self._texts.get(request.uri)
        if text is None:
            text = self._one.get(request.params.get("workflowId", ""))
        if text is None:
            readable = [i for i in WORKFLOW_IDS if policy.allowed("read", _one(i))]
            raise NotFound(
                f"No workflow {request.params.get('workflowId', request.uri)!r}; workflow ids: {', '.join(readable)}",
                data={"uri": request.uri},
            )
        return Content(text=text)

    def _all(self) -> str:
        """``all`` with only the workflows and guidance the caller may read (see the module docstring)."""
        c = content()
        visible = {k: w for k, w in c.workflows.items() if policy.allowed("read", _one(k))}
        guidance = policy.allowed("read", GUIDANCE)
        if guidance and len(visible) == len(c.workflows):
            return self._texts[ALL]  # the same object every time: its digest is kept
        body: dict[str, Any] = {"workflows": {k: _dump(w) for k, w in visible.items()}}
        if guidance:
            body["executionGuidance"] = _dump(c.execution_guidance)
        body["metadata"] = summary(visible)
        return _json(body)

    def _guidance(self) -> str:
        """``guidance`` with only the recommendation rules naming a workflow the caller may read."""
        c = content()
        rules = [r for r in c.recommendation_rules if policy.allowed("read", _one(r.workflow))]
        if len(rules) == len(c.recommendation_rules):
            return self._texts[GUIDANCE]
        body = {
            "executionGuidance": _dump(c.execution_guidance),
            "recommendationEngine": c.recommendation_engine,
            "recommendationRules": [_dump(r) for r in rules],
        }
        return _json(body)


@cache
def workflow_text(workflow_id: str) -> str:
    """The JSON text ``documcp://workflows/<workflow_id>`` serves (the skill's ``workflow.json``).

    :raises KeyError: no workflow has that id.
    """
    return _json(_dump(content().workflows[workflow_id]))


def _one(workflow_id: str) -> str:
    """The URI of one workflow by id, e.g. ``documcp://workflows/full-documentation-setup``."""
    return ONE.replace("{workflowId}", workflow_id)


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    """The workflows provider (owns ``documcp://workflows/``)."""
    return [Workflows()]


@hookimpl
def register_skill_providers() -> list[SkillProvider]:
    """Each workflow as a skill (owns ``skill://documcp/workflows/``)."""
    return [WorkflowSkills(content(), workflow_text, ALIASES)]


@hookimpl
def register_tool_providers() -> list[ToolProvider]:
    """``recommend_ssg`` and ``generate_config``; registered here so that every step marked
    ``providedByThisServer`` is served whenever the workflows are."""
    return [DocumentationTools()]
