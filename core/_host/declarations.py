"""Declarations: ask every loaded provider once for what it serves, and the shape of a failed check.

A provider's ``resources()``, ``templates()``, ``tools()`` and ``prompts()`` are called exactly
once, here, at composition time; one that raises or returns the wrong type is a :class:`Problem`
(rule ``declaration-failed``) and only its plugin is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from mcp_providers._holders import Frozen
from mcp_providers._host.isolation import reraise_interrupt, watched
from mcp_providers._host.records import PluginRecord
from mcp_providers._host.skills import Skill, SkillFiles
from mcp_providers._invalid import described
from mcp_providers.models import Extension, Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.providers import ExtensionProvider, PromptProvider, ResourceProvider, ToolProvider

D = TypeVar("D")
Provider = ResourceProvider | ToolProvider | PromptProvider | ExtensionProvider


# not a dataclass: its methods are not made at start-up (issue 43); written here, equality, hash and
# repr are by value as a frozen dataclass's were (left-out lines are told once through a dict)
class Problem(Frozen):
    """One failed check. Equal to another with the same fields; hashable."""

    __slots__ = ("fix", "message", "plugins", "rule", "value")

    plugins: tuple[str, ...]
    """Every plugin involved (two for a collision)."""
    rule: str
    value: str
    """The offending URI, template, prefix or name."""
    message: str
    fix: str

    def __init__(self, plugins: tuple[str, ...], rule: str, value: str, message: str, fix: str) -> None:
        object.__setattr__(self, "plugins", plugins)
        object.__setattr__(self, "rule", rule)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "fix", fix)

    def _fields(self) -> tuple[tuple[str, ...], str, str, str, str]:
        return (self.plugins, self.rule, self.value, self.message, self.fix)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        plugins, rule, value, message, fix = self._fields()
        return (
            f"{self.__class__.__qualname__}(plugins={plugins!r}, rule={rule!r}, value={value!r}, "
            f"message={message!r}, fix={fix!r})"
        )

    def __str__(self) -> str:
        return f"{' + '.join(self.plugins)}: {self.rule}: {self.value!r}: {self.message}; fix: {self.fix}"


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Declared:
    """Everything one provider declared, read once."""

    __slots__ = ("extensions", "plugin", "prompts", "provider", "resources", "skills", "templates", "tools")

    plugin: str
    provider: Provider
    resources: Sequence[Resource]
    templates: Sequence[ResourceTemplate]
    tools: Sequence[Tool]
    prompts: Sequence[Prompt]
    extensions: Sequence[Extension]
    skills: Sequence[Skill]
    """Checked skills (their files are among :attr:`resources`)."""

    def __init__(
        self,
        plugin: str,
        provider: Provider,
        resources: Sequence[Resource] = (),
        templates: Sequence[ResourceTemplate] = (),
        tools: Sequence[Tool] = (),
        prompts: Sequence[Prompt] = (),
        extensions: Sequence[Extension] = (),
        skills: Sequence[Skill] = (),
    ) -> None:
        self.plugin = plugin
        self.provider = provider
        self.resources = resources
        self.templates = templates
        self.tools = tools
        self.prompts = prompts
        self.extensions = extensions
        self.skills = skills

    def resource_declarations(self) -> list[Resource | ResourceTemplate]:
        return [*self.resources, *self.templates]


def declare(records: Iterable[PluginRecord]) -> tuple[list[Declared], list[Problem]]:
    """Ask every loaded provider for its declarations, once, in the caller's thread (what it makes
    may be bound to it; :func:`~mcp_providers._host.isolation.watched` names one that runs long); a
    provider that raises is a Problem."""
    out: list[Declared] = []
    problems: list[Problem] = []
    for record in records:
        if record.status != "loaded":
            continue
        for provider in record.providers():
            try:
                with watched(record.name, f"declaring provider {provider.name!r}"):
                    d, refused = _declared(record.name, provider)
            except BaseException as exc:  # SystemExit too: one provider's exit must not end start-up
                reraise_interrupt(exc)
                said = isinstance(exc, Exception) and described(exc)
                problems.append(
                    Problem(
                        (record.name,),
                        "declaration-failed",
                        provider.name,
                        said or f"declaring provider {provider.name!r} raised {type(exc).__name__}: {exc}",
                        "return declaration models from resources()/templates()/tools()/prompts()/extensions(), "
                        "SkillSource from skills()",
                    )
                )
                continue
            problems += refused
            out.append(d)
    return out, problems


def _declared(plugin: str, provider: Provider) -> tuple[Declared, list[Problem]]:
    """What ``provider`` declares (plugin code), and the skills it refused."""
    d = Declared(plugin, provider)
    refused: list[Problem] = []
    if isinstance(provider, SkillFiles):
        d.resources, d.skills, faults = provider.declare()
        refused = [Problem((plugin,), p.rule, p.value, p.message, p.fix) for p in faults]
    elif isinstance(provider, ResourceProvider):
        d.resources = _typed(provider.resources(), Resource)
        d.templates = _typed(provider.templates(), ResourceTemplate)
    elif isinstance(provider, ToolProvider):
        d.tools = _typed(provider.tools(), Tool)
    elif isinstance(provider, ExtensionProvider):
        d.extensions = _typed(provider.extensions(), Extension)
    else:
        d.prompts = _typed(provider.prompts(), Prompt)
    return d, refused


def _typed(items: Iterable[object], kind: type[D]) -> list[D]:
    out = []
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(f"got {type(item).__name__}, expected {kind.__name__}")
        out.append(item)
    return out
