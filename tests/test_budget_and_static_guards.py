"""Guards the round 4 mutation run found no test holding (round 4 item 24).

- a read of exactly ``max_bytes`` is within its budget (served whole, no truncation record), one
  byte more is over it;
- ``check`` reports a resource declared static whose two reads differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import pytest
from mcp import MCPError

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve.steps.evidence import within_budget
from mcp_providers.errors import TooLarge
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.testing import check, compose, connect

pytestmark = pytest.mark.anyio

BUDGET = 64


class Sized(ResourceProvider):
    name = "sized"
    prefixes = ("sized://",)

    def __init__(self) -> None:
        self.reads = 0

    def resources(self) -> Sequence[Resource]:
        return [
            Resource(uri="sized://exact", name="exact", max_bytes=BUDGET, freshness=Freshness.live()),
            Resource(uri="sized://over", name="over", max_bytes=BUDGET, freshness=Freshness.live()),
            Resource(
                uri="sized://cut", name="cut", max_bytes=BUDGET, allow_truncation=True, freshness=Freshness.live()
            ),
            Resource(uri="sized://changing", name="changing", freshness=Freshness.static()),
        ]

    async def read(self, request: ReadRequest) -> Content:
        self.reads += 1
        if request.uri == "sized://changing":
            return Content(text=f"read number {self.reads}")
        size = BUDGET + 1 if request.uri == "sized://over" else BUDGET
        return Content(blob=b"x" * size, mime_type="application/octet-stream")


def _plugin(provider: Sized) -> SimpleNamespace:
    return SimpleNamespace(register_resource_providers=hookimpl(lambda settings: [provider]))


async def test_content_of_exactly_max_bytes_is_served_whole_and_one_more_byte_is_refused() -> None:
    composition = compose({"sized": _plugin(Sized())})
    async with connect(composition) as client:
        exact = await client.read_resource("sized://exact")
        cut = await client.read_resource("sized://cut")
        with pytest.raises(MCPError) as over:
            await client.read_resource("sized://over")
    for result in (exact, cut):
        receipt = (result.meta or {})[RECEIPT_KEY]
        assert receipt["bytes"] == BUDGET and receipt["truncation"] is None
    assert f"{BUDGET + 1} bytes, over the read budget of {BUDGET} bytes" in over.value.message


def test_the_budget_step_keeps_content_of_exactly_its_budget() -> None:
    """The read path only calls the budget step for content over the budget; other callers (and a
    refactor of that path) rely on the step itself keeping content of exactly the budget."""
    declaration = Resource(uri="sized://exact", name="exact", max_bytes=BUDGET)
    content = Content(blob=b"x" * BUDGET)
    assert within_budget("sized://exact", declaration, content, BUDGET) == (content, None)
    with pytest.raises(TooLarge):
        within_budget("sized://exact", declaration, Content(blob=b"x" * (BUDGET + 1)), BUDGET)


async def test_check_reports_a_static_resource_whose_two_reads_differ() -> None:
    problems = await check(compose({"sized": _plugin(Sized())}))
    assert [p for p in problems if "static-content-changed" in p and "sized://changing" in p], problems
