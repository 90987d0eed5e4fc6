"""Plugins written against earlier signatures of the hooks, left as their authors wrote them.

``first``: commit 971d4f1, when ``authorize(subject, action, target)`` was ``firstresult`` (the
first answer won, so a plugin allowed what it knew and the chain stopped there) and the provider
hook was written without ``settings``. ``with_settings``: commit 715d228, ``authorize`` gained
``settings`` (still ``firstresult``). Each allows everything under its own prefix and denies
``<prefix>secret``: under today's contract (any deny wins) the deny still denies, and its allows
no longer override another plugin's deny.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

from mcp_providers import Content, Decision, ReadRequest, Resource, ResourceProvider, hookimpl


class Items(ResourceProvider):
    def __init__(self, prefix: str) -> None:
        self.name = f"eras-{prefix.removesuffix('://')}"
        self.prefixes = (prefix,)

    def resources(self) -> Sequence[Resource]:
        return [
            Resource(uri=f"{self.prefixes[0]}open", name="open", mime_type="text/plain"),
            Resource(uri=f"{self.prefixes[0]}secret", name="secret", mime_type="text/plain"),
        ]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=f"{request.uri} read")


def _answer(prefix: str, target: str) -> Decision | None:
    if target == f"{prefix}secret":
        return Decision(False, f"{prefix} keeps its secret")
    return Decision(True) if target.startswith(prefix) else None


@hookimpl
def _first_providers() -> list[ResourceProvider]:
    return [Items("first://")]


@hookimpl
def _first_authorize(subject: str, action: str, target: str) -> Decision | None:
    return _answer("first://", target)


@hookimpl
def _settings_providers(settings: object) -> list[ResourceProvider]:
    return [Items("settings://")]


@hookimpl
def _settings_authorize(subject: str, action: str, target: str, settings: object) -> Decision | None:
    return _answer("settings://", target)


first = SimpleNamespace(register_resource_providers=_first_providers, authorize=_first_authorize)
with_settings = SimpleNamespace(register_resource_providers=_settings_providers, authorize=_settings_authorize)
