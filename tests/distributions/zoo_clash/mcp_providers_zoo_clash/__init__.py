"""Declares the entry point ``zoo_clash``, as mcp-providers-zoo-plugins does: neither may win."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl


class ClashB(ResourceProvider):
    name = "zoo-clash-b"
    prefixes = ("clash-b://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="clash-b://item", name="item", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="clash b")


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    return [ClashB()]
