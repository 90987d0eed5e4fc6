"""The environment variables the config file is read with, and the pattern of a variable's name."""

from __future__ import annotations

__all__ = ["CONFIG_ENV", "DISABLE_ENV", "PLUGINS_ENV"]


CONFIG_ENV = "MCP_PROVIDERS_CONFIG"
PLUGINS_ENV = "MCP_PROVIDERS_PLUGINS"
"""Comma-separated entry-point names: serve only these (replaces the set and ``allow``)."""
DISABLE_ENV = "MCP_PROVIDERS_DISABLE"
"""Comma-separated entry-point names: never serve these (like ``deny``)."""
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
