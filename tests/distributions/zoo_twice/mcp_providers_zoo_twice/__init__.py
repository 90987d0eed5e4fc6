"""A good plugin; the tests install its distribution into two folders that are both on sys.path."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl


class Twice(ResourceProvider):
    name = "zoo-twice"
    prefixes = ("twice://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="twice://hello", name="hello", mime_type="text/plain", freshness=Freshness.static())]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="hello once")


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    return [Twice()]
