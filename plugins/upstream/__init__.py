"""Upstream MCP servers as providers: each ``[[plugins.upstream.servers]]`` entry is one MCP
server (stdio or streamable HTTP, either protocol era) whose resources, templates, tools and
prompts are served here under the same checks, gate, budgets, receipts and audit as any plugin.

Hooks implemented: :func:`settings_model`, :func:`register_resource_providers`,
:func:`register_tool_providers` and :func:`register_prompt_providers`. The three hooks share one
listing per settings object (:func:`~mcp_providers.plugins.upstream.built.providers_of`, imported
only when a server is configured): every upstream is connected once at composition, listed and
closed; while serving, the resource provider's ``lifespan`` holds one connection that
its tool and prompt providers use too. ``docs/upstreams.md`` is the operator's page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from mcp_providers.hookspecs import hookimpl
from mcp_providers.plugins.upstream.settings import UpstreamSettings
from mcp_providers.providers import PromptProvider, ResourceProvider, ToolProvider

if TYPE_CHECKING:
    from mcp_providers.plugins.upstream.built import Built

__all__ = [
    "UpstreamSettings",
    "register_prompt_providers",
    "register_resource_providers",
    "register_tool_providers",
    "settings_model",
]


def _built(settings: UpstreamSettings | None) -> Built | None:
    """The providers of every configured upstream, or ``None`` when none is configured (every
    ``serve`` without ``[plugins.upstream]`` composes this plugin): nothing is then listed, and the
    SDK's client, the link and the mapping are not imported."""
    if settings is None or not settings.servers:
        return None
    from mcp_providers.plugins.upstream.built import providers_of  # only with a server configured

    return providers_of(settings)


@hookimpl
def settings_model() -> type[BaseModel]:
    """The plugin's settings: :class:`UpstreamSettings` (a list of servers)."""
    return UpstreamSettings


@hookimpl
def register_resource_providers(settings: UpstreamSettings | None) -> Sequence[ResourceProvider]:
    """One :class:`UpstreamResources` per configured server."""
    built = _built(settings)
    return list(built.resources) if built else []


class Unconfigured(ToolProvider):
    """Registered when no server is configured: it declares nothing. A built-in with nothing
    configured is not a mistake, so ``check`` has nothing to warn about (a plugin registering no
    provider at all would be named as contributing nothing)."""

    name = "upstream-unconfigured"


@hookimpl
def register_tool_providers(settings: UpstreamSettings | None) -> Sequence[ToolProvider]:
    """One :class:`UpstreamTools` per configured server (:class:`Unconfigured` with none)."""
    built = _built(settings)
    return list(built.tools) if built and built.tools else [Unconfigured()]


@hookimpl
def register_prompt_providers(settings: UpstreamSettings | None) -> Sequence[PromptProvider]:
    """One :class:`UpstreamPrompts` per configured server."""
    built = _built(settings)
    return list(built.prompts) if built else []
