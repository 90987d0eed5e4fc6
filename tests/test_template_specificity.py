"""The most specific template answers, whatever the declaration order (round 4 item 18).

Before the fix a provider declaring ``res://{kind}/{id}`` before ``res://users/{id}`` never
reached the second: the owner's templates were tried in declaration order, and ``check`` was
silent. Now routing tries an owner's templates most specific first (a longer literal start, then
more literal characters, then fewer multi-segment variables), so declaration order decides
nothing; two templates of one shape (``res://{a}`` and ``res://{b}``), where no order could reach
the second, fail ``check`` with ``template-unreachable``, naming both.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_providers import Content, ReadRequest, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


def _plugin(prefix: str, *templates: str) -> Any:
    class Overlap(ResourceProvider):
        name = "overlap"
        prefixes = (prefix,)

        def templates(self) -> Sequence[ResourceTemplate]:
            return [ResourceTemplate(uri_template=t, name=f"t{i}") for i, t in enumerate(templates)]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text=request.resource.uri_template)  # type: ignore[union-attr]

    return SimpleNamespace(register_resource_providers=hookimpl(lambda: [Overlap()]))


CASES = [
    # (templates in one declaration order, uri -> the template that must answer)
    (
        ("res://{kind}/{id}", "res://users/{id}"),
        {"res://users/42": "res://users/{id}", "res://posts/1": "res://{kind}/{id}"},
    ),
    (
        ("res://files/{+path}", "res://files/{name}"),
        {"res://files/a": "res://files/{name}", "res://files/a/b": "res://files/{+path}"},
    ),
    (("res://{a}/x", "res://x/{b}"), {"res://x/x": "res://x/{b}", "res://y/x": "res://{a}/x"}),
    (
        ("res://{kind}/{id}", "res://{kind}/{id}/detail", "res://users/{id}/detail"),
        {
            "res://users/1/detail": "res://users/{id}/detail",
            "res://posts/1/detail": "res://{kind}/{id}/detail",
            "res://posts/1": "res://{kind}/{id}",
        },
    ),
]


@pytest.mark.parametrize("reverse", [False, True], ids=["as-declared", "reversed"])
@pytest.mark.parametrize(("templates", "expected"), CASES)
async def test_the_most_specific_template_answers_in_either_declaration_order(
    templates: tuple[str, ...], expected: dict[str, str], reverse: bool
) -> None:
    ordered = tuple(reversed(templates)) if reverse else templates
    composition = compose({"overlap": _plugin("res://", *ordered)})
    async with connect(composition) as client:
        got = {uri: (await client.read_resource(uri)).contents[0].text for uri in expected}  # type: ignore[union-attr]
    assert got == expected


@pytest.mark.parametrize(
    "templates",
    [("res://{a}", "res://{b}"), ("res://x/{a}/y{?q}", "res://x/{b}/y{?r}"), ("res://f/{+a}", "res://f/{+b}")],
)
def test_two_templates_of_one_shape_fail_check_naming_both(templates: tuple[str, str]) -> None:
    composition = compose({"overlap": _plugin("res://", *templates)}, strict=False)
    unreachable = [line for line in composition.failures if "template-unreachable" in line]
    assert len(unreachable) == 1, composition.failures
    assert templates[0] in unreachable[0] and templates[1] in unreachable[0], unreachable


def test_templates_of_different_shapes_pass_check() -> None:
    composition = compose({"overlap": _plugin("res://", "res://{kind}/{id}", "res://users/{id}", "res://{a}")})
    assert composition.failures == []
