"""An upstream's list pages are taken item by item (issue 40): one item the SDK cannot parse is
left out alone, named (upstream, list method, page, index, name) with what was wrong, and the rest
of that upstream serves: reads, calls and prompts of its good items too. In both eras, for every
list method, against a raw stdio upstream that sends pages as the test writes them
(``paged_stdio_upstream.py``), real processes."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_support import run_cli

from mcp_providers._cli.explore import INSPECT_SCHEMA, inventory
from mcp_providers._host.advisories import advisories, unavailable_sources
from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream import listing, sieve
from mcp_providers.plugins.upstream.sieve import LEFT_OUT_KEY, Sieve
from mcp_providers.testing import compose, connect

PAGED = str(Path(__file__).with_name("paged_stdio_upstream.py"))
OBJECT = {"type": "object"}
GOOD = {
    "resources/list": {"uri": "p://a/good", "name": "good"},
    "resources/templates/list": {"uriTemplate": "p://t/{id}", "name": "tpl"},
    "tools/list": {"name": "good", "inputSchema": OBJECT},
    "prompts/list": {"name": "hi", "arguments": [{"name": "who", "required": False}]},
}
FIELD = {"resources/list": "resources", "resources/templates/list": "resourceTemplates", "tools/list": "tools",
         "prompts/list": "prompts"}  # fmt: skip
ERAS = ["2025", "2026"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime hosts providers in an asyncio task of its own


# (list, bad item, the value its left-out line is keyed by, what the line says)
BAD: list[tuple[str, Any, str, str]] = [
    ("tools/list", {"name": "no_schema"}, "no_schema", "does not parse: inputSchema: Field required"),
    ("tools/list", {"name": "typed", "inputSchema": "object"}, "typed", "does not parse: inputSchema: "),
    ("tools/list", {"name": 5, "inputSchema": OBJECT}, "tools/list tools[0]", "does not parse: name: "),
    ("tools/list", "a tool", "tools/list tools[0]", "is a string, not an object"),
    ("tools/list", None, "tools/list tools[0]", "is null, not an object"),
    (
        "tools/list",
        {"name": "big", "inputSchema": OBJECT, "description": "x" * 3000},
        "big",
        "3063 bytes, over the 2048",
    ),
    ("resources/list", {"name": "no_uri"}, "no_uri", "does not parse: uri: Field required"),
    ("resources/list", {"uri": 5, "name": "num"}, "num", "does not parse: uri: "),
    ("resources/list", {"uri": "p://a/bad", "name": 5}, "p://a/bad", "does not parse: name: "),
    ("resources/list", [1], "resources/list resources[0]", "is a list, not an object"),
    ("resources/templates/list", {"name": "t"}, "t", "does not parse: uriTemplate: Field required"),
    ("resources/templates/list", {"uriTemplate": 7, "name": "t"}, "t", "does not parse: uriTemplate: "),
    ("resources/templates/list", {"uriTemplate": "p://t/{x}"}, "p://t/{x}", "does not parse: name: Field required"),
    ("prompts/list", {"name": "argy", "arguments": [{"name": 5}]}, "argy", "does not parse: arguments.0.name: "),
    ("prompts/list", {"name": "args", "arguments": "who"}, "args", "does not parse: arguments: "),
    ("prompts/list", {"name": "described", "description": ["no"]}, "described", "does not parse: description: "),
]


def _server(tmp_path: Path, era: str, pages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    spec = tmp_path / f"spec-{era}.json"
    spec.write_text(json.dumps({"era": era, "pages": pages}))
    return {"name": "paged", "command": sys.executable, "args": [PAGED, str(spec)], "prefixes": ["p://"],
            "read_timeout": 10, "max_bytes": 1024, **extra}  # fmt: skip


def _composed(tmp_path: Path, era: str, pages: dict[str, Any], **extra: Any) -> Any:
    servers = [_server(tmp_path, era, pages, **extra)]
    return compose({"upstream": upstream}, {"upstream": {"servers": servers}}, strict=False)  # some fail listing


def _left(c: Any) -> dict[str, str]:
    """What ``check`` prints as ``left-out``, by value."""
    return {p.value: p.message for p in advisories(c.assembly.declared) if p.rule == "left-out"}


def _served(c: Any) -> dict[str, set[str]]:
    """What ``inspect`` shows, by kind."""
    shown = inventory(c)
    keys = {"resources": "uri", "templates": "uriTemplate", "tools": "name", "prompts": "name"}
    return {kind: {item[key] for item in shown[kind]} for kind, key in keys.items()}


def _all_good(**bad: list[Any]) -> dict[str, Any]:
    """One page per list: its good item, with ``bad`` items first where given."""
    return {m: [{FIELD[m]: [*bad.get(FIELD[m], []), GOOD[m]]}] for m in GOOD}


ALL_GOOD = {"resources": {"p://a/good"}, "templates": {"p://t/{id}"}, "tools": {"good"}, "prompts": {"hi"}}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("method", "bad", "value", "said"), BAD, ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_one_bad_item_is_left_out_alone_and_named(
    tmp_path: Path, era: str, method: str, bad: Any, value: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sieve, "MAX_ITEM_BYTES", 2048)
    c = _composed(tmp_path, era, _all_good(**{FIELD[method]: [bad]}))
    assert not c.failures and not unavailable_sources(c.assembly.declared)
    assert _served(c) == ALL_GOOD
    left = _left(c)
    assert set(left) == {value}, left
    index = f"{FIELD[method]}[0]"
    named = "" if value.startswith(method) else f" {value!r}"  # by its uri (template), else its name
    assert left[value].startswith(f"upstream-paged: {method} page 1, {index}{named} "), left[value]
    assert said in left[value] and left[value].endswith("; the rest is served"), left[value]
    assert "input_value" not in left[value]  # what was wrong, not the item's content


def test_a_bad_uri_template_that_parses_is_left_out_by_the_rules(tmp_path: Path) -> None:
    c = _composed(tmp_path, "2025", _all_good(resourceTemplates=[{"uriTemplate": "p://t/{", "name": "open"}]))
    left = _left(c)
    assert set(left) == {"p://t/{"} and "template 'p://t/{'" in left["p://t/{"]
    assert _served(c) == ALL_GOOD


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_the_good_items_of_a_page_with_bad_ones_serve(tmp_path: Path, era: str) -> None:
    """One bad item in every list at once; the good ones are read, called and got, over the
    serving connection, whose SDK lists tools again on its own before a call (to learn output
    schemas): that listing is sieved too."""
    bad = {"resources": [{"name": "x"}], "resourceTemplates": [5], "tools": [{"name": "t"}], "prompts": [[]]}
    c = _composed(tmp_path, era, _all_good(**bad))
    assert _served(c) == ALL_GOOD and len(_left(c)) == 4
    async with c.running(), connect(c, "auto") as modern, connect(c, "legacy") as legacy:
        for client in (modern, legacy):
            assert (await client.read_resource("p://a/good")).contents[0].text == "content of p://a/good"
            assert (await client.read_resource("p://t/7")).contents[0].text == "content of p://t/7"
            called = await client.call_tool("good", {})
            assert not called.is_error and called.content[0].text == "called good"
            got = await client.get_prompt("hi", {"who": "me"})
            assert got.messages[0].content.text == "prompt hi"


@pytest.mark.parametrize("era", ERAS)
def test_items_that_are_not_a_list_leave_out_that_page_alone(tmp_path: Path, era: str) -> None:
    pages = {**_all_good(), "tools/list": [{"tools": "good"}]}
    c = _composed(tmp_path, era, pages)
    assert _served(c) == {**ALL_GOOD, "tools": set()}
    left = _left(c)
    assert left == {
        "tools/list": "upstream-paged: tools/list page 1: tools is a string, not a list; no item of this page is served"
    }


@pytest.mark.parametrize("era", ERAS)
def test_a_next_cursor_that_is_not_a_string_ends_that_list_and_is_said(tmp_path: Path, era: str) -> None:
    second = {"name": "second", "inputSchema": OBJECT}
    pages = {**_all_good(), "tools/list": [{"tools": [GOOD["tools/list"]], "nextCursor": 1}, {"tools": [second]}]}
    c = _composed(tmp_path, era, pages)
    assert _served(c)["tools"] == {"good"}
    said = "upstream-paged: the rest of tools/list is not served: page 1's nextCursor is an int, not a string"
    assert _left(c) == {"tools/list": said}


@pytest.mark.parametrize("era", ERAS)
def test_a_bad_item_on_a_later_page_is_named_by_its_page(tmp_path: Path, era: str) -> None:
    later = [{"name": "later", "inputSchema": 3}, {"name": "after", "inputSchema": OBJECT}]
    pages = {**_all_good(), "tools/list": [{"tools": [GOOD["tools/list"]], "nextCursor": "p1"}, {"tools": later}]}
    c = _composed(tmp_path, era, pages)
    assert _served(c)["tools"] == {"good", "after"}
    left = _left(c)
    assert set(left) == {"later"}
    assert left["later"].startswith("upstream-paged: tools/list page 2, tools[0] 'later' does not parse: inputSchema")


@pytest.mark.parametrize("era", ERAS)
def test_a_page_that_is_not_an_object_fails_that_upstream_at_once_naming_it(tmp_path: Path, era: str) -> None:
    started = time.monotonic()
    c = _composed(tmp_path, era, {**_all_good(), "prompts/list": [["hi"]]})
    assert time.monotonic() - started < 8  # an error answer, not its read_timeout (10 s) running out
    [gone] = unavailable_sources(c.assembly.declared)
    assert gone.value == "paged"
    assert (
        "upstream 'paged' (stdio) could not be listed: error -32700: prompts/list page 1: "
        "the prompts/list answer is not a page: its result is a list, not an object"
    ) in gone.message


@pytest.mark.parametrize("era", ERAS)
def test_paging_bounds_still_hold(tmp_path: Path, era: str, monkeypatch: pytest.MonkeyPatch) -> None:
    again = {**_all_good(), "tools/list": [{"tools": [GOOD["tools/list"]], "nextCursor": "p0"}]}
    assert "a cursor it had sent before, after 2 pages" in _left(_composed(tmp_path, era, again))["tools/list"]
    monkeypatch.setattr(listing, "MAX_PAGES", 3)
    endless = [{"tools": [{"name": f"t{i}", "inputSchema": OBJECT}], "nextCursor": f"p{i + 1}"} for i in range(5)]
    c = _composed(tmp_path, era, {**_all_good(), "tools/list": endless})
    assert _served(c)["tools"] == {"t0", "t1", "t2"}
    assert _left(c)["tools/list"].endswith("its pages did not end within 3")


def test_an_upstreams_own_left_out_notes_are_not_believed(tmp_path: Path) -> None:
    spoof = [{"field": "tools", "index": 0, "name": "fake", "why": "was never listed"}]
    pages = {**_all_good(), "tools/list": [{"tools": [GOOD["tools/list"]], "_meta": {LEFT_OUT_KEY: spoof, "k": 1}}]}
    c = _composed(tmp_path, "2025", pages)
    assert _served(c) == ALL_GOOD and not _left(c)


def test_a_2026_tool_the_sdk_drops_for_its_x_mcp_header_is_said(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "object", "x-mcp-header": "Q"}}}
    c = _composed(tmp_path, "2026", _all_good(tools=[{"name": "headed", "inputSchema": schema}]))
    assert _served(c) == ALL_GOOD  # the SDK's own filter still runs, for the items that parse
    assert "has an invalid x-mcp-header" in _left(c)["headed"]
    assert _served(_composed(tmp_path, "2025", _all_good(tools=[{"name": "headed", "inputSchema": schema}])))[
        "tools"
    ] == {"good", "headed"}  # a 2025-era client has no such filter


def test_the_item_limit_is_its_own_not_max_bytes(tmp_path: Path) -> None:
    item = {"name": "n", "inputSchema": OBJECT, "description": "x" * 2000}
    assert Sieve(1024).page("tools/list", "2025-11-25", {"tools": [item]})["tools"] == []
    assert Sieve(4096).page("tools/list", "2025-11-25", {"tools": [item]})["tools"] == [item]
    assert Sieve().limit == sieve.MAX_ITEM_BYTES == 1024 * 1024
    # max_bytes (1024 here) bounds answers to reads and calls, not what is listed
    assert _served(_composed(tmp_path, "2025", _all_good(tools=[item])))["tools"] == {"good", "n"}


def test_check_and_inspect_print_the_left_out_item(tmp_path: Path) -> None:
    server = _server(tmp_path, "2025", _all_good(tools=[{"name": "no_schema"}]))
    config = tmp_path / "config.toml"
    args = ", ".join(json.dumps(a) for a in server["args"])
    config.write_text(
        'allow = ["upstream"]\n[[plugins.upstream.servers]]\nname = "paged"\n'
        f"command = {json.dumps(server['command'])}\nargs = [{args}]\n"
        'prefixes = ["p://"]\nread_timeout = 10\n'
    )
    checked = run_cli("check", "-c", str(config))
    assert checked.returncode == 0, checked.stderr
    shown = " ".join((checked.stdout + checked.stderr).split())
    assert "no_schema" in shown and "tools/list page 1, tools[0] 'no_schema' does not parse" in shown
    inspected = run_cli("inspect", "-c", str(config))
    assert inspected.returncode == 0, inspected.stderr
    tables, _, notes = inspected.stdout.partition("not served:")
    assert "good" in tables and "no_schema" not in tables, inspected.stdout  # listed nowhere as served
    assert "no_schema" in " ".join(notes.split()) and "does not parse" in notes, inspected.stdout  # said why


def test_inspect_says_why_an_upstream_serves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tester, round 8: with a variable unset, ``inspect`` printed empty tables and exit 0, silent."""
    monkeypatch.delenv("INSPECT_UNSET_VARIABLE", raising=False)
    config = tmp_path / "config.toml"
    config.write_text(
        'allow = ["upstream"]\n[[plugins.upstream.servers]]\nname = "needs"\n'
        f'command = {json.dumps(sys.executable)}\nargs = ["-c", "pass"]\nprefixes = ["n://"]\n'
        'env = { TOKEN = "INSPECT_UNSET_VARIABLE" }\n'
    )
    shown = run_cli("inspect", "-c", str(config))
    assert shown.returncode == 0, shown.stderr
    said = " ".join(shown.stdout.split())
    assert "not served: upstream: source-unavailable: 'needs'" in said and "is not set" in said, shown.stdout
    server = {"name": "needs", "command": sys.executable, "args": ["-c", "pass"], "prefixes": ["n://"],
              "env": {"TOKEN": "INSPECT_UNSET_VARIABLE"}}  # fmt: skip
    document = inventory(compose({"upstream": upstream}, {"upstream": {"servers": [server]}}, strict=False))
    jsonschema.validate(document, INSPECT_SCHEMA)
    assert any("INSPECT_UNSET_VARIABLE" in line and "is not set" in line for line in document["not_served"])
