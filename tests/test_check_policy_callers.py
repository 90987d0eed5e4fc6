"""``check`` names a policy rule whose caller conditions no caller of the configuration can meet
(tester 30 F6): without ``[server.auth]`` every caller is ``local`` or ``anonymous``, with no
groups, scopes or claims, so a deny on ``groups`` denies nothing, and check said nothing while a
deny whose target matches nothing is warned about. Each condition is judged against what the
configured callers can carry: static tokens' subjects, groups and scopes; a JWT's groups only with
a ``groups_claim``, its claims only those ``[server.auth] claims`` keeps."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_cli

from mcp_providers._cli.report import warnings
from mcp_providers.config import AuthConfig, ServerSettings
from mcp_providers.plugins import policy
from mcp_providers.plugins.documcp import ssg_catalog
from mcp_providers.testing import compose

CODE = "policy-caller-matches-nothing"
TARGET = "documcp://ssgs/*"
STATIC = AuthConfig(
    tokens=[{"subject": "ci", "token_env": "CI_TOKEN", "groups": ["itil"], "scopes": ["mcp:read"]}]  # type: ignore[list-item]
)
JWT = AuthConfig(mode="jwt", issuer="https://idp.example.com", resource_url="https://mcp.example.com/mcp")


def _said(rule: dict[str, Any], auth: AuthConfig | None = None) -> list[str]:
    composition = compose(
        {"ssg_catalog": ssg_catalog, "policy": policy},
        {"policy": {"rules": [{"effect": "deny", "targets": [TARGET], **rule}]}},
        server=ServerSettings(auth=auth),
    )
    return [w for w in warnings(composition)[1] if CODE in w]


@pytest.mark.parametrize(
    ("rule", "named"),
    [
        ({"groups": ["contractors"]}, "groups"),
        ({"scopes": ["mcp:write"]}, "scopes"),
        ({"claims": {"department": ["sales"]}}, "claims"),
        ({"subjects": ["alice"]}, "subjects"),
        ({"issuers": ["https://idp.example.com"]}, "issuers"),
        ({"subjects": ["*"], "groups": ["*"]}, "groups"),  # any group still needs one
    ],
)
def test_without_server_auth_a_condition_no_caller_carries_is_named(rule: dict[str, Any], named: str) -> None:
    (line,) = _said(rule)
    assert f"rule 1 (deny) matches callers by {named}" in line, line
    assert "no [server.auth] is configured" in line and "so it denies nothing" in line, line
    assert "[server.auth]" in line.split("fix:")[1], line


@pytest.mark.parametrize(
    "rule", [{}, {"subjects": ["local"]}, {"subjects": ["anon*"]}, {"issuers": ["local"]}, {"issuers": [""]}]
)
def test_without_server_auth_the_local_and_anonymous_callers_are_matched_silently(rule: dict[str, Any]) -> None:
    assert _said(rule) == []


@pytest.mark.parametrize(
    ("rule", "auth", "named"),
    [
        ({"groups": ["contractors"]}, STATIC, "groups"),
        ({"scopes": ["mcp:write"]}, STATIC, "scopes"),
        ({"subjects": ["alice"]}, STATIC, "subjects"),
        ({"claims": {"email": ["a@example.com"]}}, STATIC, "claims"),
        ({"groups": ["itil"]}, JWT, "groups"),  # no groups_claim: no token's groups are read
        ({"claims": {"department": ["sales"]}}, JWT.model_copy(update={"claims": ("email",)}), "claims"),
        ({"issuers": ["https://other.example.com"]}, JWT, "issuers"),
    ],
)
def test_with_server_auth_a_condition_its_callers_cannot_carry_is_named(
    rule: dict[str, Any], auth: AuthConfig, named: str
) -> None:
    (line,) = _said(rule, auth)
    assert f"rule 1 (deny) matches callers by {named}" in line, line


@pytest.mark.parametrize(
    ("rule", "auth"),
    [
        ({"groups": ["itil"]}, STATIC),
        ({"groups": ["it*"], "scopes": ["mcp:read"], "subjects": ["ci"]}, STATIC),
        ({"groups": ["contractors"]}, JWT.model_copy(update={"groups_claim": "groups"})),
        ({"scopes": ["anything"], "subjects": ["bob"]}, JWT),
        ({"claims": {"email": ["a@example.com"]}}, JWT.model_copy(update={"claims": ("email",)})),
        ({"issuers": ["https://idp.example.com"]}, JWT),
    ],
)
def test_a_condition_some_caller_can_meet_is_not_warned_about(rule: dict[str, Any], auth: AuthConfig) -> None:
    assert _said(rule, auth) == []


def test_check_warns_about_a_deny_on_groups_without_server_auth(tmp_path: Path) -> None:
    """The tester's path: ``mcp-providers check`` on a file with the rule and no [server.auth]."""
    config = tmp_path / "c.toml"
    config.write_text(
        textwrap.dedent(f"""
        [[plugins.policy.rules]]
        effect = "deny"
        groups = ["contractors"]
        targets = ["{TARGET}"]
        reason = "no contractors"
    """)
    )
    run = run_cli("check", "--config", str(config))
    said = run.stdout + run.stderr
    assert f"{CODE}: " in said and "groups" in said, said
