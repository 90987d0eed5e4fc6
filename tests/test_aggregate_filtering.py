"""A resource gathering other resources' data leaves out what the caller may not read (issue 24,
item 3), and ``check`` warns where a listing that cannot filter undercuts a rule.

Policies come from the built-in policy plugin; every read goes through a real in-memory client in
both protocol eras. Each test also reads the same aggregate without the rule, so it cannot pass by
serving nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import MCPError

from mcp_providers import Content, Members, ReadRequest, Resource, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers._host.advisories import advisories
from mcp_providers._serve.statics import aggregate_report
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.plugins import policy
from mcp_providers.plugins.documcp import config_templates, prompts, ssg_catalog, workflows
from mcp_providers.plugins.documcp.registry import SSG_IDS
from mcp_providers.plugins.documcp.workflows import WORKFLOW_IDS
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

ERAS = ["auto", "legacy"]
DOCUMCP = {
    "ssg_catalog": ssg_catalog,
    "config_templates": config_templates,
    "workflows": workflows,
    "documcp_prompts": prompts,
}


def _deny(*targets: str, actions: Sequence[str] = ("read",), subjects: Sequence[str] = ("*",)) -> dict[str, Any]:
    rule = {"effect": "deny", "actions": list(actions), "targets": list(targets), "subjects": list(subjects)}
    return {"policy": {"rules": [rule]}}


def _documcp(settings: dict[str, Any] | None = None) -> Any:
    return compose({**DOCUMCP, "policy": policy}, settings)


async def _read(composition: Any, uri: str, mode: str = "auto") -> tuple[str, dict[str, Any], Any]:
    async with connect(composition, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.read_resource(uri)
    return result.contents[0].text, (result.meta or {})[RECEIPT_KEY], result  # type: ignore[union-attr]


# -- documcp://ssgs/available ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_the_ssg_catalog_leaves_out_an_ssg_the_caller_may_not_read(mode: str) -> None:
    text, _, _ = await _read(_documcp(), "documcp://ssgs/available", mode)
    assert "hugo" in [s["id"] for s in json.loads(text)["ssgs"]]
    text, receipt, _ = await _read(_documcp(_deny("documcp://ssgs/hugo")), "documcp://ssgs/available", mode)
    ids = [s["id"] for s in json.loads(text)["ssgs"]]
    assert ids == [i for i in SSG_IDS if i != "hugo"]
    assert "hugo" not in text.lower()  # not the id, not the name, not a tag
    assert "hugo" not in json.dumps(receipt).lower()


@pytest.mark.parametrize("sent", ["DOCUMCP://ssgs/available", "documcp://ssgs/%61vailable"])
async def test_the_filter_holds_for_other_spellings_of_the_catalog_and_of_the_rule(sent: str) -> None:
    text, _, _ = await _read(_documcp(_deny("documcp://ssgs/hugo", "documcp://ssgs/jekyll")), sent)
    ids = [s["id"] for s in json.loads(text)["ssgs"]]
    assert "hugo" not in ids and "jekyll" not in ids and "mkdocs" in ids


async def test_a_denied_member_template_leaves_the_catalog_empty() -> None:
    text, _, _ = await _read(_documcp(_deny("documcp://ssgs/{ssg}", actions=["expand"])), "documcp://ssgs/available")
    assert json.loads(text) == {"ssgs": []}


async def test_a_rule_for_another_subject_filters_nothing() -> None:
    settings = _deny("documcp://ssgs/hugo", subjects=["someone-else"])
    text, _, _ = await _read(_documcp(settings), "documcp://ssgs/available")
    assert [s["id"] for s in json.loads(text)["ssgs"]] == list(SSG_IDS)


async def test_a_filtered_listing_is_never_marked_for_shared_caches() -> None:
    _, _, result = await _read(_documcp(), "documcp://ssgs/available")
    assert result.cache_scope == "private"
    _, _, single = await _read(compose(DOCUMCP), "documcp://ssgs/hugo")
    assert single.cache_scope == "public"  # with no policy, one SSG's entry is the same for everyone
    _, _, single = await _read(_documcp(), "documcp://ssgs/hugo")
    assert single.cache_scope == "private"  # a policy may refuse it to another caller (round 4 item 2)


# -- documcp://workflows/ --------------------------------------------------------------------------

QUICK = "quick-documentation-setup"


@pytest.mark.parametrize("mode", ERAS)
async def test_all_workflows_leaves_out_a_workflow_and_its_name_in_the_summary(mode: str) -> None:
    body = json.loads((await _read(_documcp(), "documcp://workflows/all", mode))[0])
    assert QUICK in body["workflows"] and QUICK in body["metadata"]["workflowNames"]
    text, receipt, _ = await _read(_documcp(_deny(f"documcp://workflows/{QUICK}")), "documcp://workflows/all", mode)
    body = json.loads(text)
    assert list(body["workflows"]) == [w for w in WORKFLOW_IDS if w != QUICK]
    assert body["metadata"]["totalWorkflows"] == len(WORKFLOW_IDS) - 1
    assert QUICK not in text and QUICK not in json.dumps(receipt)
    assert "executionGuidance" in body


async def test_all_workflows_leaves_out_the_guidance_the_caller_may_not_read() -> None:
    body = json.loads((await _read(_documcp(_deny("documcp://workflows/guidance")), "documcp://workflows/all"))[0])
    assert "executionGuidance" not in body and list(body["workflows"]) == list(WORKFLOW_IDS)


async def test_the_guidance_names_no_workflow_the_caller_may_not_read() -> None:
    before = json.loads((await _read(_documcp(), "documcp://workflows/guidance"))[0])
    assert QUICK in [r["workflow"] for r in before["recommendationRules"]]
    text, receipt, _ = await _read(_documcp(_deny(f"documcp://workflows/{QUICK}")), "documcp://workflows/guidance")
    after = json.loads(text)
    assert after["recommendationRules"] == [r for r in before["recommendationRules"] if r["workflow"] != QUICK]
    assert QUICK not in text and QUICK not in json.dumps(receipt)
    assert after["executionGuidance"] == before["executionGuidance"]


@pytest.mark.parametrize("alias", ["documcp://workflows/quick-setup", "DOCUMCP://workflows/quick%2Dsetup"])
async def test_an_alias_is_refused_when_its_workflow_is(alias: str) -> None:
    assert json.loads((await _read(_documcp(), alias))[0])["id"] == QUICK
    async with connect(_documcp(_deny(f"documcp://workflows/{QUICK}"))) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(alias)
        assert caught.value.error.code == -32003
        assert (await client.read_resource("documcp://workflows/full-setup")).contents  # the other alias is not


async def test_a_not_found_hint_names_no_workflow_the_caller_may_not_read() -> None:
    async with connect(_documcp(_deny(f"documcp://workflows/{QUICK}"))) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("documcp://workflows/nope")
    assert "full-documentation-setup" in caught.value.error.message and QUICK not in caught.value.error.message


# -- check: aggregates that cannot filter ----------------------------------------------------------


def _colours(*, filtered: bool, aggregate_template: bool = False) -> Any:
    """A listing of colours and each colour by name; the listing copies every colour's text."""

    class Colours(ResourceProvider):
        name = "colours"
        prefixes = ("col://",)

        def resources(self) -> Sequence[Resource]:
            if aggregate_template:
                return []
            return [Resource(uri="col://all", name="all", members=Members(uris=("col://c/{name}",), filtered=filtered))]

        def templates(self) -> Sequence[ResourceTemplate]:
            one = ResourceTemplate(uri_template="col://c/{name}", name="one", completions={"name": ("red", "blue")})
            if not aggregate_template:
                return [one]
            shelf = ResourceTemplate(
                uri_template="col://{shelf}/all",
                name="shelf",
                completions={"shelf": ("top", "bottom")},
                members=Members(uris=("col://{shelf}/c/{name}",), filtered=filtered),
            )
            item = ResourceTemplate(uri_template="col://{shelf}/c/{name}", name="item")
            return [shelf, item]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text="red blue")

    return SimpleNamespace(register_resource_providers=hookimpl(lambda: [Colours()]))


def _report(plugin: Any, settings: dict[str, Any] | None) -> list[str]:
    return aggregate_report(compose({"colours": plugin, "policy": policy}, settings))


def test_check_warns_where_an_unfiltered_listing_undercuts_a_deny() -> None:
    (line,) = _report(_colours(filtered=False), _deny("col://c/red"))
    assert line.startswith("colours: aggregate-undercuts-deny: 'col://all': it gathers col://c/red")
    assert "policy rule 1 (deny)" in line and "filtered=True" in line


@pytest.mark.parametrize(
    "rule",
    [
        ["col://*/c/*"],  # a member template with no completions is probed with a placeholder value
        ["col://top/c/*"],  # the shared variable: col://top/all gathers col://top/c/...
    ],
)
def test_check_warns_for_a_template_aggregate_and_its_shared_variables(rule: list[str]) -> None:
    (line,) = _report(_colours(filtered=False, aggregate_template=True), _deny(*rule))
    assert "aggregate-undercuts-deny: 'col://{shelf}/all'" in line and "col://top/c/probe" in line


def test_check_warns_when_the_member_template_is_denied_expand() -> None:
    (line,) = _report(_colours(filtered=False), _deny("col://c/{name}", actions=["expand"]))
    assert "gathers col://c/red" in line


@pytest.mark.parametrize(
    ("plugin", "settings"),
    [
        (_colours(filtered=True), _deny("col://c/red")),  # it filters
        (_colours(filtered=False), _deny("col://c/red", "col://all")),  # the aggregate is denied too
        (_colours(filtered=False), _deny("col://c/green")),  # no member is denied
        (_colours(filtered=False), None),  # no rules at all
    ],
    ids=["filtered", "aggregate-denied-too", "other-uri", "no-rules"],
)
def test_check_is_quiet_when_nothing_is_undercut(plugin: Any, settings: dict[str, Any] | None) -> None:
    assert _report(plugin, settings) == []


def test_the_builtins_filter_so_check_is_quiet_about_them() -> None:
    settings = _deny("documcp://ssgs/hugo", f"documcp://workflows/{QUICK}", "documcp://workflows/guidance")
    assert aggregate_report(_documcp(settings)) == []


def test_a_member_that_is_not_a_uri_fails_the_check() -> None:
    class Bad(ResourceProvider):
        name = "bad"
        prefixes = ("bad://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="bad://all", name="all", members=Members(uris=("things/{id}",)))]

    plugin = SimpleNamespace(register_resource_providers=hookimpl(lambda: [Bad()]))
    composition = compose({"bad": plugin}, strict=False)
    assert any("member-invalid" in f and "things/{id}" in f for f in composition.failures), composition.failures


def test_the_check_command_prints_the_warning_and_still_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from mcp_providers import cli

    composition = compose({"colours": _colours(filtered=False), "policy": policy}, _deny("col://c/blue"))
    monkeypatch.setattr(cli, "_compose", lambda config, strict: composition)
    result = CliRunner().invoke(cli.app, ["check"])
    assert result.exit_code == 0, result.output
    assert "warning: colours: aggregate-undercuts-deny: 'col://all': it gathers col://c/blue" in result.output
    assert "check passed" in result.output


@pytest.mark.parametrize("member", ["col://c/{nam}/x", "col://colour/{name}", "col://c"])
def test_check_warns_about_a_member_nothing_serves(member: str) -> None:
    class Typo(ResourceProvider):
        name = "typo"
        prefixes = ("col://",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="col://all", name="all", members=Members(uris=(member,), filtered=True))]

        def templates(self) -> Sequence[ResourceTemplate]:
            return [ResourceTemplate(uri_template="col://c/{name}", name="one")]

    composition = compose({"typo": SimpleNamespace(register_resource_providers=hookimpl(lambda: [Typo()]))})
    warnings = [str(p) for p in advisories(composition.assembly.declared) if p.rule == "member-unserved"]
    assert len(warnings) == 1 and repr(member) in warnings[0], warnings


@pytest.mark.parametrize("member", ["col://c/{name}", "COL://c/{name}", "col://c/red", "col://all"])
def test_check_is_quiet_about_served_members(member: str) -> None:
    class Served(ResourceProvider):
        name = "served"
        prefixes = ("col://",)

        def resources(self) -> Sequence[Resource]:
            members = Members(uris=(member,), filtered=True)
            return [Resource(uri="col://all", name="all"), Resource(uri="col://alias", name="alias", members=members)]

        def templates(self) -> Sequence[ResourceTemplate]:
            return [ResourceTemplate(uri_template="col://c/{name}", name="one")]

    composition = compose({"served": SimpleNamespace(register_resource_providers=hookimpl(lambda: [Served()]))})
    assert [p for p in advisories(composition.assembly.declared) if p.rule == "member-unserved"] == []


def test_the_documcp_builtins_declare_only_served_members() -> None:
    assert [p for p in advisories(_documcp().assembly.declared) if p.rule == "member-unserved"] == []


async def test_an_ssg_entry_names_its_config_template_only_to_who_may_read_it() -> None:
    entry = json.loads((await _read(_documcp(), "documcp://ssgs/hugo"))[0])
    assert entry["templateUri"] == "documcp://templates/hugo-config"
    text, _, _ = await _read(_documcp(_deny("documcp://templates/hugo-config")), "documcp://ssgs/hugo")
    assert "templateUri" not in json.loads(text) and "hugo-config" not in text
    other = json.loads((await _read(_documcp(_deny("documcp://templates/hugo-config")), "documcp://ssgs/jekyll"))[0])
    assert other["templateUri"] == "documcp://templates/jekyll-config"
