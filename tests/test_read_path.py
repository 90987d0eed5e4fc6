"""The read path of a fixed URI, bound on its first read (issue 43, third pass).

What a fixed URI's reads share is made once: its route and shared parts on the first read, and
what one caller's reads share (the provider's request, the coalescing key, the receipt's caller
and URI, the cache scope) on that caller's first read. Nothing of one caller may reach another's
read, nor of one policy's read another's, and a provider that fills its request's ``params`` never
hands them to the next read.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve.steps.gate import Authorizer
from mcp_providers.identity import LOCAL, Principal, serving_as
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

URI = "notes://a/index"
ALICE = Principal("alice", issuer="https://idp.example.test/", client_id="host")
BOB = Principal("bob", issuer="https://idp.example.test/", client_id="host")


class Notes(ResourceProvider):
    """One static fixed resource; notes who asked and what ``params`` each read was handed."""

    name = "notes"
    prefixes = ("notes://a/",)

    def __init__(self, *, fill: bool = False, fail: bool = False) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.gate: anyio.Event | None = None
        self.fill, self.fail = fill, fail

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=URI, name="index", mime_type="text/plain", freshness=Freshness.static())]

    async def read(self, request: ReadRequest) -> Content:
        self.seen.append((request.principal.subject, dict(request.params)))
        if self.fill:
            request.params["filled"] = "by the provider"  # type: ignore[index]  # its own dict: it may
        if self.fail:
            raise RuntimeError("the notes are gone")
        if self.gate is not None:
            await self.gate.wait()
        return Content(text=f"for {request.principal.subject}")


class _Plugin:
    def __init__(self, provider: Notes) -> None:
        self.provider = provider

    @hookimpl
    def register_resource_providers(self, settings: Any) -> list[ResourceProvider]:
        return [self.provider]


async def _read(composition: Any, principal: Principal, uri: str = URI) -> dict[str, Any]:
    with serving_as(principal):
        async with Client(composition.server, mode="auto") as client:
            result = await client.read_resource(uri)
    dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True)
    return dumped


async def test_callers_reading_a_fixed_uri_in_turn_each_get_their_own_request_receipt_and_cache_scope() -> None:
    notes = Notes()
    composition = compose({"notes": _Plugin(notes)})
    answers = [await _read(composition, who) for who in (LOCAL, ALICE, LOCAL, BOB, ALICE)]
    assert [subject for subject, _ in notes.seen] == ["local", "alice", "local", "bob", "alice"]
    assert [a["contents"][0]["text"] for a in answers] == [
        f"for {s}" for s in ("local", "alice", "local", "bob", "alice")
    ]
    receipts = [a["_meta"][RECEIPT_KEY] for a in answers]
    assert [(r["subject"], r["issuer"], r["uri"]) for r in receipts] == [
        ("local", "local", URI),
        ("alice", ALICE.issuer, URI),
        ("local", "local", URI),
        ("bob", BOB.issuer, URI),
        ("alice", ALICE.issuer, URI),
    ]
    # a static read is public only for the one local account (nobody in particular); a named caller's is private
    assert [a["cacheScope"] for a in answers] == ["public", "private", "public", "private", "private"]


async def test_a_provider_that_fills_its_params_never_hands_them_to_the_next_read() -> None:
    notes = Notes(fill=True)
    composition = compose({"notes": _Plugin(notes)})
    for _ in range(3):
        await _read(composition, LOCAL)
    assert [params for _, params in notes.seen] == [{}, {}, {}]


async def test_a_fixed_uri_sent_in_another_spelling_is_read_and_named_as_sent_every_time() -> None:
    notes = Notes()
    composition = compose({"notes": _Plugin(notes)})
    other = "NOTES://a/%69ndex"
    receipts = [(await _read(composition, LOCAL, uri))["_meta"][RECEIPT_KEY] for uri in (other, URI, other, URI)]
    assert [r["uri"] for r in receipts] == [other, URI, other, URI]
    assert [r.get("canonicalUri") for r in receipts] == [URI, None, URI, None]


async def test_a_failed_read_of_a_fixed_uri_names_it_as_sent_every_time() -> None:
    composition = compose({"notes": _Plugin(Notes(fail=True))})
    other = "NOTES://a/%69ndex"
    messages = []
    async with Client(composition.server, mode="auto") as client:
        for uri in (other, URI, other):
            with pytest.raises(MCPError) as failed:
                await client.read_resource(uri)
            messages.append(failed.value.error.message)
    assert messages == [
        f"provider 'notes' (plugin 'notes') failed reading {u}; the server log has the details"
        for u in (other, URI, other)
    ]


async def test_concurrent_reads_of_one_caller_share_one_provider_read_and_other_callers_do_not() -> None:
    notes = Notes()
    notes.gate = anyio.Event()
    composition = compose({"notes": _Plugin(notes)})
    answers: list[dict[str, Any]] = []

    async def read(who: Principal) -> None:
        answers.append(await _read(composition, who))

    async with anyio.create_task_group() as tg:
        for who in (ALICE, ALICE, BOB):
            tg.start_soon(read, who)
        with anyio.fail_after(5):
            while len(notes.seen) < 2:  # alice's read and bob's: the second of alice's waits on hers
                await anyio.sleep(0.01)
        await anyio.sleep(0.05)
        notes.gate.set()
    assert sorted(subject for subject, _ in notes.seen) == ["alice", "bob"]
    assert sorted(a["_meta"][RECEIPT_KEY]["subject"] for a in answers) == ["alice", "alice", "bob"]


async def test_a_read_under_a_policy_is_never_given_what_was_kept_from_a_read_without_one() -> None:
    """The kept caller parts are for one policy state: the same caller under a policy gets its own
    (here a static read turns ``private``: a policy may refuse another caller what this one got)."""
    notes = Notes()
    composition = compose({"notes": _Plugin(notes)})
    method = composition.runtime.generation.methods["resources/read"]
    ctx = SimpleNamespace(request=None, protocol_version="2026-07-28", method="resources/read", request_id=1)
    params = types.ReadResourceRequestParams(uri=URI)
    allow_all = SimpleNamespace(plugin="allow", settings=None, caller=lambda **_: [])  # defers: allowed
    with serving_as(LOCAL):
        first = await composition.pipeline.run(method, ctx, params, Authorizer(()))  # type: ignore[arg-type]
        second = await composition.pipeline.run(method, ctx, params, Authorizer((allow_all,)))  # type: ignore[arg-type]
        third = await composition.pipeline.run(method, ctx, params, Authorizer(()))  # type: ignore[arg-type]
    assert [r["cacheScope"] for r in (first, second, third)] == ["public", "private", "public"]
