"""Each check's message names the plugin, the rule, the value and the fix."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import pytest
from pydantic import BaseModel, ValidationError

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, ResourceTemplate, Tool, hookimpl
from mcp_providers.errors import CompositionError
from mcp_providers.testing import compose


class P(ResourceProvider):
    def __init__(
        self,
        name: str,
        prefixes: tuple[str, ...],
        resources: Sequence[Resource] = (),
        templates: Sequence[ResourceTemplate] = (),
    ) -> None:
        self.name, self.prefixes, self._r, self._t = name, prefixes, resources, templates

    def resources(self) -> Sequence[Resource]:
        return self._r

    def templates(self) -> Sequence[ResourceTemplate]:
        return self._t

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="x")


def plugin(*providers: ResourceProvider) -> SimpleNamespace:
    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return list(providers)

    return SimpleNamespace(register_resource_providers=register_resource_providers)


@pytest.mark.parametrize(
    ("templates", "rule"),
    [
        ("x://{a}{b}", "template-invalid"),
        ("x://{unclosed", "template-invalid"),
        ("x://fixed", "template-without-variables"),
        ("x://{/segs*}", "template-explode-unsupported"),
        ("{scheme}://x", "outside-prefix"),
    ],
)
def test_template_rules(templates: str, rule: str) -> None:
    composition = compose(
        {"p": plugin(P("p", ("x://",), templates=[ResourceTemplate(uri_template=templates, name="t")]))}, strict=False
    )
    assert [p.rule for p in composition.problems if p.rule == rule], composition.failures
    assert all(p.plugins == ("p",) for p in composition.problems)
    assert composition.records[0].status == "rejected"


def test_completion_for_an_unknown_variable_is_refused() -> None:
    t = ResourceTemplate(uri_template="x://{id}", name="t", completions={"idd": ("1",)})
    composition = compose({"p": plugin(P("p", ("x://",), templates=[t]))}, strict=False)
    (problem,) = composition.problems
    assert problem.rule == "completion-unknown-variable"
    assert "name one of the template's variables: id" in problem.fix


def test_strict_compose_raises_with_every_line() -> None:
    bad = P("p", ("x://",), [Resource(uri="x://a", name="a", side_effects="destructive")])
    with pytest.raises(CompositionError) as err:
        compose({"p": plugin(bad)})
    assert "resource-declares-side-effect: 'x://a'" in str(err.value)
    assert "fix: move the operation to a tool with that effect" in str(err.value)


def test_collisions_name_both_sides_and_neither_wins() -> None:
    a = P("pa", ("x://a/",), [Resource(uri="x://a/1", name="one")])
    b = P("pb", ("x://",), [Resource(uri="x://a/1", name="one")])
    composition = compose({"a": plugin(a), "b": plugin(b)}, strict=False)
    rules = {p.rule: p for p in composition.problems}
    assert set(rules) == {"prefix-overlap", "duplicate-uri"}
    assert rules["duplicate-uri"].plugins == ("a", "b")
    assert "declared by provider 'pa' and by 'pb'" in rules["duplicate-uri"].message
    assert composition.catalog.resources == []  # neither is served


class Empty(BaseModel):
    pass


def test_tool_annotations_are_derived_from_effects() -> None:
    read = Tool(name="r", description="d", input_model=Empty)
    add = Tool(name="a", description="d", input_model=Empty, effects="additive", open_world=True)
    wipe = Tool(name="w", description="d", input_model=Empty, effects="destructive", idempotent=True)
    assert read.annotations() == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert add.annotations() == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert wipe.annotations()["destructiveHint"] is True and wipe.annotations()["idempotentHint"] is True


def test_declarations_are_frozen_and_validated() -> None:
    r = Resource(uri="x://a", name="a")
    with pytest.raises(ValidationError):
        r.uri = "x://b"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="name"):
        Tool(name="has space", description="d", input_model=Empty)
    with pytest.raises(ValidationError, match="priority"):
        Resource(uri="x://a", name="a", annotations={"priority": 2})  # type: ignore[arg-type]
