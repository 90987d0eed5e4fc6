"""Which classes on serve's start-up path are dataclasses (issue 43, third and sixth passes).

Each generated method is an ``exec`` when its class is made (a frozen dataclass with three fields
costs about 2 M instructions, about 0.3 ms, before the first answer). Internal request-time holders
that are never compared, hashed by value, shown or read with ``fields()``/``replace()`` are plain
classes with ``__slots__`` and a written ``__init__`` (those that were frozen derive from
:class:`mcp_providers._holders.Frozen`); the public types plugins use keep their whole dataclass
API (equality, repr, frozen-ness, hash, ``replace``, ``fields``).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import pytest

from mcp_providers._holders import Frozen

# module -> plain classes (identity equality and hash, object's repr, no dataclass fields)
INTERNAL: dict[str, tuple[str, ...]] = {
    "mcp_providers._serve.transport.stdio_context": ("PendingRequest", "Handlers"),
    "mcp_providers._threads": ("Seat", "_Slot", "_Waiter"),
    "mcp_providers._serve.steps.health": ("_Provider",),
    "mcp_providers._serve.steps.gate": ("Gate", "Denial"),
    "mcp_providers._serve.steps.exchange": ("Exchange",),
    "mcp_providers._serve.steps.evidence": ("Blocks",),
    "mcp_providers._serve.steps.invoker": ("Work",),
    "mcp_providers._serve.steps.asking": ("RoutingAsker",),
    "mcp_providers._serve.methods.tools": ("Refused", "Started", "Asking"),
    "mcp_providers._serve.methods.completion": ("Completing",),
    "mcp_providers._serve.methods.resources": ("_Shared",),
    "mcp_providers._host.output_schemas": ("OutputSchema",),
    "mcp_providers._host.hookscan": ("AuthorizeScan",),
    "mcp_providers._serve.binding": ("RouteEntry",),
    "mcp_providers._host.declarations": ("Declared",),
    "mcp_providers._host.collisions": ("Side", "Collisions"),
    "mcp_providers._decorated": ("Signature",),
    # sixth pass: compared, hashed or shown by no reader (generated methods wrapped over 40 test files)
    "mcp_providers._serve.seams": ("Seam",),
    "mcp_providers._serve.steps.request_state": ("Answer",),
    "mcp_providers._serve.state.tasks": ("RunningTask", "Change"),
    "mcp_providers._host.records": ("PluginRecord",),
    "mcp_providers._host.assembly": ("AuthorizeImpl", "Assembly"),
    "mcp_providers._host.catalog": ("Page", "_Compiled", "Entry", "Route"),
    "mcp_providers._host.skills": ("SkillProblem", "SkillFile", "Skill", "Child"),
}
STILL_FROZEN = {
    "Denial",
    "Work",
    "RoutingAsker",
    "Refused",
    "Started",
    "Asking",
    "Completing",
    "_Shared",
    "Page",
    "_Compiled",
}
STILL_FROZEN |= {"SkillProblem", "OutputSchema", "AuthorizeScan", "RouteEntry", "RunningTask", "Side", "Signature"}
STILL_FROZEN |= {"Seam", "Answer", "Change", "AuthorizeImpl", "Assembly", "Entry", "SkillFile", "Skill", "Child"}
STILL_FROZEN |= {"Route"}
WITH_DICT = {"PluginRecord", "Assembly"}  # their cached properties are kept in the instance's __dict__

# public modules: every dataclass they define keeps eq and repr, and frozen ones stay frozen and hashable
PUBLIC = (
    "mcp_providers.providers.content",
    "mcp_providers.providers.requests",
    "mcp_providers.identity",
    "mcp_providers.credentials",
    "mcp_providers.policy",
    "mcp_providers.skills",
)


def _internal() -> list[tuple[str, type[Any]]]:
    return [(n, getattr(importlib.import_module(m), n)) for m, names in INTERNAL.items() for n in names]


@pytest.mark.parametrize(("name", "cls"), _internal(), ids=lambda v: v if isinstance(v, str) else "")
def test_an_internal_holder_is_a_plain_class(name: str, cls: type[Any]) -> None:
    assert not dataclasses.is_dataclass(cls)
    assert "__eq__" not in vars(cls) and "__repr__" not in vars(cls)
    assert cls.__hash__ is object.__hash__  # identity: never hashed by value, never unhashable
    if name not in WITH_DICT:
        assert "__slots__" in vars(cls) and "__dict__" not in dir(cls)  # no attribute beyond its fields
    assert issubclass(cls, Frozen) is (name in STILL_FROZEN)


def test_a_frozen_internal_holder_still_refuses_assignment() -> None:
    from mcp_providers._serve.methods.tools import Refused

    refused = Refused("no")
    assert refused.text == "no"
    with pytest.raises(dataclasses.FrozenInstanceError):
        refused.text = "yes"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del refused.text  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        refused.other = 1  # type: ignore[attr-defined]
    assert refused.text == "no"
    assert refused != Refused("no") and refused == refused  # identity, as nothing compares them


def test_a_holder_takes_its_fields_as_its_dataclass_took_them() -> None:
    from mcp_providers._serve.steps.invoker import Work

    work = Work("p", "q", "reading x://y", "x://y", "tool", False, 2.0)
    assert (work.plugin, work.provider, work.what, work.target) == ("p", "q", "reading x://y", "x://y")
    assert (work.kind, work.scoped, work.timeout) == ("tool", False, 2.0)
    default = Work(plugin="p", provider="q", what="w", target="t")
    assert (default.kind, default.scoped, default.timeout) == ("read", True, None)


def test_a_problem_keeps_the_value_equality_hash_and_repr_of_a_frozen_dataclass() -> None:
    from mcp_providers._host.declarations import Problem

    fields = (("a", "b"), "duplicate-tool", "get", "two plugins declare it", "rename one")
    problem, same, other = Problem(*fields), Problem(*fields), Problem(*fields[:4], "rename both")
    assert not dataclasses.is_dataclass(Problem) and issubclass(Problem, Frozen)
    assert problem == same and hash(problem) == hash(same) and problem is not same
    assert problem != other and problem != fields and (problem == fields) is False
    assert list(dict.fromkeys([problem, same, other])) == [problem, other]  # how left-out lines are told once
    assert repr(problem) == (
        "Problem(plugins=('a', 'b'), rule='duplicate-tool', value='get', message='two plugins declare it', "
        "fix='rename one')"
    )
    assert str(problem) == "a + b: duplicate-tool: 'get': two plugins declare it; fix: rename one"
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.rule = "x"  # type: ignore[misc]


def _public() -> list[type[Any]]:
    found = []
    for module_name in PUBLIC:
        module = importlib.import_module(module_name)
        found += [
            v
            for v in vars(module).values()
            if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == module.__name__
        ]
    return found


@pytest.mark.parametrize("cls", _public(), ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_public_dataclass_keeps_its_api(cls: type[Any]) -> None:
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.eq and params.repr
    assert "__eq__" in vars(cls) and "__repr__" in vars(cls)
    if params.frozen:
        assert "__hash__" in vars(cls) and cls.__hash__ is not None  # hashable by value
        assert "__setattr__" in vars(cls)
    assert dataclasses.fields(cls)


def test_the_public_types_are_the_ones_issue_43_names() -> None:
    names = {c.__qualname__ for c in _public()}
    assert {"Text", "Content", "ToolResult", "ReadRequest", "ToolCall", "Principal", "Credential", "Decision"} <= names
