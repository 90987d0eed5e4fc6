"""Helpers for testing provider plugins against a real, in-process MCP client.

::

    from mcp_providers.testing import assert_check_passes, compose, connect

    def test_check_passes():
        assert_check_passes(compose({"my_plugin": my_plugin}))

    async def test_reads_my_resource():          # with @pytest.mark.anyio
        composition = compose({"my_plugin": my_plugin})
        async with connect(composition) as client:
            result = await client.read_resource("my://thing")

- :func:`compose` composes exactly the plugin modules (or objects) you pass, without entry points;
  :func:`compose_installed` composes installed plugins by entry-point name, as ``serve`` would.
- :func:`connect` gives a connected :class:`mcp.Client` (both protocol eras, cache off).
- :func:`assert_check_passes` fails with every problem ``mcp-providers check`` would print for the
  declarations and the configured sources reported unavailable (its warnings pass unless
  ``warnings_pass=False``); :func:`check` returns every line, warnings included, and also does the
  static-resource double read and starts the providers, naming those that fail to (async).

A composition made here installs, when it starts, every process-wide side-effect guard ``serve``
installs (a test owns its process; see ``docs/embedding.md``).

Composition is strict by default here: a plugin that would be rejected, or a configured source
that serves nothing (``source-unavailable``: an upstream that cannot be listed), raises
:class:`~mcp_providers.errors.CompositionError` listing every problem, so a broken fixture fails
loudly instead of silently serving nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

from mcp import Client

from mcp_providers._serve.check_report import check_warnings
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.composition import compose as _compose
from mcp_providers._serve.sources import source_problems, unavailable
from mcp_providers._serve.statics import static_read_problems
from mcp_providers.config import ClusterSettings, Config, ServerSettings
from mcp_providers.errors import CompositionError
from mcp_providers.identity import Principal, serving_as, transportless

__all__ = [
    "assert_check_passes",
    "check",
    "compose",
    "compose_installed",
    "connect",
]


def compose(
    plugins: Mapping[str, object],
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    server: ServerSettings | None = None,
    load_entrypoints: bool = False,
    strict: bool = True,
    cluster: ClusterSettings | None = None,
) -> Composition:
    """Compose exactly ``plugins`` (name -> plugin module or object), with their settings tables.

    A thin wrapper over :func:`mcp_providers.compose` (the one composition function) with a test's
    defaults: ``compose(Config(plugins=settings, server=server, cluster=cluster),
    load_entrypoints=False, plugins=plugins, strict=True)``. Pass a
    :class:`~mcp_providers.plugin.Plugin` object, a plugin module, or any object with hookimpls.

    :param plugins: plugins registered directly under these names (no entry points needed).
    :param settings: ``{plugin name: settings table}``, as the config file's ``[plugins.<name>]``.
    :param server: server settings (page size, read deadline, budget).
    :param load_entrypoints: also load the installed plugins.
    :param strict: raise :class:`~mcp_providers.errors.CompositionError` on any failure.
    :param cluster: a ``[cluster]`` section (Redis): several compositions with the same one behave
        as replicas of one deployment.
    :returns: the :class:`~mcp_providers.Composition` (``.server`` is the SDK server).
    :raises ConfigError: ``settings`` names a plugin that is not passed (or installed).
    :raises CompositionError: with ``strict``, when a plugin is rejected, a check fails or a
        configured source is unavailable (as ``mcp-providers check`` fails).
    """
    config = Config(
        plugins={k: dict(v) for k, v in (settings or {}).items()}, server=server or ServerSettings(), cluster=cluster
    )
    composition = _as_served(_compose(config, load_entrypoints=load_entrypoints, plugins=plugins))
    if strict and (failed := _failures(composition)):
        raise CompositionError(failed)
    return composition


def _failures(composition: Composition) -> list[str]:
    """What ``check`` fails on without starting a provider: rejected plugins, failed checks and
    configured sources reported unavailable."""
    return [*composition.failures, *unavailable(composition)]


def _as_served(composition: Composition) -> Composition:
    """A test owns its process: the composition installs every guard ``serve`` installs when it
    starts, so a plugin's test sees its code refused as it would be while serving."""
    composition.runtime.process_guards = True
    return composition


def compose_installed(
    names: Sequence[str],
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    server: ServerSettings | None = None,
    strict: bool = True,
) -> Composition:
    """Compose only the installed plugins named ``names``, found through their entry points.

    This is what an operator gets with ``allow = [...names]``: use it to test that your
    distribution's entry point is declared and loads.

    :param names: entry-point names in the ``mcp_providers`` group.
    :param settings: ``{plugin name: settings table}``.
    :raises ConfigError: a name is not an installed entry point (the message lists the installed ones).
    :raises CompositionError: with ``strict``, when a named plugin is rejected, a check fails or
        one of its sources is unavailable.
    """
    config = Config(
        allow=tuple(names),
        plugins={k: dict(v) for k, v in (settings or {}).items()},
        server=server or ServerSettings(),
    )
    composition = _as_served(_compose(config, load_entrypoints=True, strict=False))
    if strict:
        # Other installed plugins are disabled by the allow list; only the named ones must be clean.
        mine = [line for line in _failures(composition) if set(line.split(":", 1)[0].split(" + ")) & set(names)]
        if mine:
            raise CompositionError(mine)
    return composition


@contextlib.asynccontextmanager
async def connect(
    composition: Composition, mode: Literal["auto", "legacy"] = "auto", *, principal: Principal | None = None
) -> AsyncIterator[Client]:
    """A connected in-memory MCP client with its response cache off.

    :param mode: ``"auto"`` speaks 2026-07-28; ``"legacy"`` forces the 2025-11-25 handshake over
        JSON-RPC framing.
    :param principal: who the server serves the requests made inside this block for (default
        :data:`~mcp_providers.identity.LOCAL`), e.g. ``Principal("alice", issuer="https://idp/",
        groups={"itil"})`` to test a policy rule on a group. It belongs to the calling task's
        context (:func:`~mcp_providers.identity.serving_as`), not to the client object: inside a
        nested ``connect(principal=bob)`` block, requests of the outer client are served as bob
        too. To test two callers at once, give each its own task and its own ``connect``.
    """
    with serving_as(principal or transportless()):
        async with Client(composition.server, mode=mode, cache=None) as client:
            yield client


def assert_check_passes(composition: Composition, *, warnings_pass: bool = True) -> None:
    """Fail with every problem, one per line, unless the composition has none.

    Covers rejected plugins, every declaration check and configured sources reported unavailable
    (``source-unavailable``); :func:`check` adds the double read of resources declared static and
    the providers that fail to start. What ``mcp-providers check`` warns about (``warning: ...`` lines,
    e.g. ``uri-not-canonical``) passes, as it does there, unless ``warnings_pass=False``; a failure's
    message lists the warnings too.

    :raises AssertionError: ``mcp-providers check failed:`` followed by one line per warning and problem.
    """
    warned, failed = check_warnings(composition)[1], _failures(composition)
    if failed or (warned and not warnings_pass):
        raise AssertionError("mcp-providers check failed:\n" + "\n".join([*warned, *failed]))


async def check(composition: Composition) -> list[str]:
    """Every line ``mcp-providers check`` prints for ``composition`` but its summary: empty when it
    passes without a warning.

    :returns: one ``warning: ...`` line per warning (the check still passes), then one line per
        rejected plugin, failed declaration check, static resource that failed to read or read
        differently twice, configured source reported unavailable (``source-unavailable``) and
        provider that failed to start (``provider-failed-to-start``; the static reads start them).
    """
    warned = check_warnings(composition)[1]
    read = await static_read_problems(composition)
    return [*warned, *composition.failures, *read, *source_problems(composition)]
