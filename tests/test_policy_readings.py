"""A deny rule holds against every name a service may read as the one it names.

Testers, round 8: a deny on ``up://private/*`` let ``up://PRIVATE/k`` through to an upstream that
compares case-insensitively (IIS, Windows and macOS file systems), and ``up://private;x/k`` or
``up://a//private/k`` through to one that drops path parameters (servlet containers) or empty
segments (any file system). A deny rule now matches a target in each of its readings: as given,
folded (case and Unicode compatibility, unless the rule says ``match_case``), and with path
parameters, empty segments and escapes removed from its path. An allow rule still matches only as
given, so no reading ever widens what a rule allows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import MCPError
from upstream_support import behind_a_private_deny

from mcp_providers.identity import Principal
from mcp_providers.plugins.policy import PolicySettings, decide
from mcp_providers.testing import connect

LOCAL = Principal(subject="local", issuer="local")


def _deny(*targets: str, **rule: object) -> PolicySettings:
    return PolicySettings.model_validate({"rules": [{"effect": "deny", "targets": list(targets), **rule}]})


def _denied(settings: PolicySettings, target: str, action: str = "read") -> bool:
    decision = decide(settings, LOCAL, action, target)  # type: ignore[arg-type]
    return decision is not None and not decision.allow


@pytest.mark.parametrize(
    "target",
    [
        "up://private/k",
        "up://PRIVATE/k",
        "up://Private/k",
        "up://pRiVaTe/deeper/k",
        "up://\uff50rivate/k",  # full-width p: NFKC folds it
        "up://pr\u0131vate/k",  # dotless i: Java's and .NET's case-insensitive compare read it as i
        "up://PR\u0130VATE/k",  # capital I with a dot above
        "up://pri\u0301vate/k",  # a combining mark macOS and some folds drop
        "up://private;x/k",
        "up://private;jsessionid=1/k",
        "up://private%3Bx/k",
        "up://private%3bx/k",
        "up://private//k",
        "up:///private/k",
        "up://private%2Fk",
        "up://%2550rivate/k",  # P to a second decoding
        "up://%25252570rivate/k",
        "UP://PRIVATE/K",
    ],
)
def test_a_deny_matches_every_reading_of_its_target(target: str) -> None:
    assert _denied(_deny("up://private/*"), target), target


@pytest.mark.parametrize("target", ["up://a//private/k", "up://a/;v=1/private/k", "up://A/Private;x/k"])
def test_an_empty_segment_or_a_parameter_before_the_denied_one_is_read_away(target: str) -> None:
    assert _denied(_deny("up://a/private/*"), target), target


@pytest.mark.parametrize("target", ["up://private/k?x=1", "up://private/k#f", "up://private/k;v=1", "up://private/k/"])
def test_a_deny_on_one_resource_holds_with_a_query_fragment_or_parameter_added(target: str) -> None:
    assert _denied(_deny("up://private/k"), target), target


def test_the_pattern_is_folded_too() -> None:
    assert _denied(_deny("up://Private/*"), "up://private/k")
    assert _denied(_deny("up://stra\u00dfe/*"), "up://STRASSE/k")  # casefold: sharp s is ss
    assert _denied(_deny("up://kelvin/*"), "up://\u212aelvin/k")  # the Kelvin sign folds to k


@pytest.mark.parametrize("target", ["up://public/k", "up://privately/k", "up://privat/k", "up://pub/private"])
def test_a_deny_still_spares_what_no_reading_of_it_names(target: str) -> None:
    assert not _denied(_deny("up://private/*"), target), target


def test_tool_and_prompt_names_are_folded_for_a_deny() -> None:
    assert _denied(_deny("delete_*", actions=["call"]), "DELETE_all", "call")
    assert _denied(_deny("delete_*", actions=["call"]), "Delete_all", "call")


def test_match_case_keeps_a_deny_to_its_exact_spelling() -> None:
    exact = _deny("up://Private/*", match_case=True)
    assert _denied(exact, "up://Private/k")
    assert not _denied(exact, "up://private/k")
    assert _denied(exact, "up://Private;x/k")  # path parameters are still read away


def test_no_reading_widens_an_allow() -> None:
    settings = PolicySettings.model_validate(
        {"default": "deny", "rules": [{"effect": "allow", "targets": ["up://Docs/*"]}]}
    )
    assert decide(settings, LOCAL, "read", "up://Docs/a") is not None
    assert decide(settings, LOCAL, "read", "up://Docs/a").allow  # type: ignore[union-attr]
    for target in ("up://docs/a", "up://DOCS/a", "up://Docs;x/../a", "up://x//Docs/a"):
        decision = decide(settings, LOCAL, "read", target)
        assert decision is not None and not decision.allow, target


def test_an_earlier_allow_still_decides_first() -> None:
    settings = PolicySettings.model_validate(
        {
            "rules": [
                {"effect": "allow", "targets": ["up://Private/*"]},
                {"effect": "deny", "targets": ["up://private/*"]},
            ]
        }
    )
    assert decide(settings, LOCAL, "read", "up://Private/k").allow  # type: ignore[union-attr]
    assert _denied(settings, "up://PRIVATE/k")


# A store that reads names the way IIS, Windows and servlet containers do: case-insensitively,
# dropping ';' path parameters and empty segments. It logs every path it serves.
LENIENT_UPSTREAM = """
import json, re, sys
from mcp.server.mcpserver import MCPServer
server = MCPServer("lenient-upstream", log_level="WARNING")
LOG = sys.argv[1]

@server.resource("lenient://{+path}", mime_type="text/plain")
def files(path: str) -> str:
    read = "/".join(s.split(";")[0] for s in path.lower().split("/") if s.split(";")[0])
    with open(LOG, "a") as log:
        log.write(json.dumps(path) + "\\n")
    return "SECRET" if read.startswith("private/") else "public " + read

server.run("stdio")
"""


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_lenient_upstream_never_serves_a_denied_path(tmp_path: Path, mode: str) -> None:
    composition, log = behind_a_private_deny(tmp_path, "lenient", LENIENT_UPSTREAM, "lenient://")
    spellings = [
        "lenient://PRIVATE/secret",
        "lenient://Private/secret",
        "lenient://private;x/secret",
        "lenient://private%3Bx/secret",
    ]
    async with composition.running(), connect(composition, mode=mode) as client:
        public = await client.read_resource("lenient://public/a")
        assert public.contents[0].text == "public public/a"  # type: ignore[union-attr]
        for uri in spellings:
            with pytest.raises(MCPError) as denied:
                await client.read_resource(uri)
            assert "permission-denied" in denied.value.error.message or denied.value.error.code == -32602, uri
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    assert asked == ["public/a"], asked
