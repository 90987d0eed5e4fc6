"""Issue 43: an HTTP body is parsed once on our side, on every serving path.

One request per path, its id a marker no other text in the process holds; every JSON parser a
body can go through (``json.loads``, ``pydantic_core.from_json``, the JSON-RPC message adapter's
``validate_json``) is counted while it is served, for the calls whose text holds the marker. Ours
is one (``transport.posted``) on every path. The SDK parses the body again where its own HTTP entry
answers, since none takes a parsed message (``transport/http_app.py`` says so): the 2026-07-28
single exchange, and the 2025-era transports (session, or stateless with SSE), once per batch
element there. The fast path (stateless JSON) hands the parsed value to the SDK's kernel: one
parse, batch or not. A second parse anywhere, or a batch answer read back out of the SDK's SSE or
JSON output, raises a count.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import mcp_types as types
import pydantic_core
import pytest
from serve_support import JSON_HEADERS, URI, initialize, request, served

pytestmark = pytest.mark.slow

_lock = threading.Lock()


@contextlib.contextmanager
def _counted(marker: str) -> Iterator[list[str]]:
    """The parsers named above, counting (by name) each call whose text holds ``marker``."""
    seen: list[str] = []
    needle = marker.encode()
    adapter = types.jsonrpc_message_adapter

    def counting(name: str, parse: Callable[..., Any]) -> Callable[..., Any]:
        def counted(text: Any, *args: Any, **kwargs: Any) -> Any:
            data = text.encode() if isinstance(text, str) else text if isinstance(text, bytes | bytearray) else b""
            if needle in data:
                with _lock:
                    seen.append(name)
            return parse(text, *args, **kwargs)

        return counted

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json, "loads", counting("json.loads", json.loads))
        patch.setattr(pydantic_core, "from_json", counting("pydantic_core.from_json", pydantic_core.from_json))
        patch.setattr(adapter, "validate_json", counting("adapter.validate_json", adapter.validate_json))
        yield seen


def _post(port: int, body: Any, version: str, session: str | None, **extra: str) -> tuple[int, bytes, list[str]]:
    """POST ``body`` (its ids replaced by a fresh marker); the status, the raw answer and the parses
    counted while it was served (the answer is read as bytes, never parsed here)."""
    marker = f"probe-{uuid.uuid4().hex}"
    ids = itertools.count(1)
    text = re.sub('"ID"', lambda _: json.dumps(f"{marker}-{next(ids)}"), json.dumps(body)).encode()
    headers = {**JSON_HEADERS, "mcp-protocol-version": version, "mcp-session-id": session or "", **extra}
    with _counted(marker) as seen:
        status, _, answer = request(port, "POST", text, headers)
    assert marker.encode() in answer, answer  # answered, under the marker's id
    return status, answer, seen


READ = {"jsonrpc": "2.0", "id": "ID", "method": "resources/read", "params": {"uri": URI}}
PING = {"jsonrpc": "2.0", "id": "ID", "method": "ping"}
ENVELOPE = {
    types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
    types.CLIENT_INFO_META_KEY: {"name": "t", "version": "1"},
    types.CLIENT_CAPABILITIES_META_KEY: {},
}
MODERN_READ = {**READ, "params": {"uri": URI, "_meta": ENVELOPE}}


@pytest.mark.parametrize(
    ("stateless", "json_response", "version", "expected"),
    [
        (True, True, "2025-11-25", ["json.loads"]),  # the fast path: the SDK's kernel gets the value
        (True, True, "2026-07-28", ["json.loads", "json.loads"]),  # the SDK's single-exchange entry again
        (False, False, "2025-11-25", ["json.loads", "pydantic_core.from_json"]),  # the session transport
        (False, True, "2025-11-25", ["json.loads", "pydantic_core.from_json"]),
        (True, False, "2025-11-25", ["json.loads", "pydantic_core.from_json"]),  # the SDK's stateless one
    ],
    ids=["fast-path", "2026-single-exchange", "session-sse", "session-json", "stateless-sse"],
)
def test_one_post_is_parsed_once_here(stateless: bool, json_response: bool, version: str, expected: list[str]) -> None:
    with served(stateless=stateless, json_response=json_response) as port:
        modern = version == "2026-07-28"
        session = None if stateless or modern else initialize(port, version)
        routing = {"mcp-method": "resources/read", "mcp-name": URI} if modern else {}  # SEP-2243 headers
        status, answer, seen = _post(port, MODERN_READ if modern else READ, version, session, **routing)
        assert status == 200 and b'"contents"' in answer, answer
        assert sorted(seen) == expected, seen


@pytest.mark.parametrize(
    ("stateless", "json_response", "sdk_parses"),
    [(True, True, 0), (False, False, 2), (False, True, 2), (True, False, 2)],
    ids=["fast-path", "session-sse", "session-json", "stateless-sse"],
)
def test_a_batch_is_parsed_once_here_and_its_answers_never_read_back(
    stateless: bool, json_response: bool, sdk_parses: int
) -> None:
    with served(stateless=stateless, json_response=json_response) as port:
        session = None if stateless else initialize(port, "2025-03-26")
        status, answer, seen = _post(port, [READ, PING], "2025-03-26", session)
        assert status == 200 and answer.startswith(b"["), answer
        assert seen == ["json.loads"] + ["pydantic_core.from_json"] * sdk_parses, seen
