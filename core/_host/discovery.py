"""Discovery: find plugins through one entry-point group and load each in isolation.

Every plugin ends in exactly one :class:`PluginRecord` whose ``status`` says what happened:

- ``loaded``: imported, registered, settings valid, hooks returned providers;
- ``rejected``: something about the plugin is broken; ``reason`` says what, in one line;
- ``disabled``: the operator's selection left it out.

``selection`` says which rule turned each plugin on or off, in the order they apply:

1. ``$MCP_PROVIDERS_DISABLE`` and the config's ``deny``: off, always;
2. ``$MCP_PROVIDERS_PLUGINS``: when set, on exactly for the names it lists (the set and ``allow``
   are not consulted);
3. otherwise the chosen set (``--set`` or ``set``) and ``allow``: on only if named by each given;
4. otherwise on: every installed plugin (the embedded default).

A broken plugin never stops the others from loading, with one exception that fails closed: a
plugin that could carry authorization but is not in force (:attr:`PluginRecord.could_authorize`)
makes serving refuse to start, since its rules would silently not apply. Whether it could is
decided by construction (:mod:`mcp_providers._host.groups`): a plugin declared in the
``mcp_providers.policy`` entry-point group is a policy plugin whatever it imports, and one of the
``mcp_providers`` group is not, so its failed import leaves it out; one of the ``mcp_providers``
group that pluggy would register an ``authorize`` from (:mod:`mcp_providers._host.hookscan`) is
refused. Never by its source text or by its having a ``[plugins.<name>]`` table.

Two entry-point names pointing at one object (``a = pkg.mod`` and ``b = pkg.mod``) load it once, under
the first name; the second is rejected with one line naming both.

Before anything of a plugin is imported, its distribution's ``Requires-Dist`` on ``mcp-providers`` is
checked against the running core (:mod:`mcp_providers._host.compat`): a plugin made for another
core is rejected unimported, naming both versions; a policy plugin then fails closed, until it is
upgraded or left out with ``deny``.

A hookimpl naming a deprecated hook argument (:data:`mcp_providers.hookspecs.DEPRECATED_ARGUMENTS`)
loads; pluggy's warning is recorded in :attr:`PluginRecord.deprecations` (``check`` and ``serve``
print it) and then issued again through :mod:`warnings`, so the caller's filters decide: under
``-W error`` (or pytest's ``filterwarnings = error``) the plugin is rejected instead.

Every hook call goes through pluggy's own hook callers (one plugin's implementation at a time, via
``subset_hook_caller``), so ``MCP_PROVIDERS_TRACE_PLUGINS=1`` shows each call on stderr with
pluggy's tracer. Output a plugin prints while it is imported
or asked for providers goes to stderr, so it cannot corrupt a stdio MCP stream.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import importlib_metadata
import pluggy
from pydantic import BaseModel, ValidationError

from mcp_providers import hookspecs
from mcp_providers._host.compat import plugin_core_problem
from mcp_providers._host.groups import DECLARED_POLICY, entry_points, group_problem, is_policy, looked_evidence
from mcp_providers._host.hookscan import AuthorizeScan, PluginManager, scan_authorize, scan_problem
from mcp_providers._host.shape import HOOKS, as_plugin, did_you_mean, provider_problem, several_plugins, unmarked_hooks
from mcp_providers._host.skills import SkillFiles
from mcp_providers.config import DISABLE_ENV, PLUGINS_ENV, Config, format_validation_error, settings_context, suggestion
from mcp_providers.errors import ConfigError, MCPProvidersDeprecationWarning
from mcp_providers.plugin import Plugin
from mcp_providers.providers import ExtensionProvider, PromptProvider, ResourceProvider, ToolProvider
from mcp_providers.skills import SkillProvider

Status = Literal["loaded", "rejected", "disabled"]

_PROVIDER_HOOKS: tuple[tuple[str, type], ...] = (
    ("register_resource_providers", ResourceProvider),
    ("register_tool_providers", ToolProvider),
    ("register_extension_providers", ExtensionProvider),
    ("register_extensions", ExtensionProvider),  # the old name, still called
    ("register_prompt_providers", PromptProvider),
    ("register_prompts", PromptProvider),  # the old name, still called
    ("register_skill_providers", SkillProvider),  # served as resource providers (_host/skills.py)
)


@dataclass
class PluginRecord:
    """What discovery learned about one plugin (plain data; ``mcp-providers plugins`` prints it)."""

    name: str
    """Entry-point name: the key of its ``[plugins.<name>]`` settings table."""
    value: str
    """What the entry point points at, e.g. ``mcp_providers.plugins.documcp.ssg_catalog``."""
    dist: importlib_metadata.IDistribution | None = field(default=None, repr=False)
    """The installed distribution declaring the entry point (``None`` for plugins passed directly)."""
    group: str | None = None
    """The entry-point group it is declared in (``mcp_providers`` or ``mcp_providers.policy``);
    ``None`` for plugins passed directly (see :mod:`mcp_providers._host.groups`)."""
    status: Status = "loaded"
    reason: str | None = None
    selection: str = "on: every installed plugin (no set, allow list or override)"
    """Which selection rule turned this plugin on or off, e.g. ``off: in the config's deny list``."""
    hooks: list[str] = field(default_factory=list)
    prefixes: tuple[str, ...] = ()
    """The URI prefixes its resource providers own, as far as known (kept when it is rejected, so a
    read under them can say the plugin is unavailable rather than that nothing is there)."""
    deprecations: list[str] = field(default_factory=list)
    """One line per deprecated part of the hook contract its hookimpls use, e.g.
    ``hook authorize: ... (weather.py:12)``; the plugin still loads."""
    settings: BaseModel | None = None
    settings_model: type[BaseModel] | None = None
    plugin: object | None = field(default=None, repr=False)
    manager: pluggy.PluginManager | None = field(default=None, repr=False)
    """The plugin's own plugin manager: its hooks are called there, so they run alone."""
    resource_providers: list[ResourceProvider] = field(default_factory=list, repr=False)
    tool_providers: list[ToolProvider] = field(default_factory=list, repr=False)
    prompt_providers: list[PromptProvider] = field(default_factory=list, repr=False)
    extension_providers: list[ExtensionProvider] = field(default_factory=list, repr=False)

    configured: bool = False
    """The config has a ``[plugins.<name>]`` table for it."""
    authorize_evidence: str | None = None
    """Why this plugin could carry authorization, e.g. ``"it has an authorize hookimpl (gate)"`` or
    ``"its import failed, so whether pluggy would register ... is unknown"``; ``None`` when what
    pluggy would register from it holds no ``authorize`` implementation
    (:func:`~mcp_providers._host.hookscan.scan_authorize`)."""

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


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    # A plugin's print() must never reach a stdio MCP stream.
    with contextlib.redirect_stdout(sys.stderr):
        yield


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _reraise_interrupt(exc: BaseException) -> None:
    """The operator's Ctrl-C stops start-up; anything else a plugin raises is that plugin's failure."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc


class MadeForAnotherCore(Exception):
    """A plugin's distribution requires a core version other than the running one (the message
    names both); raised instead of importing it."""


def _guarded(ep: importlib_metadata.EntryPoint) -> Callable[[], object]:
    """How to load ``ep``: the one place an entry point is imported, after its distribution's
    requirement on the core is checked (:func:`~mcp_providers._host.compat.plugin_core_problem`).

    :raises MadeForAnotherCore: the core is outside that requirement; nothing was imported.
    """

    def load() -> object:
        problem = plugin_core_problem(ep.dist) if ep.dist is not None else None
        if problem is not None:
            raise MadeForAnotherCore(problem)
        return ep.load()

    return load


def _selected(name: str, config: Config) -> tuple[bool, str]:
    """Whether ``name`` is selected, and the rule that decided (see the module docstring)."""
    if name in config.env_disable:
        return False, f"off: listed in ${DISABLE_ENV}"
    if name in config.deny:
        return False, "off: in the config's deny list"
    if config.env_plugins is not None:
        if name in config.env_plugins:
            return True, f"on: listed in ${PLUGINS_ENV}"
        return False, f"off: not listed in ${PLUGINS_ENV} ({', '.join(config.env_plugins)})"
    why_on = []
    if config.set is not None:
        members = config.sets[config.set].plugins
        if name not in members:
            return False, f"off: not in plugin set {config.set!r} ({', '.join(members) or 'empty'})"
        why_on.append(f"in plugin set {config.set!r}")
    if config.allow is not None:
        if name not in config.allow:
            return False, f"off: not in the config's allow list ({', '.join(config.allow) or 'empty'})"
        why_on.append("in the config's allow list")
    if why_on:
        return True, "on: " + " and ".join(why_on)
    return True, "on: every installed plugin (no set, allow list or override)"


def _check_selection_names(config: Config, installed: set[str]) -> None:
    """Every name the selection uses must exist: a typo must not silently serve something else."""
    if config.set is not None and config.set not in config.sets:
        known = ", ".join(sorted(config.sets)) or "none defined; add a [sets.<name>] table"
        hint = suggestion(config.set, config.sets)
        raise ConfigError(f"no plugin set {config.set!r} in the config; sets: {known}{hint}")
    sources: list[tuple[str, Iterable[str]]] = [
        ("the config's allow list", config.allow or ()),
        ("the config's deny list", config.deny),
        ("the config's [plugins.*] tables", config.plugins),
        (f"${PLUGINS_ENV}", config.env_plugins or ()),
        (f"${DISABLE_ENV}", config.env_disable),
    ]
    if config.set is not None:
        sources.insert(0, (f"plugin set {config.set!r}", config.sets[config.set].plugins))
    for where, names in sources:
        missing = sorted(set(names) - installed)
        if missing:
            hints = "".join(suggestion(name, installed, naming=len(missing) > 1) for name in missing)
            raise ConfigError(
                f"{where} names plugin(s) that are not installed: {', '.join(missing)}; "
                f"installed: {', '.join(sorted(installed)) or 'none'}{hints}"
            )


TRACE_ENV = "MCP_PROVIDERS_TRACE_PLUGINS"
"""Set to ``1`` to print every hook call (arguments, implementations, results) to stderr."""


def plugin_manager() -> pluggy.PluginManager:
    """A plugin manager with the hookspecs added, tracing to stderr when ``$MCP_PROVIDERS_TRACE_PLUGINS`` is set."""
    pm = PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    if os.environ.get(TRACE_ENV, "") not in ("", "0"):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    return pm


def call_hook(record: PluginRecord, hook: str, **kwargs: Any) -> tuple[bool, Any]:
    """Call only this plugin's implementation of ``hook``, through pluggy's hook caller of the
    plugin's own manager (isolation: one plugin's error is its own).

    :returns: ``(implemented, result)``; ``result`` is ``None`` when the implementation returned it.
    """
    caller = getattr(record.manager.hook, hook) if record.manager is not None else None
    if caller is None or not caller.get_hookimpls():
        return False, None
    with _stdout_to_stderr():
        results = caller(**kwargs)
    return True, (results[0] if results else None)


def _register(pm: pluggy.PluginManager, record: PluginRecord, plugin: object) -> None:
    """Register ``plugin`` with a manager of its own (where its hooks are called, alone) and with
    the composition's (which lists every plugin); a mismatch with the hookspecs rejects it."""
    own = plugin_manager()
    try:
        _register_recording(own, record, plugin)
    except pluggy.PluginValidationError as exc:
        record.reject(f"hook signature does not match the hookspec: {_one_line(exc)}")
        return
    except Warning as exc:  # the caller's filters made a deprecation an error
        record.reject(f"uses a deprecated part of the hook contract and warnings are errors here: {_one_line(exc)}")
        return
    except Exception as exc:  # ValueError (a name taken), or plugin code run by dir()
        record.reject(f"pluggy could not register it: {_one_line(exc)}")
        return
    unknown = [hc.name for hc in own.get_hookcallers(plugin) or [] if hc.spec is None]
    if unknown:
        record.reject(f"implements unknown hook(s) {did_you_mean(sorted(unknown))}; the hooks are: {', '.join(HOOKS)}")
        return
    taken = pm.get_name(plugin)
    if taken is not None:  # pluggy would raise ValueError: one object under two names
        record.reject(
            f"entry points {taken!r} and {record.name!r} name one object ({record.value}); it is loaded once, "
            f"as {taken!r}: remove one of the two names (or leave it out with deny = [{record.name!r}])"
        )
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPProvidersDeprecationWarning)  # issued once already, above
        pm.register(plugin, name=record.name)
    record.plugin, record.manager = plugin, own
    record.hooks = sorted(hc.name for hc in own.get_hookcallers(plugin) or [])
    if "authorize" in record.hooks and record.authorize_evidence is None:  # what pluggy did, whatever the scan saw
        record.authorize_evidence = "pluggy registered an authorize hookimpl from it"


def _register_recording(own: pluggy.PluginManager, record: PluginRecord, plugin: object) -> None:
    """``own.register(plugin)``, keeping each deprecation warning pluggy gives (``warn_on_impl_args``)
    in ``record.deprecations`` and then issuing every warning again under the caller's filters.

    :raises Warning: the caller's filters turn a warning into an error (``-W error``); the plugin
        is then rejected like any other registration failure.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # a deprecation must not fail registration half-way
        own.register(plugin, name=record.name)
    for w in caught:
        if issubclass(w.category, MCPProvidersDeprecationWarning):
            record.deprecations.append(f"{w.message} ({w.filename}:{w.lineno})")
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _configure(pm: pluggy.PluginManager, record: PluginRecord, config: Config) -> None:
    try:
        found, model = call_hook(record, "settings_model")
    except BaseException as exc:  # SystemExit too: one plugin's exit must not end the process
        _reraise_interrupt(exc)
        record.reject(f"hook settings_model raised {_one_line(exc)}")
        return
    table = config.plugins.get(record.name)
    if not found or model is None:
        if table:
            record.reject(f"config has [plugins.{record.name}] but the plugin takes no settings")
        return
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        record.reject(f"hook settings_model returned {model!r}; expected a pydantic BaseModel subclass or None")
        return
    record.settings_model = model
    try:
        record.settings = model.model_validate(table or {}, context=settings_context(config))
    except ValidationError as exc:
        record.reject(f"invalid settings: {format_validation_error(exc, f'plugins.{record.name}', model)}")


def _collect(pm: pluggy.PluginManager, record: PluginRecord) -> None:
    for hook, kind in _PROVIDER_HOOKS:
        try:
            found, result = call_hook(record, hook, settings=record.settings)
        except BaseException as exc:
            _reraise_interrupt(exc)
            record.reject(f"hook {hook} raised {_one_line(exc)}")
            return
        if not found:
            continue
        if result is None:
            result = []
        if not isinstance(result, Sequence) or isinstance(result, str | bytes):
            record.reject(f"hook {hook} returned {type(result).__name__}; expected a list of {kind.__name__}")
            return
        wrong = [item for item in result if not isinstance(item, kind)]
        if wrong:
            record.reject(
                f"hook {hook} returned {type(wrong[0]).__name__} {wrong[0]!r:.60}; expected {kind.__name__} instances"
            )
            return
        unnamed = [item for item in result if not item.name]
        if unnamed:
            record.reject(f"hook {hook} returned a {type(unnamed[0]).__name__} with an empty name; set .name")
            return
        if kind is SkillProvider:  # each skill's files are resources: every resource rule holds for them
            result = [SkillFiles(provider) for provider in result]
        problem = next(filter(None, map(provider_problem, result)), None)
        if problem is not None:
            record.reject(f"hook {hook}: {problem}")
            return
        if kind in (ResourceProvider, SkillProvider):
            record.resource_providers.extend(result)
            record.prefixes += tuple(px for provider in result for px in provider.prefixes)
        elif kind is ToolProvider:
            record.tool_providers.extend(result)
        elif kind is ExtensionProvider:
            record.extension_providers.extend(result)
        else:
            record.prompt_providers.extend(result)


def _kept(record: PluginRecord, previous: PluginRecord | None) -> bool:
    """Whether ``record`` takes ``previous``'s provider objects (and their running lifespans) rather
    than asking its hooks for new ones: the same plugin object (module code is never imported
    twice) with equal settings, none of whose resource providers said its declarations changed.
    Its distribution's version may have changed on disk meanwhile; the code serving is still the
    imported one (the reload reports it)."""
    if previous is None or previous.status != "loaded" or previous.plugin is not record.plugin:
        return False
    if not _same_settings(previous.settings, record.settings):
        return False
    if any(getattr(p, "stale", False) for p in previous.resource_providers):  # its source listed anew
        return False
    record.resource_providers = list(previous.resource_providers)
    record.tool_providers = list(previous.tool_providers)
    record.prompt_providers = list(previous.prompt_providers)
    record.extension_providers = list(previous.extension_providers)
    return True


def _same_settings(before: Any, after: Any) -> bool:
    """Whether two validated settings say the same: their fields, not their private attributes
    (a plugin may keep its clients there, which ``==`` would compare)."""
    if before is None or after is None:
        return before is after
    return type(before) is type(after) and before.model_dump() == after.model_dump()


def _unknown(name: str, exc: BaseException | None = None) -> str:
    if isinstance(exc, MadeForAnotherCore):
        return (
            "it was not imported (made for another core), so whether pluggy would register an authorize "
            "hookimpl from it is unknown (install a release that fits this core, or leave it out with "
            f"deny = [{name!r}])"
        )
    return (
        "its import failed, so whether pluggy would register an authorize hookimpl from it is unknown "
        f"(fix the import, or leave it out with deny = [{name!r}])"
    )


def _look(name: str, load: Callable[[], object], group: str | None) -> str | None:
    """Why a plugin that is not loaded could carry authorization, or ``None``: a policy-group
    plugin by its declaration; any other imported only to look at it with :func:`scan_authorize`.
    A provider-group plugin whose import fails is not a policy plugin (:mod:`~mcp_providers._host.groups`)."""

    def look() -> str | None:
        try:
            with _stdout_to_stderr():
                plugin = load()
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            return _unknown(name, exc) if group is None else None
        return scan_authorize(plugin).evidence

    return looked_evidence(group, look)


def discover(
    config: Config,
    *,
    load_entrypoints: bool = True,
    plugins: Mapping[str, object] | None = None,
    previous: Mapping[str, PluginRecord] | None = None,
) -> tuple[pluggy.PluginManager, list[PluginRecord]]:
    """Find, select, load and configure plugins; collect their providers.

    :param config: the operator's config (selection and settings).
    :param load_entrypoints: scan the ``mcp_providers`` entry-point group (once).
    :param plugins: extra plugins registered directly, by name (tests and embedding).
    :param previous: the records of the assembly being reloaded, by name: a plugin whose object
        and settings are unchanged keeps its provider objects (:func:`_kept`).
    :returns: the plugin manager and one :class:`PluginRecord` per plugin, sorted by name.
    :raises ConfigError: the chosen set does not exist, or the set, ``allow``, ``deny``,
        ``[plugins.*]`` or an environment override names a plugin that is not installed.
    """
    pm = plugin_manager()
    records, loaders = _found(load_entrypoints, plugins)
    _check_selection_names(config, set(records))
    for name in sorted(records):
        record = records[name]
        record.configured = name in config.plugins
        if record.status == "rejected":
            continue
        selected, record.selection = _selected(name, config)
        if not selected:
            record.status, record.reason = "disabled", record.selection.removeprefix("off: ")
            if record.configured:
                record.authorize_evidence = _look(name, loaders[name], record.group)
            continue
        _load(pm, record, loaders[name], config, (previous or {}).get(name))
    return pm, [records[n] for n in sorted(records)]


def _found(
    load_entrypoints: bool, plugins: Mapping[str, object] | None
) -> tuple[dict[str, PluginRecord], dict[str, Callable[[], object]]]:
    """One record per plugin name, and how to load each (duplicated entry points are rejected)."""
    records: dict[str, PluginRecord] = {}
    loaders: dict[str, Callable[[], object]] = {}
    by_name: dict[str, list[importlib_metadata.EntryPoint]] = {}
    for ep in entry_points() if load_entrypoints else ():
        by_name.setdefault(ep.name, []).append(ep)
    for name, eps in by_name.items():
        group = next((e.group for e in eps if is_policy(e.group)), eps[0].group)
        record = records[name] = PluginRecord(name=name, value=eps[0].value, dist=eps[0].dist, group=group)
        if len(eps) > 1:
            mixed = len({e.group for e in eps}) > 1  # name the groups only when they differ
            owners = " and ".join(
                f"{e.dist.name if e.dist else '?'} ({e.value}{f', group {e.group}' if mixed else ''})" for e in eps
            )
            record.reject(f"entry point name {name!r} is declared by {owners}; uninstall one or rename it")
            record.authorize_evidence = next(filter(None, (_look(name, _guarded(e), e.group) for e in eps)), None)
            continue
        loaders[name] = _guarded(eps[0])
    for name, plugin in (plugins or {}).items():
        if name in records:
            raise ConfigError(f"plugin {name!r} is both installed and passed directly; use another name")
        records[name] = PluginRecord(name=name, value=getattr(plugin, "__name__", repr(plugin)))
        loaders[name] = lambda plugin=plugin: plugin  # type: ignore[misc]
    return records, loaders


def _load(
    pm: pluggy.PluginManager,
    record: PluginRecord,
    load: Callable[[], object],
    config: Config,
    previous: PluginRecord | None = None,
) -> None:
    """Import, register, configure and collect one selected plugin; any failure rejects it alone."""
    try:
        with _stdout_to_stderr():
            plugin = load()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        made_for = isinstance(exc, MadeForAnotherCore)
        record.reject(f"made for another core: {exc}" if made_for else f"import failed: {_one_line(exc)}")
        # By construction: a policy-group plugin stops serve, a provider-group one is left out.
        fix = "install a release made for this core" if made_for else "fix the import"
        declared = f"{DECLARED_POLICY} ({fix}, or leave it out with deny = [{record.name!r}])"
        unknown = _unknown(record.name, exc) if record.group is None else None
        record.authorize_evidence = declared if is_policy(record.group) else unknown
        return
    several = several_plugins(plugin, record.name)
    if several is not None:
        record.reject(several)
        return
    plugin = as_plugin(plugin)
    record.prefixes = tuple(getattr(plugin, "prefixes", ()) if isinstance(plugin, Plugin) else ())
    scan = scan_authorize(plugin)
    record.authorize_evidence = scan.evidence or (DECLARED_POLICY if is_policy(record.group) else None)
    problem = group_problem(record.group, scan) or scan_problem(scan)
    if problem is not None:
        record.reject(problem)
        return
    _register(pm, record, plugin)
    if record.is_rejected():
        return
    if record.group == hookspecs.PROJECT and "authorize" in record.hooks:  # pluggy saw what the scan did not
        record.reject(group_problem(record.group, AuthorizeScan(registered=("authorize",))) or "defines authorize")
        pm.unregister(plugin)
        return
    unmarked = unmarked_hooks(plugin)
    if unmarked is not None:
        pm.unregister(plugin)
        record.reject(unmarked)
        return
    _configure(pm, record, config)
    if not record.is_rejected() and not _kept(record, previous):
        _collect(pm, record)
    if record.is_rejected() and pm.is_registered(plugin):
        pm.unregister(plugin)  # its authorize hook must not run either
