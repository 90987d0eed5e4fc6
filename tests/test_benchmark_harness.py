"""The benchmark harness measures what it says: its "without the scope" case really runs reads
outside the side-effect scope, and its "with" case inside it (the swap follows the invoker)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._sideeffects import current_scope
from mcp_providers.testing import compose, connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks package sits beside tests/
from benchmarks.sideeffects import _scope_removed

pytestmark = pytest.mark.anyio


class ScopeProbe(ResourceProvider):
    name = "scope-probe"
    prefixes = ("probe://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="probe://scope", name="scope", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="in scope" if current_scope() is not None else "no scope")


def plugin() -> SimpleNamespace:
    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [ScopeProbe()]

    return SimpleNamespace(register_resource_providers=register_resource_providers)


async def test_the_no_scope_case_reads_outside_the_scope_and_the_other_inside() -> None:
    async with connect(compose({"probe": plugin()})) as client:
        with _scope_removed():
            outside = await client.read_resource("probe://scope")
        inside = await client.read_resource("probe://scope")
    assert outside.contents[0].text == "no scope"  # type: ignore[union-attr]
    assert inside.contents[0].text == "in scope"  # type: ignore[union-attr]
