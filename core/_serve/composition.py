"""Composition: what :func:`mcp_providers.compose` returns, the frozen assembly plus its runtime.

::

    composition = compose(load_config("mcp-providers.toml"))
    server = composition.server          # an SDK low-level Server, ready for any transport
    composition.problems                 # what the checks found (those plugins are not served)

``compose(..., strict=True)`` raises :class:`~mcp_providers.errors.CompositionError` instead of
serving around a broken plugin. The server is built on first use and refuses (fail closed) while a
plugin that could carry authorization is not in force.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp_types as types
import pluggy
from mcp.server import Server

from mcp_providers._host.assembly import Assembly, assemble
from mcp_providers._host.catalog import Catalog
from mcp_providers._host.declarations import Declared, Problem
from mcp_providers._host.records import PluginRecord
from mcp_providers._serve.binding import build_server, method_table, run_task_call
from mcp_providers._serve.pipeline import Pipeline
from mcp_providers._serve.runtime import Runtime
from mcp_providers._serve.state.tasks import RunningTask
from mcp_providers._serve.steps import tracing
from mcp_providers.config import Config
from mcp_providers.errors import CompositionError


class Composition:
    """The checked result of composing plugins, and the server that serves it.

    :param assembly: what is served (frozen).
    """

    def __init__(self, assembly: Assembly) -> None:
        self.runtime = Runtime(assembly, method_table, self._task_call)

    async def _task_call(self, task: RunningTask, params: types.CallToolRequestParams) -> Any:
        """A task's body: its ``tools/call`` through this composition's pipeline once more (read
        when a task runs: the runtime and the pipeline exist by then)."""
        return await run_task_call(self.runtime, self.pipeline, task, params)

    # -- what is served (read-only views of the current assembly; a reload replaces it) --------

    @property
    def assembly(self) -> Assembly:
        return self.runtime.assembly

    @property
    def config(self) -> Config:
        return self.assembly.config

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        return self.assembly.plugin_manager

    @property
    def records(self) -> tuple[PluginRecord, ...]:
        return self.assembly.records

    @property
    def declared(self) -> tuple[Declared, ...]:
        return self.assembly.declared

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self.assembly.problems

    @property
    def catalog(self) -> Catalog:
        return self.assembly.catalog

    @property
    def failures(self) -> list[str]:
        """One line per rejected plugin, per failed check and per authorization plugin not in force."""
        return self.assembly.failures

    @property
    def policy_failures(self) -> list[str]:
        """Why serving would skip authorization (see :attr:`Assembly.policy_failures`)."""
        return self.assembly.policy_failures

    # -- serving --------------------------------------------------------------------------------

    @property
    def startup_failures(self) -> dict[str, str]:
        """Provider name -> why its ``lifespan`` failed to start."""
        return self.runtime.startup_failures

    @functools.cached_property
    def pipeline(self) -> Pipeline:
        runtime = self.runtime
        tracer = tracing.server_tracer()  # None unless a tracer provider is set: traces off
        limit = self.assembly.config.server.max_uri_length
        return Pipeline(runtime.audit, runtime.limiter, runtime.credentials, tracer, max_uri_length=limit)

    @functools.cached_property
    def server(self) -> Server[object]:
        """The SDK low-level ``Server`` bound to this composition (built once).

        :raises CompositionError: a top-level ``required_plugins`` entry is not met, or a plugin that
            could carry authorization is not in force (fail closed; see :attr:`policy_failures`).
        """
        if self.assembly.unmet_requirements:
            raise CompositionError(["refusing to serve: required_plugins not met:", *self.assembly.unmet_requirements])
        if self.policy_failures:
            raise CompositionError(["refusing to serve without its authorization policy:", *self.policy_failures])
        return build_server(self.runtime, self.pipeline, self.config.server.name, _version(), self.config.server.icons)

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Enter every served provider's ``lifespan`` (once, however many times this is nested)."""
        return self.runtime.running()


def _version() -> str:
    try:
        return version("mcp-providers")
    except PackageNotFoundError:
        return "0+unknown"


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
    composition = Composition(assemble(config or Config(), load_entrypoints=load_entrypoints, plugins=plugins))
    if strict and composition.failures:
        raise CompositionError(composition.failures)
    return composition
