"""The Principal: made once per request, seen by providers and policies, recorded in custody.

Issue 22 ("A Principal ... exposed to providers and to the authorize hook"; "the built-in policy
plugin's rules match groups, scopes, issuers and claims"; "receipts and audit lines record issuer,
subject and client id"; "private cache scope and coalescing key on issuer + subject") and issue 24
item 2 (the gate fails closed on every odd answer, tested so that breaking it fails a test).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pluggy
import pytest
from mcp import MCPError
from pipeline_support import secrets_plugin
from pydantic import BaseModel

from mcp_providers import (
    RECEIPT_KEY,
    CompletionRequest,
    Content,
    Decision,
    Message,
    Principal,
    Prompt,
    PromptProvider,
    ReadRequest,
    Resource,
    ResourceProvider,
    ServerSettings,
    Text,
    Tool,
    ToolCall,
    ToolProvider,
    ToolResult,
    hookimpl,
    policy,
)
from mcp_providers._host.assembly import AuthorizeImpl
from mcp_providers._serve.steps.gate import Authorizer, Gate
from mcp_providers.errors import Denied
from mcp_providers.identity import ANONYMOUS, LOCAL, from_access_token, serving_as
from mcp_providers.plugins import policy as policy_plugin
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

ALICE_A = Principal("alice", issuer="https://idp-a.example/", client_id="app-1", groups={"itil"}, scopes={"mcp:read"})
ALICE_B = Principal("alice", issuer="https://idp-b.example/", client_id="app-2")
BOB_A = Principal("bob", issuer="https://idp-a.example/", client_id="app-1", groups={"sales"})


class Nothing(BaseModel):
    pass


class Who(ResourceProvider):
    """Answers with who it was asked by, as the provider saw it."""

    name = "who"
    prefixes = ("who://x/",)
    reads = 0

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="who://x/me", name="me", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        Who.reads += 1
        await anyio.sleep(0.05)  # long enough for concurrent reads to meet in the coalescer
        p = request.principal
        return Content(text=f"{p.issuer}|{p.subject}|{p.client_id}|{','.join(sorted(p.groups))}")


class WhoTools(ToolProvider):
    name = "who-tools"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="whoami", description="Who called.", input_model=Nothing)]

    async def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(text=f"{call.principal.issuer}|{call.subject}")


class WhoPrompts(PromptProvider):
    name = "who-prompts"

    def prompts(self) -> Sequence[Prompt]:
        return [Prompt(name="greet", description="Greets the caller.")]

    async def render(self, prompt: Prompt, arguments: Any) -> Sequence[Message]:
        return [Message("user", content=Text(f"hello {policy.principal().subject} of {policy.principal().issuer}"))]


def who_plugin() -> Any:
    return SimpleNamespace(
        register_resource_providers=hookimpl(lambda: [Who()]),
        register_tool_providers=hookimpl(lambda: [WhoTools()]),
        register_prompt_providers=hookimpl(lambda: [WhoPrompts()]),
    )


# -- what providers see ---------------------------------------------------------------------------


async def test_providers_see_the_principal_in_reads_calls_and_prompts() -> None:
    composition = compose({"who": who_plugin()})
    async with connect(composition, principal=ALICE_A) as client:
        read = await client.read_resource("who://x/me")
        called = await client.call_tool("whoami", {})
        prompt = await client.get_prompt("greet")
    assert read.contents[0].text == "https://idp-a.example/|alice|app-1|itil"
    assert called.content[0].text == "https://idp-a.example/|alice"
    assert prompt.messages[0].content.text == "hello alice of https://idp-a.example/"


async def test_without_a_transport_the_caller_is_local() -> None:
    composition = compose({"who": who_plugin()})
    async with connect(composition) as client:
        read = await client.read_resource("who://x/me")
    assert read.contents[0].text == "local|local|None|"
    assert policy.principal() is LOCAL  # outside a request


async def test_completion_requests_carry_the_principal() -> None:
    seen: list[Principal] = []

    class Completing(ResourceProvider):
        name = "completing"
        prefixes = ("who://c/",)

        def templates(self) -> Sequence[Any]:
            from mcp_providers import ResourceTemplate

            return [ResourceTemplate(uri_template="who://c/{item}", name="item")]

        async def complete(self, template: Any, request: CompletionRequest) -> list[str]:
            seen.append(request.principal)
            return ["one", "two"]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text="x")

    plugin = SimpleNamespace(register_resource_providers=hookimpl(lambda: [Completing()]))
    composition = compose({"completing": plugin})
    import mcp_types as types

    async with connect(composition, principal=BOB_A) as client:
        await client.complete(types.ResourceTemplateReference(uri="who://c/{item}"), {"name": "item", "value": "o"})
    assert seen == [BOB_A]


def test_serving_as_refuses_what_is_not_a_principal() -> None:
    with pytest.raises(TypeError, match="needs a Principal"), serving_as("alice"):  # type: ignore[arg-type]
        pass


def test_a_principal_needs_a_subject_and_collections_of_strings() -> None:
    with pytest.raises(ValueError, match="non-empty subject"):
        Principal("")
    with pytest.raises(TypeError, match="groups must be a collection"):
        Principal("a", groups="itil")  # type: ignore[arg-type]
    assert Principal("a", groups=["x", "x"]).groups == frozenset({"x"})
    assert "claims" not in repr(Principal("a", claims={"email": "a@example.com"}))


def test_foreign_verifiers_tokens_become_principals() -> None:
    from mcp.server.auth.provider import AccessToken

    plain = AccessToken(token="t" * 20, client_id="cli", scopes=["s"], subject="sub-1", claims={"iss": "https://x/"})
    assert from_access_token(plain) == Principal("sub-1", issuer="https://x/", client_id="cli", scopes={"s"})
    no_iss = AccessToken(token="t" * 20, client_id="cli", scopes=[])
    assert from_access_token(no_iss).key == ("verifier", "cli")


# -- custody --------------------------------------------------------------------------------------


async def test_receipts_and_audit_lines_record_issuer_subject_and_client(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    composition = compose({"who": who_plugin()}, server=ServerSettings(audit_log=audit))
    async with composition.runtime.running(), connect(composition, principal=ALICE_A) as client:
        read = await client.read_resource("who://x/me")
        called = await client.call_tool("whoami", {})
    for meta in (read.meta, called.meta):
        receipt = meta[RECEIPT_KEY]
        assert (receipt["subject"], receipt["issuer"], receipt["clientId"]) == (
            "alice",
            "https://idp-a.example/",
            "app-1",
        )
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    served = [line for line in lines if line["operation"] in ("resources/read", "tools/call")]
    assert len(served) == 2
    for line in served:
        assert (line["subject"], line["issuer"], line["clientId"]) == ("alice", "https://idp-a.example/", "app-1")
    assert all("token" not in json.dumps(line).lower() for line in lines)


async def test_same_subject_of_two_issuers_never_shares_a_coalesced_read() -> None:
    composition = compose({"who": who_plugin()})
    Who.reads = 0
    texts: dict[str, str] = {}

    async def read_as(principal: Principal) -> None:
        async with connect(composition, principal=principal) as client:
            texts[principal.issuer or ""] = (await client.read_resource("who://x/me")).contents[0].text

    async with composition.runtime.running(), anyio.create_task_group() as group:  # one lifespan for both clients
        group.start_soon(read_as, ALICE_A)
        group.start_soon(read_as, ALICE_B)
    assert Who.reads == 2
    assert texts["https://idp-a.example/"].startswith("https://idp-a.example/|alice")
    assert texts["https://idp-b.example/"].startswith("https://idp-b.example/|alice")


async def test_the_same_caller_still_shares_one_coalesced_read() -> None:
    composition = compose({"who": who_plugin()})
    Who.reads = 0

    async def read_as(principal: Principal) -> None:
        async with connect(composition, principal=principal) as client:
            await client.read_resource("who://x/me")

    async with composition.runtime.running(), anyio.create_task_group() as group:
        group.start_soon(read_as, ALICE_A)
        group.start_soon(read_as, Principal("alice", issuer="https://idp-a.example/", client_id="app-1",
                                            groups={"itil"}, scopes={"mcp:read"}))  # fmt: skip
    assert Who.reads == 1


async def test_one_subjects_tokens_with_other_groups_do_not_share_a_read() -> None:
    # A policy may look at groups, scopes and claims: a filtered read for one token is not another's.
    composition = compose({"who": who_plugin()})
    Who.reads = 0

    async def read_as(principal: Principal) -> None:
        async with connect(composition, principal=principal) as client:
            await client.read_resource("who://x/me")

    async with composition.runtime.running(), anyio.create_task_group() as group:
        group.start_soon(read_as, ALICE_A)
        group.start_soon(read_as, Principal("alice", issuer="https://idp-a.example/", client_id="app-1"))
    assert Who.reads == 2


# -- the built-in policy plugin's caller conditions -------------------------------------------------


def _policy(*rules: dict[str, Any], default: str = "deny") -> policy_plugin.PolicySettings:
    return policy_plugin.PolicySettings.model_validate({"default": default, "rules": list(rules)})


@pytest.mark.parametrize(
    ("rule", "allowed", "denied"),
    [
        ({"groups": ["itil"]}, ALICE_A, BOB_A),
        ({"groups": ["it*"]}, ALICE_A, ALICE_B),
        ({"scopes": ["mcp:read"]}, ALICE_A, BOB_A),
        ({"issuers": ["https://idp-a.example/"], "subjects": ["alice"]}, ALICE_A, ALICE_B),
        ({"claims": {"department": ["ops"]}}, Principal("c", issuer="i", claims={"department": "ops"}), ALICE_A),
        ({"claims": {"roles": ["admin"]}}, Principal("c", issuer="i", claims={"roles": ["x", "admin"]}), ALICE_B),
        ({"issuers": [""]}, ANONYMOUS, LOCAL),
    ],
)
def test_policy_rules_match_caller_conditions(rule: dict[str, Any], allowed: Principal, denied: Principal) -> None:
    settings = _policy({"effect": "allow", "targets": ["who://x/me"], **rule})
    assert policy_plugin.decide(settings, allowed, "read", "who://x/me") == Decision(True, "policy rule 1 (allow)")
    refused = policy_plugin.decide(settings, denied, "read", "who://x/me")
    assert refused is not None and refused.allow is False


def test_a_rule_needs_every_condition_it_sets() -> None:
    settings = _policy({"effect": "allow", "groups": ["itil"], "scopes": ["mcp:write"], "targets": ["*"]})
    assert policy_plugin.decide(settings, ALICE_A, "read", "who://x/me") == Decision(
        False, "policy default is deny and no rule allows read on who://x/me"
    )


async def test_a_group_rule_allows_one_user_and_denies_another_through_a_client() -> None:
    rules = {"default": "allow", "rules": [
        {"effect": "allow", "groups": ["itil"], "actions": ["read"], "targets": ["who://x/me"]},
        {"effect": "deny", "actions": ["read"], "targets": ["who://x/me"], "reason": "itil only"},
    ]}  # fmt: skip
    composition = compose({"who": who_plugin(), "policy": policy_plugin}, {"policy": rules})
    async with connect(composition, principal=ALICE_A) as client:
        assert (await client.read_resource("who://x/me")).contents[0].text.startswith("https://idp-a.example/|alice")
    async with connect(composition, principal=BOB_A) as client:
        with pytest.raises(MCPError, match="itil only"):
            await client.read_resource("who://x/me")


async def test_an_authorize_written_before_principal_keeps_working() -> None:
    asked: list[tuple[str, str]] = []

    @hookimpl
    def authorize(subject: str, action: str, target: str) -> Decision | None:
        asked.append((subject, action))
        return Decision(False, "old style says no") if target == "who://x/me" else None

    composition = compose({"who": who_plugin(), "old": SimpleNamespace(authorize=authorize)})
    async with connect(composition, principal=BOB_A) as client:
        with pytest.raises(MCPError, match="old style says no"):
            await client.read_resource("who://x/me")
    assert ("bob", "read") in asked


async def test_an_authorize_taking_the_principal_gets_it() -> None:
    seen: list[Principal] = []

    @hookimpl
    def authorize(principal: Principal) -> None:
        seen.append(principal)

    composition = compose({"who": who_plugin(), "new": SimpleNamespace(authorize=authorize)})
    async with connect(composition, principal=ALICE_B) as client:
        await client.read_resource("who://x/me")
    assert seen and all(p == ALICE_B for p in seen)


# -- the gate fails closed at request time (issue 24 item 2) ----------------------------------------


def _impl(*functions: Any, plugin: str = "odd") -> AuthorizeImpl:
    """One plugin's authorize implementations, called through a real pluggy hook caller."""
    from mcp_providers import hookspecs

    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for number, function in enumerate(functions):
        holder = type(f"Holder{number}", (), {})()  # compared by identity, unlike a SimpleNamespace
        holder.authorize = function
        pm.register(holder, name=f"{plugin}-{number}")
    return AuthorizeImpl(plugin, pm.hook.authorize, None)


def _decide(*functions: Any) -> Decision:
    return Gate(Authorizer((_impl(*functions),)), ALICE_A).decide("read", "who://x/me")


class Odd(BaseException):
    pass


@pytest.mark.parametrize("error", [RuntimeError("bug"), KeyError("k"), SystemExit(0), KeyboardInterrupt(), Odd()])
def test_a_raising_authorize_denies(error: BaseException) -> None:
    def authorize(action: str) -> Decision:
        raise error

    decision = _decide(hookimpl(authorize))
    assert decision.allow is False and "failed" in decision.reason


def _forged(allow: object) -> Decision:
    """A Decision whose ``allow`` is not a bool, made past its own check."""
    forged = object.__new__(Decision)
    object.__setattr__(forged, "allow", allow)
    object.__setattr__(forged, "reason", "")
    return forged


class Truthy(Decision):
    """A subclass whose allow reads truthy without being True."""


@pytest.mark.parametrize("answer", [True, "allow", 1, {"allow": True}, ["yes"], _forged("no"), _forged(1)])
def test_an_odd_answer_denies(answer: object) -> None:
    decision = _decide(hookimpl(lambda action: answer))
    assert decision.allow is False and "returned no Decision" in decision.reason


def test_a_decision_allows_only_with_a_real_bool() -> None:
    with pytest.raises(TypeError, match="must be True or False"):
        Decision("no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reason must be a string"):
        Decision(False, 3)  # type: ignore[arg-type]

    def authorize(action: str) -> Decision:
        return Decision("no")  # type: ignore[arg-type]

    assert _decide(hookimpl(authorize)).allow is False


def test_any_deny_among_one_plugins_implementations_wins() -> None:
    allow = hookimpl(lambda action: Decision(True))
    deny = hookimpl(lambda action: Decision(False, "second says no"))
    assert _decide(allow, deny) == Decision(False, "second says no")
    assert _decide(deny, allow) == Decision(False, "second says no")
    assert _decide(allow, allow).allow is True


def test_a_wrapper_only_authorize_denies() -> None:
    @hookimpl(wrapper=True)
    def authorize(action: str) -> Any:
        return (yield)

    @hookimpl(hookwrapper=True)
    def old_style(action: str) -> Any:
        yield

    for wrapper in (authorize, old_style):
        decision = _decide(wrapper)
        assert decision.allow is False and "only a hook wrapper" in decision.reason
    assert _decide(authorize, hookimpl(lambda action: None)).allow is True  # a plain one answers beside it


async def test_after_a_raising_authorize_the_next_request_is_answered() -> None:
    calls = 0

    @hookimpl
    def authorize(target: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise KeyboardInterrupt

    composition = compose({"x": secrets_plugin(embed="x://a/1"), "flaky": SimpleNamespace(authorize=authorize)})
    async with connect(composition) as client:
        with pytest.raises(MCPError, match="permission-denied"):
            await client.read_resource("x://a/index")
        assert (await client.read_resource("x://a/index")).contents[0].text == "the index"


def test_gate_require_refuses_and_records() -> None:
    gate = Gate(Authorizer((_impl(hookimpl(lambda action: Decision(action != "read", "no reads"))),)), BOB_A)
    with pytest.raises(Denied, match="for bob: no reads"):
        gate.require("read", "who://x/me")
    assert [d.reason for d in gate.denials] == ["no reads"]
    assert gate.allowed("list", "who://x/me") is True


async def test_a_rule_on_the_uri_as_sent_holds_beside_the_canonical_form() -> None:
    # match_case keeps the deny to the spelling sent (a deny folds case by default: test_policy_readings.py)
    rule = {"effect": "deny", "actions": ["read"], "targets": ["X://a/index"], "reason": "raw", "match_case": True}
    deny_as_sent = {"rules": [rule]}
    composition = compose({"x": secrets_plugin(embed="x://a/1"), "policy": policy_plugin}, {"policy": deny_as_sent})
    async with connect(composition) as client:
        assert (await client.read_resource("x://a/index")).contents[0].text == "the index"
        with pytest.raises(MCPError, match="raw"):
            await client.read_resource("X://a/index")
