"""The stdio dispatcher (``serve_stdio``), end to end over real pipes: what the SDK's stream
dispatcher did, it still does.

Concurrency (a waiting request does not hold up the next), cancellation (a cancelled request is
never answered, the server goes on), end of input (running requests are answered -32000 and the
process exits), ``initialize`` pipelined with the next request in one write, and, through a real
SDK client, progress notifications and a server-to-client request (sampling) in the 2025 era and
a 2026-07-28 connection on the same pipe code.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from prefork import python, start_up_settings
from reliability_support import INIT, INITIALIZED, WAIT_SECONDS

SERVER = Path(__file__).with_name("stdio_dispatch_server.py")


def _call(request_id: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": {}}}


class Peer:
    """The server process, spoken to in raw JSON-RPC lines."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [*python(), str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )

    def send(self, *messages: dict[str, Any] | list[dict[str, Any]]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))  # one write
        self.process.stdin.flush()

    def receive(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the server closed stdout"
        return json.loads(line)  # type: ignore[no-any-return]

    def answer_to(self, request_id: int) -> dict[str, Any]:
        while (message := self.receive()).get("id") != request_id or "method" in message:
            pass
        return message

    def close(self) -> list[dict[str, Any]]:
        """Close stdin; everything else the server writes before it exits."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        rest = [json.loads(line) for line in self.process.stdout.read().splitlines()]
        assert self.process.wait(timeout=WAIT_SECONDS) == 0
        self.process.stdout.close()
        return rest


@pytest.fixture
def peer() -> Any:
    raw = Peer()
    raw.send(INIT)
    assert raw.answer_to(1)["result"]["protocolVersion"] == "2025-11-25"
    raw.send(INITIALIZED)
    yield raw
    if raw.process.poll() is None:
        raw.process.kill()
        raw.process.wait()


def test_a_waiting_request_does_not_hold_up_the_next(peer: Peer) -> None:
    peer.send(_call(2, "wait"), _call(3, "now"))
    answer = peer.receive()
    assert answer["id"] == 3 and answer["result"]["content"][0]["text"] == "now"
    rest = peer.close()
    assert [m["id"] for m in rest] == [2]


def test_a_cancelled_request_is_never_answered_and_the_server_goes_on(peer: Peer) -> None:
    peer.send(_call(2, "wait"))
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "t"}})
    peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert peer.receive() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    rest = peer.close()
    assert all(m.get("id") != 2 for m in rest), rest


def test_end_of_input_answers_running_requests_connection_closed(peer: Peer) -> None:
    peer.send(_call(2, "wait"), _call(3, "wait"))
    rest = peer.close()
    by_id = {m["id"]: m for m in rest}
    assert sorted(by_id) == [2, 3]
    assert {m["error"]["code"] for m in rest} == {types.CONNECTION_CLOSED}


def test_initialize_pipelined_with_requests_in_one_write() -> None:
    raw = Peer()
    raw.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, _call(3, "now"))
    assert raw.receive()["id"] == 1
    answers = {m["id"]: m for m in (raw.receive(), raw.receive())}
    assert {t["name"] for t in answers[2]["result"]["tools"]} == {"wait", "steps", "ask", "now"}
    assert answers[3]["result"]["content"][0]["text"] == "now"
    assert raw.close() == []


def test_a_message_of_the_other_era_is_refused(peer: Peer) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}})
    error = peer.answer_to(2)["error"]
    assert error["code"] == types.INVALID_REQUEST and "2026-07-28" in error["message"]
    peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert peer.answer_to(3)["result"] == {}
    peer.close()


def _params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[*python()[1:], str(SERVER)], env=start_up_settings())


@pytest.mark.anyio
async def test_progress_and_sampling_reach_a_real_client_over_stdio() -> None:
    asked: list[str] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        asked.append(content.text if isinstance(content, types.TextContent) else "")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="42"), model="test-model"
        )

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with Client(_params(), mode="legacy", sampling_callback=sampling, cache=None) as client:
        stepped = await client.call_tool("steps", {}, progress_callback=on_progress)
        answered = await client.call_tool("ask", {})
    assert stepped.content[0].text == "stepped"  # type: ignore[union-attr]
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert answered.content[0].text == "the model said 42"  # type: ignore[union-attr]
    assert asked == ["What is the answer?"]


@pytest.mark.anyio
async def test_a_2026_connection_is_served_on_the_same_pipe_code() -> None:
    async with Client(_params(), mode="auto", cache=None) as client:
        listed = await client.list_tools()
        done = await client.call_tool("now", {})
    assert {t.name for t in listed.tools} == {"wait", "steps", "ask", "now"}
    assert done.content[0].text == "now"  # type: ignore[union-attr]


def _init_2025_03_26() -> Peer:
    raw = Peer()
    raw.send({**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}})  # type: ignore[dict-item]
    assert raw.answer_to(1)["result"]["protocolVersion"] == "2025-03-26"
    raw.send(INITIALIZED)
    return raw


def test_a_cancelled_request_in_a_batch_leaves_the_rest_of_the_batch_answered() -> None:
    raw = _init_2025_03_26()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
    batch = [_call(5, "wait"), {"jsonrpc": "2.0", "id": 6, "method": "ping"}]
    assert raw.process.stdin is not None
    # One write: the cancel is read before the cancelled request's task has taken a step.
    raw.process.stdin.write(json.dumps(batch).encode() + b"\n" + json.dumps(cancel).encode() + b"\n")
    raw.process.stdin.flush()
    assert raw.receive() == [{"jsonrpc": "2.0", "id": 6, "result": {}}]
    raw.send([_call(7, "wait"), _call(8, "wait")])
    raw.send({**cancel, "params": {"requestId": 7}}, {**cancel, "params": {"requestId": 8}})
    raw.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert raw.receive() == {"jsonrpc": "2.0", "id": 9, "result": {}}  # an all-cancelled batch: nothing
    assert raw.close() == []


def test_a_failed_initialize_does_not_make_a_later_answer_to_its_id_the_handshake() -> None:
    raw = _init_2025_03_26()
    raw.send({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {}})
    assert "error" in raw.answer_to(9)
    raw.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert raw.answer_to(9)["result"] == {}
    raw.send([{"jsonrpc": "2.0", "id": 5, "method": "ping"}, {"jsonrpc": "2.0", "id": 6, "method": "ping"}])
    assert raw.receive() == [{"jsonrpc": "2.0", "id": 5, "result": {}}, {"jsonrpc": "2.0", "id": 6, "result": {}}]
    raw.close()


def test_requests_sharing_an_id_are_each_ended_at_end_of_input(peer: Peer) -> None:
    peer.send(_call(7, "wait"), _call(7, "wait"))
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    peer.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    assert peer.answer_to(8)["result"] == {}
    rest = peer.close()  # the one not cancelled is still running: ended, and answered -32000
    assert [(m["id"], m["error"]["code"]) for m in rest] == [(7, types.CONNECTION_CLOSED)]


def test_a_client_that_stops_reading_answers_stops_being_read(peer: Peer) -> None:
    """Answers pile up unread only to a bound (16 MiB); then stdin is not read either, and nothing
    is lost: once the client reads again, every request is answered."""
    assert peer.process.stdin is not None and peer.process.stdout is not None
    total, per_chunk = 60_000, 500  # tools/list answers: about 1 KB each, 60 MB if all were kept
    chunk = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/list"}).encode() + b"\n"
        for i in range(per_chunk)
    )
    written = [0]

    def flood() -> None:
        assert peer.process.stdin is not None
        while written[0] < total:
            peer.process.stdin.write(chunk)
            peer.process.stdin.flush()
            written[0] += per_chunk

    writer = threading.Thread(target=flood, daemon=True)
    writer.start()
    seen = -1
    while seen != written[0]:  # wait until the writer makes no progress: stdin is no longer read
        seen = written[0]
        writer.join(timeout=3)
        assert writer.is_alive(), "every request was read although no answer was"
    assert written[0] < total
    for _ in range(total):  # reading the answers lets the server read the rest
        assert peer.receive()["id"] >= 1000
    writer.join(timeout=WAIT_SECONDS)
    assert not writer.is_alive()
    assert peer.close() == []


class _Pipe:
    """Stands in for stdout's writer: keeps every line the dispatcher writes."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.transport = self

    def is_closing(self) -> bool:
        return False

    def write(self, line: bytes) -> None:
        self.lines.extend(json.loads(part) for part in line.splitlines())

    async def drain(self) -> None:
        return None


def _request(request_id: int) -> types.JSONRPCRequest:
    return types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={"name": "now"})


@contextlib.asynccontextmanager
async def _dispatcher(on_request: Any) -> AsyncIterator[tuple[Any, _Pipe]]:
    """A dispatcher running in process on ``on_request``, writing to a :class:`_Pipe`; input ends
    when the block does."""
    import anyio

    from mcp_providers._serve.transport.stdio_dispatch import StdioDispatcher
    from mcp_providers._serve.transport.stdio_framing import Session

    pipe = _Pipe()
    dispatcher = StdioDispatcher(pipe, Session(), lambda: None)  # type: ignore[arg-type]

    async def on_notify(context: Any, method: str, params: Any) -> None:
        return None

    async with anyio.create_task_group() as group:
        await group.start(dispatcher.run, on_request, on_notify)
        yield dispatcher, pipe
        dispatcher.end_of_input()


def _recording(answered: list[int]) -> Any:
    async def on_request(context: Any, method: str, params: Any) -> dict[str, Any]:
        answered.append(context.request_id)
        return {}

    return on_request


@pytest.mark.anyio
async def test_a_request_cancelled_before_it_starts_is_settled_and_forgotten() -> None:
    import anyio

    answered: list[int] = []
    async with _dispatcher(_recording(answered)) as (dispatcher, pipe):
        for n in range(1, 101):  # each cancelled in the same step as it arrived: its task never ran a line
            dispatcher.accept(_request(n))
            cancelled = {"requestId": n, "reason": "changed my mind"}
            note = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params=cancelled)
            dispatcher.accept(note)
        dispatcher.accept(_request(101))
        await anyio.wait_all_tasks_blocked()
        await anyio.sleep(0)  # the cancelled tasks' done callbacks run a loop turn after them
        assert answered == [101] and [line["id"] for line in pipe.lines] == [101]
        assert not dispatcher._requests and not dispatcher._in_flight  # nothing kept for the cancelled ones


@pytest.mark.anyio
async def test_requests_that_never_started_are_answered_once_when_the_connection_closes() -> None:
    answered: list[int] = []
    async with _dispatcher(_recording(answered)) as (dispatcher, pipe):
        for n in (1, 2, 2):
            dispatcher.accept(_request(n))
        await dispatcher._close()  # shutting down in the same step: their tasks never took one
    assert answered == []
    assert sorted((line["id"], line["error"]["code"]) for line in pipe.lines) == [(1, -32000), (2, -32000), (2, -32000)]
    assert not dispatcher._requests and not dispatcher._in_flight


@pytest.mark.anyio
async def test_an_answer_that_cannot_be_written_as_json_costs_only_that_request() -> None:
    import anyio

    async def on_request(context: Any, method: str, params: Any) -> dict[str, Any]:
        return {"value": object()} if context.request_id == 1 else {"value": float("nan")}

    async with _dispatcher(on_request) as (dispatcher, pipe):
        dispatcher.accept(_request(1))
        dispatcher.accept(_request(2))
        await anyio.wait_all_tasks_blocked()
    by_id = {line["id"]: line for line in pipe.lines}
    assert by_id[1]["error"]["code"] == -32603 and "object" not in by_id[1]["error"]["message"]
    assert by_id[2]["result"] == {"value": None}  # non-finite floats are written as null, as the SDK's models do
