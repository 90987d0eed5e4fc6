"""The one request pipeline: every MCP method asks the gate about its canonical target and writes
exactly one audit line named by its method, for a caller who is allowed and for one who is not.

A recording ``authorize`` plugin notes every question; the caller's URIs are spelled with an
upper-case scheme and a percent-escaped letter, so only a gate that canonicalises sees
``x://a/secret``. Denied means: the policy refuses everything except listing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from pydantic import BaseModel

from mcp_providers import (
    Content,
    Decision,
    Embed,
    Freshness,
    Link,
    Message,
    Prompt,
    PromptArgument,
    PromptProvider,
    ReadRequest,
    Resource,
    ResourceProvider,
    ResourceTemplate,
    ServerSettings,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
)
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

RAW = "X://%61/secret"  # what the client sends
CANONICAL = "x://a/secret"  # what every rule must be asked about
TEMPLATE = "x://a/{name}"


class Secrets(ResourceProvider):
    name = "secrets"
    prefixes = ("x://a/",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="x://a/index", name="index", freshness=Freshness.live())]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(
                uri_template=TEMPLATE, name="item", freshness=Freshness.live(), completions={"name": ("secret",)}
            )
        ]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=f"the {request.params.get('name', 'index')}")


class Args(BaseModel):
    pass


class Out(BaseModel):
    ok: bool


class Tools(ToolProvider):
    name = "x-tools"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="show", description="Embeds and links the secret.", input_model=Args, output_model=Out)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(
            output=Out(ok=True), embedded=(Embed(uri=RAW, text="the secret"),), links=(Link(uri=RAW, name="s"),)
        )


class Prompts(PromptProvider):
    name = "x-prompts"

    def prompts(self) -> Sequence[Prompt]:
        return [
            Prompt(
                name="brief",
                description="Embeds the secret.",
                arguments=(PromptArgument(name="name", resource=TEMPLATE),),
            )
        ]

    async def render(self, prompt: Prompt, arguments: Any) -> Sequence[Message]:
        return [
            Message("user", content=Embed(uri=RAW, text="the secret")),
            Message("user", content=Link(uri=RAW, name="s")),
        ]


class Recorder:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []
        self.deny = False

    @hookimpl
    def authorize(self, subject: str, action: str, target: str) -> Decision | None:
        self.asked.append((subject, action, target))
        if self.deny:
            return Decision(False, "the test denies it")
        return None


def plugin() -> Any:
    return SimpleNamespace(
        register_resource_providers=hookimpl(lambda: [Secrets()]),
        register_tool_providers=hookimpl(lambda: [Tools()]),
        register_prompt_providers=hookimpl(lambda: [Prompts()]),
    )


async def _listen(client: Client) -> Any:
    async with client.listen(resource_subscriptions=[RAW]):
        pass


Call = Callable[[Client], Awaitable[Any]]
REF = types.ResourceTemplateReference(type="ref/resource", uri=TEMPLATE)
# (method, client mode, call, (action, target) the gate must be asked about)
METHODS: list[tuple[str, str, Call, tuple[str, str]]] = [
    ("resources/list", "auto", lambda c: c.list_resources(), ("list", "x://a/index")),
    ("resources/templates/list", "auto", lambda c: c.list_resource_templates(), ("list", TEMPLATE)),
    ("resources/read", "auto", lambda c: c.read_resource(RAW), ("read", CANONICAL)),
    ("resources/read", "legacy", lambda c: c.read_resource(RAW), ("expand", TEMPLATE)),
    ("completion/complete", "auto", lambda c: c.complete(REF, {"name": "name", "value": "s"}), ("complete", TEMPLATE)),
    ("resources/subscribe", "legacy", lambda c: c.subscribe_resource(RAW), ("subscribe", CANONICAL)),
    ("resources/unsubscribe", "legacy", lambda c: c.unsubscribe_resource(RAW), ("subscribe", CANONICAL)),
    ("subscriptions/listen", "auto", _listen, ("subscribe", CANONICAL)),
    ("tools/list", "auto", lambda c: c.list_tools(), ("list", "show")),
    ("tools/call", "auto", lambda c: c.call_tool("show", {}), ("call", "show")),
    ("tools/call", "auto", lambda c: c.call_tool("show", {}), ("read", CANONICAL)),  # its embed and link
    ("prompts/list", "auto", lambda c: c.list_prompts(), ("list", "brief")),
    ("prompts/get", "auto", lambda c: c.get_prompt("brief", {}), ("prompt", "brief")),
    ("prompts/get", "auto", lambda c: c.get_prompt("brief", {}), ("read", CANONICAL)),  # its embed and link
    ("prompts/get", "auto", lambda c: c.get_prompt("brief", {"name": "secret"}), ("read", CANONICAL)),  # argument
]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("denied", [False, True], ids=["allowed", "denied"])
@pytest.mark.parametrize(("method", "mode", "call", "asked"), METHODS, ids=[f"{m[0]}-{m[3][0]}" for m in METHODS])
async def test_every_method_asks_the_gate_and_writes_one_audit_line(
    tmp_path: Path, method: str, mode: str, call: Call, asked: tuple[str, str], denied: bool
) -> None:
    recorder = Recorder()
    audit = tmp_path / "audit.jsonl"
    composition = compose({"x": plugin(), "recorder": recorder}, server=ServerSettings(audit_log=audit))
    async with Client(composition.server, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        recorder.deny = denied
        before = len([line for line in _lines(audit) if line["operation"] == method])
        recorder.asked.clear()
        failed = None
        try:
            await call(client)
        except MCPError as exc:
            failed = exc
        with anyio.fail_after(5):  # a listen stream is audited when it ends
            while len([line for line in _lines(audit) if line["operation"] == method]) == before:
                await anyio.sleep(0.01)
    mine = [line for line in _lines(audit) if line["operation"] == method][before:]
    assert len(mine) == 1, mine
    assert ("local", *asked) in recorder.asked or (denied and failed is not None), recorder.asked
    if denied and not method.endswith("/list"):
        assert failed is not None and failed.code == -32003, failed
        assert mine[0]["decision"] == "denied" and "action" in mine[0]
    elif not denied:
        assert failed is None, failed
        assert mine[0]["decision"] == "allowed"
    if denied and method.endswith("/list"):
        assert mine[0]["count"] == 0  # nothing the caller may not list is shown


@pytest.mark.slow
def test_requests_no_method_stage_answers_are_audited_once_too(tmp_path: Path) -> None:
    """initialize, ping, an unknown method and params the SDK refuses never reach a method's stages;
    each still writes exactly one line, named by its method."""
    import os

    from reliability_support import RawStdio

    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "mcp-providers.toml"
    config.write_text(f'allow = ["ssg_catalog"]\n[server]\naudit_log = "{audit}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    with RawStdio(env, tmp_path / "stderr.txt", "--config", str(config)) as raw:
        raw.initialize("2025-11-25")
        assert raw.request("ping")["result"] == {}
        assert raw.request("no/such-method")["error"]["code"] == -32601
        assert raw.request("resources/read", {"uri": 5})["error"]["code"] == -32602
        assert "result" in raw.request("resources/read", {"uri": "documcp://ssgs/hugo"})
    operations = [json.loads(line)["operation"] for line in audit.read_text().splitlines()]
    assert operations == ["initialize", "ping", "no/such-method", "resources/read", "resources/read"], operations
