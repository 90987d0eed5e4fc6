"""The operator's config file (TOML) and its defaults.

Shape::

    allow = ["ssg_catalog", "servicenow"]   # only these plugins (default: every installed one)
    deny = ["workflows"]                    # never these

    [server]
    page_size = 100              # items per list page
    read_timeout = 30.0          # seconds a provider may take for one read or call
    max_read_bytes = 4194304     # read budget in bytes, overridable per resource

    [plugins.servicenow]         # validated by that plugin's settings_model()
    ...

No file means every installed plugin with its defaults (the embedded default). The path comes from
``--config`` or the ``MCP_PROVIDERS_CONFIG`` environment variable.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from mcp_providers.errors import ConfigError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["CONFIG_ENV", "Config", "ServerSettings", "format_validation_error", "load_config"]

CONFIG_ENV = "MCP_PROVIDERS_CONFIG"


class ServerSettings(BaseModel):
    """The ``[server]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "mcp-providers"
    """Server name reported to clients."""
    page_size: int = Field(default=100, ge=1, le=10_000)
    """Items per page of every list result."""
    read_timeout: float = Field(default=30.0, gt=0)
    """Seconds one provider read or tool call may take before it is cut off."""
    max_read_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    """Largest resource read served, in bytes (a resource's ``max_bytes`` overrides it)."""


class Config(BaseModel):
    """The whole config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: tuple[str, ...] | None = None
    """Entry-point names of the only plugins to load; ``None`` loads every installed one."""
    deny: tuple[str, ...] = ()
    """Entry-point names never to load (applied after ``allow``)."""
    server: ServerSettings = ServerSettings()
    plugins: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-plugin settings tables, keyed by entry-point name."""


def format_validation_error(error: ValidationError, where: str) -> str:
    """One line per field: ``<where>.<field path>: <message> (got <value>)``."""
    lines = []
    for item in error.errors():
        path = ".".join(str(p) for p in item["loc"])
        got = item.get("input")
        shown = "" if isinstance(got, dict) else f" (got {got!r})"
        lines.append(f"{where}.{path}: {item['msg']}{shown}" if path else f"{where}: {item['msg']}")
    return "; ".join(lines)


def load_config(path: str | Path | None = None) -> Config:
    """Read and validate the config file.

    :param path: the file; ``None`` falls back to ``$MCP_PROVIDERS_CONFIG``, then to no file.
    :returns: the validated :class:`Config` (defaults when there is no file).
    :raises ConfigError: the file is missing, is not TOML (or JSON for ``.json``), or has invalid fields.
    """
    if path is None:
        path = os.environ.get(CONFIG_ENV) or None
    if path is None:
        return Config()
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist; pass an existing TOML file") from None
    try:
        # JSON (same shape) is accepted for configs written by programs, e.g. the demo.
        data = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "JSON" if file.suffix == ".json" else "TOML"
        raise ConfigError(f"config file {file} is not valid {kind}: {exc}") from None
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"config file {file}: {format_validation_error(exc, 'config')}") from None
