"""The whole config file (:class:`Config`) and reading it (:func:`load_config`)."""

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mcp_providers.config.cluster import ClusterSettings
from mcp_providers.config.environment import CONFIG_ENV, DISABLE_ENV, PLUGINS_ENV
from mcp_providers.config.errors import format_validation_error
from mcp_providers.config.server import ServerSettings
from mcp_providers.errors import ConfigError
from mcp_providers.identity import TRUSTED_ISSUERS

__all__ = ["Config", "PluginSet", "load_config", "settings_context"]


class PluginSet(BaseModel):
    """One ``[sets.<name>]`` table: a named selection of plugins."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

    plugins: tuple[str, ...]
    """Entry-point names of the plugins in this set."""
    description: str | None = None


def _requirement_problem(text: str) -> str | None:
    """Why ``text`` cannot be a ``required_plugins`` entry, or ``None``."""
    from packaging.requirements import InvalidRequirement, Requirement  # only when required_plugins is set

    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        example = "e.g. 'mcp-providers-weather>=0.3'"
        return f"{text!r} is not a requirement ({exc}); write a distribution name and versions, {example}"
    if requirement.url or requirement.extras:
        what = "a URL" if requirement.url else "extras"
        return f"{text!r} has {what}; name the plugin's distribution and versions only, e.g. {requirement.name}>=1.0"
    return None


class Config(BaseModel):
    """The whole config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    required_plugins: tuple[str, ...] = ()
    """Plugin *distributions* ``serve`` and ``check`` refuse to run without, as PEP 508 requirements
    (``"mcp-providers-weather>=0.3"``; a marker such as ``; sys_platform == 'linux'`` limits where one
    applies), like pytest's ``required_plugins``. Each must be installed, declare an entry point in
    the ``mcp_providers`` group, and have a version in range (pre-releases count). Unlike
    ``[server] require_plugins`` (entry-point names that must load and pass their checks), this asks
    only what is installed."""

    allow: tuple[str, ...] | None = None
    """Entry-point names of the only plugins to load; ``None`` loads every installed one."""
    deny: tuple[str, ...] = ()
    """Entry-point names never to load (applied after ``allow``)."""
    set: str | None = None
    """Name of the plugin set in :attr:`sets` to serve; ``--set`` overrides it."""
    sets: dict[str, PluginSet] = Field(default_factory=dict)
    """Named plugin sets (``[sets.<name>]``)."""
    env_plugins: tuple[str, ...] | None = None
    """From ``$MCP_PROVIDERS_PLUGINS`` (set by :func:`load_config`; not allowed in the file)."""
    env_disable: tuple[str, ...] = ()
    """From ``$MCP_PROVIDERS_DISABLE`` (set by :func:`load_config`; not allowed in the file)."""
    server: ServerSettings = ServerSettings()
    cluster: ClusterSettings | None = None
    """``[cluster]``: the Redis backend shared by replicas; ``None`` keeps everything in process."""
    plugins: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-plugin settings tables, keyed by entry-point name."""

    @field_validator("required_plugins")
    @classmethod
    def _requirements(cls, required: tuple[str, ...]) -> tuple[str, ...]:
        problems = [p for p in map(_requirement_problem, required) if p]
        if problems:
            raise ValueError("; ".join(problems))
        return required


def settings_context(config: Config) -> dict[str, Any]:
    """The pydantic validation context every plugin's settings table is validated with:
    ``{TRUSTED_ISSUERS: <the issuers [server.auth] accepts>}`` (see
    :data:`~mcp_providers.identity.TRUSTED_ISSUERS`; ``()`` without ``[server.auth]``)."""
    auth = config.server.auth
    return {TRUSTED_ISSUERS: auth.principal_issuers if auth is not None else ()}


def _names(environ: Mapping[str, str], variable: str) -> tuple[str, ...] | None:
    raw = environ.get(variable)
    if raw is None or not raw.strip():
        return None
    return tuple(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))


def load_config(
    path: str | Path | None = None,
    *,
    plugin_set: str | None = None,
    environ: Mapping[str, str] | None = None,
    reloading: bool = False,
) -> Config:
    """Read and validate the config file, then apply ``--set`` and the environment overrides.

    :param path: the file; ``None`` falls back to ``$MCP_PROVIDERS_CONFIG``, then to no file.
    :param plugin_set: the set to serve (``--set``), overriding the file's ``set``.
    :param environ: where ``MCP_PROVIDERS_*`` variables are read; default ``os.environ``.
    :param reloading: read it as a reload does: the file must be a regular file (a FIFO's read
        would wait for ever) and hold something (an empty one is a file caught mid-write, and
        would compose every plugin with its defaults, policy rules gone). Both are judged on the
        one read whose text is parsed, never on an earlier look (round 4 item 8).
    :returns: the validated :class:`Config` (defaults when there is no file).
    :raises ConfigError: the file is missing, is not TOML (or JSON for ``.json``), or has invalid
        fields; when ``reloading``, also not a regular file, or empty. (A set or plugin that does
        not exist is reported by discovery.)
    """
    environ = os.environ if environ is None else environ
    config = _load_file(path if path is not None else (environ.get(CONFIG_ENV) or None), reloading=reloading)
    update: dict[str, Any] = {}
    if plugin_set is not None:
        update["set"] = plugin_set
    only = _names(environ, PLUGINS_ENV)
    if only is not None:
        update["env_plugins"] = only
    update["env_disable"] = _names(environ, DISABLE_ENV) or ()
    return config.model_copy(update=update)


def _read_regular(file: Path) -> str:
    """The text of ``file``, judged on the descriptor it is read from: open without waiting (a FIFO
    with no writer opens at once), refuse anything but a regular file, then read that same file.

    :raises ConfigError: not a regular file. (OSError and UnicodeDecodeError as ``read_text``.)
    """
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(str(file))
        if not stat.S_ISREG(mode):
            raise ConfigError(f"config file {file} is not a regular file; pass a TOML file")
        return handle.read().decode("utf-8")


def _load_file(path: str | Path | None, *, reloading: bool = False) -> Config:
    if path is None:
        return Config()
    file = Path(path)
    try:
        text = _read_regular(file) if reloading else file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist; pass an existing TOML file") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {file} is a directory; pass a TOML file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {file} is not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"config file {file} cannot be read: {exc.strerror}") from None
    if reloading and not text.strip():  # judged on the text parsed below: one read
        raise ConfigError(
            f"config file {file} is empty (caught mid-write?); "
            "to serve every installed plugin with its defaults, put a comment in it"
        )
    import tomllib  # only when a file is read: a serve with no config needs no TOML parser

    try:
        # JSON (same shape) is accepted for configs written by programs, e.g. the demo.
        data = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "JSON" if file.suffix == ".json" else "TOML"
        raise ConfigError(f"config file {file} is not valid {kind}: {exc}") from None
    for key in ("env_plugins", "env_disable"):
        if isinstance(data, dict) and key in data:
            variable = PLUGINS_ENV if key == "env_plugins" else DISABLE_ENV
            raise ConfigError(f"config file {file}: {key} comes from ${variable}; use allow/deny or a set in the file")
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"config file {file}: {format_validation_error(exc, 'config', Config)}") from None
