"""A plugin's own plugin manager holds the hookspecs of the hooks it implements only (issue 43).

Every plugin is registered on a manager of its own, where its hooks are called one at a time.
Adding all the hookspecs to each made ten hook callers per plugin; the specs of the hooks it
implements are now added once it is registered, and pluggy checks each implementation then. What
discovery concludes about a plugin must not change: each plugin below is discovered twice, once
as it is now and once with every spec added first (as before), and the records must agree.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pluggy
import pytest

from mcp_providers import hookspecs
from mcp_providers._host import hookcalls
from mcp_providers._host.discovery import discover
from mcp_providers._host.hookcalls import call_hook
from mcp_providers._host.hookscan import spec_space
from mcp_providers._host.records import PluginRecord
from mcp_providers._host.shape import HOOKS
from mcp_providers.config import Config
from mcp_providers.errors import MCPProvidersRemovedIn1Warning

hookimpl = pluggy.HookimplMarker(hookspecs.PROJECT)
DEPRECATION = "authorize(subject) is deprecated: name principal and read principal.subject"


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def _fresh(function: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of ``function`` (pluggy's marker is an attribute of the function object itself)."""
    return types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)  # fmt: skip


def _plugins() -> Iterator[tuple[str, object]]:
    """One plugin per way registration can end: loaded, a signature mismatch, an unknown hook,
    a wrapper that is no generator, a historic-free wrapper, a specname, a deprecated argument."""

    def settings_model() -> None:
        return None

    def resources(settings: object) -> list[object]:
        return []

    def wrong_args(settings: object, extra: object) -> list[object]:
        return []

    def policy(subject: str, action: object, target: str, settings: object, principal: object) -> None:
        return None

    def old_policy(subject: str, action: object, target: str, settings: object) -> None:
        return None

    def wrapping(settings: object) -> Iterator[None]:
        yield

    yield "plain", _module("plain", settings_model=hookimpl(_fresh(settings_model)),
                           register_resource_providers=hookimpl(_fresh(resources)))  # fmt: skip
    yield "mismatch", _module("mismatch", register_tool_providers=hookimpl(_fresh(wrong_args)))
    yield "unknown", _module("unknown", register_resource_provider=hookimpl(_fresh(resources)))
    yield "specname", _module("specname", look=hookimpl(specname="register_resource_providers")(_fresh(resources)))
    yield "not_a_generator", _module("not_a_generator",
                                     register_tool_providers=hookimpl(wrapper=True)(_fresh(resources)))  # fmt: skip
    yield "wrapper", _module("wrapper", register_tool_providers=hookimpl(wrapper=True)(_fresh(wrapping)))
    yield "policy", _module("policy", authorize=hookimpl(_fresh(policy)))
    yield "deprecated", _module("deprecated", authorize=hookimpl(_fresh(old_policy)))
    yield "both", _module("both", authorize=hookimpl(_fresh(policy)),
                          register_tool_providers=hookimpl(_fresh(wrong_args)))  # fmt: skip

    class Instance:
        @hookimpl
        def register_prompt_providers(self, settings: object) -> list[object]:
            return []

    yield "instance", Instance()


def _seen(records: list[PluginRecord]) -> list[tuple[object, ...]]:
    return [(r.name, r.status, r.reason, r.hooks, r.deprecations, r.authorize_evidence) for r in records]


def _discovered(monkeypatch: pytest.MonkeyPatch, *, all_specs_first: bool) -> tuple[list[Any], list[str]]:
    made = hookcalls.plugin_manager
    if all_specs_first:  # as before: every hookspec added to each plugin's own manager
        monkeypatch.setattr(hookcalls, "plugin_manager", lambda specs=True: made())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _pm, records = discover(Config(), load_entrypoints=False, plugins=dict(_plugins()))
    monkeypatch.setattr(hookcalls, "plugin_manager", made)
    return _seen(records), [str(w.message) for w in caught]


@pytest.fixture
def subject_deprecated(monkeypatch: pytest.MonkeyPatch) -> None:
    warning = MCPProvidersRemovedIn1Warning(DEPRECATION)
    monkeypatch.setitem(hookspecs.DEPRECATED_ARGUMENTS["authorize"], "subject", warning)


def test_discovery_concludes_as_it_did_with_every_spec_added_first(
    monkeypatch: pytest.MonkeyPatch, subject_deprecated: None
) -> None:
    now, warned_now = _discovered(monkeypatch, all_specs_first=False)
    before, warned_before = _discovered(monkeypatch, all_specs_first=True)
    assert now == before
    assert warned_now == warned_before
    by_name = {seen[0]: seen for seen in now}
    # the comparison saw every ending, not the same one nine times
    assert by_name["plain"][1:4] == ("loaded", None, ["register_resource_providers", "settings_model"])
    assert by_name["mismatch"][2].startswith("hook signature does not match the hookspec")
    assert by_name["unknown"][2].startswith("implements unknown hook(s) register_resource_provider (did you mean")
    assert by_name["specname"][3] == ["register_resource_providers"]
    assert by_name["not_a_generator"][2].startswith("hook signature does not match the hookspec")
    assert by_name["wrapper"][1] == "loaded"
    assert by_name["deprecated"][4] == [f"{DEPRECATION} ({__file__}:{_line_of('old_policy')})"]
    assert by_name["both"][1] == "rejected" and by_name["both"][5] is not None  # fail closed: still a policy
    assert by_name["instance"][3] == ["register_prompt_providers"]
    assert DEPRECATION in warned_now


def _line_of(name: str) -> int:
    import inspect

    source, start = inspect.getsourcelines(_plugins)
    return start + next(i for i, line in enumerate(source) if f"def {name}(" in line)


def test_a_plugins_own_manager_holds_a_spec_for_each_hook_it_implements_and_no_other() -> None:
    plugins = dict(_plugins())
    _pm, records = discover(Config(), load_entrypoints=False, plugins={"plain": plugins["plain"]})
    (record,) = records
    assert record.status == "loaded" and record.manager is not None
    relay = vars(record.manager.hook)
    callers = {name: caller for name, caller in relay.items() if isinstance(caller, pluggy.HookCaller)}
    assert sorted(callers) == ["register_resource_providers", "settings_model"]
    full = pluggy.PluginManager(hookspecs.PROJECT)
    full.add_hookspecs(hookspecs)
    for name, caller in callers.items():
        assert caller.spec is not None and caller.spec.function is getattr(hookspecs, name)
        assert caller.spec.opts == getattr(full.hook, name).spec.opts


@pytest.mark.parametrize("hook", HOOKS)
def test_calling_a_hook_the_plugin_does_not_implement_finds_none(hook: str) -> None:
    plugins = dict(_plugins())
    _pm, records = discover(Config(), load_entrypoints=False, plugins={"plain": plugins["plain"]})
    found, result = call_hook(records[0], hook, **_arguments(hook))
    assert found is (hook in ("settings_model", "register_resource_providers"))
    assert result == ([] if hook == "register_resource_providers" else None)


def _arguments(hook: str) -> dict[str, object]:
    spec: Callable[..., object] = getattr(hookspecs, hook)
    return {name: None for name in spec.__code__.co_varnames[: spec.__code__.co_argcount]}


def test_a_spec_namespace_is_only_made_for_a_hook() -> None:
    assert spec_space("authorize") is spec_space("authorize")
    assert vars(spec_space("authorize"))["authorize"] is hookspecs.authorize  # type: ignore[arg-type]
    assert spec_space("hookimpl") is None  # a name of the module that is no hookspec
    assert spec_space("register_resource_provider") is None
    assert spec_space("__doc__") is None


def test_the_composition_manager_still_holds_every_spec() -> None:
    pm, _records = discover(Config(), load_entrypoints=False, plugins={})
    assert {name for name in HOOKS if getattr(pm.hook, name).spec is not None} == set(HOOKS)
