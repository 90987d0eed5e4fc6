"""A deny rule on a query value holds in every spelling of the same read (tester 25, f1 and f4).

f1: a deny on ``?owner=root*`` let ``?owner=%EF%BD%92oot`` (a full-width r), ``?owner=R%C3%B6ot``
and ``?owner=%2572oot`` (an escape under an escape) through, while the same spellings in a path
were read away: the query was dropped from the path reading and never decoded or folded. A query
now has readings of its own: each name and value decoded (again while an escape is left, ``+`` as
a space), trimmed of surrounding spaces and trailing dots, and folded like a path.

f4: a deny on ``?b=true&n=1`` let ``?n=1&b=true`` through, and one on ``?b=true*`` let
``?n=0&b=true`` (``n=0`` the default: the same read) through. A deny whose target has a query now
also matches by parameter: the part before ``?`` matches, and each of the rule's ``name=value``
patterns matches one of the read's parameters, in any order, whatever else the read names.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import MCPError

from mcp_providers.identity import Principal
from mcp_providers.plugin import Plugin
from mcp_providers.plugins import policy, upstream
from mcp_providers.plugins.policy import PolicySettings, decide
from mcp_providers.testing import compose, connect

LOCAL = Principal(subject="local", issuer="local")


def _rules(*rules: dict[str, object], default: str = "allow") -> PolicySettings:
    return PolicySettings.model_validate({"default": default, "rules": list(rules)})


def _deny(*targets: str, **rule: object) -> PolicySettings:
    return _rules({"effect": "deny", "targets": list(targets), **rule})


def _denied(settings: PolicySettings, target: str) -> bool:
    decision = decide(settings, LOCAL, "read", target)
    return decision is not None and not decision.allow


@pytest.mark.parametrize(
    "target",
    [
        "sv://items?owner=root",
        "sv://items?owner=ROOT",
        "sv://items?owner=%EF%BD%92oot",  # full-width r: NFKC folds it
        "sv://items?owner=R%C3%B6ot",  # a combining mark an accent-insensitive collation drops
        "sv://items?owner=ro%CC%88ot",
        "sv://items?owner=%2572oot",  # r to a second decoding
        "sv://items?owner=%25252572oot",
        "sv://items?owner=%72oot",
        "sv://items?%6Fwner=root",  # the name decoded too
        "sv://items?OWNER=Root",
        "sv://items?owner=root%20",  # SQL compares pad trailing spaces
        "sv://items?owner=+root",  # '+' is a space in a form-encoded query, and services trim
        "sv://items?owner=root%E2%80%A4",  # a one-dot leader: a '.' once folded, then trimmed
        "sv://items?owner%20=root.",
        "sv://items?owner=ro%E2%80%8Bot",  # an invisible format character some compares ignore
        "sv://items?owner=ro%CD%8Fot",  # a default-ignorable character
        "sv://items?limit=5&owner=%EF%BD%92OOT",
        "sv://items/?owner=%EF%BD%92oot",  # a trailing slash a service reads away
    ],
)
def test_a_deny_on_a_query_value_matches_its_decoded_and_folded_readings(target: str) -> None:
    assert _denied(_deny("sv://items?owner=root*"), target), target
    assert _denied(_deny("sv://items?owner=root"), target), target


@pytest.mark.parametrize(
    ("rule", "target"),
    [
        ("ty://q?b=true&n=1", "ty://q?n=1&b=true"),  # another order
        ("ty://q?b=true&n=1", "ty://q?n=1&x=2&b=true"),  # and another parameter
        ("ty://q?b=true*", "ty://q?n=0&b=true"),  # an earlier parameter given its default
        ("ty://q?b=true", "ty://q?n=0&b=true"),
        ("ty://q?b=true", "ty://q?b=false&b=true"),  # a repeated name: a service may read the last
        ("ty://q?b=true&n=1", "ty://q?N=%31&B=TRUE"),
        ("ty://*?b=true", "ty://q?n=1&b=true"),
        ("ty://q?admin=true*", "ty://q?owner=root&admin=true"),
    ],
)
def test_a_deny_on_a_query_matches_its_parameters_in_any_order(rule: str, target: str) -> None:
    assert _denied(_deny(rule), target), (rule, target)


def test_the_rules_own_escapes_are_read_as_what_they_spell() -> None:
    assert _denied(_deny("sv://items?owner=r%C3%B6ot"), "sv://items?owner=ROOT")
    assert _denied(_deny("sv://docs/pr%C3%AFvate/*"), "sv://docs/PR%C3%8FVATE/a")
    assert not _denied(_deny("sv://items?owner=r%2A"), "sv://items?owner=root")  # an escaped '*' is no wildcard


@pytest.mark.parametrize(
    ("rule", "target"),
    [
        ("sv://items?owner=root*", "sv://items?owner=alice"),
        ("sv://items?owner=root*", "sv://items"),
        ("sv://items?owner=root*", "sv://items?other=root"),  # another parameter's value
        ("sv://items?owner=root*", "sv://other?owner=root"),
        ("ty://q?b=true&n=1", "ty://q?b=true"),  # n=1 is not asked for
        ("ty://q?b=true&n=1", "ty://q?b=true&n=2"),
        ("sv://items?owner=root", "sv://items?owner=rooted"),
    ],
)
def test_a_deny_on_a_query_still_spares_other_reads(rule: str, target: str) -> None:
    assert not _denied(_deny(rule), target), (rule, target)


def test_match_case_keeps_the_query_to_its_spelling_but_not_its_order() -> None:
    exact = _deny("ty://q?b=true&n=1", match_case=True)
    assert _denied(exact, "ty://q?n=1&b=true")
    assert not _denied(exact, "ty://q?n=1&b=TRUE")


def test_no_query_reading_widens_an_allow() -> None:
    settings = _rules({"effect": "allow", "targets": ["ty://q?b=true&n=1"]}, default="deny")
    assert not _denied(settings, "ty://q?b=true&n=1")
    for target in ("ty://q?n=1&b=true", "ty://q?b=true&n=1&x=2", "ty://q?b=TRUE&n=1", "ty://q?b=tru%65&n=1"):
        assert _denied(settings, target), target


p = Plugin("ty", prefixes=["ty://"])


@p.template("ty://q{?n,b}")
def q(n: int = 0, b: bool = False) -> str:
    return f"secret for n={n} b={b}"


@p.template("ty://owned{?owner}", opaque_query=True)
def owned(owner: str = "anyone") -> str:
    return f"data of {owner}"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("rule", "uris"),
    [
        ("ty://q?b=true&n=1", ["ty://q?b=true&n=1", "ty://q?n=1&b=true"]),
        ("ty://q?b=true*", ["ty://q?b=true", "ty://q?n=0&b=true", "ty://q?n=3&b=true"]),
        ("ty://owned?owner=root*", ["ty://owned?owner=%EF%BD%92oot", "ty://owned?owner=R%C3%B6ot"]),
        ("ty://owned?owner=root", ["ty://owned?owner=%2572oot", "ty://owned?owner=ROOT"]),
    ],
)
async def test_no_spelling_of_a_denied_query_reaches_a_decorated_template(rule: str, uris: list[str]) -> None:
    settings = {"policy": {"rules": [{"effect": "deny", "actions": ["read", "expand"], "targets": [rule]}]}}
    async with connect(compose({"ty": p, "policy": policy}, settings)) as client:
        for uri in uris:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert "permission-denied" in refused.value.error.message, uri
        spared = await client.read_resource("ty://q?n=2")
        assert spared.contents[0].text == "secret for n=2 b=False"  # type: ignore[union-attr]


def test_a_glob_across_the_query_meets_its_decoded_reading() -> None:
    assert _denied(_deny("sv://items*root*"), "sv://items?owner=%EF%BD%92oot")
    assert _denied(_deny("sv://items*owner=root"), "sv://items?owner=%2572oot")


# An upstream that compares owners as an accent- and width-insensitive collation does, and reads a
# repeated or reordered query as any MCP server's template does. It logs every owner it serves.
COLLATING_UPSTREAM = """
import json, sys, unicodedata
from mcp.server.mcpserver import MCPServer
server = MCPServer("collating-upstream", log_level="WARNING")
LOG = sys.argv[1]

def fold(s):
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c)).casefold().strip()

@server.resource("coll://items{?owner,admin}", mime_type="text/plain")
def items(owner: str = "anyone", admin: str = "false") -> str:
    with open(LOG, "a") as log:
        log.write(json.dumps([owner, admin]) + "\\n")
    return "SECRET" if fold(owner) == "root" or admin == "true" else "public " + owner

server.run("stdio")
"""


@pytest.mark.anyio
async def test_no_spelling_of_a_denied_query_reaches_an_upstream_template(tmp_path: Path) -> None:
    script, log = tmp_path / "collating.py", tmp_path / "asked.log"
    script.write_text(COLLATING_UPSTREAM)
    log.touch()
    server = {"name": "coll", "command": sys.executable, "args": [str(script), str(log)], "prefixes": ["coll://"]}
    rules = [{"effect": "deny", "targets": ["coll://items?owner=root*", "coll://items?admin=true&owner=bob"]}]
    composition = compose(
        {"upstream": upstream, "policy": policy}, {"upstream": {"servers": [server]}, "policy": {"rules": rules}}
    )
    spellings = [
        "coll://items?owner=%EF%BD%92oot",
        "coll://items?owner=R%C3%B6ot",
        "coll://items?owner=%2572oot",
        "coll://items?owner=bob&admin=true",
    ]
    async with composition.running(), connect(composition) as client:
        public = await client.read_resource("coll://items?owner=alice")
        assert public.contents[0].text == "public alice"  # type: ignore[union-attr]
        for uri in spellings:
            with pytest.raises(MCPError) as denied:
                await client.read_resource(uri)
            assert "permission-denied" in denied.value.error.message, uri
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    assert asked == [["alice", "false"]], asked
