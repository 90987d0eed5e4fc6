"""One URI length bound, ``[server] max_uri_length``, for every method that takes a URI (tester 27 F8).

A 4 MB ``resources/read`` URI of percent-escapes and full-width characters cost the server ~11 s
of its event loop in ``uris.canonical`` (every session waited), and so did ``skills/get`` and
``resources/directory/read``; the bound applied to ``resources/subscribe`` only. It is now applied
once, in the pipeline, before a method routes (canonicalizes) anything: -32602 naming the bound
and the setting, the same for every method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import boom_plugin
import mcp_types as types
import pytest
from mcp import Client, MCPError
from pydantic import BaseModel, TypeAdapter
from skills_fixture import notes

from mcp_providers import RECEIPT_KEY, Decision, Embed, Link, Tool, ToolCall, ToolProvider, ToolResult, hookimpl
from mcp_providers._serve.composition import compose
from mcp_providers._serve.steps import uri_length
from mcp_providers._serve.steps.asking import uri_allowed
from mcp_providers._serve.steps.gate import Authorizer, Gate
from mcp_providers.config import Config, ServerSettings
from mcp_providers.identity import LOCAL
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

LIMIT = 256
# Past the limit by one, and malformed (a "%" without two hex digits): refused for its length, so
# before any per-character work (canonicalizing it would refuse the escape instead).
LONG = "skill://notes/" + "%z" + "\uff05" * (LIMIT - len("skill://notes/%z") + 1)
FITS = "skill://notes/" + "a" * (LIMIT - len("skill://notes/"))


def _composed() -> Any:
    composition = compose(Config(server=ServerSettings(max_uri_length=LIMIT)), load_entrypoints=False,
                          plugins={"notes": notes, "boom": boom_plugin})  # fmt: skip
    assert composition.failures == []
    return composition


async def _send(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = types.Request[dict[str, Any], str](method=method, params=params)
    result: dict[str, Any] = await client.session.send_request(request, TypeAdapter(dict[str, Any]))  # type: ignore[arg-type]
    return result


def _requests(uri: str) -> dict[str, dict[str, Any]]:
    return {
        "resources/read": {"uri": uri},
        "skills/get": {"uri": uri},
        "resources/directory/read": {"uri": uri},
        "completion/complete": {
            "ref": {"type": "ref/resource", "uri": uri.replace("skill://notes/", "boom://read/xx")},
            "argument": {"name": "x", "value": ""},
        },
    }


def _refused_for_length(error: MCPError) -> None:
    assert error.error.code == types.INVALID_PARAMS, error.error
    assert f"a URI of {LIMIT + 1} characters" in error.error.message, error.error.message
    assert f"max_uri_length ({LIMIT})" in error.error.message, error.error.message
    assert error.error.data == {"length": LIMIT + 1, "max_uri_length": LIMIT}


async def test_every_method_taking_a_uri_refuses_one_over_the_bound_before_reading_it() -> None:
    assert len(LONG) == LIMIT + 1 and len(FITS) == LIMIT
    composition = _composed()
    async with connect(composition) as client:
        for method, params in _requests(LONG).items():
            with pytest.raises(MCPError) as refused:
                await _send(client, method, params)
            _refused_for_length(refused.value)
        for method, params in _requests(FITS).items():  # at the bound: the method's own answer
            with pytest.raises(MCPError) as other:
                await _send(client, method, params)
            assert "max_uri_length" not in other.value.error.message, (method, other.value.error)
    async with connect(composition, mode="legacy") as legacy:
        for method in ("resources/subscribe", "resources/unsubscribe", "resources/read"):
            with pytest.raises(MCPError) as refused:
                await _send(legacy, method, {"uri": LONG})
            _refused_for_length(refused.value)


async def test_a_listen_stream_naming_a_uri_over_the_bound_is_refused_for_it() -> None:
    async with connect(_composed()) as client:
        with pytest.raises(MCPError) as refused:
            async with client.listen(resource_subscriptions=[FITS, LONG]):
                pass
        _refused_for_length(refused.value)


class _Uri(BaseModel):
    uri: str


class _Asks(ToolProvider):
    """``ask``: asks the policy about reading ``uri``, as a tool touching that data should."""

    name = "asks"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="ask", description="Asks about reading uri.", input_model=_Uri)]

    async def call(self, call: ToolCall) -> ToolResult:
        call.require("read", call.arguments.uri)
        return ToolResult(text="allowed")


class _AsksPlugin:
    @hookimpl
    def register_tool_providers(self, settings: Any) -> list[ToolProvider]:
        return [_Asks()]

    @hookimpl
    def authorize(self, subject: str, action: str, target: str) -> Decision:
        return Decision(True)


async def test_a_uri_a_tool_asks_about_is_denied_past_the_bound_before_it_is_read() -> None:
    composition = compose(Config(server=ServerSettings(max_uri_length=LIMIT)), load_entrypoints=False,
                          plugins={"notes": notes, "asks": _AsksPlugin()})  # fmt: skip
    assert composition.failures == []
    async with connect(composition) as client:
        assert (await client.call_tool("ask", {"uri": FITS})).content[0].text == "allowed"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as denied:
            await client.call_tool("ask", {"uri": LONG})
    assert denied.value.error.code == -32003, denied.value.error
    assert f"a URI of {LIMIT + 1} characters" in denied.value.error.message
    assert f"max_uri_length ({LIMIT})" in denied.value.error.message
    gate = Gate(composition.runtime.authorizer, LOCAL, max_uri_length=LIMIT)
    assert uri_allowed(gate, composition.catalog, "read", FITS) and not uri_allowed(
        gate, composition.catalog, "read", LONG
    )


def test_the_gate_denies_a_target_no_bounded_uri_becomes_without_reading_it() -> None:
    class _Allow:
        plugin, settings = "allow", None

        @staticmethod
        def caller(**_: Any) -> Decision:
            return Decision(True)

    gate = Gate(Authorizer((_Allow(),)), LOCAL, max_uri_length=LIMIT)  # type: ignore[arg-type]
    assert gate.allowed("read", "skill://notes/" + "%41" * (3 * LIMIT))  # a canonical form may be longer
    refused = gate.decide("read", "skill://notes/%z" + "a" * (12 * LIMIT))
    assert refused.allow is False and "longer than any this server reads" in (refused.reason or "")


class _Points(ToolProvider):
    """``point``: answers with a link and an embed naming ``uri``."""

    name = "points"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="point", description="Links and embeds uri.", input_model=_Uri)]

    async def call(self, call: ToolCall) -> ToolResult:
        uri = call.arguments.uri
        return ToolResult(text="see", links=(Link(uri=uri, name="it"),), embedded=(Embed(uri=uri, text="x"),))


class _PointsPlugin:
    @hookimpl
    def register_tool_providers(self, settings: Any) -> list[ToolProvider]:
        return [_Points()]


async def test_a_link_or_embed_over_the_bound_is_dropped_before_it_is_routed() -> None:
    """Round 18 item 2: the URIs a result names are bounded as a request's are (routing reads every
    character); ``LONG`` holds a malformed escape, so a routed one would read as not served."""
    composition = compose(Config(server=ServerSettings(max_uri_length=LIMIT)), load_entrypoints=False,
                          plugins={"notes": notes, "points": _PointsPlugin()})  # fmt: skip
    assert composition.failures == []
    async with connect(composition) as client:
        result = await client.call_tool("point", {"uri": LONG})
        fits = await client.call_tool("point", {"uri": FITS.replace("skill:", "other:")})
    assert [b.type for b in result.content] == ["text"]
    why = f"a URI of {LIMIT + 1} characters is longer than this server takes: max_uri_length ({LIMIT})"
    assert (result.meta or {})[RECEIPT_KEY]["transforms"] == [f"dropped resource_link: {why}",
                                                              f"dropped embedded resource: {why}"]  # fmt: skip
    kept = (fits.meta or {})[RECEIPT_KEY]["transforms"]
    assert len(kept) == 2 and all(t.endswith("not served by this server") for t in kept), kept  # at the bound: routed


class _Extra(BaseModel, extra="allow"):
    """A params model keeping members it does not declare (the SDK's keep none)."""


class _Property(BaseModel):
    """A params model whose URI is a property, not a field."""

    path: str

    @property
    def uri(self) -> str:
        return "skill://notes/" + self.path


def test_params_models_are_read_for_every_uri_they_can_name() -> None:
    # The bound reads a model's members without getattr's misses (two exceptions each in pydantic),
    # so it must still find a URI kept as an extra member, a property, a nested ref, or in a dict.
    over = len(LONG)
    for params in (
        types.ReadResourceRequestParams(uri=LONG),
        {"uri": LONG},
        _Extra(uri=LONG),
        _Extra(ref={"uri": LONG}),
        _Property(path=LONG.removeprefix("skill://notes/")),
        types.CompleteRequestParams(
            ref=types.ResourceTemplateReference(type="ref/resource", uri=LONG),
            argument=types.CompletionArgument(name="x", value=""),
        ),
    ):
        assert uri_length.named_uris(params) == [LONG], params
        refused = uri_length.refusal(params, LIMIT)
        assert refused is not None and refused.data == {"length": over, "max_uri_length": LIMIT}, params
    for params in (types.ReadResourceRequestParams(uri=FITS), _Extra(), None, {}, types.PaginatedRequestParams()):
        assert uri_length.refusal(params, LIMIT) is None, params
