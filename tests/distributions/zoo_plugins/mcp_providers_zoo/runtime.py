"""Plugins that load and pass every check, then misbehave: a wrong hook return type, a read
that raises, a read that never finishes; and one half of an entry-point name clash."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import anyio

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl


class Fixed(ResourceProvider):
    """Serves one static fixed resource ``<scheme>://item`` with ``behaviour`` on read."""

    def __init__(self, scheme: str, behaviour: str) -> None:
        self.name = f"zoo-{scheme}"
        self.prefixes = (f"{scheme}://",)
        self.behaviour = behaviour

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=f"{self.prefixes[0]}item", name="item", mime_type="text/plain",
                         freshness=Freshness.static())]  # fmt: skip

    async def read(self, request: ReadRequest) -> Content:
        if self.behaviour == "raise":
            # The server must not pass an unexpected exception's text on to the client.
            raise RuntimeError("zoo read failed: ZOO-INTERNAL-DETAIL")
        if self.behaviour == "hang":
            await anyio.sleep_forever()
        return Content(text=f"{request.uri} is fine")


def _plugin(*providers: ResourceProvider) -> SimpleNamespace:
    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return list(providers)

    return SimpleNamespace(register_resource_providers=register_resource_providers)


@hookimpl
def _wrong_type() -> Any:
    return {"providers": "a dict, not a list of ResourceProvider"}


wrong_type = SimpleNamespace(register_resource_providers=_wrong_type)
read_raises = _plugin(Fixed("raises", "raise"))
read_hangs = _plugin(Fixed("hangs", "hang"))
clash = _plugin(Fixed("clash-a", "fine"))
