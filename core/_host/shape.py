"""The shape of a loaded plugin, and the authoring mistakes in it that would otherwise pass in silence.

Each check answers with one line that names what is wrong and the fix, or ``None``:

- a module named by an entry point that holds one :class:`~mcp_providers.plugin.Plugin` object is
  that object (``pkg`` and ``pkg:notes`` both work);
- a function named like a hook (or nearly: ``register_resource_provider``) without ``@hookimpl``
  is never called by pluggy: the plugin would load and serve nothing;
- a marked function whose name is no hook gets the closest hook name;
- a provider's ``read``/``call``/``render``/``complete``/``handle`` must be a coroutine function,
  since the core awaits it (a plain function would fail at the first request).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable
from typing import Any

from mcp_providers import hookspecs
from mcp_providers.plugin import Plugin
from mcp_providers.providers import ExtensionProvider, PromptProvider, ResourceProvider, ToolProvider

_IMPL = f"{hookspecs.PROJECT}_impl"
HOOKS: tuple[str, ...] = tuple(
    sorted(name for name in vars(hookspecs) if hasattr(getattr(hookspecs, name), f"{hookspecs.PROJECT}_spec"))
)
"""Every hook name of the contract, e.g. ``register_resource_providers``."""
_AWAITED = ("read", "complete", "call", "render", "handle")
_BASES = (ResourceProvider, ToolProvider, PromptProvider, ExtensionProvider)


def closest_hook(name: str) -> str | None:
    """The hook name ``name`` most likely means, or ``None`` when none is close."""
    import difflib  # only for a misspelt hook name: serve's start-up does without it (issue 43)

    found = difflib.get_close_matches(name, HOOKS, n=1, cutoff=0.75)
    return found[0] if found else None


def did_you_mean(unknown: Iterable[str]) -> str:
    """``"register_resource_provider (did you mean register_resource_providers?)"``, per name."""
    parts = []
    for name in unknown:
        close = closest_hook(name)
        parts.append(f"{name} (did you mean {close}?)" if close else name)
    return ", ".join(parts)


def as_plugin(loaded: object) -> object:
    """The object to register for what an entry point loaded: a module holding exactly one
    :class:`Plugin` object and no hookimpl of its own is that object; anything else is itself."""
    if not isinstance(loaded, types.ModuleType):
        return loaded
    found = [value for value in vars(loaded).values() if isinstance(value, Plugin)]
    if len(found) != 1 or _marked_functions(loaded):
        return loaded
    return found[0]


def _marked_functions(module: types.ModuleType) -> list[str]:
    return [name for name, value in vars(module).items() if callable(value) and hasattr(value, _IMPL)]


def several_plugins(loaded: object, entry_point: str) -> str | None:
    """A module holding more than one :class:`Plugin` object is ambiguous: name one."""
    if not isinstance(loaded, types.ModuleType):
        return None
    names = sorted(name for name, value in vars(loaded).items() if isinstance(value, Plugin))
    if len(names) < 2 or _marked_functions(loaded):
        return None
    return (
        f"its module holds {len(names)} Plugin objects ({', '.join(names)}); name one in the entry point, "
        f'e.g. {entry_point} = "{loaded.__name__}:{names[0]}"'
    )


def unmarked_hooks(plugin: object) -> str | None:
    """Functions of a plugin module named like hooks but without ``@hookimpl``: pluggy ignores them."""
    if not isinstance(plugin, types.ModuleType):
        return None
    found = []
    near: bool | None = None  # read at the first function that needs it: most modules have none (issue 43)
    for name, value in list(vars(plugin).items()):
        if name.startswith("_") or not inspect.isfunction(value) or hasattr(value, _IMPL):
            continue
        if value.__module__ != plugin.__name__:
            continue  # imported, not defined here
        if near is None and name not in HOOKS:
            # A near miss (register_resource_provider) counts only when nothing in the module is marked:
            # beside real hookimpls, a function named like a hook (`authorized`) is more likely a helper.
            near = not _marked_functions(plugin)
        hook = name if name in HOOKS else (closest_hook(name) if near else None)
        if hook is not None:
            found.append(name if hook == name else f"{name} (the hook is {hook})")
    if not found:
        return None
    return (
        f"defines {', '.join(found)} without @hookimpl, so pluggy never calls it; put @hookimpl "
        "(from mcp_providers import hookimpl) on the line above each, or declare the plugin with "
        "mcp_providers.plugin.Plugin, whose decorators need no marker"
    )


def provider_problem(provider: object) -> str | None:
    """A provider method the core awaits that is not a coroutine function, with the fix."""
    for method in _AWAITED:
        found = getattr(type(provider), method, None)
        if found is None or any(getattr(base, method, None) is found for base in _BASES):
            continue  # not defined, or the base class's own
        if not inspect.iscoroutinefunction(found) and not _returns_awaitable(found):
            return (
                f"{type(provider).__name__}.{method} of provider {getattr(provider, 'name', '?')!r} is not "
                f"async: the core awaits it; define it with `async def {method}(...)`, or declare the function "
                "with mcp_providers.plugin.Plugin, which runs plain functions in a thread"
            )
    return None


def _returns_awaitable(function: object) -> bool:
    """A callable whose result is awaitable by construction (e.g. a ``functools.wraps`` wrapper of a
    coroutine function)."""
    wrapped = inspect.unwrap(function)  # type: ignore[arg-type]
    return inspect.iscoroutinefunction(wrapped)


def contributes_nothing(records: Iterable[Any]) -> list[str]:
    """A warning line per loaded plugin that serves nothing and holds no policy (a plugin whose
    settings turn everything off is one too, so this warns rather than rejects).

    :param records: :class:`~mcp_providers._host.records.PluginRecord` objects.
    """
    return [
        f"{r.name}: loaded but contributes nothing: no resource, template, tool, prompt, extension or authorize "
        "hook; declare something with its decorators or hooks, or uninstall it"
        for r in records
        if r.status == "loaded" and not r.providers() and not r.defines_authorize
    ]
