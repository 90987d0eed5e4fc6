"""What discovery knows of each plugin: one :class:`PluginRecord`, whose ``status`` says whether it
was loaded, rejected or disabled, and why."""

from __future__ import annotations

import importlib.metadata
from functools import cached_property
from typing import Any, Literal

import pluggy
from pydantic import BaseModel

from mcp_providers.providers import ExtensionProvider, PromptProvider, ResourceProvider, ToolProvider
from mcp_providers.skills import SkillProvider

Status = Literal["loaded", "rejected", "disabled"]

PROVIDER_HOOKS: tuple[tuple[str, type], ...] = (
    ("register_resource_providers", ResourceProvider),
    ("register_tool_providers", ToolProvider),
    ("register_extension_providers", ExtensionProvider),
    ("register_extensions", ExtensionProvider),  # the old name, still called
    ("register_prompt_providers", PromptProvider),
    ("register_prompts", PromptProvider),  # the old name, still called
    ("register_skill_providers", SkillProvider),  # served as resource providers (_host/skills.py)
)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class PluginRecord:
    """What discovery learned about one plugin (plain data; ``mcp-providers plugins`` prints it)."""

    name: str
    """Entry-point name: the key of its ``[plugins.<name>]`` settings table."""
    value: str
    """What the entry point points at, e.g. ``mcp_providers.plugins.documcp.ssg_catalog``."""
    dist: importlib.metadata.Distribution | None
    """The installed distribution declaring the entry point (``None`` for plugins passed directly)."""
    group: str | None
    """The entry-point group it is declared in (``mcp_providers`` or ``mcp_providers.policy``);
    ``None`` for plugins passed directly (see :mod:`mcp_providers._host.groups`)."""
    status: Status
    reason: str | None
    selection: str
    """Which selection rule turned this plugin on or off, e.g. ``off: in the config's deny list``."""
    hooks: list[str]
    prefixes: tuple[str, ...]
    """The URI prefixes its resource providers own, as far as known (kept when it is rejected, so a
    read under them can say the plugin is unavailable rather than that nothing is there)."""
    deprecations: list[str]
    """One line per deprecated part of the hook contract its hookimpls use, e.g.
    ``hook authorize: ... (weather.py:12)``; the plugin still loads."""
    settings: BaseModel | None
    settings_model: type[BaseModel] | None
    plugin: object | None
    manager: pluggy.PluginManager | None
    """The plugin's own plugin manager: its hooks are called there, so they run alone."""
    resource_providers: list[ResourceProvider]
    tool_providers: list[ToolProvider]
    prompt_providers: list[PromptProvider]
    extension_providers: list[ExtensionProvider]

    configured: bool
    """The config has a ``[plugins.<name>]`` table for it."""
    authorize_evidence: str | None
    """Why this plugin could carry authorization, e.g. ``"it has an authorize hookimpl (gate)"`` or
    ``"its import failed, so whether pluggy would register ... is unknown"``; ``None`` when what
    pluggy would register from it holds no ``authorize`` implementation
    (:func:`~mcp_providers._host.hookscan.scan_authorize`)."""

    def __init__(
        self, name: str, value: str, dist: importlib.metadata.Distribution | None = None, group: str | None = None
    ) -> None:
        self.name, self.value, self.dist, self.group = name, value, dist, group
        self.status = "loaded"
        self.reason = None
        self.selection = "on: every installed plugin (no set, allow list or override)"
        self.hooks = []
        self.prefixes = ()
        self.deprecations = []
        self.settings = None
        self.settings_model = None
        self.plugin = None
        self.manager = None
        self.resource_providers = []
        self.tool_providers = []
        self.prompt_providers = []
        self.extension_providers = []
        self.configured = False
        self.authorize_evidence = None

    @property
    def defines_authorize(self) -> bool:
        """It registers, or could register, an ``authorize`` implementation (see :func:`scan_authorize`)."""
        return self.authorize_evidence is not None

    @property
    def could_authorize(self) -> bool:
        """Not in force although it could carry authorization: rejected at any stage while
        defining ``authorize`` (or while what it defines is unknown, its import having failed), or
        left out by the selection while configured and defining ``authorize``. Serving refuses to
        start while any plugin is in this state. A ``[plugins.<name>]`` table alone does not make
        a plugin a policy plugin: one holding no ``authorize`` whose settings are invalid is left
        out like any broken plugin."""
        if self.status == "rejected":
            return self.defines_authorize
        return self.status == "disabled" and self.configured and self.defines_authorize

    @cached_property
    def distribution(self) -> str | None:
        """Name of the distribution, read from its metadata on first use (start-up skips it);
        ``None`` when there is none or it can no longer be read (uninstalled since)."""
        return _metadata_field(self.dist, "name")

    @cached_property
    def version(self) -> str | None:
        """Version of the distribution, read from its metadata on first use; ``None`` as above."""
        return _metadata_field(self.dist, "version")

    def is_rejected(self) -> bool:
        return self.status == "rejected"

    def reject(self, reason: str) -> None:
        self.status = "rejected"
        self.reason = reason
        self.resource_providers, self.tool_providers, self.prompt_providers = [], [], []
        self.extension_providers = []

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "name": self.name,
            "value": self.value,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "reason": self.reason,
            "selection": self.selection,
            "hooks": self.hooks,
            "deprecations": self.deprecations,
            "providers": [p.name for p in self.providers()],
        }

    def providers(self) -> list[ResourceProvider | ToolProvider | PromptProvider | ExtensionProvider]:
        return [*self.resource_providers, *self.tool_providers, *self.prompt_providers, *self.extension_providers]


def _metadata_field(dist: Any, name: str) -> str | None:
    if dist is None:
        return None
    try:
        value = getattr(dist, name)
    except Exception:  # its metadata is gone (uninstalled while serving) or unreadable
        return None
    return str(value) if value is not None else None
