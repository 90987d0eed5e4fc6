"""One provider API for input, both eras (issue 27): ``ToolCall.elicit``/``sample`` through real SDK
clients in 2026-07-28 mode (input rounds: ``InputRequiredResult``, ``requestState``, retry) and
2025-11-25 mode (server-to-client requests), in memory, over stdio and over streamable HTTP
(sessions, and stateless for 2026); and every refusal of a ``requestState``: forged, tampered,
expired, replayed, another caller's, another call's.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from input_support import RUNS, AskerPlugin
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from prefork import python, start_up_settings
from serve_support import served
from starlette.applications import Starlette
from test_identity_http import free_port, uvicorn_serving

from mcp_providers._serve.steps import request_state
from mcp_providers.config import AuthConfig, ServerSettings, TokenConfig
from mcp_providers.embedding import mount
from mcp_providers.errors import ConfigError, InvalidParams
from mcp_providers.identity import LOCAL, Principal
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

SUPPORT = Path(__file__).with_name("input_support.py")
ALICE, BOB = "alice-token-4f9c2e71d8", "bob-token-8a13c6e0b2"


class User:
    """The elicitation and sampling callbacks of a client: answers ``action`` and records questions."""

    def __init__(self, action: str = "accept", confirm: bool = True) -> None:
        self.action, self.confirm = action, confirm
        self.asked: list[str] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params.message)
        content = {"confirm": self.confirm} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        self.asked.append(content.text if isinstance(content, types.TextContent) else "?")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="farewell"), model="stand-in"
        )

    def callbacks(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample}


def _in_memory(mode: str = "auto", user: User | None = None) -> Client:
    """An in-memory client of the asker, answering as ``user`` (default: accepting) does."""
    return Client(compose({"asker": AskerPlugin()}).server, mode=mode, cache=None, **(user or User()).callbacks())  # type: ignore[arg-type]


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _confirm_tour(client: Client, user: User) -> None:
    """What every transport and era must do from the same provider code."""
    done = await client.call_tool("confirm", {"note": "n1"})
    assert (_text(done), done.is_error) == ("deleted n1", False)
    two = await client.call_tool("twice", {"note": "n2"})
    assert _text(two) == "deleted n2; the model said 'farewell' (stand-in)"
    assert user.asked == ["Delete n1?", "Delete n2?", "Say goodbye to n2"]


@pytest.mark.parametrize(("mode", "version", "runs"), [("auto", "2026-07-28", 2), ("legacy", "2025-11-25", 1)])
async def test_a_confirmation_works_in_memory_in_both_eras(mode: str, version: str, runs: int) -> None:
    user = User()
    RUNS.clear()
    async with _in_memory(mode, user) as client:
        assert client.protocol_version == version
        await _confirm_tour(client, user)
    assert RUNS["confirm"] == runs  # 2026: asked in round one, run again with the answer


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_declined_confirmation_reaches_the_tool(mode: str) -> None:
    user = User(action="decline")
    async with _in_memory(mode, user) as client:
        kept = await client.call_tool("confirm", {"note": "n1"})
    assert _text(kept) == "kept n1 (decline)"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("tool", ["careless", "reckless"])
async def test_a_provider_catching_every_exception_is_still_asked(mode: str, tool: str) -> None:
    user = User()
    RUNS.clear()
    async with _in_memory(mode, user) as client:
        result = await client.call_tool(tool, {"note": "n3"})
    assert user.asked == ["Delete n3?"]  # the question was asked, not swallowed with the round's end
    assert _text(result) == "deleted n3 without asking"
    if tool == "careless":  # except Exception does not catch the end of a round: nothing done before the answer
        assert RUNS["careless deleted"] == 1


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_without_the_capability_gives_the_tool_an_error_it_can_catch(mode: str) -> None:
    async with Client(compose({"asker": AskerPlugin()}).server, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        caught = await client.call_tool("lenient", {"note": "n4"})
        uncaught = await client.call_tool("confirm", {"note": "n4"})
    reason = "the client did not declare the elicitation capability, so this tool cannot ask it"
    assert _text(caught) == f"not asked: {reason}"
    assert uncaught.is_error and _text(uncaught) == f"confirm failed: {reason}"


async def test_one_audit_line_per_round_says_input_was_required(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    composed = compose({"asker": AskerPlugin()}, server=ServerSettings(audit_log=log))
    user = User()
    async with Client(composed.server, mode="auto", cache=None, **user.callbacks()) as client:
        await client.call_tool("twice", {"note": "n5"})
    calls = [line for line in map(json.loads, log.read_text().splitlines()) if line["operation"] == "tools/call"]
    assert [(c["decision"], c.get("reason")) for c in calls] == [
        ("allowed", "input required: input-1 elicitation/create"),
        ("allowed", "input required: input-2 sampling/createMessage"),
        ("allowed", None),
    ]
    assert "receipt" not in calls[0] and "receipt" in calls[2]


async def test_a_refused_state_is_audited_with_its_rule(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    composed = compose({"asker": AskerPlugin()}, server=ServerSettings(audit_log=log))
    async with Client(composed.server, mode="auto", cache=None, **User().callbacks()) as client:
        state = (await _asked(client)).request_state
        assert state is not None
        assert _text(await _retry(client, state)) == "deleted n7"
        with pytest.raises(MCPError):
            await _retry(client, state)
    calls = [line for line in map(json.loads, log.read_text().splitlines()) if line["operation"] == "tools/call"]
    assert [(c["decision"], c.get("reason")) for c in calls] == [
        ("allowed", "input required: input-1 elicitation/create"),
        ("allowed", None),
        ("error", "-32602: InvalidParams (request-state-replayed)"),
    ]
    assert state not in log.read_text()


def _replica(key_env: str) -> Client:
    composed = compose({"asker": AskerPlugin()}, server=ServerSettings(request_state_key_env=key_env))
    return Client(composed.server, mode="auto", cache=None, **User().callbacks())


async def test_replicas_take_each_others_states_only_with_the_same_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INPUT_TEST_KEY_A", "a" * 32)
    monkeypatch.setenv("INPUT_TEST_KEY_A2", "a" * 32)
    monkeypatch.setenv("INPUT_TEST_KEY_B", "b" * 32)
    async with (
        _replica("INPUT_TEST_KEY_A") as a,
        _replica("INPUT_TEST_KEY_A2") as same,  # another variable, the same key
        _replica("INPUT_TEST_KEY_B") as b,
    ):
        state = (await _asked(a)).request_state
        assert state is not None
        with pytest.raises(MCPError) as refused:
            await _retry(b, state)
        _refused(refused, "forged", state)
        assert _text(await _retry(same, state)) == "deleted n7"


async def test_the_configured_ttl_is_the_one_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    composed = compose({"asker": AskerPlugin()}, server=ServerSettings(request_state_ttl=5))
    async with Client(composed.server, mode="auto", cache=None, **User().callbacks()) as client:
        state = (await _asked(client)).request_state
        assert state is not None
        later = time.time() + 6
        monkeypatch.setattr(request_state, "clock", lambda: later)
        with pytest.raises(MCPError) as refused:
            await _retry(client, state)
    _refused(refused, "expired", state)
    assert "a state is valid for 5 s" in refused.value.message


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_confirmation_works_over_stdio_in_both_eras(mode: str) -> None:
    user = User()
    params = StdioServerParameters(command=sys.executable, args=[*python()[1:], str(SUPPORT)], env=start_up_settings())
    async with Client(params, mode=mode, cache=None, **user.callbacks()) as client:  # type: ignore[arg-type]
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        await _confirm_tour(client, user)


@pytest.mark.parametrize(
    ("stateless", "mode"),
    [(False, "auto"), (False, "legacy"), (True, "auto")],
    ids=["sessions-2026", "sessions-2025", "stateless-2026"],
)
async def test_a_confirmation_works_over_http(stateless: bool, mode: str) -> None:
    user = User()
    with served(compose({"asker": AskerPlugin()}), stateless=stateless, json_response=stateless) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, mode=mode, cache=None, **user.callbacks()) as client:  # type: ignore[arg-type]
            await _confirm_tour(client, user)


NO_CHANNEL = (
    "elicitation needs a connection that carries server-to-client requests (stdio, or streamable HTTP with sessions "
    "and SSE responses); this one has none (the server runs with --stateless or --json-response), so this tool "
    "cannot ask the client"
)


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_stateless_http_in_the_2025_era_says_it_cannot_ask(json_response: bool) -> None:
    # each stateless 2025 request is a session of its own, which never saw the client's capabilities
    with served(compose({"asker": AskerPlugin()}), stateless=True, json_response=json_response) as port:
        user = User()
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, mode="legacy", cache=None, **user.callbacks()) as client:
            result = await client.call_tool("confirm", {"note": "n6"})
    assert result.is_error and _text(result) == f"confirm failed: {NO_CHANNEL}"  # round 4 item 23: the real reason
    assert user.asked == []


# -- refusals: a guarded HTTP server with two callers ------------------------------------------------


@contextlib.contextmanager
def _guarded(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The asker behind static tokens for alice and bob, stateless; yields the MCP URL."""
    monkeypatch.setenv("INPUT_TEST_ALICE", ALICE)
    monkeypatch.setenv("INPUT_TEST_BOB", BOB)
    tokens = (TokenConfig(subject="alice", token_env="INPUT_TEST_ALICE"),
              TokenConfig(subject="bob", token_env="INPUT_TEST_BOB"))  # fmt: skip
    app = Starlette()
    mount(app, compose({"asker": AskerPlugin()}, server=ServerSettings(auth=AuthConfig(tokens=tokens))),
          "/mcp", stateless=True, json_response=True)  # fmt: skip
    with uvicorn_serving(app, free_port()) as origin:
        yield origin + "/mcp"


@contextlib.asynccontextmanager
async def _as(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), cache=None, **User().callbacks()) as client,
    ):
        yield client


async def _asked(client: Client, note: str = "n7") -> types.InputRequiredResult:
    first = await client.session.call_tool("confirm", {"note": note}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult) and first.request_state
    assert first.input_requests is not None and list(first.input_requests) == ["input-1"]
    return first


YES: types.InputResponses = {"input-1": types.ElicitResult(action="accept", content={"confirm": True})}


async def _retry(client: Client, state: str, note: str = "n7") -> Any:
    return await client.session.call_tool(
        "confirm", {"note": note}, input_responses=YES, request_state=state, allow_input_required=True
    )


def _refused(error: pytest.ExceptionInfo[MCPError], reason: str, state: str) -> None:
    assert error.value.code == types.INVALID_PARAMS
    assert error.value.message.startswith("requestState refused: ")
    assert error.value.data == {"rule": f"request-state-{reason}", "reason": reason}
    assert state not in error.value.message and state not in json.dumps(error.value.data)


async def test_a_forged_or_tampered_state_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with _guarded(monkeypatch) as url:
        async with _as(url, ALICE) as alice:
            first = await _asked(alice)
            state = first.request_state
            assert state is not None
            flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
            for forged in (flipped, "v1.bm90LWEtc3RhdGU", "made up", state + "A"):
                with pytest.raises(MCPError) as refused:
                    await _retry(alice, forged)
                _refused(refused, "forged", forged)
            done = await _retry(alice, state)  # the genuine one still works
    assert _text(done) == "deleted n7"


async def test_a_state_sealed_under_another_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    other = request_state.RequestStates(b"k" * 32, 300)
    sealed = other.seal(Principal("alice", issuer="static"), "confirm", request_state.digest({"note": "n7"}), {}, {})
    with _guarded(monkeypatch) as url:
        async with _as(url, ALICE) as alice:
            with pytest.raises(MCPError) as refused:
                await _retry(alice, sealed)
    _refused(refused, "forged", sealed)


async def test_a_state_used_once_is_refused_the_second_time(monkeypatch: pytest.MonkeyPatch) -> None:
    with _guarded(monkeypatch) as url:
        async with _as(url, ALICE) as alice:
            state = (await _asked(alice)).request_state
            assert state is not None
            assert _text(await _retry(alice, state)) == "deleted n7"
            with pytest.raises(MCPError) as refused:
                await _retry(alice, state)
    _refused(refused, "replayed", state)


async def test_an_expired_state_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with _guarded(monkeypatch) as url:
        async with _as(url, ALICE) as alice:
            state = (await _asked(alice)).request_state
            assert state is not None
            later = time.time() + ServerSettings().request_state_ttl + 1
            monkeypatch.setattr(request_state, "clock", lambda: later)  # the server runs in this process
            with pytest.raises(MCPError) as refused:
                await _retry(alice, state)
            _refused(refused, "expired", state)
            monkeypatch.setattr(request_state, "clock", lambda: later - 2)  # just within the ttl
            assert _text(await _retry(alice, state)) == "deleted n7"


async def test_another_callers_state_is_refused_and_stays_good_for_its_owner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _guarded(monkeypatch) as url:
        async with _as(url, ALICE) as alice, _as(url, BOB) as bob:
            state = (await _asked(alice)).request_state
            assert state is not None
            with pytest.raises(MCPError) as refused:
                await _retry(bob, state)
            _refused(refused, "other-subject", state)
            assert _text(await _retry(alice, state)) == "deleted n7"


async def test_a_state_for_other_arguments_or_another_tool_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with _guarded(monkeypatch) as url:
        async with _as(url, ALICE) as alice:
            state = (await _asked(alice, "n7")).request_state
            assert state is not None
            with pytest.raises(MCPError) as other_arguments:
                await _retry(alice, state, note="n8")
            _refused(other_arguments, "other-request", state)
            with pytest.raises(MCPError) as other_tool:  # "lenient" asks the very same question
                await alice.session.call_tool(
                    "lenient", {"note": "n7"}, input_responses=YES, request_state=state, allow_input_required=True
                )
            _refused(other_tool, "other-request", state)


async def test_an_answer_of_the_wrong_shape_is_refused_before_the_tool_runs() -> None:
    RUNS.clear()
    async with _in_memory() as c:
        state = (await _asked(c)).request_state
        wrong: types.InputResponses = {
            "input-1": types.CreateMessageResult(
                role="assistant", content=types.TextContent(type="text", text="yes"), model="m"
            )
        }
        with pytest.raises(MCPError) as refused:
            await c.session.call_tool("confirm", {"note": "n7"}, input_responses=wrong, request_state=state)
    assert refused.value.code == types.INVALID_PARAMS
    assert refused.value.data == {"rule": "input-response-shape", "key": "input-1"}
    assert "is not an elicitation result" in refused.value.message
    assert RUNS["confirm"] == 1  # round one only


async def test_responses_without_a_state_answer_nothing() -> None:
    async with _in_memory() as client:
        again = await client.session.call_tool(
            "confirm", {"note": "n7"}, input_responses=YES, allow_input_required=True
        )
    assert isinstance(again, types.InputRequiredResult)  # asked again: an unsealed answer is not believed


async def test_an_answer_to_another_question_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool that asks something else at the same key on its next run (or a state naming another
    question) is asked again, never handed the answer to what it did not ask."""
    monkeypatch.delenv("MCP_PROVIDERS_REQUEST_STATE_KEY", raising=False)
    states = request_state.RequestStates(request_state.state_key(None), 300)  # this process's key
    other = {"input-1": ("elicitation/create", request_state.digest({"method": "elicitation/create"}))}
    state = states.seal(LOCAL, "confirm", request_state.digest({"note": "n7"}), other, {})
    async with _in_memory() as c:
        again = await c.session.call_tool(
            "confirm", {"note": "n7"}, input_responses=YES, request_state=state, allow_input_required=True
        )
    assert isinstance(again, types.InputRequiredResult) and again.input_requests is not None
    assert list(again.input_requests) == ["input-1"]


@pytest.mark.parametrize(
    "other",
    [
        Principal("alice", issuer="https://idp.example/", client_id="other-app", scopes=frozenset({"admin"})),
        Principal("alice", issuer="https://idp.example/", client_id="trusted-app", scopes=frozenset({"read"})),
        Principal(
            "alice",
            issuer="https://idp.example/",
            client_id="trusted-app",
            scopes=frozenset({"admin"}),
            groups=frozenset({"auditors"}),
        ),
    ],
    ids=["another client", "other scopes", "other groups"],
)
async def test_a_state_is_bound_to_the_whole_grant_it_was_issued_to(
    monkeypatch: pytest.MonkeyPatch, other: Principal
) -> None:
    """The same person's token for another client, or with other scopes or groups, does not carry
    the state's answers on: the state is bound to the authorization context it was issued to, as a
    task is (tester ten saw an "accept" sealed for one grant opened by a narrower one)."""
    monkeypatch.delenv("MCP_PROVIDERS_REQUEST_STATE_KEY", raising=False)
    issued_to = Principal("alice", issuer="https://idp.example/", client_id="trusted-app", scopes=frozenset({"admin"}))
    states = request_state.RequestStates(request_state.state_key(None), 300)  # this process's key
    asked = {"input-1": ("elicitation/create", "d")}
    answered = {"input-1": request_state.Answer("elicitation/create", "d", {"action": "accept"})}
    args = request_state.digest({"note": "n7"})
    with pytest.raises(InvalidParams) as refused:
        states.open(states.seal(issued_to, "confirm", args, asked, answered), other, "confirm", args, {})
    assert refused.value.data["rule"] == "request-state-other-subject"
    opened = states.open(states.seal(issued_to, "confirm", args, asked, answered), issued_to, "confirm", args, {})
    assert list(opened) == ["input-1"]


def test_a_state_with_the_right_seal_but_claims_of_another_layout_is_refused() -> None:
    from mcp.server.request_state import AESGCMRequestStateCodec

    key = b"s" * 32
    states, codec = request_state.RequestStates(key, 300), AESGCMRequestStateCodec([key])
    good = json.loads(codec.unseal(states.seal(LOCAL, "confirm", "d", {}, {})))
    for bad in ({**good, "v": 2}, {k: v for k, v in good.items() if k != "jti"}, {**good, "exp": "never"}, [good]):
        token = codec.seal(json.dumps(bad).encode())
        with pytest.raises(InvalidParams) as refused:
            states.open(token, LOCAL, "confirm", "d", {})
        assert refused.value.data == {"rule": "request-state-forged", "reason": "forged"}
    assert states.open(codec.seal(json.dumps(good).encode()), LOCAL, "confirm", "d", {}) == {}


def test_a_short_state_key_is_a_config_error_naming_the_variable_not_the_value() -> None:
    with pytest.raises(ConfigError) as short:
        request_state.state_key("MY_STATE_KEY", {"MY_STATE_KEY": "short-secret-value"})
    assert "$MY_STATE_KEY holds 18 bytes" in str(short.value) and "short-secret-value" not in str(short.value)
    assert request_state.state_key("MY_STATE_KEY", {"MY_STATE_KEY": "x" * 32}) == b"x" * 32
    assert request_state.state_key(None, {}) == request_state.state_key("UNSET_HERE", {})  # one per process


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_serve_refuses_a_short_state_key_without_a_traceback(http: bool) -> None:
    import os
    import subprocess

    transport = ("--http", f"127.0.0.1:{free_port()}") if http else ()
    env = {**os.environ, "MCP_PROVIDERS_REQUEST_STATE_KEY": "too-short-secret"}
    done = subprocess.run([*python(), "-m", "mcp_providers", "serve", *transport], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, env=env)  # fmt: skip
    assert done.returncode == 1
    assert "$MCP_PROVIDERS_REQUEST_STATE_KEY holds 16 bytes" in done.stderr
    assert "Traceback" not in done.stderr and "too-short-secret" not in done.stderr


def test_the_used_set_is_bounded_and_forgets_expired_ids_first() -> None:
    used = request_state._Used(limit=2)
    assert used.first_use("a", expires=10, now=0) and used.first_use("b", expires=20, now=0)
    assert not used.first_use("a", expires=10, now=1)  # a replay
    assert used.first_use("c", expires=30, now=11)  # "a" has expired: forgotten first
    assert not used.first_use("b", expires=20, now=12) and not used.first_use("c", expires=30, now=12)
    assert used.first_use("d", expires=40, now=12)  # full: the oldest ("b") goes
    assert used.first_use("b", expires=20, now=12)
