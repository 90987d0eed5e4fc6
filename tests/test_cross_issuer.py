"""Round 4 item 1, its kind in the core and the policy plugin: nothing derives an identity, a key
or a permission from a claim without its issuer (a subject, a group, a scope or a claim value is
unique only within the issuer that vouched for it).

ServiceNow's user mapping is in ``tests/servicenow/test_cross_issuer.py``, task owners in
``tests/test_tasks.py`` (``test_a_task_belongs_to_the_principal_that_started_it``), rate-limit
buckets in ``tests/test_rate_limits.py``, admin subjects in ``tests/test_reload_attacks.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_providers.config import AuthConfig, ServerSettings
from mcp_providers.errors import CompositionError
from mcp_providers.plugins import policy as policy_plugin
from mcp_providers.testing import compose

CORP, PARTNER = "https://corp.idp.example.test", "https://partner.idp.example.test"


def server(*issuers: str) -> ServerSettings:
    return ServerSettings(auth=AuthConfig(mode="jwt", issuer=issuers, resource_url="https://mcp.example.test/mcp"))


def policy(rule: dict[str, Any], *issuers: str) -> Any:
    table = {"default": "deny", "rules": [{"effect": "allow", "targets": ["*"], **rule}]}
    return compose({"policy": policy_plugin}, {"policy": table}, server=server(*issuers), strict=False)


@pytest.mark.parametrize(
    "rule",
    [{"subjects": ["alice"]}, {"groups": ["itil"]}, {"scopes": ["mcp:admin"]}, {"claims": {"email": ["a@x.test"]}}],
    ids=["subjects", "groups", "scopes", "claims"],
)
def test_an_allow_rule_by_a_vouched_name_without_issuers_stops_serve_with_two_issuers(rule):
    composition = policy(rule, CORP, PARTNER)
    with pytest.raises(CompositionError) as refused:
        composition.server  # noqa: B018  # what serve builds: refused, the policy is not in force
    text = str(refused.value)
    assert "refusing to serve without its authorization policy" in text, text
    assert f"rule 1 allows by {next(iter(rule))} without issuers" in text and "trusts 2 issuers" in text, text
    assert f"issuers = [{CORP!r}]" in text, text


@pytest.mark.parametrize(
    ("rule", "issuers"),
    [
        ({"subjects": ["alice"], "issuers": [CORP]}, (CORP, PARTNER)),
        ({"groups": ["itil"], "issuers": ["*"]}, (CORP, PARTNER)),  # any issuer, said on purpose
        ({"subjects": ["alice"], "effect": "deny"}, (CORP, PARTNER)),  # a deny over-matches: safe
        ({"subjects": ["*"]}, (CORP, PARTNER)),  # names no one
        ({"groups": ["itil"]}, (CORP,)),  # one issuer: no other to confuse it with
    ],
    ids=["issuer named", "any issuer on purpose", "deny", "everyone", "one issuer"],
)
def test_rules_that_cannot_mix_issuers_are_accepted(rule, issuers):
    composition = policy(rule, *issuers)
    assert composition.policy_failures == [] and composition.failures == []
    assert composition.server is not None
