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

import importlib.metadata
from collections.abc import Callable, Mapping
from typing import Any

import pluggy

from mcp_providers import hookspecs
from mcp_providers._host.groups import DECLARED_POLICY, entry_points, group_problem, is_policy, looked_evidence
from mcp_providers._host.hookcalls import collect_providers, configure_plugin, plugin_manager, register_plugin
from mcp_providers._host.hookscan import AuthorizeScan, scan_authorize, scan_problem
from mcp_providers._host.isolation import MadeForAnotherCore, guarded_load, one_line, stdout_to_stderr
from mcp_providers._host.records import PluginRecord
from mcp_providers._host.selection import check_selection_names, selection_of
from mcp_providers._host.shape import as_plugin, several_plugins, unmarked_hooks
from mcp_providers.config import Config
from mcp_providers.errors import ConfigError
from mcp_providers.plugin import Plugin


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
            with stdout_to_stderr():
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
    check_selection_names(config, set(records))
    for name in sorted(records):
        record = records[name]
        record.configured = name in config.plugins
        if record.status == "rejected":
            continue
        selected, record.selection = selection_of(name, config)
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
    by_name: dict[str, list[importlib.metadata.EntryPoint]] = {}
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
            record.authorize_evidence = next(filter(None, (_look(name, guarded_load(e), e.group) for e in eps)), None)
            continue
        loaders[name] = guarded_load(eps[0])
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
        with stdout_to_stderr():
            plugin = load()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        made_for = isinstance(exc, MadeForAnotherCore)
        record.reject(f"made for another core: {exc}" if made_for else f"import failed: {one_line(exc)}")
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
    register_plugin(pm, record, plugin)
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
    configure_plugin(pm, record, config)
    if not record.is_rejected() and not _kept(record, previous):
        collect_providers(pm, record)
    if record.is_rejected() and pm.is_registered(plugin):
        pm.unregister(plugin)  # its authorize hook must not run either
