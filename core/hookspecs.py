"""The plugin contract: every hook a provider plugin may implement.

A plugin is a module (or object) named by an entry point in the ``mcp_providers`` group. It
implements any subset of these hooks with ``@hookimpl`` and may accept any subset of each hook's
arguments::

    from mcp_providers import hookimpl

    @hookimpl
    def register_resource_providers(settings):
        return [Catalog()]

The core calls each plugin's implementation on its own, so a hook that raises or returns the wrong
type disables that plugin alone (see ``mcp-providers plugins``).

How the contract changes: :data:`CHANGELOG` records every change to a hook, newest last, and
:data:`DEPRECATED_ARGUMENTS` every argument on its way out (pluggy's ``warn_on_impl_args``: a
hookimpl naming one still loads, with the warning). ``docs/hooks.md`` renders both with the
compatibility policy.
"""

# Hookspecs have no bodies: pluggy reads only their signatures and docstrings.
# mypy: disable-error-code="empty-body"
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pluggy

from mcp_providers.errors import MCPProvidersDeprecationWarning, MCPProvidersRemovedIn1Warning

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pydantic import BaseModel

    from mcp_providers.checks import Advisory, Served
    from mcp_providers.identity import Principal
    from mcp_providers.policy import Action, Decision
    from mcp_providers.providers import ExtensionProvider, PromptProvider, ResourceProvider, ToolProvider
    from mcp_providers.skills import SkillProvider

__all__ = [
    "CHANGELOG",
    "DEPRECATED_ARGUMENTS",
    "POLICY_GROUP",
    "PROJECT",
    "HookChange",
    "authorize",
    "check_composition",
    "demo_settings",
    "hookimpl",
    "hookspec",
    "register_extension_providers",
    "register_extensions",
    "register_prompt_providers",
    "register_prompts",
    "register_resource_providers",
    "register_skill_providers",
    "register_tool_providers",
    "settings_model",
]

PROJECT = "mcp_providers"
"""The pluggy project name and the entry-point group provider plugins are registered under."""

POLICY_GROUP = "mcp_providers.policy"
"""The entry-point group a plugin implementing :func:`authorize` is registered under (a *policy
plugin*). A policy plugin that fails to load stops ``serve`` (fail closed); a plugin of
:data:`PROJECT` that fails to load is left out, and one defining ``authorize`` is refused."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- how the contract changes --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HookChange:
    """One change to the plugin contract, as ``docs/hooks.md`` lists it."""

    version: str
    """The core release it is in, e.g. ``"0.1.0"``."""
    hook: str
    """The hook's name."""
    kind: Literal["added", "changed", "deprecated", "removed"]
    text: str
    """What changed and what an implementation written before it gets, in one or two sentences."""


CHANGELOG: tuple[HookChange, ...] = (
    HookChange("0.1.0", "settings_model", "added", "``settings_model()``."),
    HookChange("0.1.0", "register_resource_providers", "added", "``register_resource_providers(settings)``."),
    HookChange("0.1.0", "register_tool_providers", "added", "``register_tool_providers(settings)``."),
    HookChange("0.1.0", "register_prompts", "added", "``register_prompts(settings)``."),
    HookChange("0.1.0", "demo_settings", "added", "``demo_settings()``."),
    HookChange(
        "0.1.0", "authorize", "added", "``authorize(subject, action, target)``, ``firstresult``: the first answer won."
    ),
    HookChange(
        "0.1.0",
        "authorize",
        "added",
        "Argument ``settings``. Implementations without it keep working: pluggy passes only the arguments named.",
    ),
    HookChange(
        "0.1.0",
        "authorize",
        "changed",
        "No longer ``firstresult``: every implementation is asked and any deny wins (before, the last-registered "
        "plugin that answered decided alone, so an allow could hide a deny). An implementation written for "
        "``firstresult`` loads unchanged; its deny still denies, its allow no longer overrides another plugin's deny.",
    ),
    HookChange(
        "0.1.0",
        "authorize",
        "added",
        "Argument ``principal`` (the whole caller). Implementations without it keep working.",
    ),
    HookChange(
        "0.1.0",
        "register_extensions",
        "added",
        "``register_extensions(settings)``: extensions (SEP-2133) and their methods. Plugins without it "
        "load unchanged.",
    ),
    HookChange(
        "0.1.0",
        "authorize",
        "changed",
        "A plugin implementing it is declared in the ``mcp_providers.policy`` entry-point group. One still "
        "declared in ``mcp_providers`` is refused and ``serve`` does not start (its rules are never dropped "
        "silently); move its entry point to the new group.",
    ),
    HookChange(
        "0.2.0",
        "register_prompt_providers",
        "added",
        "``register_prompt_providers(settings)``: the name ``register_prompts`` had, in line with the other "
        "``register_*_providers`` hooks.",
    ),
    HookChange(
        "0.2.0",
        "register_prompts",
        "deprecated",
        "Renamed ``register_prompt_providers``. An implementation of the old name is still called, and "
        "gets ``MCPProvidersRemovedIn1Warning`` when registered; it stops working in 1.0.",
    ),
    HookChange(
        "0.2.0",
        "register_extension_providers",
        "added",
        "``register_extension_providers(settings)``: the name ``register_extensions`` had.",
    ),
    HookChange(
        "0.2.0",
        "register_extensions",
        "deprecated",
        "Renamed ``register_extension_providers``. An implementation of the old name is still called, and "
        "gets ``MCPProvidersRemovedIn1Warning`` when registered; it stops working in 1.0.",
    ),
    HookChange(
        "0.2.0",
        "register_skill_providers",
        "added",
        "``register_skill_providers(settings)``: skills (the ``io.modelcontextprotocol/skills`` extension, "
        "SEP-2640). Plugins without it load unchanged.",
    ),
    HookChange(
        "0.2.0",
        "check_composition",
        "added",
        "``check_composition(settings, served)``: a plugin warns ``check`` about settings naming targets nothing "
        "serves (the built-in policy's rules). Plugins without it load unchanged.",
    ),
)
"""Every change to a hook since the first hookspecs, oldest first. The 0.1.0 entries all came
before that release, while plugins were already being written against the hooks."""

DEPRECATED_ARGUMENTS: dict[str, dict[str, MCPProvidersDeprecationWarning]] = {}
"""Hook name -> argument name -> the warning a hookimpl naming that argument gets when it is
registered (pluggy's ``warn_on_impl_args``; the hookimpl still loads and is still passed the
argument). Each warning is an instance of a ``MCPProvidersRemovedIn<N>Warning`` naming the
release that drops the argument, and has a ``deprecated`` entry in :data:`CHANGELOG`. Nothing is
deprecated now."""


_RENAMED: dict[str, MCPProvidersDeprecationWarning] = {
    old: MCPProvidersRemovedIn1Warning(
        f"hook {old} is renamed {new}, as register_resource_providers and register_tool_providers are "
        f"named; rename the function (the old name is still called, until mcp-providers 1.0)"
    )
    for old, new in (
        ("register_prompts", "register_prompt_providers"),
        ("register_extensions", "register_extension_providers"),
    )
}
"""Old hook name -> the warning an implementation of it gets when registered (pluggy's ``warn_on_impl``)."""


def _deprecated(hook: str) -> dict[str, MCPProvidersDeprecationWarning]:
    # The same dict pluggy keeps (``HookSpec.warn_on_impl_args``): one table for every hookspec.
    return DEPRECATED_ARGUMENTS.setdefault(hook, {})


# -- declaration ---------------------------------------------------------------------------------


@hookspec(warn_on_impl_args=_deprecated("settings_model"))
def settings_model() -> type[BaseModel] | None:
    """Return the pydantic model of this plugin's settings, or ``None`` if it takes none.

    The operator's ``[plugins.<entry point name>]`` table in the config file is validated against
    this model before any other hook is called; a validation error disables the plugin and names
    each bad field. With no table, the model is built from its defaults (so every field needs a
    default for the plugin to load without configuration).

    :returns: a ``BaseModel`` subclass, or ``None``.

    Use in provider plugins: declare secrets as the *name* of an environment variable, never the
    secret itself, so the config file can be shared.
    """


@hookspec(warn_on_impl_args=_deprecated("register_resource_providers"))
def register_resource_providers(settings: Any) -> Sequence[ResourceProvider]:
    """Return the resource providers this plugin contributes.

    Called once at composition time, after settings are validated.

    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :returns: a list of :class:`~mcp_providers.providers.ResourceProvider`; empty if none.

    Use in provider plugins: declare every URI and template here. Nothing can be added later,
    so no URI is minted at read time.
    """


@hookspec(warn_on_impl_args=_deprecated("register_tool_providers"))
def register_tool_providers(settings: Any) -> Sequence[ToolProvider]:
    """Return the tool providers this plugin contributes.

    Called once at composition time, after settings are validated.

    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :returns: a list of :class:`~mcp_providers.providers.ToolProvider`; empty if none.

    Use in provider plugins: declare each tool's effects honestly; the annotations clients see
    (``readOnlyHint``, ``destructiveHint`` ...) are derived from them.
    """


@hookspec(warn_on_impl_args=_deprecated("register_prompt_providers"))
def register_prompt_providers(settings: Any) -> Sequence[PromptProvider]:
    """Return the prompt providers this plugin contributes.

    Called once at composition time, after settings are validated.

    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :returns: a list of :class:`~mcp_providers.providers.PromptProvider`; empty if none.
    """


@hookspec(warn_on_impl_args=_deprecated("register_prompts"), warn_on_impl=_RENAMED["register_prompts"])
def register_prompts(settings: Any) -> Sequence[PromptProvider]:
    """The old name of :func:`register_prompt_providers`: still called, with a deprecation warning.

    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :returns: a list of :class:`~mcp_providers.providers.PromptProvider`; empty if none.

    .. deprecated:: 0.2.0
        Rename the function ``register_prompt_providers``; this name stops working in 1.0.
    """


@hookspec(warn_on_impl_args=_deprecated("register_extension_providers"))
def register_extension_providers(settings: Any) -> Sequence[ExtensionProvider]:
    """Return the extension providers this plugin contributes (SEP-2133).

    Called once at composition time, after settings are validated.

    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :returns: a list of :class:`~mcp_providers.providers.ExtensionProvider`; empty if none.

    Use in provider plugins: each extension is advertised under ``capabilities.extensions`` and
    its methods are served through the same gate, invoker and audit as tools (the policy is asked
    ``call`` on the method name). A method may not be one the MCP spec defines.
    """


@hookspec(warn_on_impl_args=_deprecated("register_extensions"), warn_on_impl=_RENAMED["register_extensions"])
def register_extensions(settings: Any) -> Sequence[ExtensionProvider]:
    """The old name of :func:`register_extension_providers`: still called, with a deprecation warning.

    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :returns: a list of :class:`~mcp_providers.providers.ExtensionProvider`; empty if none.

    .. deprecated:: 0.2.0
        Rename the function ``register_extension_providers``; this name stops working in 1.0.
    """


@hookspec(warn_on_impl_args=_deprecated("register_skill_providers"))
def register_skill_providers(settings: Any) -> Sequence[SkillProvider]:
    """Return the skill providers this plugin contributes (SEP-2640, ``io.modelcontextprotocol/skills``).

    Called once at composition time, after settings are validated. Each provider's skills are
    checked then (frontmatter, file list, every file read twice with the same bytes); each file
    is served as a fixed resource under the provider's prefixes, and 2026-07-28 clients also get
    ``skills/list``, ``skills/get`` and ``resources/directory/read``.

    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :returns: a list of :class:`~mcp_providers.skills.SkillProvider`; empty if none.

    Use in provider plugins: for folders shipped in the package, ``Plugin.skill("folder")`` in
    :mod:`mcp_providers.plugin` (or :class:`~mcp_providers.skills.SkillFolders`) does it all.
    """


@hookspec(warn_on_impl_args=_deprecated("demo_settings"))
def demo_settings() -> AbstractContextManager[dict[str, Any]] | None:
    """Return a context manager that prepares demo data and yields this plugin's settings table.

    ``mcp-providers demo`` enters it before starting the composed server and leaves it afterwards,
    so a plugin that needs a backend can start a local stand-in (the ServiceNow plugin starts its
    Table API emulator). The yielded dict becomes the plugin's ``[plugins.<name>]`` table.

    :returns: a context manager yielding a settings table, or ``None`` when the defaults serve.

    Use in provider plugins: bind only to loopback and clean up on exit.
    """


@hookspec(warn_on_impl_args=_deprecated("check_composition"))
def check_composition(settings: Any, served: Served) -> Sequence[Advisory] | None:
    """Return what ``mcp-providers check`` should warn about this plugin's settings, given what the
    composition serves: a policy rule or a filter naming a target that nothing serves, say, which
    would otherwise pass silently (a deny rule with a typo denies nothing).

    Called by ``check`` only (never by ``serve``), once per served plugin implementing it, after
    every provider's declarations are checked. ``check`` prints each advisory as a warning and
    still passes; an implementation that raises or returns anything but advisories is reported as
    one warning naming it.

    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :param served: the composition's targets (:class:`~mcp_providers.checks.Served`: fixed URIs,
        URI templates, tool, prompt and extension method names, owned URI prefixes), and who can
        call them (:class:`~mcp_providers.checks.Callers`).
    :returns: a list of :class:`~mcp_providers.checks.Advisory`; empty or ``None`` when all is well.

    Use in provider plugins: import :mod:`mcp_providers.checks` inside the implementation, so
    serving never loads it.
    """


# -- serving -------------------------------------------------------------------------------------


@hookspec(warn_on_impl_args=_deprecated("authorize"))
def authorize(subject: str, action: Action, target: str, settings: Any, principal: Principal) -> Decision | None:
    """Decide whether the caller may perform ``action`` on ``target``.

    Called at every boundary of every request: list, read, template expansion, completion,
    subscription, tool call, prompt, and for every link and embed a tool or prompt returns. Every
    implementation is asked and the answers combine: **any deny wins**, and when all return
    ``None`` the action is allowed, so the order plugins load in never changes a decision. A URI is
    asked about in its canonical form (lower-case scheme, one percent-encoding) and, when that
    differs, as the client sent it; a URI of a template is preceded by ``expand`` on the template.

    :param subject: ``principal.subject``: ``"local"`` on stdio, the verified token's subject on
        HTTP. A subject is unique only within its issuer: a rule that names subjects while tokens
        come from more than one issuer should check ``principal.issuer`` too.
    :param action: one of ``"list"``, ``"read"``, ``"expand"``, ``"complete"``, ``"subscribe"``,
        ``"call"``, ``"prompt"``.
    :param target: the URI, URI template, tool name or prompt name acted on.
    :param settings: the instance of this plugin's :func:`settings_model`, or ``None``.
    :param principal: the whole caller (:class:`~mcp_providers.identity.Principal`: subject,
        issuer, client id, scopes, groups, selected claims), made once per request.
    :returns: a :class:`~mcp_providers.policy.Decision`, or ``None`` to defer.

    .. versionadded:: 0.1.0
        ``principal``. pluggy passes an implementation only the arguments it names, so
        implementations written before it (``subject, action, target, settings``) keep working.

    .. versionchanged:: 0.1.0
        No longer ``firstresult``: every implementation is asked and any deny wins (before, the
        last-registered plugin that answered decided alone, so an allow could hide a deny).

    Use in provider plugins: keep it fast and side-effect free; it runs on every request. An
    implementation that raises, returns anything but a ``Decision`` or ``None``, or is only a hook
    wrapper, denies. A
    plugin implementing this hook is declared in the :data:`POLICY_GROUP` entry-point group
    (``mcp_providers.policy``); one that fails to load at any stage stops ``mcp-providers serve``
    from starting (fail closed), and so does a plugin of the ``mcp_providers`` group implementing
    it (refused: declare it as a policy). ``mcp-providers check`` lists the implementations in the
    order they are asked and flags one that allows everything.
    """
