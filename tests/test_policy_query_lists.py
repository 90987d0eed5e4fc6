"""A deny on one value of a list parameter holds for every list holding it (tester 28, F7).

A deny on ``?ids=5`` let ``?ids=4,5``, ``?ids=4|5`` and ``?ids=4%205`` through (an array without
``explode`` in the ``form``, ``pipeDelimited`` and ``spaceDelimited`` styles: the service splits
the value and answers for 5), and a deny on ``?ids=4,5`` let ``?ids=5,4`` through. A read's query
value is now also read as its items, split at ``,``, ``|`` and spaces, and a rule's own list value
matches as a set: each of its items among the read's, in any order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import MCPError

from mcp_providers.identity import Principal
from mcp_providers.plugins import policy, upstream
from mcp_providers.plugins.policy import PolicySettings, decide
from mcp_providers.testing import compose, connect

LOCAL = Principal(subject="local", issuer="local")


def _rules(*rules: dict[str, object], default: str = "allow") -> PolicySettings:
    return PolicySettings.model_validate({"default": default, "rules": list(rules)})


def _denied(settings: PolicySettings, target: str) -> bool:
    decision = decide(settings, LOCAL, "read", target)
    return decision is not None and not decision.allow


def _deny(*targets: str, **rule: object) -> PolicySettings:
    return _rules({"effect": "deny", "targets": list(targets), **rule})


@pytest.mark.parametrize(
    "target",
    [
        "sv://accounts?ids=4,5",  # form, explode=false
        "sv://accounts?ids=4|5",  # pipeDelimited
        "sv://accounts?ids=4%7C5",
        "sv://accounts?ids=4%205",  # spaceDelimited
        "sv://accounts?ids=4+5",
        "sv://accounts?ids=4 5",
        "sv://accounts?ids=5,4",
        "sv://accounts?ids=4%2C5",  # an escaped comma a service decodes before it splits
        "sv://accounts?ids=4,%205,6",  # an item with spaces around it, trimmed
        "sv://accounts?ids=4%EF%BC%8C5",  # a full-width comma, a comma once folded
        "sv://accounts?ids=4%E3%80%805",  # an ideographic space, a space once folded
        "sv://accounts?ids=4,5.",  # an item trimmed of a trailing dot, as a value is
        "sv://accounts?ids=5%E3%80%82,4",
        "sv://accounts?limit=2&ids=1,2,5",
        "sv://accounts?ids=1&ids=4,5",  # a repeated name counts in each of its values
    ],
)
def test_a_deny_on_one_value_matches_every_list_holding_it(target: str) -> None:
    assert _denied(_deny("sv://accounts?ids=5"), target), target


@pytest.mark.parametrize(
    "target",
    ["sv://accounts?ids=5,4", "sv://accounts?ids=4|5", "sv://accounts?ids=5%204", "sv://accounts?ids=6,5,4"],
)
def test_a_rules_own_list_value_matches_as_a_set(target: str) -> None:
    assert _denied(_deny("sv://accounts?ids=4,5"), target), target
    assert _denied(_deny("sv://accounts?ids=4|5"), target), target
    assert _denied(_deny("sv://accounts?ids=4%205"), target), target


def test_a_wildcard_across_a_lists_delimiters_still_matches_the_whole_value() -> None:
    assert _denied(_deny("sv://accounts?ids=1,a*b"), "sv://accounts?ids=1,a,b")
    assert _denied(_deny("sv://accounts?ids=5*"), "sv://accounts?ids=4,50")


@pytest.mark.parametrize(
    ("rule", "target"),
    [
        ("sv://accounts?ids=5", "sv://accounts?ids=4,6"),
        ("sv://accounts?ids=5", "sv://accounts?ids=45,56"),
        ("sv://accounts?ids=5", "sv://accounts?other=4,5"),  # another parameter's items
        ("sv://accounts?ids=4,5", "sv://accounts?ids=4"),  # a set: each of its items must be read
        ("sv://accounts?ids=4,5", "sv://accounts?ids=5,6"),
        ("sv://accounts?ids=5", "sv://other?ids=4,5"),
    ],
)
def test_a_deny_on_a_list_still_spares_other_reads(rule: str, target: str) -> None:
    assert not _denied(_deny(rule), target), (rule, target)


def test_no_list_reading_widens_an_allow() -> None:
    settings = _rules({"effect": "allow", "targets": ["sv://accounts?ids=4,5"]}, default="deny")
    assert not _denied(settings, "sv://accounts?ids=4,5")
    for target in ("sv://accounts?ids=5,4", "sv://accounts?ids=4|5", "sv://accounts?ids=4", "sv://accounts?ids=5"):
        assert _denied(settings, target), target
    one = _rules({"effect": "allow", "targets": ["sv://accounts?ids=5"]}, default="deny")
    assert _denied(one, "sv://accounts?ids=4,5")


# An MCP server whose template takes a list as one comma-separated value, as servers do with
# ``{?ids}``; it logs every id it serves.
SPLITTING_UPSTREAM = """
import json, sys
from mcp.server.mcpserver import MCPServer
server = MCPServer("splitting-upstream", log_level="WARNING")
LOG = sys.argv[1]

@server.resource("lst://accounts{?ids}", mime_type="text/plain")
def accounts(ids: str = "") -> str:
    items = [i.strip() for i in ids.split(",") if i.strip()]
    with open(LOG, "a") as log:
        log.write(json.dumps(items) + "\\n")
    return "SECRET" if "5" in items else "public " + ",".join(items)

server.run("stdio")
"""


@pytest.mark.anyio
async def test_no_list_holding_a_denied_value_reaches_an_upstream_template(tmp_path: Path) -> None:
    script, log = tmp_path / "splitting.py", tmp_path / "asked.log"
    script.write_text(SPLITTING_UPSTREAM)
    log.touch()
    server = {"name": "lst", "command": sys.executable, "args": [str(script), str(log)], "prefixes": ["lst://"]}
    rules = [{"effect": "deny", "targets": ["lst://accounts?ids=5"]}]
    composition = compose(
        {"upstream": upstream, "policy": policy}, {"upstream": {"servers": [server]}, "policy": {"rules": rules}}
    )
    async with composition.running(), connect(composition) as client:
        public = await client.read_resource("lst://accounts?ids=4,6")
        assert public.contents[0].text == "public 4,6"  # type: ignore[union-attr]
        for uri in ("lst://accounts?ids=4,5", "lst://accounts?ids=5%2C4", "lst://accounts?ids=4,%205"):
            with pytest.raises(MCPError) as denied:
                await client.read_resource(uri)
            assert "permission-denied" in denied.value.error.message, uri
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    assert asked == [["4", "6"]], asked
