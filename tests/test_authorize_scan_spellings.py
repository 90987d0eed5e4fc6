"""The fail-closed ``authorize`` scan sees every spelling pluggy would call, and every marked one
it would miss, with the start-up shortcuts of :class:`~mcp_providers._host.hookscan.PluginManager`
in place (issue 43, third pass).

The shortcuts answer plain module attributes from the module's ``__dict__``; anything that could
be an ``authorize`` implementation must still be pluggy's own answer. Each plugin below is read
three ways: by the scan, by pluggy's unmodified ``PluginManager`` (the reference) and by the
plugin's own manager as discovery builds it (what is called at request time).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import pluggy
import pytest

from mcp_providers import hookspecs
from mcp_providers._host.hookcalls import plugin_manager
from mcp_providers._host.hookscan import AUTHORIZE, add_implemented_specs, scan_authorize, scan_problem

hookimpl = pluggy.HookimplMarker(hookspecs.PROJECT)


def _deny(subject: str, action: Any, target: str, settings: Any, principal: Any) -> None:
    return None


def _fresh() -> Callable[..., Any]:
    """A new function object each time (pluggy's marker is an attribute of the function itself)."""
    return types.FunctionType(_deny.__code__, _deny.__globals__, "_deny")


def _module(**attrs: Any) -> types.ModuleType:
    module = types.ModuleType("spelled_policy")
    module.__dict__.update(attrs)
    return module


class _Base:
    @hookimpl
    def authorize(self, subject: str, action: Any, target: str, settings: Any, principal: Any) -> None:
        return None


class _Inherits(_Base):
    pass


class _Renamed:
    @hookimpl(specname="authorize")
    def gate(self, subject: str, action: Any, target: str, settings: Any, principal: Any) -> None:
        return None


class _Holder:
    gate = staticmethod(hookimpl(specname="authorize")(_fresh()))


class _MarkerOnDemand:
    """An object whose ``__getattr__`` hands out the ``authorize`` marker: pluggy takes nothing from
    it (not a function), a reader's ``getattr`` finds the marker."""

    def __getattr__(self, name: str) -> object:
        if name == f"{hookspecs.PROJECT}_impl":
            return {"specname": AUTHORIZE}
        raise AttributeError(name)


def _module_getattr() -> types.ModuleType:
    marked = hookimpl(_fresh())

    def __getattr__(name: str) -> object:  # PEP 562
        if name == AUTHORIZE:
            return marked
        raise AttributeError(name)

    return _module(__getattr__=__getattr__)


# spelling -> (plugin factory, pluggy registers it)
SPELLINGS: dict[str, tuple[Callable[[], object], bool]] = {
    "module function": (lambda: _module(authorize=hookimpl(_fresh())), True),
    "module function renamed with specname": (lambda: _module(gate=hookimpl(specname="authorize")(_fresh())), True),
    "module holding a class attribute's marked function": (lambda: _module(gate=_Holder.gate), True),
    "class as plugin, staticmethod class attribute": (lambda: _Holder, True),
    "instance, inherited method": (lambda: _Inherits(), True),
    "class as plugin, inherited method": (lambda: _Inherits, True),
    "instance, method renamed with specname": (lambda: _Renamed(), True),
    "module, bound method of an instance": (lambda: _module(gate=_Renamed().gate), True),
    "module __getattr__": (_module_getattr, False),
    "module, functools.partial marked authorize": (
        lambda: _module(authorize=hookimpl(functools.partial(_deny))),
        False,
    ),
    "module, an object handing out the marker under another name": (lambda: _module(gate=_MarkerOnDemand()), False),
    "module, functools.partial renamed with specname": (
        lambda: _module(gate=hookimpl(specname="authorize")(functools.partial(_deny))),
        False,
    ),
}


def _pluggy_reads(plugin: object) -> list[str]:
    """The attribute names pluggy's own (unshortcut) manager would register as ``authorize``."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    found = []
    for attr in dict.fromkeys([*dir(plugin), AUTHORIZE]):
        opts = pm.parse_hookimpl_opts(plugin, attr)
        if opts is not None and (opts.get("specname") or attr) == AUTHORIZE:
            found.append(attr)
    return found


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_the_scan_sees_each_spelling_as_pluggy_does(spelling: str) -> None:
    make, registers = SPELLINGS[spelling]
    plugin = make()
    scan = scan_authorize(plugin)
    assert list(scan.registered) == _pluggy_reads(plugin)
    assert bool(scan.registered) is registers
    assert scan.evidence is not None  # a policy either way: called, or refused as hidden
    if not registers:
        assert scan.hidden and scan_problem(scan) is not None


@pytest.mark.parametrize("spelling", [s for s, (_, registers) in SPELLINGS.items() if registers])
def test_the_plugins_own_manager_registers_what_pluggy_registers(spelling: str) -> None:
    plugin = SPELLINGS[spelling][0]()
    reference = pluggy.PluginManager(hookspecs.PROJECT)
    reference.add_hookspecs(hookspecs)
    reference.register(plugin)
    own = plugin_manager(specs=False)
    own.register(plugin)
    add_implemented_specs(own, plugin)
    assert len(own.hook.authorize.get_hookimpls()) == len(reference.hook.authorize.get_hookimpls()) == 1
    assert own.hook.authorize.spec is not None  # checked against the hookspec, as with every spec added


def test_a_marked_authorize_on_a_plain_module_is_pluggys_own_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut answers other hooks itself; for ``authorize`` (by name or by ``specname``)
    pluggy's ``parse_hookimpl_opts`` is asked, so the scan never rests on a copy of its lookup."""
    asked: list[str] = []
    original = pluggy.PluginManager.parse_hookimpl_opts

    def spy(self: pluggy.PluginManager, plugin: object, name: str) -> Any:
        asked.append(name)
        return original(self, plugin, name)

    monkeypatch.setattr(pluggy.PluginManager, "parse_hookimpl_opts", spy)

    def resources(settings: Any) -> list[object]:
        return []

    plugin = _module(gate=hookimpl(specname="authorize")(_fresh()), authorize=hookimpl(_fresh()))
    plugin.register_resource_providers = hookimpl(resources)
    scan = scan_authorize(plugin)
    assert scan.registered == ("authorize", "gate")
    assert "gate" in asked and AUTHORIZE in asked
    assert "register_resource_providers" not in asked  # the shortcut still serves every other hook
