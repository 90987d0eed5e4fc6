"""Author and operator mistakes ``check`` passed silently (tester twenty-five, f2 f3 f5 f6): an
upstream that cannot be listed, unannotated parameters, a URI or template whose literal part no
valid URI reaches, a policy rule on a template's URIs written as the template. Each is now named
by ``check`` (and by :mod:`mcp_providers.testing`, which reports what the CLI reports)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mcp_providers import Content, ReadRequest, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers.plugin import Plugin
from mcp_providers.testing import check, compose

pytestmark = pytest.mark.anyio

# -- f5: a literal part no valid URI reaches is refused at declaration -------------------------------

BAD_TEMPLATES = {
    "t25://a b/{uid}": "%20",
    "t25://a|b/{uid}": "%7C",
    "t25://a\\b/{uid}": "%5C",
    "t25://a#b/{uid}": "%23",
    "t25://a?b/{uid}": "%3F",
    "t25://users/../{uid}": "'..'",
    "t25://users/./{uid}": "'.'",
    "t25://users/%2E%2E/{uid}": "'..'",
}
BAD_FIXED = {"t25://a b": "%20", "t25://x/../y": "'..'", "t25://x#frag": "%23", "t25://a<b>": "%3C"}
GOOD_TEMPLATES = ["t25://users/{uid}", "t25://search?q={uid}", "t25://v1.2/{uid}", "t25://a%20b/{uid}", "t25://x{?uid}"]
GOOD_FIXED = ["t25://x?y=1", "t25://a%20b", "t25://v1.2/x..y", "t25://gu%C3%ADas"]


def _decorated(kind: str, uri: str) -> Plugin:
    plugin = Plugin("t", prefixes=["t25://"])
    if kind == "template":

        @plugin.template(uri)
        def user(uid: int) -> str:
            return f"user {uid}"

    else:

        @plugin.resource(uri)
        def thing() -> str:
            return "x"

    return plugin


@pytest.mark.parametrize(("kind", "uri", "fix"), [*(("template", u, f) for u, f in BAD_TEMPLATES.items()),
                                                  *(("resource", u, f) for u, f in BAD_FIXED.items())])  # fmt: skip
async def test_a_literal_no_valid_uri_reaches_is_refused_naming_the_fix(kind: str, uri: str, fix: str) -> None:
    composition = compose({"t": _decorated(kind, uri)}, strict=False)
    lines = [line for line in await check(composition) if "uri-invalid" in line]
    assert len(lines) == 1 and repr(uri) in lines[0] and "fix:" in lines[0] and fix in lines[0], lines
    assert not composition.catalog.served_count  # refused: its plugin is not served


@pytest.mark.parametrize(("kind", "uri"), [*(("template", u) for u in GOOD_TEMPLATES),
                                           *(("resource", u) for u in GOOD_FIXED)])  # fmt: skip
async def test_a_literal_a_valid_uri_reaches_passes(kind: str, uri: str) -> None:
    assert await check(compose({"t": _decorated(kind, uri)})) == []


class _Users(ResourceProvider):
    name = "users"
    prefixes = ("t25://",)

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="t25://a b/{uid}", name="user")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="x")


class _ClassPlugin:
    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [_Users()]


async def test_a_class_providers_template_is_refused_the_same_way() -> None:
    composition = compose({"users": _ClassPlugin()}, strict=False)
    lines = await check(composition)
    assert any("uri-invalid" in line and "t25://a b/{uid}" in line and "%20" in line for line in lines), lines
