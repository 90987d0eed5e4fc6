"""The assembly: the frozen result of composing plugins (what is served, by whom, and what was left out).

``assemble(config)`` runs discovery, asks every provider for its declarations once, runs the
rules and indexes what passed into the catalog. Nothing here changes after it is built; the
per-process state of serving (start-up failures, subscriptions, caches) lives in the runtime
(:mod:`mcp_providers._serve.runtime`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import pluggy

from mcp_providers._holders import Frozen
from mcp_providers._host.catalog import Catalog
from mcp_providers._host.compat import plugin_distributions, unmet_requirements
from mcp_providers._host.declarations import Declared, Problem, declare
from mcp_providers._host.discovery import discover
from mcp_providers._host.isolation import settle
from mcp_providers._host.records import PluginRecord
from mcp_providers._host.rules import TOOL_RULES, check
from mcp_providers.config import Config
from mcp_providers.uris import canonical


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class AuthorizeImpl(Frozen):
    """One plugin's ``authorize`` implementation, called through pluggy on its own with its settings."""

    __slots__ = ("caller", "plugin", "settings")

    plugin: str
    caller: Any
    """pluggy's hook caller of the plugin's own manager (only its implementation), raising
    :class:`~mcp_providers._host.contain.Escaped` for a ``BaseException`` the hook raises."""
    settings: Any

    def __init__(self, plugin: str, caller: Any, settings: Any) -> None:
        object.__setattr__(self, "plugin", plugin)
        object.__setattr__(self, "caller", caller)
        object.__setattr__(self, "settings", settings)


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Assembly(Frozen):
    """What composing produced. Immutable: build a new one to serve something else."""

    config: Config
    plugin_manager: pluggy.PluginManager
    records: tuple[PluginRecord, ...]
    declared: tuple[Declared, ...]
    """Declarations of the served providers (plugins with problems are left out)."""
    problems: tuple[Problem, ...]
    catalog: Catalog
    authorize: tuple[AuthorizeImpl, ...]
    """Every served plugin's ``authorize`` implementation, in the order ``check`` prints them
    (by plugin name; the order never changes a decision: any deny wins)."""
    unmet_requirements: tuple[str, ...]
    """One line per top-level ``required_plugins`` entry the installed distributions do not meet;
    serving refuses while there is one."""
    left_out: tuple[Problem, ...]
    """Listed declarations (made from a source's listing) left out alone because they collided,
    configured sources left out whole because their prefix or provider name is another served
    provider's, and entries a plugin's settings left out (two of one name), one
    ``left-out`` line each naming both sides (:mod:`~mcp_providers._host.collisions`); their
    plugins are served. Not failures: ``check`` warns, ``/status`` lists them, a reload names them."""

    def __init__(
        self,
        config: Config,
        plugin_manager: pluggy.PluginManager,
        records: tuple[PluginRecord, ...],
        declared: tuple[Declared, ...],
        problems: tuple[Problem, ...],
        catalog: Catalog,
        authorize: tuple[AuthorizeImpl, ...],
        unmet_requirements: tuple[str, ...] = (),
        left_out: tuple[Problem, ...] = (),
    ) -> None:
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "plugin_manager", plugin_manager)
        object.__setattr__(self, "records", records)
        object.__setattr__(self, "declared", declared)
        object.__setattr__(self, "problems", problems)
        object.__setattr__(self, "catalog", catalog)
        object.__setattr__(self, "authorize", authorize)
        object.__setattr__(self, "unmet_requirements", unmet_requirements)
        object.__setattr__(self, "left_out", left_out)

    @cached_property
    def unavailable(self) -> dict[str, str]:
        """Canonical URI prefix -> the rejected plugin that owns it: a read there is answered "that
        plugin is unavailable" instead of "nothing is there"."""
        owners: dict[str, str] = {}
        for record in self.records:
            if record.status != "rejected":
                continue
            for prefix in record.prefixes:
                with contextlib.suppress(ValueError):  # a malformed prefix was reported by check already
                    owners[canonical(prefix)] = record.name
        return owners

    def unavailable_owner(self, uri: str) -> str | None:
        """The rejected plugin owning ``uri``'s prefix, or ``None``."""
        if not self.unavailable:
            return None
        try:
            uri = canonical(uri)
        except ValueError:
            return None
        return next((name for px, name in self.unavailable.items() if uri.startswith(px)), None)

    @property
    def failures(self) -> list[str]:
        """One line per rejected plugin, per failed check, per authorization plugin not in force and
        per required plugin not served or not installed."""
        lines = [*self.unmet_requirements]
        lines += [_rejected(r) for r in self.records if r.status == "rejected"]
        lines += [str(p) for p in self.problems]
        lines += [_off(r) for r in self.records if r.status == "disabled" and r.could_authorize]
        return lines + _unserved_required(self) + _stray_authorize(self.plugin_manager, self.records)

    @property
    def policy_failures(self) -> list[str]:
        """Why serving would skip authorization; serving then fails closed. One line for each
        plugin that could carry it but is not in force (rejected at any stage while configured or
        holding an ``authorize`` implementation pluggy would register, or whose import failed; left
        out by the selection while configured and holding one), for each ``[server]
        require_plugins`` name not served, and for each registered ``authorize`` implementation
        that no served plugin owns (the gate would never ask it)."""
        lines = []
        for r in self.records:
            if r.status == "rejected" and r.could_authorize:
                why = r.authorize_evidence
                lines.append(f"{r.name}: policy plugin rejected ({r.reason}); {why}, so its rules would not apply")
            elif r.could_authorize:
                lines.append(_off(r))
        return lines + _unserved_required(self) + _stray_authorize(self.plugin_manager, self.records)

    @functools.cached_property
    def origins(self) -> Mapping[str, tuple[str | None, str | None]]:
        """Plugin name -> (distribution, version), read from metadata on first use."""
        return {r.name: (r.distribution, r.version) for r in self.records}


LEFT_OUT = "left out and the other plugins served: it is not a policy plugin (no authorize hookimpl)"
"""Said of a configured plugin that is rejected but holds no ``authorize`` (so serving goes on)."""


def _rejected(record: PluginRecord) -> str:
    """``<name>: rejected: <reason>``; for a configured plugin also whether it stops serving, since
    its ``[plugins.<name>]`` table may make an operator take it for a policy."""
    line = f"{record.name}: rejected: {record.reason}"
    return f"{line}; {LEFT_OUT}" if record.configured and not record.could_authorize else line


def _off(record: PluginRecord) -> str:
    return (
        f"{record.name}: policy plugin has [plugins.{record.name}] settings but is off ({record.reason}); "
        f"its rules would not apply: select it, or remove [plugins.{record.name}]"
    )


def _unserved_required(assembly: Assembly) -> list[str]:
    """``[server] require_plugins`` names that are not loaded and served."""
    by_name = {r.name: r for r in assembly.records}
    lines = []
    for name in assembly.config.server.require_plugins:
        record = by_name.get(name)
        if record is None:
            installed = ", ".join(sorted(by_name)) or "none"
            lines.append(f"{name}: required by [server] require_plugins but not installed; installed: {installed}")
        elif record.status != "loaded":
            lines.append(f"{name}: required by [server] require_plugins but {record.status} ({record.reason})")
    return lines


def _stray_authorize(pm: pluggy.PluginManager, records: tuple[PluginRecord, ...]) -> list[str]:
    """``authorize`` implementations registered (say by a plugin's import code, through
    ``register`` on a manager it found) that the gate never asks: only a loaded plugin's own
    object, in the composition's manager or its own, is asked (a plugin's own implementation
    that is not in force is :attr:`PluginRecord.could_authorize`'s business)."""
    owners = {id(r.plugin) for r in records if r.status == "loaded"}
    places: list[tuple[str, pluggy.PluginManager, set[int]]] = [("the composition", pm, owners)]
    places += [(f"plugin {r.name!r}", r.manager, {id(r.plugin)}) for r in records if r.manager is not None]
    lines = []
    for where, manager, allowed in places:
        caller = getattr(manager.hook, "authorize", None)
        for impl in caller.get_hookimpls() if caller is not None else ():
            if id(impl.plugin) not in allowed:
                kind = type(impl.plugin)
                what = getattr(impl.plugin, "__name__", None) or f"{kind.__qualname__} object of {kind.__module__}"
                lines.append(
                    f"{what}: an authorize implementation registered in {where}'s plugin manager "
                    "belongs to no served plugin, so it would never be asked"
                )
    return lines


def _authorize_impls(pm: pluggy.PluginManager, records: tuple[PluginRecord, ...]) -> tuple[AuthorizeImpl, ...]:
    return tuple(
        # the hook caller itself: the gate contains what it raises (SystemExit too) and reads its
        # implementations (a wrapper-only hook denies), which a wrapper around it would hide
        AuthorizeImpl(record.name, record.manager.hook.authorize, record.settings)
        for record in records
        if record.status == "loaded" and "authorize" in record.hooks and record.manager is not None
    )


def _settings_left_out(records: Sequence[PluginRecord]) -> list[Problem]:
    """A ``left-out`` line per entry a served plugin's settings left out (two entries of one name,
    say), as its settings object reports it in its ``left_out`` attribute: duck-typed like a
    provider's, items with ``value``, ``message`` and ``fix`` (anything else there is ignored)."""
    lines = []
    for record in records:
        if record.status != "loaded":
            continue
        for item in getattr(record.settings, "left_out", None) or ():
            value, message, fix = (getattr(item, key, None) for key in ("value", "message", "fix"))
            if isinstance(value, str) and isinstance(message, str) and isinstance(fix, str):
                lines.append(Problem((record.name,), "left-out", value, message, fix))
    return lines


def assemble(
    config: Config,
    *,
    load_entrypoints: bool = True,
    plugins: Mapping[str, object] | None = None,
    previous: Assembly | None = None,
) -> Assembly:
    """Discover plugins, check every declaration, index what passed.

    :param previous: the assembly a reload replaces: unchanged plugins keep its provider objects.
    :raises ConfigError: the config names a plugin that is not installed.
    """
    try:
        return _assemble(config, load_entrypoints, plugins, previous)
    finally:
        settle()  # no plugin thread of ours outlives composition (round 18)


def _assemble(
    config: Config, load_entrypoints: bool, plugins: Mapping[str, object] | None, previous: Assembly | None
) -> Assembly:
    unmet = unmet_requirements(config.required_plugins, plugin_distributions()) if config.required_plugins else []
    before = {r.name: r for r in previous.records} if previous is not None else None
    pm, records = discover(config, load_entrypoints=load_entrypoints, plugins=plugins, previous=before)
    declared, problems = declare(records)
    failed = {name for p in problems if p.rule not in TOOL_RULES for name in p.plugins}  # refused already
    checked, left_out, declared = check(declared, failed)
    problems += checked
    bad = {name for p in problems if p.rule not in TOOL_RULES for name in p.plugins}  # TOOL_RULES: that tool alone
    for record in records:
        if record.name in bad and record.status == "loaded":
            record.reject("failed checks (see mcp-providers check)")
            if record.plugin is not None and pm.is_registered(record.plugin):
                pm.unregister(record.plugin)
    served = tuple(d for d in declared if d.plugin not in bad)
    left_out = [*_settings_left_out(records), *left_out]
    frozen = tuple(records)
    authorize = _authorize_impls(pm, frozen)
    return Assembly(
        config, pm, frozen, served, tuple(problems), Catalog(served), authorize, tuple(unmet), tuple(left_out)
    )
