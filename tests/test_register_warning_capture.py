"""Registering a plugin captures warnings only where one can be given (issue 43).

Capturing (``warnings.catch_warnings(record=True)`` and a filter) cost about as much as
registering a small plugin module. A registration can warn only when plugin code runs during it
(a ``__dir__``, or a marker read through a staticmethod, classmethod or bound method that reaches
an object's ``__getattr__``) or when pluggy checks an implementation against a spec that warns
(a deprecated argument or hook name). Everywhere else nothing is captured; wherever a warning can
come, it is still kept in ``PluginRecord.deprecations`` and given once, under the caller's filters.
"""

from __future__ import annotations

import contextlib
import types
import warnings
from collections.abc import Iterator
from typing import Any

import pluggy
import pytest

from mcp_providers import hookspecs
from mcp_providers._host import hookcalls
from mcp_providers._host.discovery import discover
from mcp_providers._host.hookscan import runs_no_code, spec_may_warn
from mcp_providers._host.records import PluginRecord
from mcp_providers.config import Config
from mcp_providers.errors import MCPProvidersRemovedIn1Warning

hookimpl = pluggy.HookimplMarker(hookspecs.PROJECT)
SAID = "plugin code warned while it was registered"


def _resources(settings: object) -> list[object]:
    return []


def _fresh() -> types.FunctionType:
    code = _resources.__code__
    return types.FunctionType(code, _resources.__globals__, "register_resource_providers")


def _module(**attrs: Any) -> types.ModuleType:
    module = types.ModuleType("captured")
    module.__dict__.update(register_resource_providers=hookimpl(_fresh()), **attrs)
    return module


def _warn() -> None:
    warnings.warn(MCPProvidersRemovedIn1Warning(SAID), stacklevel=2)


class _Noisy:
    """A callable that warns when its hook marker is looked for (plugin code run by a marker read)."""

    def __call__(self) -> None:
        return None

    def __getattr__(self, name: str) -> object:
        if name == f"{hookspecs.PROJECT}_impl":
            _warn()
        raise AttributeError(name)


class _NoisyDir:
    @hookimpl
    def register_resource_providers(self, settings: object) -> list[object]:
        return []

    def __dir__(self) -> list[str]:
        _warn()
        return ["register_resource_providers"]


class _NoisyModule(types.ModuleType):
    def __dir__(self) -> list[str]:
        _warn()
        return ["register_resource_providers"]


def _noisy_module_subclass() -> types.ModuleType:
    module = _NoisyModule("captured")
    module.register_resource_providers = hookimpl(_fresh())  # type: ignore[attr-defined]
    return module


def _dir_of_its_own() -> list[str]:
    _warn()
    return ["register_resource_providers"]


NOISY = {
    "module __dir__": lambda: _module(__dir__=_dir_of_its_own),
    "staticmethod value": lambda: _module(other=staticmethod(_Noisy())),
    "classmethod value": lambda: _module(other=classmethod(_Noisy())),
    "bound method value": lambda: _module(other=types.MethodType(_Noisy(), object())),
    "instance with __dir__": _NoisyDir,
    "module subclass with __dir__": _noisy_module_subclass,
}


def _record(plugin: object) -> tuple[PluginRecord, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _pm, records = discover(Config(), load_entrypoints=False, plugins={"captured": plugin})
    return records[0], caught


@pytest.mark.parametrize("kind", sorted(NOISY))
def test_plugin_code_that_warns_during_registration_is_still_recorded(kind: str) -> None:
    plugin = NOISY[kind]()
    assert not runs_no_code(plugin)
    record, caught = _record(plugin)
    assert record.status == "loaded", record.reason
    assert record.deprecations and all(d.startswith(f"{SAID} (") for d in record.deprecations)
    assert SAID in {str(w.message) for w in caught}


@pytest.mark.parametrize("kind", sorted(NOISY))
def test_plugin_code_that_warns_during_registration_under_an_error_filter_rejects_it(kind: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", MCPProvidersRemovedIn1Warning)
        _pm, records = discover(Config(), load_entrypoints=False, plugins={"captured": NOISY[kind]()})
    assert records[0].status == "rejected"
    assert records[0].reason == (
        "uses a deprecated part of the hook contract and warnings are errors here: "
        f"MCPProvidersRemovedIn1Warning: {SAID}"
    )


@contextlib.contextmanager
def _no_capture(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("warnings were captured")

    monkeypatch.setattr(hookcalls.warnings, "catch_warnings", refuse)
    yield
    monkeypatch.undo()


def test_a_plain_module_whose_hooks_warn_for_nothing_is_registered_without_capturing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugin = _module(settings_model=hookimpl(lambda: None))
    assert runs_no_code(plugin)
    with _no_capture(monkeypatch):
        _pm, records = discover(Config(), load_entrypoints=False, plugins={"plain": plugin})
    assert (records[0].status, records[0].hooks) == ("loaded", ["register_resource_providers", "settings_model"])


def test_a_plain_module_implementing_a_hook_whose_spec_warns_is_captured(monkeypatch: pytest.MonkeyPatch) -> None:
    warning = MCPProvidersRemovedIn1Warning("register_resource_providers(settings) is deprecated")
    monkeypatch.setitem(hookspecs.DEPRECATED_ARGUMENTS["register_resource_providers"], "settings", warning)
    assert spec_may_warn("register_resource_providers") and not spec_may_warn("settings_model")
    record, caught = _record(_module())
    assert record.status == "loaded"
    assert [d.split(" (")[0] for d in record.deprecations] == [str(warning)]
    assert [str(w.message) for w in caught] == [str(warning)]  # given once: the composition's copy is ignored


def test_a_renamed_hook_warns_and_a_hook_without_a_spec_does_not() -> None:
    assert spec_may_warn("register_prompts") and spec_may_warn("register_extensions")
    assert not spec_may_warn("register_resource_providers")  # nothing deprecated today
    assert not spec_may_warn("no_such_hook") and not spec_may_warn("PROJECT")


def test_what_runs_no_code_is_a_plain_module_only() -> None:
    assert runs_no_code(_module(value=1, function=_fresh()))
    for plugin in (_module(__dir__=_dir_of_its_own), _module(s=staticmethod(len)), _NoisyDir(), _NoisyDir):
        assert not runs_no_code(plugin)
