"""Which caller an upstream's question goes to, and how many one call may ask (issue 40).

A 2025-era stdio upstream's ``elicitation/create`` and ``sampling/createMessage`` name no request
(tests/asking_stdio_upstream.py, a raw scripted one). A question is relayed only to a caller it
provably belongs to: never to Bob while Alice's call (ended, answered or not) may be the one
asking; the upstream gets an error answer and no client is asked or shown anything, in both
downstream eras; two anonymous clients (HTTP without ``[server.auth]``: one principal) are two
callers, each one only over its own connection. And one tool call may ask at most
``max_questions_per_call`` questions, at most ``max_open_questions_per_call`` at once; the rest are
refused to the upstream.

Each test composes its own upstream: a session remembers who used it until it is opened again.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from serve_support import served
from upstream_support import RecordingChannel, UpstreamSession, read_timeout_meanwhile, tool_call

from mcp_providers.identity import ANONYMOUS, Principal, serving_as
from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream.asking import Asker, Relay, caller_key
from mcp_providers.providers import ClientChannel
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

ASKING = str(Path(__file__).with_name("asking_stdio_upstream.py"))
MODES = ["legacy", "auto"]
ALICE = Principal("alice", issuer="http://idp.example")
BOB = Principal("bob", issuer="http://idp.example")
ALICE_ONLY = "ALICE-ONLY: approve wiring alice's $1000?"
GIVE_UP = 0.5
"""The ``read_timeout`` of a call that must time out (:func:`gives_up_after`): its upstream never
answers in time, so the bound is waited out whole; every other call keeps the composition's."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class User:
    """A downstream client's callbacks: records what it is shown; answers after ``pause`` s."""

    def __init__(self, name: str, pause: float = 0.0) -> None:
        self.name, self.pause = name, pause
        self.shown: list[str] = []
        self.open = 0
        self.most_open = 0

    async def _answering(self, message: str) -> None:
        self.shown.append(message)
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            await anyio.sleep(self.pause)
        finally:
            self.open -= 1

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        await self._answering(params.message)
        return types.ElicitResult(action="accept", content={"a": f"answered-by-{self.name}"})

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        await self._answering(content.text if isinstance(content, types.TextContent) else "?")
        text = types.TextContent(type="text", text=f"said-by-{self.name}")
        return types.CreateMessageResult(role="assistant", content=text, model="m", stop_reason="endTurn")


class Upstream:
    """One composition of the scripted upstream, and what the upstream got for its questions."""

    def __init__(self, composition: Any, log: Path) -> None:
        self.composition, self.log = composition, log

    def answers(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    async def call(self, who: Principal, user: User, mode: str, tool: str, arguments: dict[str, Any]) -> Any:
        """``tools/call`` as ``who`` from a client answering as ``user``: its result or its error."""
        with serving_as(who):
            callbacks = {"elicitation_callback": user.elicit, "sampling_callback": user.sample}
            async with Client(self.composition.server, mode=mode, cache=None, **callbacks) as client:
                try:
                    return await client.call_tool(tool, arguments)
                except MCPError as exc:
                    return exc


async def _upstream(tmp_path: Path, **settings: Any) -> AsyncIterator[Upstream]:
    log = tmp_path / "answers.jsonl"
    server = {
        "name": "asking",
        "command": sys.executable,
        "args": [ASKING, str(log)],
        "tool_prefix": "a_",
        "namespace": "ask",
    }
    composition = compose({"upstream": upstream}, {"upstream": {"servers": [{**server, **settings}]}})
    async with composition.running():
        yield Upstream(composition, log)


def gives_up_after(composition: Any) -> contextlib.AbstractContextManager[None]:
    """A ``read_timeout`` of :data:`GIVE_UP` for what is sent meanwhile (the composition keeps its own)."""
    return read_timeout_meanwhile(composition, GIVE_UP)


@pytest.fixture
async def quick(tmp_path: Path) -> AsyncIterator[Upstream]:
    """The upstream with a 2.5 s ``read_timeout``: long enough for the round trips of a held call
    under a full run's load, which 1 s was not (a call meant to give up: :func:`gives_up_after`)."""
    async for up in _upstream(tmp_path, read_timeout=2.5):
        yield up


def _text(result: Any) -> str:
    if isinstance(result, MCPError):
        return result.message
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def _alice_then_bob(
    up: Upstream, mode: str, alice: dict[str, Any], who: tuple[Principal, Principal] = (ALICE, BOB)
) -> tuple[User, User, Any]:
    """Alice calls ``ask`` with ``alice``; once her call has ended, Bob calls ``sleep`` with
    ``hold``: the upstream asks Alice's question while Bob's call is in flight (and only then).
    ``who``: their principals (each client has a connection of its own). Alice's call, unless
    answered first, times out after :data:`GIVE_UP` s."""
    alice_user, bob_user = User("alice"), User("bob")
    times_out = contextlib.nullcontext() if alice.get("answer_first") else gives_up_after(up.composition)
    with anyio.fail_after(30):
        with times_out:
            ended = await up.call(who[0], alice_user, mode, "a_ask", {**alice, "until_held": True})
        if not alice.get("answer_first"):
            assert f"did not answer tools/call ask within {GIVE_UP} s" in _text(ended), _text(ended)
        bob = await up.call(who[1], bob_user, mode, "a_sleep", {"hold": True})
        await _answered(up)
    return alice_user, bob_user, bob


async def _answered(up: Upstream, count: int = 1) -> None:
    with anyio.fail_after(10):
        while len(up.answers()) < count:
            await anyio.sleep(0.05)


@pytest.mark.parametrize("kind", ["elicit", "sample"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_question_after_its_call_timed_out_is_refused_not_given_to_another_caller(
    quick: Upstream, mode: str, kind: str
) -> None:
    """Alice's call gives up (after :data:`GIVE_UP` s); the upstream asks later, when only Bob's call is in
    flight: Bob is neither asked nor shown it, the upstream gets an error saying why."""
    arguments = {"message": ALICE_ONLY, "kind": kind}
    alice_user, bob_user, bob = await _alice_then_bob(quick, mode, arguments)
    assert bob_user.shown == [] and alice_user.shown == []
    assert _text(bob) == "held"
    [got] = quick.answers()
    assert got["answer"]["error"]["code"] == types.INVALID_REQUEST
    said = got["answer"]["error"]["message"]
    assert said.startswith("mcp-providers cannot relay ") and "upstream 'asking' (stdio)" in said
    assert "more than one caller" in said and "which caller asked cannot be told" in said


@pytest.mark.parametrize("mode", MODES)
async def test_a_question_after_its_call_was_answered_is_refused_not_given_to_another_caller(
    quick: Upstream, mode: str
) -> None:
    """The upstream answers Alice's call, then asks once Bob's call is in flight."""
    arguments = {"message": ALICE_ONLY, "answer_first": True, "then": 0}
    alice_user, bob_user, bob = await _alice_then_bob(quick, mode, arguments)
    assert bob_user.shown == [] and alice_user.shown == []
    assert _text(bob) == "held"
    [got] = quick.answers()
    assert "which caller asked cannot be told" in got["answer"]["error"]["message"]


async def test_the_same_person_through_another_grant_is_not_the_caller_that_asked(quick: Upstream) -> None:
    """Alice's late question is not shown to Alice's other client (another client id and scope):
    what a question may reveal, or an answer decide, is the grant's that made the call (tester ten)."""
    other = Principal("alice", issuer=ALICE.issuer, client_id="other-app", scopes=frozenset({"read"}))
    arguments = {"message": ALICE_ONLY, "kind": "elicit"}
    alice_user, other_user, held = await _alice_then_bob(quick, "legacy", arguments, who=(ALICE, other))
    assert other_user.shown == [] and alice_user.shown == []
    assert _text(held) == "held"
    [got] = quick.answers()
    assert "which caller asked cannot be told" in got["answer"]["error"]["message"]


@pytest.mark.parametrize("kind", ["elicit", "sample"])
@pytest.mark.parametrize("mode", MODES)
async def test_two_anonymous_clients_are_not_one_caller(quick: Upstream, mode: str, kind: str) -> None:
    """Over HTTP without ``[server.auth]`` every client is the one principal ``anonymous``, which
    vouches for nobody: Alice's late question is not shown to Bob, another anonymous client."""
    arguments = {"message": ALICE_ONLY, "kind": kind}
    alice_user, bob_user, bob = await _alice_then_bob(quick, mode, arguments, (ANONYMOUS, ANONYMOUS))
    assert bob_user.shown == [] and alice_user.shown == []
    assert _text(bob) == "held"
    [got] = quick.answers()
    assert got["answer"]["error"]["code"] == types.INVALID_REQUEST
    assert "which caller asked cannot be told" in got["answer"]["error"]["message"]


async def test_two_clients_of_a_principal_without_an_issuer_are_not_one_caller(quick: Upstream) -> None:
    """An empty issuer vouches for nobody either."""
    nobody = Principal("carol", issuer="")
    alice_user, bob_user, _bob = await _alice_then_bob(quick, "legacy", {"message": ALICE_ONLY}, (nobody, nobody))
    assert bob_user.shown == [] and alice_user.shown == []
    [got] = quick.answers()
    assert "which caller asked cannot be told" in got["answer"]["error"]["message"]


@pytest.mark.parametrize("who", [ANONYMOUS, Principal("carol", issuer="")], ids=["anonymous", "no-issuer"])
async def test_an_anonymous_clients_questions_reach_it_over_its_own_connection(quick: Upstream, who: Principal) -> None:
    """One anonymous client, one 2025-era connection, two calls: its own questions still reach it."""
    user = User("anon")
    callbacks = {"elicitation_callback": user.elicit, "sampling_callback": user.sample}
    with anyio.fail_after(30), serving_as(who):
        async with Client(quick.composition.server, mode="legacy", cache=None, **callbacks) as client:
            for note in ("first?", "second?"):
                assert _text(await client.call_tool("a_ask", {"message": note})) == "answers 1"
    assert user.shown == ["first?", "second?"]


async def test_an_anonymous_2026_clients_untied_questions_are_refused(quick: Upstream) -> None:
    """A 2026-07-28 request is a connection of its own, and nothing else ties an anonymous
    client's requests together: its untied questions are refused once the session served another
    request, never guessed. Here its first call's round is asked (the session's only caller), but
    the retry is another request, so the question asked again is refused."""
    user = User("anon")
    callbacks = {"elicitation_callback": user.elicit, "sampling_callback": user.sample}
    with anyio.fail_after(30), serving_as(ANONYMOUS):
        async with Client(quick.composition.server, mode="auto", cache=None, **callbacks) as client:
            said = [_text(await client.call_tool("a_ask", {"message": note})) for note in ("first?", "second?")]
    assert said == ["answers 0", "answers 0"] and user.shown == ["first?"]
    refused = [a["answer"]["error"]["message"] for a in quick.answers() if "error" in a["answer"]]
    assert refused[0] == "the question is asked of the downstream client in a new round; this call ends"
    assert len(refused) == 3 and all("which caller asked cannot be told" in r for r in refused[1:]), refused


@pytest.mark.parametrize("mode", MODES)
async def test_one_callers_questions_still_reach_that_caller_call_after_call(quick: Upstream, mode: str) -> None:
    """The session has served Alice alone (a call that timed out included): her questions are hers."""
    user = User("alice")
    with anyio.fail_after(30):
        with gives_up_after(quick.composition):  # answered 0.5 s late, during the calls below
            timed_out = await quick.call(ALICE, user, mode, "a_sleep", {"seconds": GIVE_UP + 0.5})
        assert f"did not answer tools/call sleep within {GIVE_UP} s" in _text(timed_out)
        for note in ("first?", "second?"):
            result = await quick.call(ALICE, user, mode, "a_ask", {"message": note})
            assert _text(result) == "answers 1", _text(result)
    assert user.shown == ["first?", "second?"]
    results = [a["answer"]["result"] for a in quick.answers() if "result" in a["answer"]]
    assert [r["content"]["a"] for r in results] == ["answered-by-alice"] * 2  # (auto: each round's first ask ends it)


@pytest.fixture
async def bounded(tmp_path: Path) -> AsyncIterator[Upstream]:
    async for up in _upstream(tmp_path, read_timeout=20, max_questions_per_call=3, max_open_questions_per_call=2):
        yield up


async def test_a_call_asks_at_most_max_questions_per_call(bounded: Upstream) -> None:
    user = User("alice")
    with anyio.fail_after(30):
        result = await bounded.call(ALICE, user, "legacy", "a_ask", {"message": "again?", "count": 5})
    assert _text(result) == "answers 3"
    assert user.shown == ["again?"] * 3
    refused = [a["answer"]["error"] for a in bounded.answers() if "error" in a["answer"]]
    assert len(refused) == 2 and refused[0]["code"] == types.INVALID_REQUEST
    assert refused[0]["message"] == (
        "upstream 'asking' (stdio) asked more than 3 questions in one tool call; mcp-providers refuses the "
        "rest (max_questions_per_call in its settings)"
    )


async def test_a_call_has_at_most_max_open_questions_per_call_open_at_once(bounded: Upstream) -> None:
    user = User("alice", pause=0.5)
    with anyio.fail_after(30):
        result = await bounded.call(
            ALICE, user, "legacy", "a_ask", {"message": "at once?", "count": 3, "parallel": True}
        )
    assert _text(result) == "answers 2"
    assert user.most_open == 2 and len(user.shown) == 2
    [refused] = [a["answer"]["error"] for a in bounded.answers() if "error" in a["answer"]]
    assert refused["message"] == (
        "upstream 'asking' (stdio) has 2 questions of this tool call open already; mcp-providers refuses "
        "more until one is answered (max_open_questions_per_call in its settings)"
    )


async def test_the_default_bounds_refuse_a_flood_of_questions(tmp_path: Path) -> None:
    """Without settings: at most 20 per call (1000 asked), at most 4 open at once (30 asked at once)."""
    async for up in _upstream(tmp_path, read_timeout=20):
        user = User("alice")
        with anyio.fail_after(60):
            many = await up.call(ALICE, user, "legacy", "a_ask", {"message": "q", "count": 60})
            assert _text(many) == "answers 20" and len(user.shown) == 20
            slow = User("alice", pause=0.3)
            at_once = await up.call(ALICE, slow, "legacy", "a_ask", {"message": "p", "count": 30, "parallel": True})
            assert _text(at_once) == "answers 4" and slow.most_open == 4


async def test_a_calls_context_ties_only_questions_of_a_session_it_has_a_request_on() -> None:
    """Alice's call has a request in flight on session A; a question arriving on session B in her
    context (a task started from it) is not hers to answer: refused, nobody asked."""
    relay, channel = Relay("upstream 'x' (stdio)"), RecordingChannel()
    call = tool_call(channel, ALICE)
    mine, other = UpstreamSession(), UpstreamSession()
    params = types.ElicitRequestFormParams(message="whose?", requested_schema={"type": "object", "properties": {}})

    async def forwarded() -> list[Any]:
        with anyio.CancelScope() as bound, relay.sending(mine, bound):
            return [
                await relay.elicitation(SimpleNamespace(session=other), params),
                await relay.elicitation(SimpleNamespace(session=mine), params),
            ]

    refused, answered = await relay.forwarding(call, forwarded)
    assert refused == types.ErrorData(
        code=types.INVALID_REQUEST,
        message="mcp-providers cannot relay elicitation/create from upstream 'x' (stdio): no request of this "
        "server is in flight; ask within one tool call",
    )
    assert answered == types.ElicitResult(action="accept", content={}) and channel.asked == ["whose?"]


class _Connected(ClientChannel):
    """A channel over one downstream connection (a stand-in object)."""

    def __init__(self, connection: object) -> None:
        self._connection = connection

    @property
    def connection(self) -> object | None:
        return self._connection


class _Conn:
    """Stands for a downstream SDK ``Connection``."""


def _anonymous_call(connection: object) -> Asker:
    return Asker(tool_call(_Connected(connection), ANONYMOUS))


def test_an_anonymous_callers_key_is_its_live_connection_only() -> None:
    """One live connection: one key; another: another; no call or no connection: a key of its own.
    A connection that ended is no one's: a new one given its id (CPython reuses freed memory) is
    another caller, and the key holds no ended connection alive."""
    first, other = _Conn(), _Conn()
    key = caller_key(ANONYMOUS, _anonymous_call(first))
    assert key == caller_key(ANONYMOUS, _anonymous_call(first))
    assert key != caller_key(ANONYMOUS, _anonymous_call(other))
    assert caller_key(ANONYMOUS, None) != caller_key(ANONYMOUS, None)
    assert caller_key(None, None) != caller_key(None, None)
    assert caller_key(ALICE, None) == caller_key(ALICE, _anonymous_call(first)) == ALICE.share_key
    ended, freed = weakref.ref(first), id(first)
    del first
    gc.collect()
    assert ended() is None  # the key did not keep it
    assert caller_key(ANONYMOUS, _anonymous_call(_Conn())) != key  # whatever id the new one got
    held = [_Conn() for _ in range(10_000)]  # one of them likely has the ended one's id (CPython reuses memory)
    assert all(caller_key(ANONYMOUS, _anonymous_call(c)) != key for c in held)
    # Whether or not the allocator gave one of them that id (under load it may not: a skip had
    # failed CI runs), a new connection's key hashing as the ended one's is still another caller.
    reused = caller_key(ANONYMOUS, _anonymous_call(held[0]))
    setattr(reused, "_hash", freed)  # noqa: B010 - the key's slot, as the reused id would set it
    assert hash(reused) == hash(key) and reused != key and key != reused


@pytest.mark.parametrize("mode", MODES)
async def test_two_anonymous_http_clients_are_not_one_caller(tmp_path: Path, mode: str) -> None:
    """As the tester's t8.py: ``serve --http`` without ``[server.auth]``, two real streamable HTTP
    clients (both the principal ``anonymous``); Alice's call ends at :data:`GIVE_UP` s, the upstream asks for it
    while Bob's call is in flight: neither is shown it, the upstream gets the refusal."""
    log = tmp_path / "answers.jsonl"
    server = {"name": "asking", "command": sys.executable, "args": [ASKING, str(log)], "tool_prefix": "a_",
              "namespace": "ask", "read_timeout": 2.5}  # fmt: skip
    up = Upstream(compose({"upstream": upstream}, {"upstream": {"servers": [server]}}), log)
    alice_user, bob_user = User("alice"), User("bob")

    async def call(user: User, tool: str, arguments: dict[str, Any]) -> str:
        callbacks = {"elicitation_callback": user.elicit, "sampling_callback": user.sample}
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode, cache=None, **callbacks) as client,
        ):
            try:
                return _text(await client.call_tool(tool, arguments))
            except MCPError as exc:
                return exc.message

    with served(up.composition) as port, anyio.fail_after(30):
        url = f"http://127.0.0.1:{port}/mcp"
        with gives_up_after(up.composition):
            alice = await call(alice_user, "a_ask", {"message": ALICE_ONLY, "until_held": True})
        assert f"did not answer tools/call ask within {GIVE_UP} s" in alice, alice
        assert await call(bob_user, "a_sleep", {"hold": True}) == "held"
        await _answered(up)
    assert bob_user.shown == [] and alice_user.shown == []
    [got] = up.answers()
    assert "which caller asked cannot be told" in got["answer"]["error"]["message"]
