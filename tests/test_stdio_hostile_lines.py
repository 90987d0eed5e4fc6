"""Hostile lines on stdio, byte for byte: each gets the right JSON-RPC error, and the same process
answers a following ping.

-32700 for a line that does not parse (truncated JSON, a BOM, invalid UTF-8), -32600 for valid JSON
that is not a request (too deep, too long, a batch outside 2025-03-26, a scalar), always with
``id: null`` when no id could be read (the request's own id when it can be); a 2025-03-26 session
gets a batch answered as a batch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_support import RawStdio

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawStdio]:
    with RawStdio(_env(), tmp_path_factory.mktemp("hostile") / "stderr.txt") as raw:
        raw.initialize()
        yield raw
        assert raw.process.poll() is None, "the server exited"
    assert raw.stray_lines == [], raw.stray_lines


@pytest.fixture(scope="module")
def peer_2025_03(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawStdio]:
    with RawStdio(_env(), tmp_path_factory.mktemp("hostile-batch") / "stderr.txt") as raw:
        assert raw.initialize("2025-03-26")["result"]["protocolVersion"] == "2025-03-26"
        yield raw
    assert raw.stray_lines == [], raw.stray_lines


def pings(raw: RawStdio) -> None:
    answer = raw.request("ping")
    assert answer["result"] == {}, answer


def error_for(raw: RawStdio, line: bytes, request_id: int | None = None) -> dict[str, object]:
    raw.send_raw(line + b"\n")
    answer = raw.receive(request_id)
    assert "error" in answer, answer
    error = answer["error"]
    assert isinstance(error, dict)
    assert isinstance(error["message"], str) and error["message"].strip()
    assert len(json.dumps(answer)) < 2000, "an error must not echo the hostile line back"
    return error


HOSTILE: dict[str, tuple[bytes, int] | tuple[bytes, int, int]] = {
    "nested-10000-arrays": (b"[" * 10_000 + b"]" * 10_000, -32600),
    "nested-10000-in-params": (  # answered with its own id (issue 24 item 12)
        b'{"jsonrpc":"2.0","id":99,"method":"ping","params":{"x":' + b"[" * 10_000 + b"]" * 10_000 + b"}}",
        -32600,
        99,
    ),
    "nested-1000-objects": (b'{"a":' * 1000 + b"1" + b"}" * 1000, -32600),
    "truncated-json": (b'{"jsonrpc":"2.0","id":5,"method":"pi', -32700),
    "bom": (b'\xef\xbb\xbf{"jsonrpc":"2.0","id":6,"method":"ping"}', -32700),
    "invalid-utf8": (b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"\xff\xfe"}}', -32700),
    "five-megabyte-line": (
        b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"' + b"y" * 5_000_000 + b'"}}',
        -32600,
    ),
    "five-megabyte-garbage": (b"z" * 5_000_000, -32600),
    # Unterminated runs of escaped quotes: a string-matching pattern that rescans from every quote
    # is quadratic on these (hours for one line); the answer must come like any other's.
    "two-megabytes-of-escaped-quotes": (b'"\\' * 1_000_000, -32700),
    "escaped-quotes-under-deep-brackets": (b"[" * 200 + b'"\\' * 1_000_000, -32600),
    "escaped-quotes-in-params": (
        b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"' + b'\\"' * 1_000_000,
        -32700,
    ),
    "scalar": (b"42", -32600),
    "object-not-a-request": (b'{"no": "jsonrpc"}', -32600),
    "empty-batch": (b"[]", -32600),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_line_gets_its_error_and_the_process_keeps_serving(peer: RawStdio, name: str) -> None:
    line, code, *request_id = HOSTILE[name]
    assert error_for(peer, line, *request_id)["code"] == code
    pings(peer)


@pytest.mark.parametrize("bad", ['{"a":1}', "1.5", "true", "null", "[1]"])
def test_a_request_with_an_invalid_id_gets_32600_with_a_null_id(peer: RawStdio, bad: str) -> None:
    """An id that is not a string or an integer is not a notification: it is refused, never ignored."""
    line = b'{"jsonrpc":"2.0","id":' + bad.encode() + b',"method":"ping"}'
    assert error_for(peer, line)["code"] == -32600
    pings(peer)


def test_a_lone_surrogate_is_refused_with_the_request_id(peer: RawStdio) -> None:
    line = b'{"jsonrpc":"2.0","id":4242,"method":"resources/read","params":{"uri":"documcp://ssgs/\\ud800"}}'
    assert error_for(peer, line, 4242)["code"] in (-32600, -32602)
    pings(peer)


def test_a_batch_is_refused_once_outside_2025_03_26(peer: RawStdio) -> None:
    batch = [{"jsonrpc": "2.0", "id": 7001, "method": "ping"}, {"jsonrpc": "2.0", "id": 7002, "method": "tools/list"}]
    error = error_for(peer, json.dumps(batch).encode())
    assert error["code"] == -32600
    assert "2025-03-26" in str(error["message"])
    pings(peer)


def _receive_array(raw: RawStdio) -> list[dict[str, object]]:
    """The next stdout line, which must be a JSON array (a batch answer)."""
    line = raw._lines.get(timeout=60)
    assert line is not None, "the server closed stdout"
    answer = json.loads(line)
    assert isinstance(answer, list), answer
    return answer


def test_a_2025_03_26_session_gets_its_batch_answered_as_a_batch(peer_2025_03: RawStdio) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 7, "method": "ping"},
        {"jsonrpc": "2.0", "id": 8, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}},
        {"jsonrpc": "2.0", "id": 9},
    ]
    peer_2025_03.send_raw(json.dumps(batch).encode() + b"\n")
    answers = {a.get("id"): a for a in _receive_array(peer_2025_03)}
    assert set(answers) == {7, 8, None}, answers
    assert answers[7]["result"] == {}
    tools = answers[8]["result"]["tools"]  # type: ignore[index]
    assert {t["name"] for t in tools} >= {"recommend_ssg", "generate_config"}
    assert answers[None]["error"]["code"] == -32600  # type: ignore[index]
    pings(peer_2025_03)


def test_a_batch_of_notifications_gets_no_answer(peer_2025_03: RawStdio) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}}
    peer_2025_03.send_raw(json.dumps([note, note]).encode() + b"\n")
    pings(peer_2025_03)  # the next line on stdout is the ping's answer, not an empty array


def test_a_line_at_the_limit_still_serves(tmp_path: Path) -> None:
    """A 3 MB request (under the 4 MiB default) is answered, not refused."""
    with RawStdio(_env(), tmp_path / "stderr.txt") as raw:
        raw.initialize()
        answer = raw.request("ping", {"_meta": {"pad": "p" * 3_000_000}})
        assert answer["result"] == {}


@pytest.mark.parametrize(
    "batch",
    [
        [{"jsonrpc": "2.0", "id": 7101, "method": "initialize", "params": {}}],
        [
            {"jsonrpc": "2.0", "id": 7102, "method": "ping"},
            {"jsonrpc": "2.0", "id": 7103, "method": "initialize", "params": {}},
        ],
    ],
    ids=["alone", "beside-a-ping"],
)
def test_a_batch_holding_initialize_is_refused_whole_as_over_http(
    peer_2025_03: RawStdio, batch: list[dict[str, object]]
) -> None:
    """2025-03-26, lifecycle: initialize must not be part of a batch. The same rule and words as the
    HTTP transport (``transport.batches``): one -32600 for the whole line, no element answered."""
    error = error_for(peer_2025_03, json.dumps(batch).encode())
    assert error["code"] == -32600
    assert "initialize must not be part of a JSON-RPC batch" in str(error["message"])
    pings(peer_2025_03)  # nothing of the batch was answered: the next line is the ping's


def test_an_empty_batch_says_so_in_the_words_http_uses(peer_2025_03: RawStdio) -> None:
    error = error_for(peer_2025_03, b"[]")
    assert error["code"] == -32600 and "an empty JSON-RPC batch" in str(error["message"])


def test_a_batch_over_the_bound_is_refused_whole_in_the_words_http_uses(peer_2025_03: RawStdio) -> None:
    from mcp_providers._serve.transport.batches import MAX_BATCH_ITEMS

    batch = [{"jsonrpc": "2.0", "id": 9000 + i, "method": "ping"} for i in range(MAX_BATCH_ITEMS + 1)]
    error = error_for(peer_2025_03, json.dumps(batch).encode())
    assert error["code"] == -32600 and f"at most {MAX_BATCH_ITEMS} messages" in str(error["message"])
    pings(peer_2025_03)  # nothing of the batch was answered: the next line is the ping's
    pings(peer_2025_03)
