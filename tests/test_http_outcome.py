"""Issue 43: what the handler chain makes of an HTTP exchange reaches the HTTP app as a value
(``transport/http_outcome.py``): 2025-03-26 batch elements are answered from it on every serving
path, never from the SDK's SSE or JSON bytes parsed back; a -32009 refusal's ``retryAfter`` travels
on the error and becomes ``Retry-After`` on single POSTs and batches alike; the stateless rules
hold on the SDK's own stateless transport too, with no flag in the ASGI scope.

Raw HTTP/1.1 on loopback, served as ``serve --http`` serves it (``serve_support``), and the
middleware on its own for what no client can provoke on purpose.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import MCPError
from serve_support import JSON_HEADERS, URI, NotesPlugin, initialize, post, request, served

from mcp_providers import ServerSettings
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.transport.http_outcome import Outcome, exchange_middleware, retry_after_of, serving
from mcp_providers.config import LimitsSettings
from mcp_providers.errors import RATE_LIMITED
from mcp_providers.testing import compose

READ = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": URI}}
MODES = [(True, True), (True, False), (False, False), (False, True)]
MODE_IDS = ["stateless-json", "stateless-sse", "session-sse", "session-json"]


def _limited(reads: int) -> Composition:
    limits = LimitsSettings(window_seconds=60, anonymous=reads)
    return compose({"notes": NotesPlugin()}, server=ServerSettings(limits=limits))


def _sse_or_json(body: Any) -> Any:
    """A JSON body as is; an SSE body's last JSON-RPC answer."""
    if not isinstance(body, bytes):
        return body
    lines = [line[5:] for line in body.decode().splitlines() if line.startswith("data:") and line[5:].strip()]
    return json.loads(lines[-1])


def _batch(port: int, items: list[Any], session: str | None) -> tuple[int, dict[str, str], Any]:
    extra = {"mcp_session_id": session} if session else {}
    return post(port, items, "2025-03-26", **extra)


@pytest.mark.slow
@pytest.mark.parametrize(("stateless", "json_response"), MODES, ids=MODE_IDS)
def test_a_batch_is_answered_as_single_posts_are_on_every_path(stateless: bool, json_response: bool) -> None:
    """Each element's answer is what the same request gets alone (receipt included), in order;
    a notification gets none, an element that is no JSON-RPC message gets -32600 with ``id: null``."""
    with served(stateless=stateless, json_response=json_response) as port:
        session = None if stateless else initialize(port, "2025-03-26")
        extra = {"mcp_session_id": session} if session else {}
        _, _, alone = post(port, READ, "2025-03-26", **extra)
        alone = _sse_or_json(alone)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        items = [{"jsonrpc": "2.0", "id": "p", "method": "ping"}, note, READ, {"jsonrpc": "2.0", "id": 4}]
        status, headers, answers = _batch(port, items, session)
        assert status == 200 and headers["content-type"] == "application/json", (status, answers)
        assert [a["id"] for a in answers] == ["p", 1, None], answers
        assert answers[0]["result"] == {}
        read = answers[1]["result"]
        assert read["contents"] == alone["result"]["contents"], (read, alone)
        assert read["_meta"]["io.mcp-providers/receipt"]["sha256"] == alone["result"]["_meta"][
            "io.mcp-providers/receipt"]["sha256"]  # fmt: skip
        assert answers[2]["error"]["code"] == types.INVALID_REQUEST and "not a JSON-RPC message" in str(answers[2])
        status, _, body = _batch(port, [note], session)  # only notifications: 202, nothing to answer
        assert (status, body) == (202, b"")


@pytest.mark.slow
@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
def test_a_batch_for_an_unknown_session_is_refused_as_the_sdk_refuses_a_single_post(json_response: bool) -> None:
    with served(json_response=json_response) as port:
        single = post(port, READ, "2025-03-26", mcp_session_id="not-a-session")
        status, _, body = _batch(port, [READ, {"jsonrpc": "2.0", "id": 2, "method": "ping"}], "not-a-session")
        assert status == single[0] == 404, (status, body)
        assert body == single[2] and body["error"]["message"] == "Session not found", body


@pytest.mark.slow
@pytest.mark.parametrize(("stateless", "json_response"), MODES, ids=MODE_IDS)
def test_retry_after_comes_from_the_refusal_on_single_posts_and_batches(stateless: bool, json_response: bool) -> None:
    """Budget of 2 reads for every anonymous caller: the third read is -32009, and the HTTP answer
    says ``Retry-After`` with the error's ``data.retryAfter`` (a JSON answer; an SSE stream started
    before its handler ran, so there the error alone says it). A batch says the longest wait of
    its refused elements; an answer with no refusal has no header."""
    with served(_limited(2), stateless=stateless, json_response=json_response) as port:
        session = None if stateless else initialize(port, "2025-03-26")
        extra = {"mcp_session_id": session} if session else {}
        status, headers, answer = post(port, READ, "2025-03-26", **extra)
        assert "retry-after" not in headers and "result" in _sse_or_json(answer)
        status, headers, answers = _batch(port, [READ, {**READ, "id": 2}, {**READ, "id": 3}], session)
        assert status == 200 and [a["id"] for a in answers] == [1, 2, 3], answers
        refused = [a["error"] for a in answers if "error" in a]
        assert len(refused) == 2 and all(e["code"] == RATE_LIMITED for e in refused), answers
        assert headers["retry-after"] == str(max(e["data"]["retryAfter"] for e in refused)), headers
        status, headers, answer = post(port, {**READ, "id": 9}, "2025-03-26", **extra)
        error = _sse_or_json(answer)["error"]
        assert error["code"] == RATE_LIMITED and error["data"]["retryAfter"] >= 1
        if json_response:
            assert headers["retry-after"] == str(error["data"]["retryAfter"]), headers
        else:
            assert headers["content-type"].startswith("text/event-stream")


@pytest.mark.slow
def test_initialize_in_a_batch_is_refused_whole_and_opens_no_session() -> None:
    """2025-03-26, lifecycle: the initialize request must not be part of a JSON-RPC batch. The batch
    is refused (-32600) before the SDK, so no session opens and the caller's quota (``sessions =
    1``) is untouched: a single initialize afterwards is served."""
    limits = LimitsSettings(window_seconds=60, sessions=1)
    composed = compose({"notes": NotesPlugin()}, server=ServerSettings(limits=limits))

    def init(request_id: int) -> dict[str, Any]:
        params = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}

    with served(composed, json_response=True, limits=limits) as port:
        for batch in ([init(1), init(2)], [init(3)], [{**READ, "id": 4}, init(5)]):
            status, headers, answer = _batch(port, batch, None)
            assert status == 400 and "mcp-session-id" not in headers, (status, answer)
            error = answer["error"]
            assert error["code"] == -32600 and "must not be part of a JSON-RPC batch" in error["message"], error
        status, headers, _ = post(port, init(6), "2025-03-26")
        assert status == 200 and headers["mcp-session-id"]


@pytest.mark.slow
@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
def test_stateless_rules_hold_on_the_sdk_stateless_transport_too(json_response: bool) -> None:
    """No subscribe and no list changes on stateless HTTP, whichever transport answers: the rule
    reads the exchange's record, not the ASGI scope."""
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    subscribe = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": URI}}
    with served(stateless=True, json_response=json_response) as port:
        capabilities = _sse_or_json(post(port, init)[2])["result"]["capabilities"]
        assert "subscribe" not in capabilities["resources"] and "listChanged" not in capabilities["resources"]
        assert _sse_or_json(post(port, subscribe)[2])["error"]["code"] == types.METHOD_NOT_FOUND
        status, _, body = request(port, "POST", json.dumps([subscribe]).encode(),
                                  {**JSON_HEADERS, "mcp-protocol-version": "2025-03-26"})  # fmt: skip
        assert status == 200 and json.loads(body)[0]["error"]["code"] == types.METHOD_NOT_FOUND, body


# -- the middleware on its own --------------------------------------------------------------------------


def _ctx(request_id: Any, method: str = "ping") -> Any:
    return SimpleNamespace(request_id=request_id, method=method)


async def _ok(ctx: Any) -> dict[str, Any]:
    return {"ok": ctx.request_id}


@pytest.mark.anyio
async def test_only_the_exchange_s_own_request_is_recorded_and_only_once() -> None:
    outcome = Outcome(request_id=5)
    with serving(outcome):
        assert await exchange_middleware(_ctx(6), _ok) == {"ok": 6}  # another request in the same context
        assert not outcome.answered
        await exchange_middleware(_ctx(5), _ok)
        await exchange_middleware(_ctx(5, "tools/list"), lambda ctx: _ok(SimpleNamespace(request_id="again")))
    assert outcome.answer() == types.JSONRPCResponse(jsonrpc="2.0", id=5, result={"ok": 5})
    assert await exchange_middleware(_ctx(5), _ok) == {"ok": 5}  # outside any exchange: passes unchanged


@pytest.mark.anyio
async def test_a_request_under_the_same_id_nested_in_the_handler_is_not_recorded() -> None:
    """A handler that calls this server again in its own context (an in-process loopback) makes
    a request the middleware sees too, under its own ids: it is not the exchange's answer."""
    outcome = Outcome(request_id=1)

    async def nested(inner: Any) -> dict[str, Any]:
        raise MCPError(types.INVALID_PARAMS, "the nested call failed")

    async def handler(ctx: Any) -> dict[str, Any]:
        with pytest.raises(MCPError):  # the nested call, also id 1, ends first; the handler copes
            await exchange_middleware(_ctx(1, "tools/list"), nested)
        return {"outer": ctx.request_id}

    with serving(outcome):
        await exchange_middleware(_ctx(1), handler)
    assert outcome.answer() == types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"outer": 1}), outcome


@pytest.mark.anyio
async def test_a_request_cancelled_while_its_handler_returns_records_no_answer() -> None:
    """The SDK never answers a request its client cancelled; a batch must not answer it either."""
    outcome = Outcome(request_id=5)
    with anyio.CancelScope() as scope, serving(outcome):
        scope.cancel()
        await exchange_middleware(_ctx(5), _ok)  # no checkpoint: returns inside the cancelled scope
    assert outcome.answer() is None


@pytest.mark.anyio
async def test_an_error_is_recorded_as_the_sdk_maps_it_and_an_unexpected_one_without_its_text() -> None:
    refused = types.ErrorData(code=RATE_LIMITED, message="slow down", data={"retryAfter": 7})

    async def limited(ctx: Any) -> Any:
        raise MCPError.from_error_data(refused)

    async def broken(ctx: Any) -> Any:
        raise RuntimeError("postgresql://inventory:s3cret@db")

    outcome, other = Outcome(request_id=1), Outcome(request_id=2)
    with serving(outcome), pytest.raises(MCPError):
        await exchange_middleware(_ctx(1), limited)
    assert outcome.error == refused and outcome.retry_after == 7
    with serving(other), pytest.raises(RuntimeError):
        await exchange_middleware(_ctx(2), broken)
    assert other.error is not None and other.error.code == types.INTERNAL_ERROR
    assert "s3cret" not in other.error.message and other.retry_after is None


def test_retry_after_is_read_from_a_rate_limited_error_only() -> None:
    def error(code: int, data: Any) -> types.ErrorData:
        return types.ErrorData(code=code, message="m", data=data)

    assert retry_after_of(error(RATE_LIMITED, {"retryAfter": 12})) == 12
    assert retry_after_of(error(RATE_LIMITED, {"retryAfter": 0.2})) == 1  # whole seconds, at least one
    assert retry_after_of(error(types.INVALID_PARAMS, {"retryAfter": 12})) is None
    for data in (None, {"retryAfter": "12"}, {"retryAfter": True}, {}, [12]):
        assert retry_after_of(error(RATE_LIMITED, data)) is None, data
    assert retry_after_of(None) is None
