"""Issue 23: the credential broker inside a served composition, through a real MCP client.

Reads, tool calls, completions and prompt renders reach the runtime's broker from their request
(``request.credential``, ``policy.credential`` for renders); the request's receipt and audit line
carry ``upstream: {name, subject, grant}``; the token is in neither, nor in the log; concurrent
reads share one obtain; a coalesced read's receipt names the upstream identity too; a refusal is
a denial.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers import (
    RECEIPT_KEY,
    CompletionRequest,
    Content,
    Credential,
    CredentialRefused,
    Message,
    Prompt,
    PromptArgument,
    PromptProvider,
    ReadRequest,
    ResourceProvider,
    ResourceTemplate,
    ServerSettings,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
    policy,
)
from mcp_providers.errors import DENIED
from mcp_providers.identity import Principal
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

ALICE = Principal("alice", issuer="https://idp.example.com")
BOB = Principal("bob", issuer="https://idp.example.com")
SECRET = "upstream-token-7c1e5f0b9a"
UPSTREAM = {"name": "records:test", "grant": "jwt_bearer"}


class Records:
    """The upstream: grants a token per obtain (after a short wait, so concurrent asks overlap)."""

    name = "records:test"

    def __init__(self) -> None:
        self.obtains: list[str] = []
        self.refuse: set[str] = set()

    async def obtain(self, principal: Principal) -> Credential:
        self.obtains.append(principal.subject)
        await anyio.sleep(0.05)
        if principal.subject in self.refuse:
            raise CredentialRefused(f"records:test grants no token to {principal.subject}: no such user")
        return Credential(f"{SECRET}-{len(self.obtains)}", time.time() + 600, f"{principal.subject}-up", "jwt_bearer")


class Served(ResourceProvider):
    """Reads and completions as the caller (the token it was handed kept in ``tokens``)."""

    name = "records"
    prefixes = ("rec://",)

    def __init__(self, upstream: Records) -> None:
        self.upstream = upstream
        self.tokens: list[str] = []

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="rec://items/{id}", name="item", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        credential = await request.credential(self.upstream)
        self.tokens.append(credential.token)
        await anyio.sleep(0.05)  # the upstream answers after a while: identical reads overlap
        return Content(text=f"item {request.params['id']} as {credential.subject}")

    async def complete(self, template: Any, request: CompletionRequest) -> Sequence[str]:
        credential = await request.credential(self.upstream)
        return [f"{credential.subject}-1"]


class Retry(BaseModel):
    rejected: bool = False
    both: bool = False


class Other(Records):
    name = "other:test"


class Whoami(ToolProvider):
    name = "records-tools"

    def __init__(self, upstream: Records) -> None:
        self.upstream, self.other = upstream, Other()

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="whoami", description="who the upstream sees", input_model=Retry)]

    async def call(self, call: ToolCall) -> ToolResult:
        credential = await call.credential(self.upstream)
        if call.arguments.rejected:  # type: ignore[attr-defined]  # the upstream answered 401: forget, retry
            await call.forget_credential(self.upstream)
            credential = await call.credential(self.upstream)
        if call.arguments.both:  # type: ignore[attr-defined]
            await call.credential(self.other)
            await call.credential(self.upstream)  # again: recorded once
        return ToolResult(text=f"upstream sees {credential.subject}")


class Briefs(PromptProvider):
    name = "records-prompts"

    def __init__(self, upstream: Records) -> None:
        self.upstream = upstream

    def prompts(self) -> Sequence[Prompt]:
        return [Prompt(name="brief", description="a brief", arguments=(PromptArgument(name="topic"),))]

    async def render(self, prompt: Prompt, arguments: Any) -> Sequence[Message]:
        credential = await policy.credential(self.upstream)
        return [Message("user", f"brief for {credential.subject}")]


def plugin(provider: Served) -> SimpleNamespace:
    @hookimpl
    def register_resource_providers() -> list[ResourceProvider]:
        return [provider]

    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [Whoami(provider.upstream)]

    @hookimpl
    def register_prompt_providers() -> list[PromptProvider]:
        return [Briefs(provider.upstream)]

    return SimpleNamespace(register_resource_providers=register_resource_providers,
                           register_tool_providers=register_tool_providers,
                           register_prompt_providers=register_prompt_providers)  # fmt: skip


@pytest.fixture
def upstream() -> Records:
    return Records()


@pytest.fixture
def served(upstream: Records) -> Served:
    return Served(upstream)


@pytest.fixture
def audit(tmp_path: Path) -> Path:
    return tmp_path / "audit.jsonl"


@pytest.fixture
def composition(served: Served, audit: Path) -> Any:
    return compose({"records": plugin(served)}, server=ServerSettings(audit_log=audit))


def lines(audit: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in audit.read_text().splitlines()]


def receipt_of(result: Any) -> dict[str, Any]:
    return dict((result.meta or {})[RECEIPT_KEY])


async def test_every_kind_of_request_carries_the_upstream_identity_and_never_the_token(
    composition: Any, served: Served, audit: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    alice_up = {**UPSTREAM, "subject": "alice-up"}
    async with connect(composition, principal=ALICE) as client:
        read = await client.read_resource("rec://items/7")
        tool = await client.call_tool("whoami", {})
        prompt = await client.get_prompt("brief", {"topic": "x"})
        completion = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="rec://items/{id}"), {"name": "id", "value": ""}
        )
    assert read.contents[0].text == "item 7 as alice-up"  # type: ignore[union-attr]
    assert completion.completion.values == ["alice-up-1"]
    for result in (read, tool, prompt):
        assert receipt_of(result)["upstream"] == alice_up
        assert "upstreams" not in receipt_of(result)
    written = {line["operation"]: line for line in lines(audit)}
    for operation in ("resources/read", "tools/call", "prompts/get", "completion/complete"):
        assert written[operation]["upstream"] == alice_up, operation
    assert served.upstream.obtains == ["alice"]  # one obtain served all four
    assert served.tokens and all(t.startswith(SECRET) for t in served.tokens)
    shown = json.dumps([receipt_of(r) for r in (read, tool, prompt)]) + audit.read_text() + caplog.text
    assert SECRET not in shown


async def test_fifty_concurrent_reads_by_one_user_cause_one_obtain_and_a_second_user_a_second(
    composition: Any, upstream: Records
) -> None:
    results: dict[str, list[Any]] = {"alice": [], "bob": []}

    async def read_all(principal: Principal) -> None:
        async with connect(composition, principal=principal) as client, anyio.create_task_group() as tasks:
            for n in range(50):
                tasks.start_soon(lambda n=n: _read(client, f"rec://items/{n}", results[principal.subject]))

    await read_all(ALICE)  # one after the other: the runtime's lifespan is entered in one task
    await read_all(BOB)
    assert upstream.obtains == ["alice", "bob"]
    for who in ("alice", "bob"):
        assert len(results[who]) == 50
        assert {receipt_of(r)["upstream"]["subject"] for r in results[who]} == {f"{who}-up"}


async def _read(client: Any, uri: str, into: list[Any]) -> None:
    into.append(await client.read_resource(uri))


async def test_reads_sharing_one_provider_read_all_name_its_upstream_identity(composition: Any) -> None:
    got: list[Any] = []
    async with connect(composition, principal=ALICE) as client, anyio.create_task_group() as tasks:
        for _ in range(10):
            tasks.start_soon(_read, client, "rec://items/same", got)
    assert composition.runtime.invoker._coalescer.shared > 0  # some were answered by another's read
    assert [receipt_of(r).get("upstream") for r in got] == [{**UPSTREAM, "subject": "alice-up"}] * 10


async def test_a_rejected_credential_is_forgotten_and_obtained_exactly_once_more(
    composition: Any, upstream: Records
) -> None:
    async with connect(composition, principal=ALICE) as client:
        await client.call_tool("whoami", {})
        assert upstream.obtains == ["alice"]
        result = await client.call_tool("whoami", {"rejected": True})
        await client.call_tool("whoami", {})
    assert result.content[0].text == "upstream sees alice-up"  # type: ignore[union-attr]
    assert upstream.obtains == ["alice", "alice"]


async def test_an_upstream_refusal_is_a_denial_and_nothing_is_cached(
    composition: Any, upstream: Records, audit: Path
) -> None:
    upstream.refuse.add("bob")
    async with connect(composition, principal=BOB) as client:
        for _ in range(2):
            with pytest.raises(MCPError) as caught:
                await client.read_resource("rec://items/1")
            assert caught.value.error.code == DENIED
            assert "grants no token to bob" in caught.value.error.message
    assert upstream.obtains == ["bob", "bob"]
    denied = [line for line in lines(audit) if line["operation"] == "resources/read"]
    assert [line["decision"] for line in denied] == ["denied", "denied"]
    assert all("upstream" not in line for line in denied)


async def test_each_composition_has_its_own_broker(served: Served, upstream: Records) -> None:
    first = compose({"records": plugin(served)})
    second = compose({"records": plugin(served)})
    for composition in (first, second):
        async with connect(composition, principal=ALICE) as client:
            await client.read_resource("rec://items/1")
    assert upstream.obtains == ["alice", "alice"]
    assert first.runtime.credentials is not second.runtime.credentials
    assert first.runtime.credentials.obtained == 1


async def test_a_request_using_two_upstreams_lists_both_in_order(composition: Any, audit: Path) -> None:
    async with connect(composition, principal=ALICE) as client:
        result = await client.call_tool("whoami", {"both": True})
    first, second = (
        {**UPSTREAM, "subject": "alice-up"},
        {"name": "other:test", "subject": "alice-up", "grant": "jwt_bearer"},
    )
    assert receipt_of(result)["upstream"] == first
    assert receipt_of(result)["upstreams"] == [first, second]
    (line,) = [line for line in lines(audit) if line["operation"] == "tools/call"]
    assert line["upstreams"] == [first, second]


async def test_metrics_count_the_obtains_of_the_replica(composition: Any) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from mcp_providers._serve.transport.ops import _Gauges

    registry = CollectorRegistry()
    registry.register(_Gauges(composition.runtime))
    async with connect(composition, principal=ALICE) as client:
        for n in range(3):
            await client.read_resource(f"rec://items/{n}")
    async with connect(composition, principal=BOB) as client:
        await client.read_resource("rec://items/1")
    assert "mcp_providers_credentials_obtained_total 2.0" in generate_latest(registry).decode()
