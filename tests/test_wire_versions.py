"""Every result is shaped for the protocol version the session negotiated.

The table (also in ``docs/protocol-versions.md``): a field or block a version does not define
never reaches a session at that version. Each version's session lists, reads, calls every tool of
the wire plugin (every content kind) and the built-in ones, and every answer is checked against
what that version knows.
"""

from __future__ import annotations

from typing import Any

import pytest
from wire_support import Guides, Shapes, plugin, raw_session

from mcp_providers.plugin import Context, Plugin
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]

SINCE = {
    # (where, key): the first version that defines it
    ("tool", "annotations"): "2025-03-26",
    ("tool", "title"): "2025-06-18",
    ("tool", "outputSchema"): "2025-06-18",
    ("tool", "_meta"): "2025-06-18",
    ("tool", "icons"): "2025-11-25",
    ("tool", "execution"): "2025-11-25",
    ("resource", "title"): "2025-06-18",
    ("resource", "_meta"): "2025-06-18",
    ("template", "title"): "2025-06-18",
    ("template", "_meta"): "2025-06-18",
    ("resource", "icons"): "2025-11-25",
    ("template", "icons"): "2025-11-25",
    ("annotations", "lastModified"): "2025-06-18",
    ("block", "_meta"): "2025-06-18",
    ("contents", "_meta"): "2025-06-18",
    ("result", "structuredContent"): "2025-06-18",
    ("capabilities", "completions"): "2025-03-26",
    ("capabilities", "tasks"): "2025-11-25",
    ("serverInfo", "title"): "2025-06-18",
    ("serverInfo", "icons"): "2025-11-25",
    ("serverInfo", "description"): "2025-11-25",
    ("serverInfo", "websiteUrl"): "2025-11-25",
}
BLOCK_SINCE = {
    "text": "2024-11-05",
    "image": "2024-11-05",
    "resource": "2024-11-05",
    "audio": "2025-03-26",
    "resource_link": "2025-06-18",
}


def _allowed(where: str, key: str, version: str) -> bool:
    return version >= SINCE.get((where, key), "0000")


def _check(where: str, item: dict[str, Any], version: str) -> None:
    for key in item:
        assert _allowed(where, key, version), f"{where} carries {key!r}, which {version} does not define: {item}"
    if isinstance(item.get("annotations"), dict) and where != "tool":
        _check("annotations", item["annotations"], version)


def _check_block(block: dict[str, Any], version: str) -> None:
    assert version >= BLOCK_SINCE[block["type"]], f"a {block['type']} block reached a {version} session"
    _check("block", block, version)
    if block["type"] == "resource":
        _check("contents", block["resource"], version)


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_answer_fits_the_negotiated_version(version: str) -> None:
    composition = compose({"wire": plugin(Shapes(), Guides())})
    async with raw_session(composition, version) as (session, init):
        _check("capabilities", init["capabilities"], version)
        _check("serverInfo", init["serverInfo"], version)
        tools = (await session.request("tools/list"))["result"]["tools"]
        for tool in tools:
            _check("tool", tool, version)
        for resource in (await session.request("resources/list"))["result"]["resources"]:
            _check("resource", resource, version)
        for template in (await session.request("resources/templates/list"))["result"]["resourceTemplates"]:
            _check("template", template, version)
        for contents in (await session.request("resources/read", {"uri": "docs://index"}))["result"]["contents"]:
            _check("contents", contents, version)
        for tool in tools:
            result = (await session.request("tools/call", {"name": tool["name"], "arguments": {}}))["result"]
            assert not result.get("isError"), result
            _check("result", {k: v for k, v in result.items() if k not in ("content", "isError", "_meta")}, version)
            for block in result["content"]:
                _check_block(block, version)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
async def test_what_an_older_version_lacks_is_said_in_text(version: str) -> None:
    composition = compose({"wire": plugin(Shapes(), Guides())})
    async with raw_session(composition, version) as (session, _):
        result = (await session.request("tools/call", {"name": "everything", "arguments": {}}))["result"]
        texts = [b["text"] for b in result["content"] if b["type"] == "text"]
        assert any("docs://index" in t for t in texts)  # the link, as text
        assert any('"shown": "all"' in t for t in texts)  # the structured output, as JSON text
        if version < "2025-03-26":
            assert any("audio/wav" in t for t in texts)  # the audio block, named in text
        transforms = result["_meta"]["io.mcp-providers/receipt"]["transforms"]
        assert any(f"protocol {version}" in t and "resource_link" in t for t in transforms), transforms


async def test_the_newest_legacy_version_gets_everything() -> None:
    composition = compose({"wire": plugin(Shapes(), Guides())})
    async with raw_session(composition, "2025-11-25") as (session, init):
        assert "completions" in init["capabilities"]
        result = (await session.request("tools/call", {"name": "everything", "arguments": {}}))["result"]
        assert {b["type"] for b in result["content"]} == {"text", "image", "audio", "resource_link", "resource"}
        assert result["structuredContent"] == {"shown": "all"}
        tools = {t["name"]: t for t in (await session.request("tools/list"))["result"]["tools"]}
        assert tools["everything"]["title"] == "Every block" and "outputSchema" in tools["everything"]


async def _answers(session: Any, tools: list[str]) -> dict[str, Any]:
    """Every answer a session gets from the wire plugin, the receipts' clocks and digests left out."""
    out: dict[str, Any] = {}
    for method in ("tools/list", "resources/list", "resources/templates/list"):
        out[method] = (await session.request(method))["result"]
    out["read"] = (await session.request("resources/read", {"uri": "docs://index"}))["result"]
    for name in tools:
        out[name] = (await session.request("tools/call", {"name": name, "arguments": {}}))["result"]
    for answer in out.values():
        receipt = answer.get("_meta", {}).get("io.mcp-providers/receipt")
        if isinstance(receipt, dict):
            answer["_meta"]["io.mcp-providers/receipt"] = {"transforms": receipt.get("transforms")}
    return out


@pytest.mark.parametrize("older", VERSIONS[:-1])
async def test_shaping_for_one_session_never_changes_what_another_gets(older: str) -> None:
    """Tester fourteen (HIGH): an older session's lists were shaped in place, on list items every
    session shares, so every later caller got 2024-11-05 lists until a restart. Each session's
    answers are the same before and after another session of any version was served."""
    composition = compose({"wire": plugin(Shapes(), Guides())})
    tools = ["tree", "items", "everything", "echo"]
    async with raw_session(composition, "2025-11-25") as (session, _):
        before = await _answers(session, tools)
    async with raw_session(composition, older) as (session, _):
        first = await _answers(session, tools)
        assert await _answers(session, tools) == first  # its own answers do not drift either
    async with raw_session(composition, "2025-11-25") as (session, _):
        assert await _answers(session, tools) == before
    assert {t["name"]: t.get("title") for t in before["tools/list"]["tools"]}["tree"] == "A tree"


@pytest.mark.parametrize("older", VERSIONS[:-1])
def test_shape_leaves_what_it_was_given_as_it_was(older: str) -> None:
    """``wire.shape`` returns copies where it changes something: the result it was given, its lists
    and their items (which may be shared by every session) are as they were."""
    import mcp_types as types

    from mcp_providers._serve.steps import wire
    from mcp_providers.models import RECEIPT_KEY

    link = types.ResourceLink(type="resource_link", name="index", uri="docs://index")
    audio = types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav")
    icon = types.Icon(src="https://example.com/t.png")
    tool = types.Tool(
        name="t", title="T", input_schema={"type": "object"}, annotations=types.ToolAnnotations(), icons=[icon]
    )
    listed = types.ListToolsResult(tools=[tool])
    called = types.CallToolResult(
        content=[link, audio], structured_content={"a": 1}, _meta={RECEIPT_KEY: {"transforms": []}}
    )
    changed = []
    for result in (listed, called):
        before = result.model_dump(by_alias=True)
        parts = [list(v) if isinstance(v, list) else v for v in vars(result).values()]
        shaped = wire.shape(result, older)
        assert result.model_dump(by_alias=True) == before
        assert [list(v) if isinstance(v, list) else v for v in vars(result).values()] == parts
        changed.append(shaped.model_dump(by_alias=True) != before)
    assert changed[0]  # the tool's icons at least were shaped away for the older version


@pytest.mark.parametrize("version", VERSIONS)
async def test_progress_notifications_fit_the_negotiated_version(version: str) -> None:
    """Tester fifteen: a 2024-11-05 session got ``notifications/progress`` with ``message``, which
    that version does not define (it came with 2025-03-26)."""
    plugin = Plugin("steps")

    @plugin.tool()
    async def step(ctx: Context) -> str:
        """Reports progress once."""
        await ctx.progress(1, 2, "half way")
        return "done"

    async with raw_session(compose({"steps": plugin}), version) as (session, _):
        params = {"name": "step", "arguments": {}, "_meta": {"progressToken": "p1"}}
        assert (await session.request("tools/call", params))["result"]["content"][0]["text"] == "done"
    (note,) = [n for n in session.notifications if n["method"] == "notifications/progress"]
    assert note["params"]["progress"] == 1 and note["params"]["total"] == 2
    assert ("message" in note["params"]) is (version >= "2025-03-26"), note
