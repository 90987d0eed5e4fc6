"""ServiceNow built-in plugin: instances, incidents, update sets, problems and changes as
resources under ``servicenow://``, and table reads and incident writes as tools.

Hooks implemented: :func:`settings_model`, :func:`register_resource_providers`,
:func:`register_tool_providers`, :func:`register_prompt_providers` and :func:`demo_settings`. The providers
share one :class:`~mcp_providers.plugins.servicenow.client.InstancePool` per settings object, so each
configured instance has exactly one HTTP client, opened while the server runs. A local Table API
emulator for tests and demos is in :mod:`mcp_providers.plugins.servicenow.emulator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from pydantic import BaseModel

from mcp_providers.hookspecs import hookimpl
from mcp_providers.plugins.servicenow.prompts import ServiceNowPrompts
from mcp_providers.plugins.servicenow.resources import ServiceNowResources
from mcp_providers.plugins.servicenow.settings import ServiceNowSettings
from mcp_providers.plugins.servicenow.tools import ServiceNowTools
from mcp_providers.providers import PromptProvider, ResourceProvider, ToolProvider

__all__ = [
    "ServiceNowPrompts",
    "ServiceNowResources",
    "ServiceNowSettings",
    "ServiceNowTools",
    "demo_settings",
    "register_prompt_providers",
    "register_resource_providers",
    "register_tool_providers",
    "settings_model",
]


@hookimpl
def settings_model() -> type[BaseModel]:
    """The plugin's settings: :class:`ServiceNowSettings` (a list of instances)."""
    return ServiceNowSettings


@hookimpl
def register_resource_providers(settings: ServiceNowSettings | None) -> Sequence[ResourceProvider]:
    """One :class:`ServiceNowResources` over the configured instances."""
    settings = settings if settings is not None else ServiceNowSettings()
    return [ServiceNowResources(settings.pool())]


@hookimpl
def register_tool_providers(settings: ServiceNowSettings | None) -> Sequence[ToolProvider]:
    """One :class:`ServiceNowTools` over the same instances (and the same HTTP clients)."""
    settings = settings if settings is not None else ServiceNowSettings()
    return [ServiceNowTools(settings.pool())]


@hookimpl
def register_prompt_providers(settings: ServiceNowSettings | None) -> Sequence[PromptProvider]:
    """One :class:`ServiceNowPrompts` over the same instances (none declared with no instance)."""
    settings = settings if settings is not None else ServiceNowSettings()
    return [ServiceNowPrompts(settings.pool())]


@hookimpl
def demo_settings() -> AbstractContextManager[dict[str, Any]]:
    """Start emulated ``dev`` and ``prod`` instances on 127.0.0.1 for ``mcp-providers demo``.

    The credentials are random, exported in environment variables for the duration, and named
    (never included) in the yielded settings table.
    """
    from mcp_providers.plugins.servicenow.emulator import demo_instances  # the server stack only when asked

    return demo_instances()
