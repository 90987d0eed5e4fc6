"""What pluggy would register from a plugin as an ``authorize`` implementation, however it is spelled.

The fail-closed rule (a plugin that could carry authorization but is not in force stops ``serve``)
must know a policy plugin by what pluggy does with it, never by how its source text reads. This
module asks pluggy's own :meth:`pluggy.PluginManager.parse_hookimpl_opts` about every name
``dir(plugin)`` lists, the same loop ``PluginManager.register`` runs, and takes the hook name the
way ``register`` does (``specname`` when given, else the attribute name). So a function of any name
marked ``@hookimpl(specname="authorize")``, a method of a class instance, an attribute set with
``setattr`` at import time and a hook wrapper are all seen.

It also looks with a plain ``getattr`` for what pluggy does *not* register but a reader would take
for a policy: an object reached only through ``__getattr__``, a property, a callable instance or a
``functools.partial`` carrying the ``authorize`` marker. Such a plugin is rejected, since its rules
would never be asked.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, cast

import pluggy

from mcp_providers import hookspecs
from mcp_providers._holders import Frozen

AUTHORIZE = "authorize"
_MARK = f"{hookspecs.PROJECT}_impl"
_ABSENT = object()
_MODULE_DESCRIPTORS = frozenset(
    name
    for cls in types.ModuleType.__mro__
    for name, value in vars(cls).items()
    if hasattr(type(value), "__set__") or hasattr(type(value), "__delete__")
)
"""Names the module type answers itself, ahead of a module's ``__dict__`` (inspect.getattr_static's order)."""
_BINDABLE = (staticmethod, classmethod, types.MethodType)
"""A tuple, not a ``|`` union: the union was built again on every call (about 100 per plugin)."""
_HOOKABLE = (types.FunctionType, *_BINDABLE)
"""What pluggy may take a hook implementation from: a function, a staticmethod, a classmethod, a bound method."""
_MODULE_TYPE_NAMES = frozenset(name for cls in types.ModuleType.__mro__ for name in vars(cls))
"""Every name the module type (or ``object``) holds: a name outside it and a module's ``__dict__`` is nowhere."""


def _unmarked(namespace: object, name: str, marker: str) -> bool:
    """Whether ``namespace.name`` is a plain module attribute that cannot be a hookimpl or hookspec:
    not a function, or a function without ``marker`` (``mcp_providers_impl``/``_spec``).

    pluggy looks every name of ``dir(plugin)`` up with :func:`inspect.getattr_static`, about 20 us
    each (most of registering a plugin module). For a plain module, that lookup is the module's
    ``__dict__`` entry unless the module type holds a data descriptor of that name
    (``__dict__``, ``__class__``, ``__annotations__``), so the answer is the same; anything else
    (classes, instances, module subclasses, those three names, wrapped or bound callables, names
    missing from ``__dict__``) is left to pluggy. The dunders every module has (``__file__``,
    ``__spec__``, ...) are most of the names of a small plugin module.
    """
    if type(namespace) is not types.ModuleType or name in _MODULE_DESCRIPTORS:
        return False
    value = namespace.__dict__.get(name, _ABSENT)
    if value is _ABSENT or isinstance(value, _BINDABLE):
        return False
    if not isinstance(value, types.FunctionType):  # inspect.isfunction, without the call
        return True  # pluggy considers functions, staticmethods, classmethods and bound methods only
    return getattr(value, marker, None) is None and getattr(value, "__func__", None) is None


def _marked(namespace: object, name: str, marker: str) -> object:
    """pluggy's answer for a plain module's function carrying ``marker`` (the marker's own options
    dict, as pluggy hands it out), or for a name the module does not hold at all (``None``); for
    anything else ``_ABSENT``: ask pluggy.

    The same reasoning as :func:`_unmarked`: on a plain module :func:`inspect.getattr_static`
    finds the ``__dict__`` entry, or, for a name the module type does not hold either, nothing.
    Each plugin's hookimpls are looked up three times (the authorize scan and two registrations)
    and ``authorize`` once more, each about 15 us through pluggy (issue 43).
    """
    if type(namespace) is not types.ModuleType or name in _MODULE_TYPE_NAMES:
        return _ABSENT
    value = namespace.__dict__.get(name, _ABSENT)
    if value is _ABSENT:
        return None
    if not isinstance(value, types.FunctionType):  # inspect.isfunction, as _unmarked reads it
        return _ABSENT
    opts = getattr(value, marker, None)
    if opts is None:
        return _ABSENT
    return opts if isinstance(opts, dict) else None


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, answering for plain module attributes without pluggy's static lookup
    (:func:`_unmarked`, :func:`_marked`); what is registered, and every error, is pluggy's own.

    Whatever could be an ``authorize`` implementation (the name ``authorize``, or a marker whose
    hook name is ``authorize``) is always pluggy's own answer (:meth:`pluggy.PluginManager.parse_hookimpl_opts`):
    the fail-closed scan (:func:`scan_authorize`) and the registrations ask this method, so a
    shortcut that went wrong could otherwise hide a policy. Only policy plugins pay for it.
    """

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        if name != AUTHORIZE:
            if type(plugin) is types.ModuleType and name not in _MODULE_DESCRIPTORS:
                value = plugin.__dict__.get(name, _ABSENT)
                if value is not _ABSENT and not isinstance(value, _HOOKABLE):
                    return None  # :func:`_unmarked`'s answer for most names of a module, without its call (issue 43)
            marker = f"{self.project_name}_impl"
            if _unmarked(plugin, name, marker):  # no marker at all: not a hook of any name
                return None
            found = _marked(plugin, name, marker)
            if found is not _ABSENT and _hook_name(found, name) != AUTHORIZE:
                return cast(pluggy.HookimplOpts | None, found)
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> pluggy.HookspecOpts | None:
        if module_or_class is not hookspecs and _SPEC_SPACES.get(name) is not module_or_class:
            return self._spec_opts(module_or_class, name)
        # Every plugin gets a manager of its own with these specs added: the answer for each name
        # of the project's own (never rewritten) hookspecs module, a hook or not, is worked out
        # once per process, not once per plugin.
        key = (self.project_name, name)
        if key not in _SPEC_OPTS:
            _SPEC_OPTS[key] = self._spec_opts(module_or_class, name)
        opts = _SPEC_OPTS[key]
        return None if opts is None else cast(pluggy.HookspecOpts, dict(opts))

    def _spec_opts(self, module_or_class: Any, name: str) -> pluggy.HookspecOpts | None:
        if _unmarked(module_or_class, name, f"{self.project_name}_spec"):
            return None
        return super().parse_hookspec_opts(module_or_class, name)


_SPEC_OPTS: dict[tuple[str, str], pluggy.HookspecOpts | None] = {}
"""pluggy's ``parse_hookspec_opts`` answers for :mod:`mcp_providers.hookspecs`, by (project, attribute name)."""

_SPEC_SPACES: dict[str, types.ModuleType] = {}
"""One namespace per hook, holding that hook's spec function of :mod:`mcp_providers.hookspecs` alone."""


def spec_space(hook: str) -> types.ModuleType | None:
    """A namespace holding only ``hookspecs.<hook>`` (the same function object, so pluggy reads
    the same spec from it), for :meth:`pluggy.PluginManager.add_hookspecs`; ``None`` when
    ``hook`` names no hookspec. Made once per process per hook."""
    space = _SPEC_SPACES.get(hook)
    if space is None:
        spec = getattr(hookspecs, hook, None)
        if not inspect.isfunction(spec) or getattr(spec, f"{hookspecs.PROJECT}_spec", None) is None:
            return None
        space = types.ModuleType(hookspecs.__name__)
        setattr(space, hook, spec)
        _SPEC_SPACES[hook] = space
    return space


def add_implemented_specs(pm: pluggy.PluginManager, plugin: object) -> None:
    """Add to ``pm`` the hookspec of each hook ``plugin`` registered an implementation of there,
    and only those: pluggy then checks each implementation against its spec (and gives its
    deprecation warnings) as ``register`` does when the spec is there first.

    A plugin's own manager needs no other spec (its other hooks are never called through it), and
    adding all of them made ten hook callers per plugin (about 0.05 ms each plugin, issue 43). A
    hook with no spec stays without one: the caller rejects it as an unknown hook.

    :raises pluggy.PluginValidationError: an implementation does not match its hookspec.
    """
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.spec is None and (space := spec_space(caller.name)) is not None:
            pm.add_hookspecs(space)


def runs_no_code(plugin: object) -> bool:
    """Whether registering ``plugin`` with pluggy can run none of its code: a plain module (the
    module type itself) with no ``__dir__`` of its own (``dir()`` would call it) and no
    staticmethod, classmethod or bound method among its values (pluggy reads the marker through
    those, which may reach any object's ``__getattr__``). Its functions' markers are plain
    attribute reads, and :func:`inspect.getattr_static` runs no code.

    A registration that runs no code and checks no implementation against a spec that warns
    (:func:`spec_may_warn`) cannot warn, so it is made without capturing warnings (issue 43)."""
    if type(plugin) is not types.ModuleType:
        return False
    namespace = plugin.__dict__
    return "__dir__" not in namespace and not any(isinstance(value, _BINDABLE) for value in namespace.values())


def spec_may_warn(hook: str) -> bool:
    """Whether pluggy may warn when checking an implementation of ``hook`` against its hookspec:
    the spec has a ``warn_on_impl``, or a ``warn_on_impl_args`` table that is not empty (read as
    pluggy's ``_verify_hook`` reads them, at the time of asking). A hook with no spec: ``False``
    (pluggy checks nothing against it)."""
    opts = getattr(getattr(hookspecs, hook, None), f"{hookspecs.PROJECT}_spec", None)
    if not isinstance(opts, dict):
        return False
    return bool(opts.get("warn_on_impl") or opts.get("warn_on_impl_args"))


_SCANNER = PluginManager(hookspecs.PROJECT)
"""The manager :func:`scan_authorize` asks (``parse_hookimpl_opts`` reads the plugin and the
project name only; nothing is ever registered on it), one per process rather than one per plugin."""


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class AuthorizeScan(Frozen):
    """What one plugin object holds for the ``authorize`` hook.

    :param registered: attribute names pluggy registers as ``authorize`` implementations.
    :param wrappers: those of them marked ``hookwrapper=True`` or ``wrapper=True``.
    :param hidden: attribute names carrying the ``authorize`` marker that pluggy does not register.
    :param unreadable: why the plugin could not be looked at (``dir()`` or an attribute raised);
        what pluggy would register is then unknown.
    """

    __slots__ = ("hidden", "registered", "unreadable", "wrappers")

    registered: tuple[str, ...]
    wrappers: tuple[str, ...]
    hidden: tuple[str, ...]
    unreadable: str | None

    def __init__(
        self,
        registered: tuple[str, ...] = (),
        wrappers: tuple[str, ...] = (),
        hidden: tuple[str, ...] = (),
        unreadable: str | None = None,
    ) -> None:
        object.__setattr__(self, "registered", registered)
        object.__setattr__(self, "wrappers", wrappers)
        object.__setattr__(self, "hidden", hidden)
        object.__setattr__(self, "unreadable", unreadable)

    @property
    def evidence(self) -> str | None:
        """One line saying why the plugin could carry authorization, or ``None``."""
        if self.unreadable is not None:
            return f"what pluggy would register from it is unknown ({self.unreadable})"
        names = (*self.registered, *self.hidden)
        if names:
            return f"it has an authorize hookimpl ({', '.join(names)})"
        return None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _hook_name(opts: object, attr: str) -> str | None:
    if not isinstance(opts, dict):
        return None
    return str(opts.get("specname") or attr)


def _dynamic_opts(plugin: object, attr: str) -> object:
    """The marker options a plain ``getattr`` finds (runs ``__getattr__`` and properties)."""
    try:
        value = getattr(plugin, attr)
    except BaseException as exc:  # plugin code: anything it raises means "not a hook here"
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None
    return _marker_of(value)


def _marker_of(value: object) -> object:
    """``value``'s hookimpl marker (``mcp_providers_impl``) as a plain ``getattr`` reads it (which
    may run a ``__getattr__`` or a property of its class), or ``None``."""
    try:
        return getattr(value, _MARK, None)
    except BaseException as exc:  # plugin code: anything it raises means "not a hook here"
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None


def scan_authorize(plugin: object) -> AuthorizeScan:
    """Every ``authorize`` implementation pluggy would register from ``plugin``, and every one it
    would silently miss (see the module docstring). Never raises for what the plugin does."""
    pm = _SCANNER
    try:
        names = list(dir(plugin))
    except Exception as exc:
        return AuthorizeScan(unreadable=f"dir() raised {_one_line(exc)}")
    registered, wrappers, hidden = [], [], []
    namespace = plugin.__dict__ if type(plugin) is types.ModuleType else None
    for attr in dict.fromkeys([*names, AUTHORIZE]):
        if namespace is not None and attr != AUTHORIZE and attr not in _MODULE_DESCRIPTORS:
            value = namespace.get(attr, _ABSENT)
            if value is not _ABSENT and not isinstance(value, _HOOKABLE):
                # A plain module's value pluggy takes nothing from (parse_hookimpl_opts answers None),
                # which a plain getattr of the module also gives: only its marker is read, as a reader would.
                marker = _marker_of(value)
                if marker is not None and _hook_name(marker, attr) == AUTHORIZE:
                    hidden.append(attr)
                continue
        try:
            opts = pm.parse_hookimpl_opts(plugin, attr)
        except Exception as exc:  # pluggy's register would raise here too
            return AuthorizeScan(unreadable=f"reading {attr!r} raised {_one_line(exc)}")
        if opts is not None and _hook_name(opts, attr) == AUTHORIZE:
            registered.append(attr)
            if opts.get("hookwrapper") or opts.get("wrapper"):
                wrappers.append(attr)
        elif opts is None and _hook_name(_dynamic_opts(plugin, attr), attr) == AUTHORIZE:
            hidden.append(attr)
    return AuthorizeScan(tuple(registered), tuple(wrappers), tuple(hidden))


def scan_problem(scan: AuthorizeScan) -> str | None:
    """Why a loaded plugin must be rejected for how it spells ``authorize``, or ``None``.

    A policy must be a plain hookimpl: a wrapper-only ``authorize`` answers nothing (every request
    would be allowed), and a wrapper beside a plain one could rewrite its plugin's answers; an
    ``authorize`` pluggy does not register would never be asked.
    """
    if scan.wrappers:
        return (
            f"authorize is a hook wrapper ({', '.join(scan.wrappers)}); a policy must be a plain "
            "@hookimpl returning a Decision or None, so drop hookwrapper=/wrapper="
        )
    if scan.hidden:
        return (
            f"{', '.join(scan.hidden)} carries the authorize marker but pluggy does not register it "
            "(reached through __getattr__, a property, a partial or a callable object); define it as a "
            "function or method"
        )
    return None
