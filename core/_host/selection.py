"""The operator's selection of plugins (the chosen set, ``allow``, ``deny`` and the two environment
variables): whether each plugin is on, and which rule said so."""

from __future__ import annotations

from collections.abc import Iterable

from mcp_providers.config import DISABLE_ENV, PLUGINS_ENV, Config, suggestion
from mcp_providers.errors import ConfigError


def selection_of(name: str, config: Config) -> tuple[bool, str]:
    """Whether ``name`` is selected, and the rule that decided (see the module docstring)."""
    if name in config.env_disable:
        return False, f"off: listed in ${DISABLE_ENV}"
    if name in config.deny:
        naming = (("the config's allow list", config.allow or ()), (f"${PLUGINS_ENV}", config.env_plugins or ()))
        also = [where for where, names in naming if name in names]
        return False, "off: in the config's deny list" + (f" (and in {' and '.join(also)}: deny wins)" if also else "")
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


def check_selection_names(config: Config, installed: set[str]) -> None:
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
