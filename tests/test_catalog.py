"""Catalog: pagination, deterministic order, routing and not-found messages."""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from types import SimpleNamespace

import mcp_types as types
import pytest
from mcp import MCPError

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, ResourceTemplate, ServerSettings, hookimpl
from mcp_providers._host.catalog import MAX_CURSOR_CHARS
from mcp_providers.errors import InvalidParams
from mcp_providers.testing import compose, connect


def EVERY(_target: str) -> bool:  # a caller who may list everything
    return True


pytestmark = pytest.mark.anyio


class Many(ResourceProvider):
    def __init__(self, name: str, prefix: str, count: int) -> None:
        self.name, self.prefixes, self.count = name, (prefix,), count

    def resources(self) -> Sequence[Resource]:
        # Declared in a non-sorted order: list order must be declaration order, not URI order.
        return [
            Resource(uri=f"{self.prefixes[0]}item/{(i * 7919) % self.count:04d}", name=f"i{i}")
            for i in range(self.count)
        ]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(uri_template=self.prefixes[0] + "item/{id}/detail", name="detail"),
            ResourceTemplate(uri_template=self.prefixes[0] + "{+rest}", name="rest"),
        ]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=f"{request.resource.name}:{dict(request.params)}")


def plugin(*providers: ResourceProvider) -> SimpleNamespace:
    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return list(providers)

    return SimpleNamespace(register_resource_providers=register_resource_providers)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_thousand_resources_come_back_complete_and_in_order_across_pages(mode: str) -> None:
    provider = Many("many", "many://", 1000)
    expected = [r.uri for r in provider.resources()]
    composition = compose({"many": plugin(provider)}, server=ServerSettings(page_size=64))
    async with connect(composition, mode=mode) as client:  # type: ignore[arg-type]
        for _ in range(2):  # the same order every time
            got, cursor, pages = [], None, 0
            while True:
                page = await client.list_resources(cursor=cursor)
                got += [r.uri for r in page.resources]
                pages += 1
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert got == expected
            assert pages == 16  # ceil(1000 / 64)


async def test_invalid_cursor_is_invalid_params() -> None:
    composition = compose({"many": plugin(Many("many", "many://", 10))}, server=ServerSettings(page_size=3))
    async with connect(composition) as client:
        first = await client.list_resources()
        assert first.next_cursor
        for bad in ("not-a-cursor", "eyJ4IjoxfQ", first.next_cursor[:-2] + "zz"):
            with pytest.raises(MCPError) as err:
                await client.list_resources(cursor=bad)
            assert err.value.code == types.INVALID_PARAMS
            assert "cursor" in err.value.message
        # A resources cursor is not a templates cursor.
        with pytest.raises(MCPError):
            await client.list_resource_templates(cursor=first.next_cursor)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


DEEP_CURSORS = {
    # round 4 item 13: json.loads raised RecursionError, answered -32603 with a traceback logged
    "100,000 nested arrays": _b64(b"[" * 100_000),
    "nested objects": _b64(b'{"a":' * 50_000),
    "nested arrays then a valid tail": _b64(b"[" * 5_000 + b'"resources",3,"x"' + b"]" * 5_000),
    "a 5,000-digit offset": _b64(b'["resources",' + b"9" * 5_000 + b',"x"]'),
    "long but flat": _b64(b'["resources",3,"' + b"x" * 20_000 + b'"]'),
}


@pytest.mark.parametrize("cursor", DEEP_CURSORS.values(), ids=DEEP_CURSORS.keys())
async def test_a_deep_or_long_cursor_is_invalid_params_without_a_traceback(
    cursor: str, caplog: pytest.LogCaptureFixture
) -> None:
    composition = compose({"many": plugin(Many("many", "many://", 10))}, server=ServerSettings(page_size=3))
    async with connect(composition) as client:
        with pytest.raises(MCPError) as err:
            await client.list_resources(cursor=cursor)
    assert err.value.code == types.INVALID_PARAMS, err.value
    assert err.value.message.startswith("Invalid cursor") and len(err.value.message) < 400
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.records


async def test_a_cursor_longer_than_any_minted_is_refused_unparsed() -> None:
    composition = compose({"many": plugin(Many("many", "many://", 10))}, server=ServerSettings(page_size=3))
    async with connect(composition) as client:
        first = await client.list_resources()
        assert first.next_cursor is not None
        padded = first.next_cursor + "=" * (MAX_CURSOR_CHARS - len(first.next_cursor) + 1)  # base64 skips it
        assert [r.uri for r in (await client.list_resources(cursor=first.next_cursor + "==")).resources]
        with pytest.raises(MCPError) as err:
            await client.list_resources(cursor=padded)
    assert err.value.code == types.INVALID_PARAMS


async def test_routing_prefers_fixed_then_the_owners_templates_in_order() -> None:
    a = Many("a", "a://", 3)
    composition = compose({"a": plugin(a), "b": plugin(Many("b", "b://x/", 2))})
    catalog = composition.catalog
    declared = {r.uri: r.name for r in a.resources()}
    assert catalog.route("a://item/0001", EVERY).declaration.name == declared["a://item/0001"]
    assert catalog.route("a://item/0001", EVERY).params == {}
    detail = catalog.route("a://item/42/detail", EVERY)
    assert detail.declaration.name == "detail" and detail.params == {"id": "42"}
    rest = catalog.route("b://x/some/where", EVERY)
    assert rest.provider.name == "b" and rest.params == {"rest": "some/where"}
    # percent-decoded exactly once
    assert catalog.route("a://item/%2541/detail", EVERY).params == {"id": "%41"}
    # ... but a value that holds a separator once decoded again is refused (round 4 item 17)
    with pytest.raises(InvalidParams, match="path separator"):
        catalog.route("a://item/%252F/detail", EVERY)


async def test_unknown_uri_names_the_closest_owned_prefix() -> None:
    composition = compose({"b": plugin(Many("b", "b://x/", 2)), "c": plugin(Many("c", "c://y/", 2))})
    async with connect(composition) as client:
        with pytest.raises(MCPError) as err:
            await client.read_resource("b://z")
        assert err.value.code == types.INVALID_PARAMS
        assert err.value.data == {"uri": "b://z"}
        assert "closest owned prefix is 'b://x/'" in err.value.message


async def test_schemes_are_case_insensitive_and_foreign_schemes_get_the_served_ones() -> None:
    composition = compose({"b": plugin(Many("b", "b://x/", 2)), "c": plugin(Many("c", "c://y/", 2))})
    catalog = composition.catalog
    assert catalog.route("B://x/item/0001", EVERY).provider.name == "b"  # RFC 3986: schemes ignore case
    async with connect(composition) as client:
        with pytest.raises(MCPError) as err:
            await client.read_resource("file:///etc/passwd")
        assert err.value.message.endswith("No provider serves that scheme; the served schemes are b://, c://")
        assert err.value.data == {"uri": "file:///etc/passwd"}


class Keeper(ResourceProvider):
    """Serves one fixed URI; mutates the params it is handed and fails when asked to."""

    name, prefixes = "keeper", ("k://",)

    def __init__(self) -> None:
        self.seen: list[object] = []
        self.fail = False

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="k://one", name="one")]

    async def read(self, request: ReadRequest) -> Content:
        self.seen.append(request.params)
        if self.fail:
            raise RuntimeError("boom")
        request.params["left"] = "behind"  # type: ignore[index]  # a provider misusing its own dict
        return Content(text="one")


async def test_fixed_uri_routes_the_same_in_any_spelling_and_each_read_gets_its_own_params() -> None:
    keeper = Keeper()
    composition = compose({"keeper": plugin(keeper)})
    catalog = composition.catalog
    assert catalog.route("K://one", EVERY) is catalog.route("k://one", EVERY)  # one route per fixed URI, made once
    assert catalog.route("k://%6Fne", EVERY).canonical == "k://one"
    async with connect(composition) as client:
        for _ in range(2):
            await client.read_resource("k://one")
    assert [type(p) for p in keeper.seen] == [dict, dict] and keeper.seen[0] is not keeper.seen[1]
    assert catalog.route("k://one", EVERY).params == {}  # what one read did to its dict stays there


async def test_provider_failure_names_the_fixed_uri_as_sent() -> None:
    keeper = Keeper()
    keeper.fail = True
    async with connect(compose({"keeper": plugin(keeper)})) as client:
        for sent in ("k://one", "K://one"):
            with pytest.raises(MCPError) as err:
                await client.read_resource(sent)
            assert f"failed reading {sent};" in err.value.message
            assert err.value.error.data == {"target": sent}
