"""What ``check`` prints: its warnings (fixes named, the check still passes), its failures (one
line per problem: exit 1), and the summary of what is served."""

from __future__ import annotations

import anyio

from mcp_providers._cli.near_groups import near_misses
from mcp_providers._serve.check_report import check_warnings
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.sources import source_problems
from mcp_providers._serve.statics import static_read_problems
from mcp_providers.errors import ConfigError


def failures(composition: Composition) -> list[str]:
    """One line per problem: rejected plugins and failed rules, static reads, ``[server.auth]``,
    unavailable sources (after the static reads, which start every provider), an empty catalog."""
    found = composition.failures + anyio.run(static_read_problems, composition) + _auth_problems(composition)
    found += source_problems(composition)
    if not composition.catalog.served_count:
        named = _selected_names(composition)
        off = [f"{r.name} {r.selection}" for r in composition.records if r.status == "disabled" and r.name in named]
        found.append(
            "nothing is served: every plugin is off or rejected; check the selection (allow, set, "
            "MCP_PROVIDERS_PLUGINS) and the lines above" + (f"; {'; '.join(off)}" if off else "")
        )
    return found


def _selected_names(composition: Composition) -> set[str]:
    """The plugins the selection names to be on (allow, the chosen set, ``$MCP_PROVIDERS_PLUGINS``)."""
    config = composition.config
    chosen = config.sets[config.set].plugins if config.set is not None and config.set in config.sets else ()
    return {*(config.allow or ()), *chosen, *(config.env_plugins or ())}


def warnings(composition: Composition) -> tuple[str | None, list[str]]:
    """The order ``authorize`` implementations are asked in (``None``: none), and one ``warning: ...``
    line per :func:`~mcp_providers._serve.check_report.check_warnings` line and per entry point in a
    near miss of the plugin groups (:mod:`~mcp_providers._cli.near_groups`)."""
    order, found = check_warnings(composition)
    found += [f"warning: {w}" for w in near_misses()]  # plugins discovery cannot see
    return order, found


def summary(composition: Composition) -> str:
    """``3 plugins served, 34 resources, 2 templates, 2 tools, 5 prompts[, 5 skills]``."""
    c = composition.catalog
    served = sum(r.status == "loaded" for r in composition.records)
    counts = (
        f"{len(c.resources)} resources, {len(c.templates)} templates, {len(c.tools)} tools, {len(c.prompts)} prompts"
    )
    return f"{served} plugins served, {counts}" + (f", {len(c.skills)} skills" if c.skills else "")


def _auth_problems(composition: Composition) -> list[str]:
    """``[server.auth]`` tried as ``serve --http 127.0.0.1`` would: token variables set, the issuer
    discoverable, its keys loadable, introspection answering (one line per problem)."""
    config = composition.config.server.auth
    if config is None:
        return []
    from mcp_providers._serve.identity import resource_server

    try:
        resource_server(config, "http://127.0.0.1/mcp")
    except ConfigError as exc:
        return [str(exc)]
    return []
