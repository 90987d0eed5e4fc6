"""Configured sources that serve nothing: what ``check`` fails on and ``serve --strict`` refuses.

A provider reaching something outside this server (an upstream MCP server, an OpenAPI service, an
instance's API) may find it unavailable in two ways, each one line here:

- at composition: it reports its source in ``left_out`` as ``unavailable``
  (:func:`~mcp_providers._host.advisories.unavailable_sources`, rule ``source-unavailable``);
- when it starts: its ``lifespan`` raised or did not start in time, recorded in the runtime's
  ``startup_failures`` (rule ``provider-failed-to-start``), unless it already said so above.

Plain ``serve`` warns and serves every other provider; a provider that failed to start answers
its requests with an upstream error (``/readyz`` names it). The CLI and :mod:`mcp_providers.testing`
both report from here, so a test's ``check`` fails where ``mcp-providers check`` does.
"""

from __future__ import annotations

from mcp_providers._host.advisories import unavailable_providers, unavailable_sources
from mcp_providers._serve.composition import Composition

START_FIX = (
    "make what it connects to reachable (the log says why; run with --verbose for the traceback); "
    "serve without --strict serves every other provider meanwhile"
)


def unavailable(composition: Composition) -> list[str]:
    """One line per source reported unavailable at composition."""
    return [str(p) for p in unavailable_sources(composition.declared)]


def source_problems(composition: Composition) -> list[str]:
    """One line per unavailable source: those reported at composition, then the providers whose
    ``lifespan`` failed to start (call it once the providers were started, e.g. after
    :func:`~mcp_providers._serve.statics.static_read_problems`)."""
    said = unavailable_providers(composition.declared)
    plugin_of = {d.provider.name: d.plugin for d in composition.declared}
    failed = [
        f"{plugin_of.get(name, '?')}: provider-failed-to-start: {name!r}: {why}; fix: {START_FIX}"
        for name, why in sorted(composition.startup_failures.items())
        if name not in said
    ]
    return unavailable(composition) + failed
