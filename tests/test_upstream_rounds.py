"""An upstream's elicitation and sampling requests reach the downstream client (issue 40, "Rounds
and tasks"), in both eras on both sides, with real parts only: server-everything (npm, a 2025-era
upstream asking by server-to-client requests) and an SDK v2 server (tests/rounds_upstream.py, a
2026-07-28 upstream asking by ``InputRequiredResult``), both over stdio; downstream, real SDK
clients speaking 2026-07-28 (input rounds) and 2025-11-25 (server-to-client requests).

One composition per module; each test's clients start the upstream processes once for the module.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as types
import prefork
import pytest
from mcp import Client, MCPError
from real_parts import upstream_servers
from serve_support import free_port
from test_upstream_http import _everything
from upstream_support import RecordingChannel, UpstreamSession, tool_call
from waiting import await_until

from mcp_providers.identity import serving_as, transportless
from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream.asking import Relay, conversation
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

ROUNDS = str(Path(__file__).with_name("rounds_upstream.py"))
EVERYTHING_ASKS = "Please provide inputs for the following fields:"
MODES = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope, for the module-scoped runtime below


class User:
    """A downstream client's elicitation and sampling callbacks: records each question and answers
    ``action`` (the form filled with ``name``), or, for sampling, ``said`` as model ``stand-in``."""

    def __init__(self, action: str = "accept", name: str = "Ann", said: str = "hello there") -> None:
        self.action, self.name, self.said = action, name, said
        self.asked: list[str] = []
        self.schemas: list[dict[str, Any]] = []
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.asking = anyio.Event()
        self.release: anyio.Event | None = None
        """When set to an event, each answer waits for it (a user taking their time)."""
        self.withdrawn = False
        """Whether a question was withdrawn (cancelled) while this user was answering it."""

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params.message)
        self.schemas.append(params.requested_schema)
        self.asking.set()
        if self.release is not None:
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.withdrawn = True
                raise
        if self.action != "accept":
            return types.ElicitResult(action=self.action)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content={"name": self.name, "confirm": True})

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        self.asked.append(content.text if isinstance(content, types.TextContent) else "?")
        self.sampled.append(params)
        text = types.TextContent(type="text", text=self.said)
        return types.CreateMessageResult(role="assistant", content=text, model="stand-in", stop_reason="endTurn")

    def callbacks(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample}


SLOW_TIMEOUT = 2.5
"""The ``slow`` upstream's read_timeout: what is left of it once a question is answered bounds the
rest of the call (the questions' tests found 1 s too short under a full run's load, 2.5 s enough)."""
LATE = SLOW_TIMEOUT + 0.5
"""Seconds a user of the ``slow`` upstream takes to answer: past its whole read_timeout."""


@pytest.fixture(scope="module")
def composition() -> Any:
    servers = upstream_servers()
    common = {"read_timeout": 20}
    settings = {
        "upstream": {
            "servers": [
                {
                    "name": "everything",
                    "command": servers["everything"][0],
                    "args": [*servers["everything"][1:], "stdio"],
                    "tool_prefix": "ev_",
                    "namespace": "ev",
                    **common,
                },
                {
                    "name": "rounds",
                    **prefork.upstream_script(ROUNDS),
                    "tool_prefix": "up_",
                    "namespace": "up",
                    **common,
                },
                {
                    "name": "slow",
                    **prefork.upstream_script(ROUNDS),
                    "tool_prefix": "slow_",
                    "namespace": "slow",
                    "read_timeout": SLOW_TIMEOUT,
                },
            ]
        }
    }
    return compose({"upstream": upstream}, settings)


@pytest.fixture(scope="module")
async def upstreams(composition: Any) -> Any:
    """The composition with its upstream processes started once for the module's tests."""
    async with composition.running():
        yield composition


def _client(composition: Any, mode: str, user: User | None) -> Client:
    callbacks = user.callbacks() if user is not None else {}
    return Client(composition.server, mode=mode, cache=None, **callbacks)  # type: ignore[arg-type]


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _said(result: types.CallToolResult) -> str:
    """What a tool of tests/rounds_upstream.py returned (its structured ``result``)."""
    assert not result.is_error, _text(result)
    assert result.structured_content is not None
    return str(result.structured_content["result"])


async def _call(composition: Any, mode: str, user: User | None, tool: str, arguments: dict[str, Any]) -> Any:
    """``tools/call`` from a new client in ``mode`` answering as ``user``: its result, or its error."""
    with serving_as(transportless()), anyio.fail_after(60):
        async with _client(composition, mode, user) as client:
            assert client.protocol_version == dict(MODES)[mode]
            try:
                return await client.call_tool(tool, arguments)
            except MCPError as exc:
                return exc


def test_the_upstream_client_announces_elicitation_and_sampling(composition: Any) -> None:
    """server-everything lists its asking tools only to a client announcing both capabilities;
    the tools that ask nothing are listed and served as before."""
    names = {e.declaration.name for e in composition.catalog.tools}
    assert {"ev_trigger-elicitation-request", "ev_trigger-sampling-request", "ev_echo", "up_plain"} <= names
    assert not composition.failures


@pytest.mark.parametrize(("mode", "_version"), MODES)
async def test_an_upstream_that_never_asks_still_serves(upstreams: Any, mode: str, _version: str) -> None:
    echoed = await _call(upstreams, mode, None, "ev_echo", {"message": "hi"})
    assert not echoed.is_error and "hi" in _text(echoed)
    plain = await _call(upstreams, mode, None, "up_plain", {"note": "p1"})
    assert _said(plain) == "plain p1"


@pytest.mark.parametrize(("mode", "_version"), MODES)
async def test_a_2025_upstreams_elicitation_reaches_the_downstream_user(
    upstreams: Any, mode: str, _version: str
) -> None:
    user = User(name="Ann Example")
    result = await _call(upstreams, mode, user, "ev_trigger-elicitation-request", {})
    assert user.asked and set(user.asked) == {EVERYTHING_ASKS}
    assert user.schemas[0]["required"] == ["name"] and "birthdate" in user.schemas[0]["properties"]
    assert not result.is_error
    assert "- Name: Ann Example" in _text(result) and '"confirm": true' in _text(result)


@pytest.mark.parametrize(("mode", "_version"), MODES)
async def test_a_2026_upstreams_elicitation_reaches_the_downstream_user(
    upstreams: Any, mode: str, _version: str
) -> None:
    user = User(name="Bo")
    result = await _call(upstreams, mode, user, "up_confirm", {"note": "n1"})
    assert set(user.asked) == {"Confirm n1?"}
    assert _said(result) == "n1: accepted by Bo (confirm=True)"


@pytest.mark.parametrize("tool", ["ev_trigger-sampling-request", "up_ask_model"])
@pytest.mark.parametrize(("mode", "_version"), MODES)
async def test_an_upstreams_sampling_reaches_the_downstream_model(
    upstreams: Any, mode: str, _version: str, tool: str
) -> None:
    user = User(said="sunny, 21 degrees")
    arguments = {"prompt": "the weather", "maxTokens": 44} if tool.startswith("ev_") else {"note": "n2"}
    result = await _call(upstreams, mode, user, tool, arguments)
    assert not result.is_error, _text(result)
    asked = user.sampled[-1]
    if tool.startswith("ev_"):
        assert set(user.asked) == {"Resource trigger-sampling-request context: the weather"}
        assert (asked.max_tokens, asked.system_prompt) == (44, "You are a helpful test server.")
        echoed = json.loads(_text(result).split("\n", 1)[1])
        assert echoed["content"]["text"] == "sunny, 21 degrees" and echoed["model"] == "stand-in"
    else:
        assert set(user.asked) == {"Say hi to n2"}
        assert (asked.max_tokens, asked.system_prompt) == (33, "Be brief.")
        assert _said(result) == "n2: the model stand-in said 'sunny, 21 degrees'"


@pytest.mark.parametrize("action", ["decline", "cancel"])
@pytest.mark.parametrize(("mode", "_version"), MODES)
async def test_a_declined_form_reaches_the_upstream(upstreams: Any, mode: str, _version: str, action: str) -> None:
    user = User(action=action)
    everything = await _call(upstreams, mode, user, "ev_trigger-elicitation-request", {})
    said = {"decline": "User declined", "cancel": "User cancelled"}[action]
    assert said in _text(everything) and f'"action": "{action}"' in _text(everything)
    sdk = await _call(upstreams, mode, user, "up_confirm", {"note": "n3"})
    assert _said(sdk) == f"n3: {action}"


@pytest.mark.parametrize(("mode", "_version"), MODES)
async def test_a_downstream_client_that_cannot_be_asked_gets_an_ended_call(
    upstreams: Any, mode: str, _version: str
) -> None:
    """No elicitation capability downstream: the upstream gets an error answer, not a hang, and
    the call ends with the upstream's own error (bounded well below the upstream's 20 s)."""
    with anyio.fail_after(10):
        everything = await _call(upstreams, mode, None, "ev_trigger-elicitation-request", {})
        assert everything.is_error
        assert "did not declare the elicitation capability" in _text(everything)
        sdk = await _call(upstreams, mode, None, "up_confirm", {"note": "n4"})
        assert isinstance(sdk, MCPError)  # the SDK server answers a refused question with an error
        assert sdk.message == (
            "upstream 'rounds' (stdio) answered tools/call confirm with error -32600: the downstream client "
            "could not be asked: the client did not declare the elicitation capability, so this tool cannot ask it"
        )


async def test_two_calls_in_flight_on_a_2025_session_are_refused_not_cross_wired(upstreams: Any) -> None:
    """Over stdio a 2025-era upstream's question names no request: with two tool calls in flight
    on the session, the second call's question is refused, never handed to the first caller."""
    first_user, second_user = User(name="First"), User(name="Second")
    first_user.release = anyio.Event()
    with serving_as(transportless()), anyio.fail_after(60):
        async with (
            _client(upstreams, "legacy", first_user) as first,
            _client(upstreams, "legacy", second_user) as second,
        ):
            results: dict[str, types.CallToolResult] = {}

            async def call_first() -> None:
                results["first"] = await first.call_tool("ev_trigger-elicitation-request", {})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_first)
                await first_user.asking.wait()  # the first call's question is with its user
                results["second"] = await second.call_tool("ev_trigger-elicitation-request", {})
                first_user.release.set()
    assert second_user.asked == [] and first_user.asked == [EVERYTHING_ASKS]
    assert results["second"].is_error
    assert "2 requests are in flight on this session, and which one asked cannot be told" in _text(results["second"])
    assert "- Name: First" in _text(results["first"])


async def test_a_call_cancelled_while_its_user_is_asked_withdraws_the_question(upstreams: Any) -> None:
    """The downstream client gives up on a call whose question its user is answering: the
    question is withdrawn from the user, and the upstream session is not left thinking a call is
    in flight (the next call's question is asked, not refused as one of two)."""
    gone, next_user = User(), User(name="Next")
    gone.release = anyio.Event()  # never set: this user does not answer
    with serving_as(transportless()), anyio.fail_after(60):
        async with _client(upstreams, "legacy", gone) as client:
            with anyio.CancelScope() as giving_up:

                async def give_up() -> None:
                    await gone.asking.wait()
                    giving_up.cancel()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(give_up)
                    await client.call_tool("ev_trigger-elicitation-request", {})
            await await_until(lambda: gone.withdrawn, "the question is withdrawn")
        result = await _call(upstreams, "legacy", next_user, "ev_trigger-elicitation-request", {})
    assert "- Name: Next" in _text(result)


async def test_the_read_timeout_is_paused_while_the_user_answers(upstreams: Any) -> None:
    """The ``slow`` upstream's read_timeout is :data:`SLOW_TIMEOUT`; its user takes :data:`LATE` s to answer."""
    user = User(name="Patient")
    user.release = anyio.Event()

    async def answer_late() -> None:
        await user.asking.wait()
        await anyio.sleep(LATE)
        assert user.release is not None
        user.release.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_late)
            result = await _call(upstreams, "legacy", user, "slow_confirm", {"note": "n5"})
            tg.cancel_scope.cancel()  # a call that ended without asking leaves nobody waiting: its result says why
    assert _said(result) == "n5: accepted by Patient (confirm=True)"


async def test_a_url_mode_form_is_refused_to_the_upstream(upstreams: Any) -> None:
    """``ToolCall.elicit`` asks forms only: the upstream is told so, the user never asked."""
    user = User()
    result = await _call(upstreams, "legacy", user, "ev_trigger-url-elicitation", {"url": "https://example.com/"})
    assert user.asked == [] and result.is_error
    assert "mcp-providers relays form elicitation only; upstream 'everything' (stdio) asked in 'url' mode" in _text(
        result
    )


@pytest.mark.parametrize(("mode", "_version"), MODES)
async def test_a_question_of_a_read_is_refused_not_given_to_a_caller(upstreams: Any, mode: str, _version: str) -> None:
    """A read has no way back to its caller: the 2026-07-28 upstream's question during
    ``resources/read`` is refused to it, and the read fails naming the upstream."""
    user = User()
    with serving_as(transportless()), anyio.fail_after(30):
        async with _client(upstreams, mode, user) as client:
            with pytest.raises(MCPError) as refused:
                await client.read_resource("up://rounds/asks/a-note")
    assert user.asked == []
    assert refused.value.message == (
        "upstream 'rounds' (stdio) answered resources/read rounds://asks/a-note with error -32600: mcp-providers "
        "cannot relay elicitation/create from upstream 'rounds' (stdio): the request in flight is not a tool "
        "call, which cannot ask; ask within one tool call"
    )


@pytest.fixture(scope="module")
async def over_http(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:
    """server-everything over streamable HTTP (2025 era), composed alone and started."""
    port = free_port()
    with _everything(port, tmp_path_factory.mktemp("everything-http") / "everything.log"):
        settings = {"servers": [{"name": "web", "url": f"http://127.0.0.1:{port}/mcp", "namespace": "web"}]}
        composed = compose({"upstream": upstream}, {"upstream": settings})
        async with composed.running():
            yield composed


async def test_two_calls_on_a_2025_http_session_each_reach_their_own_caller(over_http: Any) -> None:
    """Over streamable HTTP a 2025-era upstream's question arrives on the asking call's own
    response stream, in that call's context: two calls in flight on the one session are each
    asked of their own caller, while both wait."""
    users = {"first": User(name="First"), "second": User(name="Second")}
    both_asked = anyio.Event()
    for user in users.values():
        user.release = both_asked
    results: dict[str, types.CallToolResult] = {}
    with serving_as(transportless()), anyio.fail_after(60):
        async with (
            _client(over_http, "legacy", users["first"]) as first,
            _client(over_http, "legacy", users["second"]) as second,
        ):

            async def call(key: str, client: Client) -> None:
                results[key] = await client.call_tool("trigger-elicitation-request", {})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "first", first)
                tg.start_soon(call, "second", second)
                await users["first"].asking.wait()
                await users["second"].asking.wait()
                both_asked.set()
    assert [u.asked for u in users.values()] == [[EVERYTHING_ASKS], [EVERYTHING_ASKS]]
    assert "- Name: First" in _text(results["first"]) and "Second" not in _text(results["first"])
    assert "- Name: Second" in _text(results["second"]) and "First" not in _text(results["second"])


async def test_the_read_timeout_stays_paused_until_the_last_of_two_questions_is_answered(upstreams: Any) -> None:
    """Two questions asked at once (one ``InputRequiredResult``); the first answered at once, the
    second after :data:`LATE` s, over the ``slow`` upstream's :data:`SLOW_TIMEOUT`: the bound restarts after the
    last one."""
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if params.message.startswith("Witness"):
            await anyio.sleep(LATE)
        name = params.message.split()[0]
        return types.ElicitResult(action="accept", content={"name": name, "confirm": True})

    with serving_as(transportless()), anyio.fail_after(60):
        async with Client(upstreams.server, mode="legacy", cache=None, elicitation_callback=elicit) as client:
            result = await client.call_tool("slow_confirm_twice", {"note": "n6"})
    assert sorted(asked) == ["Confirm n6?", "Witness n6?"]
    assert _said(result) == "n6: confirmed by Confirm, witnessed by Witness"


async def test_a_task_augmented_form_is_refused_to_the_upstream() -> None:
    """No upstream here announces tasks, but one may ask with a task anyway: it is refused, the
    downstream never asked (the relay cannot answer with a task)."""
    relay, channel = Relay("upstream 'x' (stdio)"), RecordingChannel()
    call = tool_call(channel)
    schema = {"type": "object", "properties": {}}
    plain = types.ElicitRequestFormParams(message="plain?", requested_schema=schema)
    tasked = types.ElicitRequestFormParams(message="tasked?", requested_schema=schema, task=types.TaskMetadata(ttl=9))
    context = SimpleNamespace(session=UpstreamSession())

    async def forwarded() -> list[Any]:
        with anyio.CancelScope() as bound, relay.sending(context.session, bound):  # the forwarded request
            return [await relay.elicitation(context, plain), await relay.elicitation(context, tasked)]

    answered, refused = await relay.forwarding(call, forwarded)
    assert answered == types.ElicitResult(action="accept", content={})
    assert refused == types.ErrorData(
        code=types.INVALID_REQUEST,
        message="mcp-providers does not relay task-augmented elicitation; ask without a task",
    )
    assert channel.asked == ["plain?"]


def _sampling(*contents: Any, **extra: Any) -> types.CreateMessageRequestParams:
    messages = [types.SamplingMessage(role="user", content=c) for c in contents]
    return types.CreateMessageRequestParams(messages=messages, max_tokens=10, **extra)


def test_only_text_sampling_without_tools_or_a_task_is_relayed() -> None:
    text = types.TextContent(type="text", text="hi")
    image = types.ImageContent(type="image", data="AAAA", mime_type="image/png")
    assert conversation(_sampling(text, [text, text])) == [("user", "hi"), ("user", "hi\nhi")]
    assert conversation(_sampling(image)) == "only text messages are relayed, and a user message holds ImageContent"
    assert conversation(_sampling([])) == "only text messages are relayed, and a user message holds nothing"
    tool = types.Tool(name="t", input_schema={"type": "object"})
    assert conversation(_sampling(text, tools=[tool])) == "sampling with tools is not relayed"
    task = types.TaskMetadata(ttl=1000)
    assert conversation(_sampling(text, task=task)) == "task-augmented sampling is not relayed"
