"""A deny on one value in a URI's path holds for every list holding it (tester 29, F9).

Tester 28's fix read a query value as its list items; a path value was never split. A service
reads ``/accounts/{ids}`` with ``ids`` an array in OpenAPI's default path style (``simple``, so
``4,5``), an RFC 6570 ``{x}``, ``{/x}``, ``{;x}`` or ``{.x}`` expansion of a list likewise: a deny on
``openapi://svc/accounts/5`` let ``openapi://svc/accounts/4%2C5`` through and the service answered
for account 5. Each field of a target's path (between ``/``, ``;``, ``=``) that holds a list
delimiter once decoded is now also read as each of its items.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from mcp_providers.identity import Principal
from mcp_providers.plugins import policy
from mcp_providers.plugins._readings import MAX_LIST_READINGS, Readings
from mcp_providers.plugins.policy import PolicySettings, decide
from mcp_providers.testing import compose, connect

sys.path.insert(0, str(Path(__file__).parent / "openapi"))
from openapi_support import serving

LOCAL = Principal(subject="local", issuer="local")


def _denied(rule: str, target: str, *, default: str = "allow", match_case: bool = False) -> bool:
    deny = {"effect": "deny", "targets": [rule], "match_case": match_case}
    settings = PolicySettings.model_validate({"default": default, "rules": [deny]})
    decision = decide(settings, LOCAL, "read", target)
    return decision is not None and not decision.allow


@pytest.mark.parametrize(
    ("rule", "target"),
    [
        ("sv://accounts/5", "sv://accounts/4,5"),  # {ids}, OpenAPI simple
        ("sv://accounts/5", "sv://accounts/4%2C5"),
        ("sv://accounts/5", "sv://accounts/5%2C4"),
        ("sv://accounts/5", "sv://accounts/4%252C5"),  # decoded twice
        ("sv://accounts/5", "sv://accounts/4|5"),
        ("sv://accounts/5", "sv://accounts/4%205"),
        ("sv://accounts/5", "sv://accounts/4%EF%BC%8C5"),  # a full-width comma, a comma once folded
        ("sv://accounts/5", "sv://accounts/4,%205."),  # an item trimmed as a value is
        ("sv://accounts/5/orders", "sv://accounts/4,5/orders"),  # a list in a middle segment
        ("sv://accounts/5/orders/7", "sv://accounts/4,5/orders/6,7"),  # two lists: each item of each
        ("sv://accounts/5*", "sv://accounts/4,5/orders"),
        ("up://items;id=5", "up://items;id=4,5"),  # {;id}, matrix
        ("up://r.json", "up://r.json,xml"),  # {.fmt}, label
        ("up://r.json", "up://r.xml,json"),  # the label's stem belongs to every item (tester 31 F12)
        ("up://r.json", "up://r.xml|json"),
        ("up://r.json", "up://r.xml%2Cjson"),
        ("up://a.json", "up://a,b.json"),  # {x}.json: the suffix belongs to every item
        ("up://items;id=5", "up://items;x=1;id=5"),  # a matrix parameter among others (tester 31)
        ("up://items;id=5", "up://items;id=5;x=1"),
        ("up://items;id=5/more", "up://items;x=1;id=4,5/more"),
        ("up://items;id=5", "up://items;id=4%2C5"),
        ("sv://accounts/5?x=1", "sv://accounts/4,5?x=1"),  # a rule with a query, its base read as a list too
        ("sv://accounts/5?x=1", "sv://accounts/4,5?y=2&x=1"),
    ],
)
def test_a_deny_on_one_path_value_matches_every_list_holding_it(rule: str, target: str) -> None:
    assert _denied(rule, target), (rule, target)
    if "%EF" not in target:  # a full-width comma is a comma only once folded
        assert _denied(rule, target, match_case=True), (rule, target)


@pytest.mark.parametrize(
    ("rule", "target"),
    [
        ("sv://accounts/5", "sv://accounts/4,6"),
        ("sv://accounts/5", "sv://accounts/45,56"),
        ("sv://accounts/5", "sv://other/4,5"),
        ("sv://accounts/5/orders/7", "sv://accounts/4,5/orders/6"),
        ("up://r.json", "up://q.xml,json"),
        ("up://items;id=5", "up://items;x=1;id=4"),
        ("up://items;id=5", "up://other;x=1;id=5"),
    ],
)
def test_a_deny_on_a_path_value_still_spares_other_reads(rule: str, target: str) -> None:
    assert not _denied(rule, target), (rule, target)


def test_no_path_list_reading_widens_an_allow() -> None:
    settings = PolicySettings.model_validate(
        {"default": "deny", "rules": [{"effect": "allow", "targets": ["sv://accounts/4,5"]}]}
    )
    allowed = decide(settings, LOCAL, "read", "sv://accounts/4,5")
    assert allowed is not None and allowed.allow
    for target in ("sv://accounts/4", "sv://accounts/5", "sv://accounts/5,4"):
        decision = decide(settings, LOCAL, "read", target)
        assert decision is not None and not decision.allow, target


def test_more_combinations_than_are_read_one_by_one_are_judged_as_any_of_them() -> None:
    """Past :data:`MAX_LIST_READINGS` combinations each list field counts as any value: a deny
    that could meet one of them refuses (more, never less), one that cannot still spares."""
    many = ",".join(str(n) for n in range(40))
    target = f"sv://a/{many}/b/{many}/c/{many}"
    assert MAX_LIST_READINGS < 40**3
    readings = Readings(target)
    assert len(readings.plain) + len(readings.folded) <= 4 * MAX_LIST_READINGS  # read in bounded time
    assert _denied("sv://a/5/b/7/c/39", target)
    assert _denied("sv://a/39/b/0/c/12", target)
    assert not _denied("sv://other/5", target)
    assert not _denied("sv://a/5/b/7/d/1", target)


ACCOUNTS_DOC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "accounts", "version": "1"},
    "paths": {
        "/accounts/{ids}": {
            "get": {
                "operationId": "getAccounts",
                "parameters": [
                    {
                        "name": "ids",
                        "in": "path",
                        "required": True,
                        "style": "simple",
                        "explode": False,
                        "schema": {"type": "array", "items": {"type": "integer"}},
                    }
                ],
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {}}}}},
            }
        }
    },
}


@pytest.mark.anyio
async def test_no_list_holding_a_denied_value_reaches_an_openapi_path(tmp_path: Path) -> None:
    from fastapi import FastAPI

    import mcp_providers.plugins.openapi as openapi_plugin

    served: list[str] = []
    api = FastAPI()

    @api.get("/accounts/{ids}")
    def accounts(ids: str) -> dict[str, Any]:
        items = [i for i in ids.split(",") if i]
        served.extend(items)
        return {"ids": items}

    document = tmp_path / "accounts.json"
    document.write_text(json.dumps(ACCOUNTS_DOC))
    with serving(api) as origin:
        settings = {
            "openapi": {"services": [{"name": "svc", "document": str(document), "base_url": origin}]},
            "policy": {"rules": [{"effect": "deny", "targets": ["openapi://svc/accounts/5"]}]},
        }
        async with connect(compose({"openapi": openapi_plugin, "policy": policy}, settings)) as client:
            public = await client.read_resource("openapi://svc/accounts/4%2C6")
            assert "4" in public.contents[0].text  # type: ignore[union-attr]
            for uri in ("openapi://svc/accounts/5", "openapi://svc/accounts/4%2C5", "openapi://svc/accounts/5%2C4"):
                with pytest.raises(MCPError) as denied:
                    await client.read_resource(uri)
                assert "permission-denied" in denied.value.error.message, uri
    assert served == ["4", "6"], served
