"""``resources/read`` answered through the one entrance: the SDK's runner calls the pipeline's
handler and validates and shapes its result for the session's protocol version, as it does for every
method (no middleware answers a read itself).

Every protocol version (the four handshake-era ones and 2026-07-28), through the SDK's own
``Server.run`` on raw JSON-RPC messages: text, templated and percent-encoded URIs, binary content,
content over its budget, and every way a read is refused (not found, denied, a provider failing or
returning content of the wrong types, params the SDK refuses, a stale demand, a read before
``initialize``); a middleware an embedder added after the pipeline's sees every read, and a handler
registered in place of the pipeline's answers instead of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import mcp_types.methods
import pytest
from mcp import MCPError
from wire_support import Guides, raw_session

from mcp_providers import Content, Decision, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.config import ServerSettings
from mcp_providers.models import MAX_AGE_KEY, RECEIPT_KEY
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", MODERN]
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Files(ResourceProvider):
    name = "files"
    prefixes = ("bin://",)

    def resources(self) -> Sequence[Resource]:
        return [
            Resource(uri="bin://png", name="png", mime_type="image/png"),
            Resource(uri="bin://big", name="big", mime_type="text/plain", max_bytes=64),
            Resource(uri="bin://cut", name="cut", mime_type="text/plain", max_bytes=64, allow_truncation=True),
            Resource(uri="bin://secret", name="secret", mime_type="text/plain"),
            Resource(uri="bin://broken", name="broken", mime_type="text/plain"),
            Resource(uri="bin://badmime", name="badmime", mime_type="text/plain"),
        ]

    async def read(self, request: ReadRequest) -> Content:
        if request.uri == "bin://png":
            return Content(blob=b"\x89PNG\r\n\x1a\n\x00\xff")
        if request.uri in ("bin://big", "bin://cut"):
            return Content(text="a line of text that goes on\n" * 20)
        if request.uri == "bin://broken":
            raise RuntimeError("the provider failed")
        if request.uri == "bin://badmime":
            return Content(text="x", mime_type=5)  # type: ignore[arg-type]  # what a careless provider does
        return Content(text="not for you")


class DenySecret:
    @hookimpl
    def authorize(self, subject: str, action: str, target: str) -> Decision | None:
        return Decision(False, "the test denies it") if target == "bin://secret" else None


READS: list[dict[str, Any]] = [
    {"uri": "docs://index"},
    {"uri": "docs://guías/intro"},
    {"uri": "docs://gu%C3%ADas/intro"},
    {"uri": "bin://png"},
    {"uri": "bin://big"},
    {"uri": "bin://cut"},
    {"uri": "docs://index", "extra": 1},
    {"uri": "docs://index", "_meta": {"progressToken": 7}},
    {"uri": "docs://nope"},
    {"uri": "bin://secret"},
    {"uri": "bin://broken"},
    {"uri": "bin://badmime"},
    {"uri": "docs://index", "_meta": {MAX_AGE_KEY: 0}},
    {"uri": "docs://index", "_meta": {MAX_AGE_KEY: -1}},
    {},
    {"uri": 5},
]


def _composition() -> Any:
    plugins = {
        "wire": SimpleNamespace(register_resource_providers=hookimpl(lambda settings: [Guides(), Files()])),
        "deny": DenySecret(),
    }
    return compose(plugins, server=ServerSettings(max_read_bytes=4096))


def _params(read: dict[str, Any], version: str | None) -> dict[str, Any]:
    if version != MODERN:
        return read
    return {**read, "_meta": {**read.get("_meta", {}), **ENVELOPE}}


def _without_clock(answer: dict[str, Any]) -> dict[str, Any]:
    receipt = answer.get("result", {}).get("_meta", {}).get(RECEIPT_KEY)
    if receipt is not None:
        assert receipt.pop("retrievedAt")
    return answer


async def _answers(version: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], int]:
    """The answers to :data:`READS`, and how often the SDK validated a ``resources/read`` result."""
    validated = 0
    validate = mcp_types.methods.serialize_server_result

    def counting(method: str, *args: Any, **kwargs: Any) -> Any:
        nonlocal validated
        validated += method == "resources/read"
        return validate(method, *args, **kwargs)

    monkeypatch.setattr(mcp_types.methods, "serialize_server_result", counting)
    answers = []
    async with raw_session(_composition(), version) as (session, _):
        for read in READS:
            answers.append(_without_clock(await session.request("resources/read", _params(read, version))))
    monkeypatch.setattr(mcp_types.methods, "serialize_server_result", validate)
    return answers, validated


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_read_passes_the_sdks_result_checks(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    answers, validated = await _answers(version, monkeypatch)
    results = [a for a in answers if "result" in a]
    errors = {a["error"]["code"] for a in answers if "error" in a}
    assert len(results) == 7 and errors == {-32003, -32004, -32007, -32602, -32603}, answers  # every kind was tried
    assert "mime_type= must be a str" not in str(answers)  # the provider's TypeError stays in the log
    assert results[4]["result"]["_meta"][RECEIPT_KEY]["truncation"]["servedBytes"] == 64  # bin://cut
    assert results[0]["result"]["contents"][0]["uri"] == "docs://index"
    assert validated == len(results)  # one entrance: the SDK validated every read's result, once


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25", MODERN])
async def test_each_version_gets_only_its_own_result_fields(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (answer, *_), _ = await _answers(version, monkeypatch)
    result = answer["result"]
    modern_keys = {"ttlMs", "cacheScope", "resultType"}
    if version == MODERN:
        assert modern_keys <= set(result)
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]
    else:
        assert not modern_keys & set(result)
        assert set(result["_meta"]) == {RECEIPT_KEY}


async def test_a_read_before_initialize_is_refused_as_the_sdk_refuses_it() -> None:
    async with raw_session(_composition(), None) as (session, _):
        answer = await session.request("resources/read", {"uri": "docs://index"})
    assert answer["error"]["code"] == -32602, answer


async def test_a_middleware_added_after_the_pipelines_still_sees_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    async def rate_limit(ctx: Any, call_next: Any) -> Any:
        seen.append(ctx.method)
        if ctx.method == "resources/read" and (ctx.params or {}).get("uri") == "docs://index":
            raise MCPError(-32001, "rate limited by the embedder")
        return await call_next(ctx)

    for version in VERSIONS:
        composition = _composition()
        composition.server.middleware.append(rate_limit)
        seen.clear()
        async with raw_session(composition, version) as (session, _):
            refused = await session.request("resources/read", _params({"uri": "docs://index"}, version))
            served = await session.request("resources/read", _params({"uri": "bin://png"}, version))
        assert [m for m in seen if m == "resources/read"] == ["resources/read"] * 2, (version, seen)
        assert refused["error"] == {"code": -32001, "message": "rate limited by the embedder"}, version
        assert served["result"]["contents"][0]["blob"], version


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_handler_registered_in_place_of_the_pipelines_is_answered_by_the_sdk(version: str) -> None:
    async def read(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        contents = [types.TextResourceContents(uri=params.uri, text="replaced", mime_type="text/plain")]
        return types.ReadResourceResult(contents=contents, ttl_ms=0, cache_scope="private")

    composition = _composition()
    composition.server.add_request_handler("resources/read", types.ReadResourceRequestParams, read)
    async with raw_session(composition, version) as (session, _):
        answer = await session.request("resources/read", _params({"uri": "docs://index"}, version))
    assert answer["result"]["contents"][0]["text"] == "replaced"
    assert ("ttlMs" in answer["result"]) == (version == MODERN)  # shaped for the version by the SDK


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"text": "x", "mime_type": 5}, "mime_type= must be a str such as 'text/plain' or None, not int"),
        ({"text": b"x"}, "text= must be a str or None, not bytes"),
        ({"blob": "x"}, "blob= must be bytes or None, not str"),
        ({"text": "x", "as_of": "2026-01-01"}, "as_of= must be a timezone-aware datetime or None, not str"),
    ],
)
def test_content_of_the_wrong_types_is_refused_where_the_provider_makes_it(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(TypeError, match=re.escape(named)):
        Content(**fields)
