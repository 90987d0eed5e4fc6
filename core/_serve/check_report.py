"""What ``check`` warns about a composition (:func:`check_warnings`), for the CLI and
:mod:`mcp_providers.testing` alike. Imported by them only, never on ``serve``'s path."""

from __future__ import annotations

from mcp_providers._host.advisories import advisories
from mcp_providers._host.plugin_checks import plugin_advisories
from mcp_providers._host.shape import contributes_nothing
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.statics import aggregate_report, authorize_report


def check_warnings(composition: Composition) -> tuple[str | None, list[str]]:
    """What ``check`` warns about a composition (it still passes): the order ``authorize``
    implementations are asked in (``None``: none), and one ``warning: ...`` line per advisory
    (:func:`~mcp_providers._host.advisories.advisories`), listed declaration left out for a
    collision, undercut aggregate, plugin's own advisory (``check_composition``), deprecation and
    plugin contributing nothing."""
    order, found = authorize_report(composition)
    found += [f"warning: {w}" for w in advisories(composition.assembly.declared)]
    found += [f"warning: {w}" for w in composition.assembly.left_out]  # listed declarations that collided
    found += [f"warning: {w}" for w in aggregate_report(composition)]
    auth = composition.config.server.auth
    found += [f"warning: {w}" for w in plugin_advisories(composition.records, composition.catalog, auth)]
    found += [f"warning: {r.name}: {d}" for r in composition.records for d in r.deprecations]
    found += [f"warning: {w}" for w in contributes_nothing(composition.records)]
    return order, found
