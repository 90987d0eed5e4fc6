"""Built-in plugin: configuration templates at ``documcp://templates/``.

Fixed, listed resources (all ``static``):

- ``documcp://templates/<ssg id>-config`` for every SSG in the registry: the SSG's configuration
  file, in its own format and with its registered MIME type (``application/yaml``,
  ``application/toml`` or ``text/javascript``);
- ``documcp://templates/diataxis-structure``: the four Diataxis sections as JSON,
  ``{"framework", "source", "structure": {<section>: {description, orientation, answers, avoid,
  files[]}}}`` (DocuMCP's ``structure``/``description``/``files`` keys, plus the others).

The files live in the ``templates`` subpackage as package data. Each template holds
double-braced placeholders (see :data:`PLACEHOLDERS`) only inside double-quoted strings, so the
file parses as it is and :func:`render` can fill a value by escaping it as a JSON string body,
which YAML double-quoted scalars, TOML basic strings and JavaScript string literals all accept.

Unlike DocuMCP, which routed every ``documcp://templates/...`` URI by its last path segment, only
the declared URIs exist: anything else is answered -32602 by the core's router.
"""

import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib.resources import files
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp_providers.errors import NotFound
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Freshness, Resource
from mcp_providers.plugins.documcp.icons import ICONS
from mcp_providers.plugins.documcp.registry import SSG, SSGS, ConfigFormat, mime_type, template_uri
from mcp_providers.providers import Content, ReadRequest, ResourceProvider

__all__ = [
    "DIATAXIS_URI",
    "PLACEHOLDERS",
    "ConfigTemplates",
    "DiataxisStructure",
    "Section",
    "diataxis_text",
    "render",
    "template_text",
]

DIATAXIS_URI: Final = "documcp://templates/diataxis-structure"

PLACEHOLDERS: Final[frozenset[str]] = frozenset(
    {
        "site_name",
        "description",
        "language",
        "site_url",
        "site_origin",
        "base_path",
        "base_path_trimmed",
        "repository_url",
        "repository_name",
        "organization",
        "project",
        "branch",
    }
)
"""Names a template may use as ``{{name}}``; ``generate_config`` supplies a value for each:

- ``site_name``, ``description``, ``language`` (BCP 47 tag, e.g. ``en``);
- ``site_url`` (``https://org.github.io/repo/``), ``site_origin`` (``https://org.github.io``),
  ``base_path`` (``/repo/``, ``/`` at the root), ``base_path_trimmed`` (``/repo``, empty at the root);
- ``repository_url`` (``https://github.com/org/repo``), ``repository_name`` (``org/repo``),
  ``organization``, ``project``, ``branch``.
"""

_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
_EXTENSIONS: Final[dict[ConfigFormat, str]] = {"yaml": "yml", "toml": "toml", "esm": "mjs", "cjs": "js"}
_PACKAGE: Final = "mcp_providers.plugins.documcp.templates"


Section = Literal["tutorials", "how-to-guides", "reference", "explanation"]
"""The four Diataxis sections, by the folder names the templates use."""


class DiataxisSection(BaseModel):
    """One Diataxis section of ``documcp://templates/diataxis-structure``."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built at first use (issue 43)

    description: str = Field(min_length=1)
    orientation: Literal["learning", "goals", "information", "understanding"]
    answers: str = Field(min_length=1)
    """The reader's question this kind of page answers."""
    avoid: str = Field(min_length=1)
    """The most common way pages of this kind go wrong."""
    files: tuple[str, ...] = Field(min_length=1)
    """Suggested starting pages, Markdown file names."""


class DiataxisStructure(BaseModel):
    """The body of ``documcp://templates/diataxis-structure``; source: https://diataxis.fr/."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    framework: Literal["Diataxis"]
    source: str = Field(pattern=r"^https://")
    structure: dict[Section, DiataxisSection]

    def model_post_init(self, context: object, /) -> None:
        missing = {"tutorials", "how-to-guides", "reference", "explanation"} - set(self.structure)
        if missing:
            raise ValueError(f"diataxis-structure lacks sections: {sorted(missing)}")


def _read(name: str) -> str:
    return files(_PACKAGE).joinpath(name).read_text(encoding="utf-8")


@cache
def template_text(ssg_id: str) -> str:
    """The stored configuration template of one SSG, placeholders unfilled.

    :raises KeyError: ``ssg_id`` is not in the registry.
    :raises ValueError: the file uses a placeholder outside :data:`PLACEHOLDERS`.
    """
    ssg = {s.id: s for s in SSGS}[ssg_id]
    text = _read(f"{ssg.id}-config.{_EXTENSIONS[ssg.config_format]}")
    unknown = set(_PLACEHOLDER.findall(text)) - PLACEHOLDERS
    if unknown:
        raise ValueError(
            f"template for {ssg.id!r} uses unknown placeholders {sorted(unknown)}; known: {sorted(PLACEHOLDERS)}"
        )
    return text


_SIMPLE_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_MUST_ESCAPE: Final = re.compile('["\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufdd0-\ufdef\ufffe\uffff\ud800-\udfff]')
"""Characters escaped in a quoted config value: quotes and backslashes, C0 controls, DEL, C1
controls (U+0085 included), the line and paragraph separators, the byte-order mark, and the BMP
noncharacters and surrogates: TOML refuses controls and DEL raw, YAML refuses DEL, C1 (but NEL),
U+FFFE/U+FFFF, and treats U+2028/U+2029/U+0085 as line breaks."""


def quoted_body(value: str) -> str:
    """``value`` as the body of a double-quoted string that TOML, YAML and JavaScript all read back
    unchanged: ``\\"``, ``\\\\``, ``\\n``, ``\\t``, ``\\r``, and ``\\uXXXX`` for every other
    character in :data:`_MUST_ESCAPE` (the one escape form all three share); everything else raw.
    """
    return _MUST_ESCAPE.sub(lambda m: _SIMPLE_ESCAPES.get(m.group(0)) or f"\\u{ord(m.group(0)):04X}", value)


def render(ssg: SSG, values: Mapping[str, str]) -> str:
    """Fill ``ssg``'s template: each ``{{name}}`` becomes ``values[name]`` escaped by
    :func:`quoted_body`, so the result stays valid YAML, TOML or JavaScript and reads back as given.

    :raises KeyError: ``values`` lacks a placeholder the template uses.
    """
    text = template_text(ssg.id)
    return _PLACEHOLDER.sub(lambda match: quoted_body(values[match.group(1)]), text)


@cache
def diataxis_text() -> str:
    """The stored ``diataxis-structure.json``, validated against :class:`DiataxisStructure`.

    :raises pydantic.ValidationError: the file breaks the model.
    """
    text = _read("diataxis-structure.json")
    DiataxisStructure.model_validate_json(text)
    return text


class ConfigTemplates(ResourceProvider):
    """One configuration template per registry SSG, and the Diataxis structure."""

    name = "config-templates"
    prefixes = ("documcp://templates/",)

    def __init__(self) -> None:
        # Loading (and validating) every file here makes a broken template fail composition,
        # not a later read.
        self._texts: dict[str, str] = {template_uri(s): template_text(s.id) for s in SSGS}
        self._texts[DIATAXIS_URI] = diataxis_text()

    def resources(self) -> Sequence[Resource]:
        """Every template, with its registered MIME type, exact size and static freshness."""
        declared = [
            Resource(
                uri=template_uri(s),
                name=f"{s.id}-config",
                title=f"{s.name} configuration template",
                description=f"Template for {s.name}'s {s.config_file}; see {s.docs_url}. "
                "Quoted double-braced names are placeholders that generate_config fills.",
                mime_type=mime_type(s),
                size=len(self._texts[template_uri(s)].encode()),
                freshness=Freshness.static(),
                icons=ICONS,
            )
            for s in SSGS
        ]
        declared.append(
            Resource(
                uri=DIATAXIS_URI,
                name="diataxis-structure",
                title="Diataxis structure template",
                description="The four kinds of documentation (tutorials, how-to guides, reference, "
                "explanation): what each is for, the question it answers and starting pages.",
                mime_type="application/json",
                size=len(self._texts[DIATAXIS_URI].encode()),
                freshness=Freshness.static(),
                icons=ICONS,
            )
        )
        return declared

    async def read(self, request: ReadRequest) -> Content:
        """The template's text, exactly as stored.

        :raises NotFound: the URI is not one this provider declared (the core's router normally
            answers those before calling here).
        """
        text = self._texts.get(request.uri)
        if text is None:
            raise NotFound(
                f"No template at {request.uri!r}; templates are " + ", ".join(sorted(self._texts)),
                data={"uri": request.uri},
            )
        return Content(text=text)


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    """The configuration templates provider (owns ``documcp://templates/``)."""
    return [ConfigTemplates()]
