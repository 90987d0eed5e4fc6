"""One canonical URI form for routing, ownership, collisions, policy and receipts (issue 13, item 9).

``documcp://ssgs/bad%ZZ`` (a bad escape) and ``documcp://ssgs/%E9`` (an escape that is not UTF-8)
are -32602; a template with a non-ASCII literal (``docs://guías/{slug}``) is read in either
spelling, and a policy rule, a receipt and the collision rules see one form.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import MCPError
from wire_support import Guides, plugin

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins import policy
from mcp_providers.testing import compose, compose_installed, connect

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "uri", ["documcp://ssgs/bad%ZZ", "documcp://ssgs/%E9", "documcp://ssgs/%", "documcp://ssgs/%C3"]
)
async def test_bad_escapes_are_invalid_params(uri: str) -> None:
    composition = compose_installed(["ssg_catalog"])
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.error.code == -32602, caught.value.error
    assert "%XX" in caught.value.error.message  # says what would be right


@pytest.mark.parametrize("uri", ["docs://gu%C3%ADas/intro", "docs://guías/intro", "DOCS://gu%c3%adas/intro"])
async def test_a_non_ascii_template_literal_is_readable_in_every_spelling(uri: str) -> None:
    composition = compose({"wire": plugin(Guides())})
    async with connect(composition) as client:
        result = await client.read_resource(uri)
    assert result.contents[0].text == "guide intro"  # type: ignore[union-attr]
    receipt = (result.meta or {})[RECEIPT_KEY]
    assert receipt.get("canonicalUri", receipt.get("uri")) == "docs://gu%C3%ADas/intro", receipt


@pytest.mark.parametrize("uri", ["docs://gu%C3%ADas/intro", "docs://guías/intro", "docs://gu%c3%ADas/intro"])
async def test_a_policy_rule_in_canonical_form_holds_for_every_spelling(uri: str) -> None:
    rules = [{"effect": "deny", "actions": ["read"], "targets": ["docs://gu%C3%ADas/*"]}]
    composition = compose({"wire": plugin(Guides()), "policy": policy}, {"policy": {"rules": rules}})
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert "permission-denied" in caught.value.error.message


def _fixed(name: str, prefix: str, *uris: str) -> Any:
    class Fixed(ResourceProvider):
        prefixes = (prefix,)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri=uri, name=f"x{i}") for i, uri in enumerate(uris)]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text="x")

    provider = Fixed()
    provider.name = name
    return SimpleNamespace(register_resource_providers=hookimpl(lambda settings: [provider]))


def test_ownership_is_judged_in_canonical_form() -> None:
    composition = compose({"a": _fixed("a", "docs://guías/", "docs://gu%C3%ADas/x")}, strict=False)
    assert composition.failures == [], composition.failures


def test_two_spellings_of_one_uri_collide() -> None:
    composition = compose({"a": _fixed("a", "one://", "one://guías", "ONE://gu%c3%ADas")}, strict=False)
    assert any("duplicate-uri" in f for f in composition.failures), composition.failures


def test_two_spellings_of_one_prefix_overlap() -> None:
    composition = compose(
        {
            "a": _fixed("a", "two://guías/", "two://guías/x"),
            "b": _fixed("b", "two://gu%C3%ADas/", "two://gu%C3%ADas/y"),
        },
        strict=False,
    )
    assert any("prefix-overlap" in f for f in composition.failures), composition.failures
