"""Helpers for testing provider plugins against a real, in-process MCP client.

::

    from mcp_providers.testing import compose, connect

    async def test_reads_my_resource():
        composition = compose({"my_plugin": my_plugin})
        async with connect(composition) as client:
            result = await client.read_resource("my://thing")
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal

from mcp import Client
from mcp_providers.composition import Composition
from mcp_providers.composition import compose as _compose
from mcp_providers.config import Config, ServerSettings

__all__ = ["assert_check_passes", "compose", "connect"]


def compose(
    plugins: Mapping[str, object],
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    server: ServerSettings | None = None,
    load_entrypoints: bool = False,
    strict: bool = True,
) -> Composition:
    """Compose exactly ``plugins`` (name -> plugin module or object), with their settings tables.

    :param plugins: plugins registered directly under these names (no entry points needed).
    :param settings: ``{plugin name: settings table}``, as the config file's ``[plugins.<name>]``.
    :param server: server settings (page size, read deadline, budget).
    :param load_entrypoints: also load the installed plugins.
    :param strict: raise :class:`~mcp_providers.errors.CompositionError` on any failure.
    """
    config = Config(plugins={k: dict(v) for k, v in (settings or {}).items()}, server=server or ServerSettings())
    return _compose(config, load_entrypoints=load_entrypoints, plugins=plugins, strict=strict)


@contextlib.asynccontextmanager
async def connect(composition: Composition, mode: Literal["auto", "legacy"] = "auto") -> AsyncIterator[Client]:
    """A connected in-memory MCP client with its response cache off.

    :param mode: ``"auto"`` speaks 2026-07-28; ``"legacy"`` forces the 2025-11-25 handshake over
        JSON-RPC framing.
    """
    async with Client(composition.server, mode=mode, cache=None) as client:
        yield client


def assert_check_passes(composition: Composition) -> None:
    """Fail with every problem, one per line, unless the composition has none."""
    if composition.failures:
        raise AssertionError("mcp-providers check failed:\n" + "\n".join(composition.failures))
