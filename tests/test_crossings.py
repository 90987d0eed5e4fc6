"""How often one ``resources/read`` over HTTP crosses between this package and the MCP SDK.

A crossing is a call whose caller, the nearest frame of either side on the stack when the callee's
frame starts, is on the other side: our code calling the SDK (``mcp``, ``mcp_types``) or the SDK
calling ours (a handler, a middleware, an ASGI ``receive``/``send`` we gave it). Frames of other
packages (the standard library, anyio, pydantic, starlette) belong to neither side and are skipped
when looking for the caller; a coroutine resumed is not a call. A coroutine one side creates and the
other side first awaits counts with the awaiting side as its caller, so the SDK's middleware
adapter (a plain function returning the middleware's coroutine) is not seen: the count is a lower
bound, the list it prints says where each crossing is.

Measured in process on the stateless JSON app ``serve --http --stateless`` serves (the fast path),
for a 2025-era read and a 2026-07-28 one, each after a warm-up read. ``python tests/test_crossings.py``
prints the crossings of both.
"""

from __future__ import annotations

import dis
import json
import sys
from collections.abc import Sequence
from types import CodeType, FrameType, SimpleNamespace
from typing import Any

import anyio
import pytest

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._serve.transport.http_app import http_app
from mcp_providers._serve.transport.http_policy import transport_policy
from mcp_providers.testing import compose

MODERN = "2026-07-28"
LIMIT = {"2025-11-25": 7, MODERN: 8}
"""The most crossings each read may take (issue 43 asks 4: see ``docs/architecture.md`` for the
crossings left and what the SDK would need to lose them)."""


class Notes(ResourceProvider):
    name = "notes"
    prefixes = ("notes://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="notes://a", name="a", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="a note")


def _side(code: CodeType) -> str | None:
    name = code.co_filename.replace("\\", "/")
    if "/mcp_providers/" in name or ("/core/" in name and "site-packages" not in name):
        return "core"
    if "/site-packages/mcp/" in name or "/site-packages/mcp_types/" in name:
        return "sdk"
    return None


_STARTS: dict[CodeType, int] = {}


def _started(frame: FrameType) -> bool:
    """Whether ``frame`` is entered afresh (a call), not resumed (a coroutine going on)."""
    code = frame.f_code
    start = _STARTS.get(code)
    if start is None:
        start = _STARTS[code] = next((i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"), 0)
    return frame.f_lasti <= start


def _crossings() -> tuple[list[str], Any]:
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or (side := _side(frame.f_code)) is None or not _started(frame):
            return
        caller = frame.f_back
        while caller is not None and _side(caller.f_code) is None:
            caller = caller.f_back
        if caller is not None and (other := _side(caller.f_code)) != side:
            seen.append(f"{other} {caller.f_code.co_qualname} -> {side} {frame.f_code.co_qualname}")

    return seen, profile


def _request(version: str) -> tuple[dict[str, Any], bytes]:
    params: dict[str, Any] = {"uri": "notes://a"}
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")]
    headers += [(b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", version.encode())]
    if version == MODERN:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "trace", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers += [(b"mcp-method", b"resources/read"), (b"mcp-name", b"notes://a")]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": params}).encode()
    scope = {"type": "http", "method": "POST", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
             "headers": [*headers, (b"content-length", str(len(body)).encode())], "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 8000), "scheme": "http", "root_path": "", "http_version": "1.1"}  # fmt: skip
    return scope, body


async def read_crossings(version: str) -> tuple[list[str], dict[str, Any]]:
    """The crossings of one read at ``version`` and its JSON-RPC answer."""
    plugin = SimpleNamespace(register_resource_providers=hookimpl(lambda settings: [Notes()]))
    composition = compose({"notes": plugin})
    app = http_app(composition.server, stateless=True, json_response=True, security=transport_policy("127.0.0.1"))
    scope, body = _request(version)

    async def once(profile: Any) -> dict[str, Any]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        sys.setprofile(profile)
        try:
            await app(dict(scope), receive, send)
        finally:
            sys.setprofile(None)
        assert sent[0]["status"] == 200, sent
        return dict(json.loads(b"".join(m.get("body", b"") for m in sent[1:])))

    async with composition.running():
        await once(None)  # first-use imports and caches are not the request's path
        seen, profile = _crossings()
        answer = await once(profile)
    return seen, answer


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_a_read_over_http_crosses_between_core_and_sdk_a_bounded_number_of_times(version: str) -> None:
    seen, answer = await read_crossings(version)
    assert answer["result"]["contents"][0]["text"] == "a note"
    assert any(c.endswith("-> core _dispatch") for c in seen), seen  # the one entrance: the SDK calls our handler
    assert not any("Pipeline._answer" in c or "validate_client_request" in c for c in seen), seen  # no runner copy
    assert len(seen) <= LIMIT[version], "\n".join(seen)


def test_the_tracer_counts_a_call_into_the_sdk_and_not_a_call_within_a_side() -> None:
    """The tracer itself: ``uri_problems`` asks the SDK's parser whether a URI is a template (one
    crossing, core -> sdk); ``canonical`` stays in our code (none)."""
    from mcp_providers.uris import canonical, uri_problems

    seen, profile = _crossings()
    sys.setprofile(profile)
    try:
        canonical("notes://a")
        mark = len(seen)
        uri_problems("notes://a")
    finally:
        sys.setprofile(None)
    assert mark == 0, seen
    assert seen[mark:] and all(c.startswith("core uri_problems -> sdk ") for c in seen[mark:]), seen


if __name__ == "__main__":
    for v in ("2025-11-25", MODERN):
        crossings, _ = anyio.run(read_crossings, v)
        print(f"{v}: {len(crossings)} crossings", *crossings, sep="\n  ")
