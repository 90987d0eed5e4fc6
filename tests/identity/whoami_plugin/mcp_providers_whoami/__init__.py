"""``whoami://me``: names the principal it was read for, after a pause so concurrent reads overlap.

Its freshness is unspecified, so the core treats it as ``private`` (content may depend on the
caller): two callers reading it at the same moment must each get their own read, never share one.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl


class WhoAmI(ResourceProvider):
    name = "whoami"
    prefixes = ("whoami://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="whoami://me", name="me", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        await anyio.sleep(0.5)
        principal = request.principal
        return Content(text=f"{principal.issuer} {principal.subject}")


@hookimpl
def register_resource_providers() -> list[ResourceProvider]:
    return [WhoAmI()]
