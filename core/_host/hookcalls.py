"""Each plugin registered on its own pluggy manager and its hooks called one plugin at a time:
registration, settings, and the providers it returns."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import pluggy
from pydantic import BaseModel, ValidationError

from mcp_providers import hookspecs
from mcp_providers._host.hookscan import PluginManager, add_implemented_specs, runs_no_code, spec_may_warn
from mcp_providers._host.isolation import one_line, reraise_interrupt, stdout_to_stderr, watched
from mcp_providers._host.records import PROVIDER_HOOKS, PluginRecord
from mcp_providers._host.shape import HOOKS, did_you_mean, provider_problem
from mcp_providers._host.skills import SkillFiles
from mcp_providers._invalid import described
from mcp_providers.config import Config, format_validation_error, settings_context
from mcp_providers.config.errors import ignored_key_line
from mcp_providers.config.ignored import ignored_keys
from mcp_providers.errors import MCPProvidersDeprecationWarning
from mcp_providers.providers import ExtensionProvider, ResourceProvider, ToolProvider
from mcp_providers.skills import SkillProvider

TRACE_ENV = "MCP_PROVIDERS_TRACE_PLUGINS"
"""Set to ``1`` to print every hook call (arguments, implementations, results) to stderr."""


def plugin_manager(specs: bool = True) -> pluggy.PluginManager:
    """A plugin manager with the hookspecs added (none with ``specs=False``: a plugin's own manager,
    given the specs of the hooks it implements once it is registered, :func:`register_plugin`),
    tracing to stderr when ``$MCP_PROVIDERS_TRACE_PLUGINS`` is set."""
    pm = PluginManager(hookspecs.PROJECT)
    if specs:
        pm.add_hookspecs(hookspecs)
    if os.environ.get(TRACE_ENV, "") not in ("", "0"):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    return pm


def call_hook(record: PluginRecord, hook: str, **kwargs: Any) -> tuple[bool, Any]:
    """Call only this plugin's implementation of ``hook``, through pluggy's hook caller of the
    plugin's own manager (isolation: one plugin's error is its own), in the caller's thread, where
    what it makes is used (:func:`~mcp_providers._host.isolation.watched` names it if it runs long).

    :returns: ``(implemented, result)``; ``result`` is ``None`` when the implementation returned it.
    """
    # A plugin's own manager has a hook caller for the hooks it implements only (register_plugin).
    caller = getattr(record.manager.hook, hook, None) if record.manager is not None else None
    if caller is None or not caller.get_hookimpls():
        return False, None
    with stdout_to_stderr(), watched(record.name, f"hook {hook}"):
        results = caller(**kwargs)
    return True, (results[0] if results else None)


def _told(exc: BaseException, hook: str) -> str:
    """Why a hook call failed, in one line (a declaration model refused, in words)."""
    said = described(exc) if isinstance(exc, Exception) else None
    return f"hook {hook}: {said}" if said else f"hook {hook} raised {one_line(exc)}"


def register_plugin(pm: pluggy.PluginManager, record: PluginRecord, plugin: object) -> None:
    """Register ``plugin`` with a manager of its own (where its hooks are called, alone) and with
    the composition's (which lists every plugin); a mismatch with the hookspecs rejects it."""
    own = plugin_manager(specs=False)
    try:
        warns = _register_recording(own, record, plugin)
    except pluggy.PluginValidationError as exc:
        record.reject(f"hook signature does not match the hookspec: {one_line(exc)}")
        return
    except Warning as exc:  # the caller's filters made a deprecation an error
        record.reject(f"uses a deprecated part of the hook contract and warnings are errors here: {one_line(exc)}")
        return
    except Exception as exc:  # ValueError (a name taken), or plugin code run by dir()
        record.reject(f"pluggy could not register it: {one_line(exc)}")
        return
    callers = own.get_hookcallers(plugin) or []
    unknown = [hc.name for hc in callers if hc.spec is None]
    if unknown:
        record.reject(f"implements unknown hook(s) {did_you_mean(sorted(unknown))}; the hooks are: {', '.join(HOOKS)}")
        return
    taken = pm.get_name(plugin)
    if taken is not None:  # pluggy would raise ValueError: one object under two names
        record.reject(
            f"entry points {taken!r} and {record.name!r} name one object ({record.value}); it is loaded once, "
            f"as {taken!r}: remove one of the two names (or leave it out with deny = [{record.name!r}])"
        )
        return
    if warns:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPProvidersDeprecationWarning)  # issued once already, above
            pm.register(plugin, name=record.name)
    else:  # it ran no plugin code and no spec it implements warns: nothing to ignore
        pm.register(plugin, name=record.name)
    record.plugin, record.manager = plugin, own
    record.hooks = sorted(hc.name for hc in callers)
    if "authorize" in record.hooks and record.authorize_evidence is None:  # what pluggy did, whatever the scan saw
        record.authorize_evidence = "pluggy registered an authorize hookimpl from it"


def _register_recording(own: pluggy.PluginManager, record: PluginRecord, plugin: object) -> bool:
    """``own.register(plugin)`` and the hookspecs of the hooks it implements, keeping each
    deprecation warning pluggy gives (``warn_on_impl_args``) in ``record.deprecations`` and then
    issuing every warning again under the caller's filters.

    Warnings are captured only where one can be given: plugin code may run (:func:`runs_no_code`),
    or a hook it implements has a spec that warns (:func:`spec_may_warn`); capturing costs about
    as much as the registration of a small plugin module (issue 43).

    :returns: whether registering it could warn (the composition's registration then ignores the
        deprecations given here, which would otherwise be given twice).
    :raises pluggy.PluginValidationError: an implementation does not match its hookspec.
    :raises Warning: the caller's filters turn a warning into an error (``-W error``); the plugin
        is then rejected like any other registration failure.
    """
    # A manager with no hook caller yet has no spec either (pluggy's check_pending reads hook's dict too).
    plain = runs_no_code(plugin) and not vars(own.hook)
    if plain:
        own.register(plugin, name=record.name)  # with no spec there, pluggy checks (and warns) nothing
        if not any(spec_may_warn(caller.name) for caller in own.get_hookcallers(plugin) or []):
            add_implemented_specs(own, plugin)
            return False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # a deprecation must not fail registration half-way
        if not plain:
            own.register(plugin, name=record.name)
        add_implemented_specs(own, plugin)
    for w in caught:
        if issubclass(w.category, MCPProvidersDeprecationWarning):
            record.deprecations.append(f"{w.message} ({w.filename}:{w.lineno})")
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return True


def configure_plugin(pm: pluggy.PluginManager, record: PluginRecord, config: Config) -> None:
    try:
        found, model = call_hook(record, "settings_model")
    except BaseException as exc:  # SystemExit too: one plugin's exit must not end the process
        reraise_interrupt(exc)
        record.reject(_told(exc, "settings_model"))
        return
    table = config.plugins.get(record.name)
    if not found or model is None:
        if table:
            record.reject(f"config has [plugins.{record.name}] but the plugin takes no settings")
        return
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        record.reject(f"hook settings_model returned {model!r}; expected a pydantic BaseModel subclass or None")
        return
    record.settings_model = model
    where = f"plugins.{record.name}"
    try:
        record.settings = model.model_validate(table or {}, context=settings_context(config))
    except ValidationError as exc:
        record.reject(f"invalid settings: {format_validation_error(exc, where, model, accepted=True)}")
        return
    dropped = ignored_keys(model, table or {})
    if dropped:  # a model left at pydantic's default extra dropped them: the operator's setting would never apply
        record.reject(f"invalid settings: {'; '.join(ignored_key_line(where, loc, keys) for loc, keys in dropped)}")


def collect_providers(pm: pluggy.PluginManager, record: PluginRecord) -> None:
    for hook, kind in PROVIDER_HOOKS:
        try:
            found, result = call_hook(record, hook, settings=record.settings)
        except BaseException as exc:
            reraise_interrupt(exc)
            record.reject(_told(exc, hook))
            return
        if not found:
            continue
        if result is None:
            result = []
        if not isinstance(result, Sequence) or isinstance(result, str | bytes):
            record.reject(f"hook {hook} returned {type(result).__name__}; expected a list of {kind.__name__}")
            return
        wrong = [item for item in result if not isinstance(item, kind)]
        if wrong:
            record.reject(
                f"hook {hook} returned {type(wrong[0]).__name__} {wrong[0]!r:.60}; expected {kind.__name__} instances"
            )
            return
        unnamed = [item for item in result if not item.name]
        if unnamed:
            record.reject(f"hook {hook} returned a {type(unnamed[0]).__name__} with an empty name; set .name")
            return
        if kind is SkillProvider:  # each skill's files are resources: every resource rule holds for them
            result = [SkillFiles(provider) for provider in result]
        problem = next(filter(None, map(provider_problem, result)), None)
        if problem is not None:
            record.reject(f"hook {hook}: {problem}")
            return
        if kind in (ResourceProvider, SkillProvider):
            record.resource_providers.extend(result)
            record.prefixes += tuple(px for provider in result for px in provider.prefixes)
        elif kind is ToolProvider:
            record.tool_providers.extend(result)
        elif kind is ExtensionProvider:
            record.extension_providers.extend(result)
        else:
            record.prompt_providers.extend(result)
