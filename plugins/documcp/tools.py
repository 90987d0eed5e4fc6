"""Read-only documentation tools: ``recommend_ssg`` and ``generate_config``.

Both have ``effects="none"``: they compute from the SSG registry and the stored templates, write no
file and reach no outside system. Their SSG enums are the registry's ids (:data:`SSGId`).

The provider is registered by the workflows plugin (:mod:`.workflows`), because the workflows say
for each step whether this server provides its tool, computed from :data:`TOOLS`; registering both
together means that claim holds whenever the workflows are served.
"""

import re
from collections.abc import Callable, Sequence
from typing import Final, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp_providers import policy
from mcp_providers.errors import ToolFailure
from mcp_providers.models import Tool
from mcp_providers.plugins.documcp.config_templates import render
from mcp_providers.plugins.documcp.icons import ICONS
from mcp_providers.plugins.documcp.registry import (
    SSG,
    SSGS,
    Feature,
    Language,
    SSGId,
    mime_type,
    require,
    template_uri,
)
from mcp_providers.providers import Link, ToolCall, ToolProvider, ToolResult

__all__ = [
    "PURPOSES",
    "TOOLS",
    "DocumentationTools",
    "GenerateConfigIn",
    "GenerateConfigOut",
    "RecommendIn",
    "RecommendOut",
    "Recommendation",
    "generate_config",
    "recommend",
]

Priority = Literal["simplicity", "build-speed", "maturity"]

_GITHUB_REPO = re.compile(r"^https://github\.com/([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/([A-Za-z0-9._-]{1,100})$")
_PLACEHOLDER_REPO: Final = "https://github.com/your-org/your-project"
PURPOSES: Final[tuple[str, ...]] = tuple(sorted({tag for s in SSGS for tag in s.best_for}))
"""Every ``bestFor`` tag in the registry: the vocabulary of ``recommend_ssg``'s ``purposes``."""


# -- recommend_ssg -------------------------------------------------------------------------------


class RecommendIn(BaseModel):
    """Facts about the project; every field is optional and only adds evidence."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    team_language: Language | None = Field(
        default=None, description="Language the maintainers work in most (typescript counts as javascript)."
    )
    purposes: tuple[str, ...] = Field(
        default=(),
        description="What the site is for, as catalog bestFor tags, e.g. ['documentation', 'api-docs'].",
        json_schema_extra={"items": {"type": "string", "enum": list(PURPOSES)}},
    )
    needs: tuple[Feature, ...] = Field(default=(), description="Capabilities the site must have built in.")
    priority: Priority | None = Field(
        default=None, description="What matters most: simplicity, build-speed or maturity of the ecosystem."
    )
    expected_pages: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Rough number of pages; 1000 or more favours fast builds.",
    )

    @field_validator("purposes")
    @classmethod
    def _known_purposes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = list(dict.fromkeys(p[:40] for p in value if p not in PURPOSES))
        if unknown:
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            raise ValueError(f"unknown purposes {unknown[:3]}{more}; expected any of: {', '.join(PURPOSES)}")
        return tuple(dict.fromkeys(value))  # each fact counts once, however often it is sent

    @field_validator("needs")
    @classmethod
    def _each_need_once(cls, value: tuple[Feature, ...]) -> tuple[Feature, ...]:
        return tuple(dict.fromkeys(value))


class Recommendation(BaseModel):
    """One ranked SSG with the evidence for and against it."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built at first use (issue 43)

    rank: int = Field(ge=1)
    ssg: SSGId
    name: str
    score: int
    """Sum of the points listed in ``reasons`` (see :func:`recommend`)."""
    reasons: tuple[str, ...]
    tradeoffs: tuple[str, ...]
    config_file: str
    template_uri: str


class RecommendOut(BaseModel):
    """``recommendations`` holds every registry SSG, best first; ``recommended`` is the first id."""

    model_config = ConfigDict(frozen=True)

    recommended: SSGId
    recommendations: tuple[Recommendation, ...]


def _score(ssg: SSG, facts: RecommendIn) -> tuple[int, list[str], list[str]]:
    score, reasons, tradeoffs = 0, [], []
    if facts.team_language is not None:
        language = "javascript" if facts.team_language == "typescript" else facts.team_language
        if ssg.language == language:
            score += 3
            reasons.append(f"+3 written in {ssg.language}, the team's language")
        else:
            tradeoffs.append(f"written in {ssg.language}, not {facts.team_language}")
    for purpose in facts.purposes:
        if purpose in ssg.best_for:
            score += 2
            reasons.append(f"+2 best for {purpose}")
    for feature in facts.needs:
        if feature in ssg.features:
            score += 3
            reasons.append(f"+3 has {feature} built in")
        else:
            tradeoffs.append(f"no built-in {feature}")
    if facts.priority == "simplicity":
        points = {"low": 2, "medium": 1, "high": 0}[ssg.complexity]
        if points:
            score += points
            reasons.append(f"+{points} {ssg.complexity} complexity")
    if facts.priority == "build-speed" or (facts.expected_pages or 0) >= 1000:
        points = {"very-fast": 2, "fast": 1}.get(ssg.build_speed, 0)
        if points:
            score += points
            reasons.append(f"+{points} {ssg.build_speed} builds")
    if facts.priority == "maturity":
        points = {"mature": 2, "growing": 1}.get(ssg.ecosystem, 0)
        if points:
            score += points
            reasons.append(f"+{points} {ssg.ecosystem} ecosystem")
    return score, reasons, tradeoffs


def recommend(facts: RecommendIn, readable: Callable[[str], bool] | None = None) -> RecommendOut:
    """Rank every registry SSG for ``facts``; deterministic (same facts, same answer).

    ``readable(ssg_id)`` leaves out SSGs the caller may not read (their catalog entry is denied).

    :raises ToolFailure: the caller may read no SSG at all.

    Points: +3 the SSG is written in ``team_language``; +2 per ``purposes`` tag in its
    ``bestFor``; +3 per ``needs`` feature it has built in; with ``priority="simplicity"`` +2 low /
    +1 medium complexity; with ``priority="build-speed"`` or ``expected_pages >= 1000`` +2
    very-fast / +1 fast builds; with ``priority="maturity"`` +2 mature / +1 growing ecosystem.
    Ties keep registry order.
    """
    scored = []
    for index, ssg in enumerate(SSGS):
        if readable is not None and not readable(ssg.id):
            continue
        score, reasons, tradeoffs = _score(ssg, facts)
        scored.append((-score, index, ssg, reasons, tradeoffs))
    scored.sort(key=lambda row: (row[0], row[1]))
    if not scored:
        raise ToolFailure("no static site generator in the catalog is readable by you; ask the operator")
    ranked = tuple(
        Recommendation(
            rank=rank,
            ssg=ssg.id,
            name=ssg.name,
            score=-neg,
            reasons=tuple(reasons) or ("no stated fact favours it",),
            tradeoffs=tuple(tradeoffs),
            config_file=ssg.config_file,
            template_uri=template_uri(ssg),
        )
        for rank, (neg, _, ssg, reasons, tradeoffs) in enumerate(scored, start=1)
    )
    return RecommendOut(recommended=ranked[0].ssg, recommendations=ranked)


# -- generate_config -----------------------------------------------------------------------------


class GenerateConfigIn(BaseModel):
    """Which SSG, and the facts about the site its configuration needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ssg: SSGId
    site_name: str = Field(min_length=1, max_length=200, description="Site title, e.g. 'Acme Docs'.")
    description: str = Field(default="", max_length=1000, description="One-sentence description of the site.")
    repository_url: str | None = Field(
        default=None,
        description="GitHub repository, e.g. https://github.com/acme/widgets (no trailing slash).",
    )
    site_url: str | None = Field(
        default=None,
        description="Where the site will be served, e.g. https://acme.github.io/widgets/. "
        "Defaults to the repository's GitHub Pages address.",
    )
    branch: str = Field(default="main", description="Branch 'Edit this page' links point at.")
    language: str = Field(default="en", description="BCP 47 language tag of the content, e.g. en or pt-BR.")

    @field_validator("repository_url")
    @classmethod
    def _github(cls, value: str | None) -> str | None:
        if value is not None and not _GITHUB_REPO.match(value):
            raise ValueError(
                f"repository_url {value!r} is not a GitHub repository URL; "
                "expected https://github.com/<owner>/<repo> without a trailing slash or .git"
            )
        return value

    @field_validator("site_url")
    @classmethod
    def _site(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ValueError(
                f"site_url {value!r} must be an absolute http(s) URL with no query or fragment, "
                "e.g. https://acme.github.io/widgets/"
            )
        return value

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._/-]{1,100}", value) or ".." in value:
            raise ValueError(f"branch {value!r} is not a plain git branch name, e.g. main or docs/v2")
        return value

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*", value):
            raise ValueError(f"language {value!r} is not a BCP 47 tag, e.g. en, de or pt-BR")
        return value


class GenerateConfigOut(BaseModel):
    """The rendered configuration and where to put it."""

    model_config = ConfigDict(frozen=True)

    ssg: SSGId
    config_file: str
    """Path to write ``text`` to, relative to the project root."""
    mime_type: str
    template_uri: str
    """The ``documcp://templates/...`` resource the text was rendered from."""
    text: str
    values: dict[str, str]
    """The value each placeholder received."""
    install: tuple[str, ...]
    build: str
    notes: tuple[str, ...]
    """Values that were guessed and should be checked."""


def _values(args: GenerateConfigIn) -> tuple[dict[str, str], list[str]]:
    notes: list[str] = []
    repository = args.repository_url or _PLACEHOLDER_REPO
    if args.repository_url is None:
        notes.append(f"repository_url not given: replace {_PLACEHOLDER_REPO} with the real repository")
    match = _GITHUB_REPO.match(repository)
    if match is None:  # the validator and the placeholder both have this shape
        raise ValueError(f"repository_url {repository!r} is not https://github.com/<owner>/<repo>")
    owner, project = match.group(1), match.group(2)
    if args.site_url is not None:
        site_url = args.site_url if args.site_url.endswith("/") else args.site_url + "/"
    elif owner.lower() + ".github.io" == project.lower():
        site_url = f"https://{owner.lower()}.github.io/"
    else:
        site_url = f"https://{owner.lower()}.github.io/{project}/"
        if args.repository_url is not None:
            notes.append(f"site_url not given: assumed GitHub Pages at {site_url}")
    parts = urlsplit(site_url)
    base_path = parts.path or "/"
    values = {
        "site_name": args.site_name,
        "description": args.description,
        "language": args.language,
        "site_url": site_url,
        "site_origin": f"{parts.scheme}://{parts.netloc}",
        "base_path": base_path,
        "base_path_trimmed": base_path.rstrip("/"),
        "repository_url": repository,
        "repository_name": f"{owner}/{project}",
        "organization": owner,
        "project": project,
        "branch": args.branch,
    }
    return values, notes


def generate_config(args: GenerateConfigIn) -> GenerateConfigOut:
    """Render the SSG's configuration template with the site's facts. Writes nothing.

    :raises ValueError: ``args.ssg`` is not in the registry (the input model prevents this).
    """
    ssg = require(args.ssg)
    values, notes = _values(args)
    return GenerateConfigOut(
        ssg=ssg.id,
        config_file=ssg.config_file,
        mime_type=mime_type(ssg),
        template_uri=template_uri(ssg),
        text=render(ssg, values),
        values=values,
        install=ssg.install,
        build=ssg.build,
        notes=tuple(notes),
    )


# -- provider ------------------------------------------------------------------------------------

TOOLS: Final[tuple[Tool, ...]] = (
    Tool(
        name="recommend_ssg",
        title="Recommend a static site generator",
        description="Rank the supported static site generators for a project from facts about it "
        "(team language, purposes, needed features, priority, size). Deterministic; each result "
        "lists the points it earned and its trade-offs. Reads nothing outside this server.",
        input_model=RecommendIn,
        output_model=RecommendOut,
        effects="none",
        icons=ICONS,
    ),
    Tool(
        name="generate_config",
        title="Generate an SSG configuration file",
        description="Render the configuration file of one static site generator for a site (name, "
        "repository, URL, branch, language) from its documcp://templates/<ssg>-config template. "
        "Returns the text and the path to save it at; writes no file.",
        input_model=GenerateConfigIn,
        output_model=GenerateConfigOut,
        effects="none",
        icons=ICONS,
        # a value names that SSG's catalog entry: offered, and taken, only where the caller may read it
        argument_resources={"ssg": "documcp://ssgs/{ssg}"},
    ),
)
"""The tools :class:`DocumentationTools` declares."""


class DocumentationTools(ToolProvider):
    """Serves ``recommend_ssg`` and ``generate_config``."""

    name = "documcp-tools"

    def tools(self) -> Sequence[Tool]:
        """:data:`TOOLS`: ``recommend_ssg`` and ``generate_config``, both ``effects="none"``."""
        return TOOLS

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one tool on arguments already validated against its input model.

        :raises ToolFailure: the arguments are not the tool's input model (a core routing bug).
        :raises mcp_providers.errors.Denied: the policy refuses ``read`` on the catalog
            (``recommend_ssg``) or on the template (``generate_config``).
        """
        args = call.arguments
        # These tools answer from data also served as resources: the policy on those URIs holds here.
        if call.tool.name == "recommend_ssg" and isinstance(args, RecommendIn):
            call.require("read", "documcp://ssgs/available")
            out = recommend(args, readable=lambda ssg: policy.allowed("read", f"documcp://ssgs/{ssg}"))
            return ToolResult(output=out)
        if call.tool.name == "generate_config" and isinstance(args, GenerateConfigIn):
            # Everything it answers (config file name, template URI, content) is the template's own.
            call.require("read", f"documcp://templates/{args.ssg}-config")
            generated = generate_config(args)
            link = Link(
                uri=generated.template_uri,
                name=f"{generated.ssg}-config",
                description=f"The template {generated.config_file} was rendered from.",
                mime_type=generated.mime_type,
            )
            return ToolResult(output=generated, links=(link,))
        raise ToolFailure(f"{call.tool.name} got {type(args).__name__}; expected its own input model")
