"""Which generated methods the dataclasses on serve's start-up path get (issue 43, third pass).

Each generated method is an ``exec`` when its class is made (about a fifth of a millisecond each
on Python 3.11, before the first answer). Internal request-time holders that are never compared,
hashed by value or shown get neither ``__eq__`` nor ``__repr__``; the public types plugins use
keep their whole dataclass API (equality, repr, frozen-ness, hash, ``replace``, ``fields``).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import pytest

# module -> classes made without __eq__/__repr__ (identity equality and hash, object's repr)
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
    "mcp_providers._host.catalog": ("Page", "_Compiled"),
    "mcp_providers._host.skills": ("SkillProblem",),
    "mcp_providers._host.output_schemas": ("OutputSchema",),
    "mcp_providers._host.hookscan": ("AuthorizeScan",),
    "mcp_providers._serve.binding": ("RouteEntry",),
    "mcp_providers._serve.state.tasks": ("RunningTask",),
    "mcp_providers._host.declarations": ("Declared",),
    "mcp_providers._host.collisions": ("Side", "Collisions"),
    "mcp_providers._decorated": ("Signature",),
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
def test_an_internal_holder_gets_no_generated_eq_or_repr(name: str, cls: type[Any]) -> None:
    assert dataclasses.is_dataclass(cls)
    assert "__eq__" not in vars(cls) and "__repr__" not in vars(cls)
    assert cls.__hash__ is object.__hash__  # identity: never hashed by value, never unhashable
    assert cls.__dataclass_params__.frozen is (name in STILL_FROZEN)  # type: ignore[attr-defined]


def test_a_frozen_internal_holder_still_refuses_assignment() -> None:
    from mcp_providers._serve.methods.tools import Refused

    refused = Refused("no")
    with pytest.raises(dataclasses.FrozenInstanceError):
        refused.text = "yes"  # type: ignore[misc]
    assert refused != Refused("no") and refused == refused  # identity, as nothing compares them


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
