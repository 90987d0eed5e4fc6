"""Prints to stdout when imported, when asked for providers and during every read.

While ``serve`` speaks MCP over stdio, stdout is the protocol stream: none of this may reach it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl

print("ZOO-PRINTER: printed at import")


class Printer(ResourceProvider):
    name = "zoo-printer"
    prefixes = ("printer://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="printer://noisy", name="noisy", mime_type="text/plain", freshness=Freshness.static())]

    async def read(self, request: ReadRequest) -> Content:
        print("ZOO-PRINTER: printed during a read")
        print('{"jsonrpc": "2.0", "id": 1, "result": {}}')  # looks like a protocol message
        sys.stdout.flush()
        os.write(1, b"ZOO-PRINTER: written to fd 1 during a read\n")
        return Content(text="the printer's content")


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    print("ZOO-PRINTER: printed by a hook")
    return [Printer()]
