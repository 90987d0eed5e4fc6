"""One fixed resource, ``weather://today``."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl


class Weather(ResourceProvider):
    name = "weather"
    prefixes = ("weather://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="weather://today", name="today", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="sunny")


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    return [Weather()]
