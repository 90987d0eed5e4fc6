"""Issue 43 (HTTP under load): the fast path's per-exchange connection is the one the SDK's
``Connection.from_envelope(version, None, None)`` makes, built without validating the two absent
envelope values, and its message is the one the SDK's ``jsonrpc_message_adapter`` makes, validated
as a request first when it holds only a request's members; its answer is written as the SDK's
response model writes it, without making the model. If the SDK changes any of them, these tests
say so."""

from __future__ import annotations

import datetime
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.connection import Connection
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from mcp_providers._serve.transport.fast_path import READY, Watched, fresh_connection, message_of
from mcp_providers._serve.transport.http_outcome import Answered, dumped, parts


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_a_fresh_connection_is_what_from_envelope_makes_without_client_info(version: str) -> None:
    ours, sdk = fresh_connection(version), Connection.from_envelope(version, None, None)
    assert sorted(vars(ours)) == sorted(vars(sdk))  # no attribute the SDK sets is missed
    assert ours.outbound is sdk.outbound and not ours.has_standalone_channel
    assert ours.protocol_version == sdk.protocol_version == version
    assert ours.session_id is sdk.session_id is None
    assert ours.client_params is sdk.client_params is None
    assert ours.client_capabilities is sdk.client_capabilities is None
    assert ours.initialized.is_set() and sdk.initialized.is_set()
    assert ours.initialize_accepted and sdk.initialize_accepted
    assert ours.state == sdk.state == {}
    assert isinstance(ours.exit_stack, Watched) and not ours.exit_stack.used


def test_each_exchange_gets_its_own_state_and_exit_stack() -> None:
    one, two = fresh_connection("2025-11-25"), fresh_connection("2025-11-25")
    one.state["x"] = 1
    assert two.state == {} and one.exit_stack is not two.exit_stack


def test_the_shared_initialized_event_is_set_for_good() -> None:
    """Every fast-path connection shares one ``initialized`` event: it must be set and stay set
    whatever a handler does with it (the runner calls ``set()`` on ``notifications/initialized``)."""
    connection = fresh_connection("2025-11-25")
    assert isinstance(connection.initialized, anyio.Event) and connection.initialized is READY
    connection.initialized.set()
    assert READY.is_set() and READY.statistics().tasks_waiting == 0


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_waiting_on_the_shared_event_is_one_checkpoint_on_either_backend(anyio_backend: str) -> None:
    connection = fresh_connection("2025-11-25")
    with anyio.fail_after(5):
        await connection.initialized.wait()  # returns at once, as a set event's wait does
    with anyio.CancelScope() as scope:
        scope.cancel()
        await connection.initialized.wait()  # a checkpoint: a cancelled scope is honoured
        pytest.fail("the wait was no checkpoint")


VALUES = [
    {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "x://y"}},
    {"jsonrpc": "2.0", "id": "a", "method": "ping"},
    {"jsonrpc": "2.0", "id": 2**70, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
    {"jsonrpc": "2.0", "id": True, "method": "ping"},
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": 7},
    {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "error": {"code": 1, "message": "m"}},  # the union: an error
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"progressToken": 3}}},
    [],
    "x",
]


@pytest.mark.parametrize("value", VALUES, ids=[str(i) for i in range(len(VALUES))])
def test_a_message_is_what_the_sdk_adapter_makes_of_it(value: object) -> None:
    try:
        expected = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:
        with pytest.raises(ValidationError):
            message_of(value)
        return
    made = message_of(value)
    assert type(made) is type(expected) and made == expected
    assert made.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)


RESULTS = [
    {},
    {"contents": [{"uri": "bench://p0/r3", "mimeType": "application/json", "text": '{"a": [1, 2]}'}]},
    {"text": 'é ✓ \u2028 "q" \\ \x00 \ud7ff', "n": [1.0, 0.1, 1e300, -0.0, 2**70, -(2**63)], "b": [True, None]},
    {"_meta": {"io.mcp-providers/receipt": {"blocks": [{"sha256": "ab" * 32, "bytes": 12}]}}, "ttlMs": 0},
    {"when": datetime.datetime(2026, 12, 7, 10, 0, tzinfo=datetime.UTC), "raw": b"ok", "t": (1, 2)},
    {"raw": b"\xff"},
]


@pytest.mark.parametrize("request_id", [1, "a", 2**62, "é"])
@pytest.mark.parametrize("result", RESULTS, ids=[str(i) for i in range(len(RESULTS))])
def test_an_answer_is_written_as_the_sdk_s_response_model_writes_it(
    request_id: int | str, result: dict[str, Any]
) -> None:
    model = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
    try:
        expected = dumped(model)
    except PydanticSerializationError:  # not JSON (bytes not UTF-8): refused alike
        with pytest.raises(PydanticSerializationError):
            dumped(Answered(request_id, result))
    else:
        assert dumped(Answered(request_id, result)) == expected
    assert parts(Answered(request_id, result)) == (result, None)
