"""Composition: discovery + checks + catalog, as one library object.

::

    composition = compose(load_config("mcp-providers.toml"))
    server = composition.server          # an SDK low-level Server, ready for any transport
    composition.problems                 # what the checks found (those plugins are not served)

``compose(..., strict=True)`` raises :class:`~mcp_providers.errors.CompositionError` instead of
serving around a broken plugin.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import pluggy

from mcp_providers.catalog import Catalog
from mcp_providers.checks import Declared, Problem, check, declare
from mcp_providers.config import Config
from mcp_providers.discovery import PluginRecord, discover
from mcp_providers.errors import CompositionError
from mcp_providers.policy import Authorizer
from mcp_providers.providers import ResourceProvider
from mcp_providers.subscriptions import SubscriptionHub

if TYPE_CHECKING:
    from mcp.server import Server

__all__ = ["Composition", "compose"]

log = logging.getLogger("mcp_providers.composition")


@dataclass
class Composition:
    """The checked result of composing plugins: what is served, and what was left out and why."""

    config: Config
    plugin_manager: pluggy.PluginManager
    records: list[PluginRecord]
    declared: list[Declared]
    problems: list[Problem]
    catalog: Catalog
    startup_failures: dict[str, str] = field(default_factory=dict)
    """Provider name -> why its ``lifespan`` failed to start; its requests get an upstream error."""
    _running: int = field(default=0, repr=False)
    _stack: contextlib.AsyncExitStack | None = field(default=None, repr=False)

    @property
    def failures(self) -> list[str]:
        """One line per rejected plugin, per failed check and per configured policy left off."""
        lines = [f"{r.name}: rejected: {r.reason}" for r in self.records if r.status == "rejected"]
        lines += [str(p) for p in self.problems]
        return lines + [_policy_off(r) for r in self.records if r.policy_off]

    @property
    def policy_failures(self) -> list[str]:
        """Why serving would skip configured authorization: a policy plugin (one implementing
        ``authorize``) that was rejected, or left out by the selection while the config has its
        settings. Serving then fails closed."""
        return [
            f"{r.name}: policy plugin rejected ({r.reason}); its rules would not apply"
            for r in self.records
            if r.status == "rejected" and "authorize" in r.hooks
        ] + [_policy_off(r) for r in self.records if r.policy_off]

    @cached_property
    def server(self) -> Server[object]:
        """The SDK low-level ``Server`` bound to this composition (built once).

        :raises CompositionError: a configured policy plugin is not in force (fail closed; see
            :attr:`policy_failures`).
        """
        from mcp_providers.server import build_server

        if self.policy_failures:
            raise CompositionError(["refusing to serve without its authorization policy:", *self.policy_failures])
        return build_server(self)

    @cached_property
    def subscriptions(self) -> SubscriptionHub:
        """Watchers of live resources in both protocol eras (see :mod:`mcp_providers.subscriptions`)."""
        authorize = self.authorizer
        return SubscriptionHub(self.catalog, lambda subject, uri: authorize(subject, "subscribe", uri).allow)

    @cached_property
    def authorizer(self) -> Authorizer:
        """Asks the served plugins' ``authorize`` hooks, each with its own settings."""
        settings = {r.name: r.settings for r in self.records if r.status == "loaded"}
        return Authorizer.from_plugin_manager(self.plugin_manager, settings)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Enter every served provider's ``lifespan`` (once, however many times this is nested)."""
        if self._running == 0:
            stack = contextlib.AsyncExitStack()
            await stack.__aenter__()
            self.startup_failures.clear()
            for d in self.declared:
                if isinstance(d.provider, ResourceProvider):
                    d.provider.publisher = self.subscriptions.publisher(d.provider)
                try:
                    await stack.enter_async_context(d.provider.lifespan())
                except Exception as exc:
                    # One provider that cannot start must not take the others down.
                    log.exception("provider %r (plugin %r) failed to start", d.provider.name, d.plugin)
                    self.startup_failures[d.provider.name] = f"{type(exc).__name__}: {exc}"
            self._stack = stack
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            if self._running == 0 and self._stack is not None:
                stack, self._stack = self._stack, None
                await stack.aclose()


def _policy_off(record: PluginRecord) -> str:
    return (
        f"{record.name}: policy plugin has [plugins.{record.name}] settings but is off ({record.reason}); "
        f"its rules would not apply: select it, or remove [plugins.{record.name}]"
    )


def compose(
    config: Config | None = None,
    *,
    load_entrypoints: bool = True,
    plugins: Mapping[str, object] | None = None,
    strict: bool = False,
) -> Composition:
    """Discover plugins, check every declaration and build the catalog.

    :param config: the operator's config; ``None`` is the embedded default (every installed plugin).
    :param load_entrypoints: scan the ``mcp_providers`` entry-point group.
    :param plugins: extra plugin modules or objects registered directly, by name.
    :param strict: raise instead of serving around rejected plugins and failed checks.
    :raises ConfigError: the config names a plugin that is not installed.
    :raises CompositionError: with ``strict``, when anything was rejected or failed a check.
    """
    config = config or Config()
    pm, records = discover(config, load_entrypoints=load_entrypoints, plugins=plugins)
    declared, problems = declare(records)
    problems += check(declared)
    bad = {name for p in problems for name in p.plugins}
    for record in records:
        if record.name in bad and record.status == "loaded":
            record.reject("failed checks (see mcp-providers check)")
            if record.plugin is not None and pm.is_registered(record.plugin):
                pm.unregister(record.plugin)
    served = [d for d in declared if d.plugin not in bad]
    composition = Composition(config, pm, records, served, problems, Catalog(served))
    if strict and composition.failures:
        raise CompositionError(composition.failures)
    return composition
