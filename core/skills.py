"""Skills (the ``io.modelcontextprotocol/skills`` extension, SEP-2640): folders of instructions a
plugin serves beside its resources.

A skill is a folder whose ``SKILL.md`` opens with YAML frontmatter (the Agent Skills format:
``name``, ``description`` and optional ``license``, ``compatibility``, ``metadata``,
``allowed-tools``), plus any supporting files. Each file is served as a fixed resource at
``<root>/<path>``, where ``<root>`` ends in the skill's ``name``: a ``SKILL.md`` at
``skill://notes/howto/SKILL.md`` belongs to the skill ``howto``. 2026-07-28 clients also get
``skills/list``, ``skills/get`` and ``resources/directory/read``; older ones read the same files
as ordinary resources.

A plugin contributes skills through :class:`SkillProvider` (hook ``register_skill_providers``)
or, with :class:`mcp_providers.plugin.Plugin`, ``plugin.skill("folder")`` for a folder shipped in
its package. Before anything is served each skill is checked: its frontmatter against
:class:`SkillFrontmatter`, its file list (fixed, canonical, ``SKILL.md`` included, within
:data:`MAX_FILES` and :data:`MAX_BYTES`), and every file read twice with the same bytes; the
digests published in ``skills/list`` are those bytes' (``mcp-providers check`` names what fails).

Source: the extension's text, ``specification/stable/skills.mdx`` in
modelcontextprotocol/ext-skills; the frontmatter rules, https://agentskills.io/specification.
"""

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_providers.models import Icon

__all__ = [
    "DIRECTORY_MIME",
    "MAX_BYTES",
    "MAX_FILES",
    "SKILLS_EXTENSION",
    "SkillFolders",
    "SkillFrontmatter",
    "SkillProvider",
    "SkillSource",
    "frontmatter_of",
]

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
"""The extension's identifier under ``capabilities.extensions``."""
DIRECTORY_MIME = "inode/directory"
"""The MIME type of a directory resource (``resources/directory/read``)."""
MAX_FILES = 512
"""Files per skill, ``SKILL.md`` included, that every conforming host accepts."""
MAX_BYTES = 16 * 1024 * 1024
"""Bytes per skill (the sum of its files' sizes) that every conforming host accepts."""

NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
"""A skill name: 1-64 of a-z, 0-9 and single hyphens, not first or last. The Agent Skills format
also allows other lowercase letters; here the name is a URI segment, so it stays ASCII."""


class SkillFrontmatter(BaseModel):
    """The ``SKILL.md`` frontmatter fields the Agent Skills format defines, checked; other fields
    pass through unchanged (later revisions of the format may add some)."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    name: str = Field(min_length=1, max_length=64, pattern=NAME_PATTERN)
    """The skill's name, e.g. ``"pdf-processing"``; equals the last segment of its root URI."""
    description: str = Field(min_length=1, max_length=1024)
    """What the skill does and when to use it."""
    license: str | None = None
    compatibility: str | None = Field(default=None, min_length=1, max_length=500)
    """Environment requirements, e.g. ``"Requires git"``."""
    metadata: dict[str, str] | None = None
    """String keys to string values."""
    allowed_tools: str | None = Field(default=None, alias="allowed-tools")
    """Space-separated tools the skill asks to be pre-approved (hosts ignore it for MCP skills
    unless the user approves)."""


def frontmatter_of(data: bytes) -> dict[str, Any]:
    """The frontmatter of a ``SKILL.md`` as the JSON object ``skills/list`` carries (verbatim),
    after checking it against :class:`SkillFrontmatter`.

    >>> frontmatter_of(b"---\\nname: howto\\ndescription: How to.\\n---\\n# How to\\n")
    {'name': 'howto', 'description': 'How to.'}

    :raises ValueError: no frontmatter, not YAML, not a mapping, a value JSON cannot carry, or a
        field breaking the format's rules (each named, with what would be right).
    """
    text = data.decode("utf-8-sig")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise ValueError("SKILL.md must begin with a line '---' opening its YAML frontmatter")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip("\r\n") == "---"), None)
    if end is None:
        raise ValueError("SKILL.md's frontmatter has no closing '---' line")
    loaded = _simple_frontmatter(lines[1:end])
    if loaded is None:
        # Anything the simple reader leaves is read by PyYAML, imported only then: a serve of
        # the built-in skills (written in that form) never imports it (about 15 ms of start-up).
        import yaml

        try:
            loaded = yaml.safe_load("".join(lines[1:end]))
        except yaml.YAMLError as exc:
            raise ValueError(f"SKILL.md's frontmatter is not YAML: {exc}") from None
    if not isinstance(loaded, dict) or not all(isinstance(k, str) for k in loaded):
        raise ValueError("SKILL.md's frontmatter must be a mapping with text keys, e.g. 'name: my-skill'")
    try:
        fields: dict[str, Any] = json.loads(json.dumps(loaded))
    except (TypeError, ValueError):
        raise ValueError("SKILL.md's frontmatter holds a value JSON cannot carry (a date, say); quote it") from None
    if fields != loaded:
        raise ValueError("SKILL.md's frontmatter holds a value JSON would change (a non-text key, say); quote it")
    try:
        SkillFrontmatter.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'frontmatter'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"SKILL.md's frontmatter breaks the Agent Skills format: {problems}") from None
    return fields


_PRINTABLE = "[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff\\ufeff\\ufffe\\uffff"
_WORD = "[A-Za-z][A-Za-z0-9_-]*"
_QUOTED = f"'(?:{_PRINTABLE}']|'')*'"
_PLAIN = f"[A-Za-z](?:{_PRINTABLE} :]|:(?=[^ \\n])| (?=[^ #\\n]))*"
_SIMPLE_LINE = re.compile(f"(  )?({_WORD}):(?: ({_QUOTED}|{_PLAIN}))?\n")
"""One line of the frontmatter :func:`_simple_frontmatter` reads: an optional two-space indent, a
plain key, and a single-quoted or plain value of printable characters that YAML reads as the same
text (no tab, no line break of YAML 1.1's, no ``: `` or `` #`` in a plain value, none at its end),
or no value (a mapping follows)."""
_MAX_SIMPLE_KEY = 1024
"""PyYAML refuses an implicit key longer than this (characters); such a line is left to it."""
_RESOLVED_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null"})
"""Plain words PyYAML reads as something other than text (YAML 1.1 booleans, null), in any case;
every other plain scalar starting with a letter is text to its resolvers."""


def _simple_frontmatter(lines: Sequence[str]) -> dict[str, Any] | None:
    """The frontmatter lines read without PyYAML when they are all of the simplest form, else
    ``None`` (then PyYAML reads them). The form: ``key: 'single-quoted'`` or ``key: plain text``
    lines, and ``key:`` followed by such lines indented two spaces (a mapping one level deep).
    What it returns is what ``yaml.safe_load`` returns for the same text (``test_skills_frontmatter``).
    """
    fields: dict[str, Any] = {}
    nested: dict[str, str] | None = None  # the mapping indented lines go to, after a `key:` line
    for line in lines:
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return None
        indent, key, value = match.groups()
        if len(key) > _MAX_SIMPLE_KEY or key.lower() in _RESOLVED_WORDS or (value or "").lower() in _RESOLVED_WORDS:
            return None
        if indent is None and nested == {}:  # a `key:` with nothing under it: null to YAML
            return None
        if value is None and indent is None:
            nested = fields[key] = {}
            continue
        if value is None or (indent is not None and nested is None):
            return None  # a mapping two levels deep, or an indented line under a value
        text = value[1:-1].replace("''", "'") if value.startswith("'") else value
        if indent is None:
            nested = None
            fields[key] = text
        else:
            nested[key] = text  # type: ignore[index]
    return fields if fields and nested != {} else None


@dataclass(frozen=True, slots=True)
class SkillSource:
    """One skill a :class:`SkillProvider` serves.

    :param root: the skill's folder as a URI without a trailing slash, under the provider's
        prefix and ending in the skill's ``name``, e.g. ``"skill://notes/howto"``.
    :param files: every file's path relative to ``root``, ``/``-separated, ``"SKILL.md"`` among
        them, e.g. ``("SKILL.md", "templates/daily.md")``. Fixed for the composition.
    :param copies: path -> URI (or tuple of URIs: an original and its aliases) of the resources
        whose bytes that file serves, e.g. ``{"templates/daily.md": "notes://templates/daily"}``.
        A caller who may not ``read`` one of them may not read the file either, nor get or list
        its skill, nor see the file in a directory: a copy never serves what a rule refuses.
    """

    root: str
    files: tuple[str, ...]
    copies: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict, hash=False)


class SkillProvider:
    """Serves skills: lists them once per composition and reads their files.

    Subclass it, set :attr:`name` and :attr:`prefixes`, and return instances from the
    ``register_skill_providers`` hook::

        class Runbooks(SkillProvider):
            name = "runbooks"
            prefixes = ("skill://runbooks/",)

            def skills(self):
                return [SkillSource("skill://runbooks/restart", ("SKILL.md",))]

            def read(self, skill, path):
                return RUNBOOKS[skill.root][path]

    ``read`` is called twice per file when the server composes (the bytes must match; their
    digest is published), and again for each ``resources/read`` (in a worker thread, inside the
    side-effect scope; bytes that no longer match the published digest are refused).
    """

    name: str = ""
    """Unique provider name."""
    prefixes: Sequence[str] = ()
    """URI prefixes the skills lie under, e.g. ``("skill://runbooks/",)``."""
    icons: tuple[Icon, ...] = ()
    """Images a client may show with each skill file's resource (see :class:`~mcp_providers.models.Icon`)."""

    def skills(self) -> Sequence[SkillSource]:
        """Every skill served. Called once per composition."""
        return ()

    def read(self, skill: SkillSource, path: str) -> bytes:
        """The bytes of the file at ``path`` (one of ``skill.files``).

        :raises OSError: the file cannot be read (the skill is left out, named by ``check``).
        """
        raise NotImplementedError(f"{type(self).__name__}.read")


class SkillFolders(SkillProvider):
    """Skills shipped as folders in a package (``importlib.resources``), each read as it lies.

    :param name: the provider name, e.g. ``"notes-skills"``.
    :param prefix: the prefix every skill's root lies under, e.g. ``"skill://notes/"``; a folder
        named ``howto`` is served at ``skill://notes/howto``.
    :param folders: the skill folders (``importlib.resources.files(pkg) / "skills" / "howto"``);
        each folder's name is the skill's name, and every file in it, at any depth, is one of its
        files (names starting with ``.`` and ``__pycache__`` folders aside).
    """

    def __init__(self, name: str, prefix: str, folders: Sequence[Traversable]) -> None:
        self.name = name
        self.prefixes = (prefix,)
        self._folders: Mapping[str, Traversable] = {prefix + f.name: f for f in folders}

    def skills(self) -> Sequence[SkillSource]:
        return [SkillSource(root, tuple(sorted(_walk(folder, "")))) for root, folder in self._folders.items()]

    def read(self, skill: SkillSource, path: str) -> bytes:
        node = self._folders[skill.root]
        for part in path.split("/"):
            node = node / part
        return node.read_bytes()


def _walk(folder: Traversable, under: str) -> list[str]:
    if not folder.is_dir():
        raise NotADirectoryError(f"skill folder {folder} is not a folder")
    out: list[str] = []
    for child in folder.iterdir():
        if child.name.startswith(".") or child.name == "__pycache__":
            continue
        if child.is_dir():
            out += _walk(child, f"{under}{child.name}/")
        else:
            out.append(under + child.name)
    return out
