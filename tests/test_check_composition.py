"""``check`` hears what plugins say about their own settings (the ``check_composition`` hook): the
built-in policy names a rule target that nothing served matches, which used to pass silently (a
deny with a typo denies nothing), and one plugin's broken hook costs only its own advisories."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cli_support import run_cli

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._cli.report import warnings
from mcp_providers.checks import Advisory, Served
from mcp_providers.plugin import Plugin
from mcp_providers.plugins import policy
from mcp_providers.plugins.documcp import config_templates, prompts, ssg_catalog, workflows
from mcp_providers.testing import compose

DOCUMCP = {
    "ssg_catalog": ssg_catalog,
    "config_templates": config_templates,
    "workflows": workflows,
    "documcp_prompts": prompts,
}
CODE = "policy-target-matches-nothing"


def _rule(effect: str, *targets: str, **more: Any) -> dict[str, Any]:
    return {"effect": effect, "targets": list(targets), **more}


def _said(*rules: dict[str, Any], plugins: dict[str, Any] | None = None) -> list[str]:
    composition = compose({**DOCUMCP, "policy": policy, **(plugins or {})}, {"policy": {"rules": list(rules)}})
    return [w for w in warnings(composition)[1] if "check-composition" in w or "policy-target" in w]


def test_a_deny_whose_scheme_is_mistyped_is_named_with_what_was_meant() -> None:
    (line,) = _said(_rule("deny", "documpc://*", reason="no docs"))
    assert line.startswith(f"warning: policy: {CODE}: 'documpc://*': rule 1 (deny) names a target")
    assert "so it denies nothing" in line and "did you mean 'documcp://" in line


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        (_rule("deny", "documcp://ssg/hugo", actions=["read"]), "a URI no template reaches"),
        (_rule("allow", "documcp://ssgz/*", actions=["read"]), "an allow: it allows nothing"),
        (_rule("deny", "recommend_ssg", actions=["read"]), "a tool name under read"),
        (_rule("deny", "recomend_ssg", actions=["call"]), "a tool name mistyped"),
        (_rule("deny", "DOCUMCP://SSGS/HUGO", match_case=True), "match_case: served targets are lower case"),
        (_rule("deny", "documcp://ssgz/*", actions=["call"]), "a URI under no served prefix, for any action"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_target_matching_nothing_for_the_rules_actions_is_named(rule: dict[str, Any], why: str) -> None:
    (line,) = _said(rule)
    assert f"{CODE}: {rule['targets'][0]!r}: rule 1 ({rule['effect']})" in line, why


@pytest.mark.parametrize(
    "rule",
    [
        _rule("deny", "documcp://ssgs/hugo", actions=["read"]),  # a URI of a template
        _rule("deny", "documcp://ssgs/h*"),
        _rule("deny", "*://ssgs/*"),
        _rule("deny", "DOCUMCP://SSGS/HUGO"),  # a deny matches case-folded
        _rule("deny", "documcp://ssgs/{ssg}", actions=["expand"]),
        _rule("deny", "recommend_ssg", actions=["call"]),
        _rule("deny", "recommend_*", actions=["call", "read"]),  # a name matched for one action is enough
        _rule("allow", "*"),
        _rule("deny", "documcp://ssgs/[hj]ugo", actions=["read"]),
        # provider code asks about URIs under its own prefix with any action (policy.require("call", uri)):
        # the openapi plugin's tools ask call on their path URIs, the servicenow tools read on table URIs
        _rule("deny", "documcp://ssgs/hugo", actions=["call"]),
        _rule("allow", "documcp://workflows/*", actions=["call", "prompt"]),
    ],
)
def test_a_target_something_served_may_match_is_quiet(rule: dict[str, Any]) -> None:
    assert _said(rule) == []


def test_every_target_of_every_rule_is_judged() -> None:
    lines = _said(_rule("deny", "documcp://ssgs/*", "documpc://x"), _rule("deny", "nothing_here", actions=["call"]))
    assert [line.split(": ")[3] for line in lines] == ["'documpc://x'", "'nothing_here'"]
    assert "rule 1 (deny)" in lines[0] and "rule 2 (deny)" in lines[1]


class _Notes(ResourceProvider):
    name = "notes"
    prefixes = ("notes://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="notes://a", name="a", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="a")


def _asker(answer: Any, seen: list[Served]) -> SimpleNamespace:
    def check_composition(settings: Any, served: Served) -> Any:
        seen.append(served)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return SimpleNamespace(
        register_resource_providers=hookimpl(lambda settings: [_Notes()]),
        check_composition=hookimpl(check_composition),
    )


def test_a_third_party_plugin_is_asked_with_what_is_served_and_its_advisories_are_printed() -> None:
    seen: list[Served] = []
    plugin = _asker([Advisory("notes-filter-empty", "x", "the filter names nothing", "name a note")], seen)
    composition = compose({"notes": plugin, **DOCUMCP})
    assert seen == []  # composing (and so serving) never asks
    lines = [w for w in warnings(composition)[1] if "notes" in w]
    assert lines == ["warning: notes: notes-filter-empty: 'x': the filter names nothing; fix: name a note"]
    (served,) = seen
    assert "notes://a" in served.resources and "documcp://ssgs/{ssg}" in served.templates
    assert "recommend_ssg" in served.tools and "notes://" in served.prefixes and served.prompts


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (RuntimeError("boom"), "raised RuntimeError: boom"),
        (SystemExit(3), "raised SystemExit"),
        ("not advisories", "returned str, not a list of Advisory"),
        ([Advisory("a", "b", "c", "d"), "stray"], "returned list, not a list of Advisory"),
    ],
)
def test_a_broken_hook_is_one_warning_and_the_others_are_still_heard(answer: Any, said: str) -> None:
    plugins = {"notes": _asker(answer, [])}
    lines = _said(_rule("deny", "documpc://*"), plugins=plugins)
    assert len(lines) == 2 and lines[0].startswith(
        f"warning: notes: check-composition-failed: 'check_composition': its hook {said}"
    )
    assert CODE in lines[1]


def test_ctrl_c_in_the_hook_still_stops_check() -> None:
    with pytest.raises(KeyboardInterrupt):
        _said(plugins={"notes": _asker(KeyboardInterrupt(), [])})


def test_an_advisory_field_that_is_not_text_is_refused_where_it_is_made() -> None:
    with pytest.raises(TypeError, match=r"Advisory\.value must be a string, not int"):
        Advisory("code", 3, "message", "fix")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("a", "b", "meet"),
    [
        ("x://a/*", "x://*/b", True),
        ("x://a/*", "y://*", False),
        ("x://a?c", "x://abc", True),
        ("x://a*c", "x://ab", False),
        ("*", "", True),
        ("x://[ab]", "x://c", True),  # a class is read loosely: never a false warning
        ("x://a", "x://a*", True),
        ("x://ab", "x://a", False),
    ],
)
def test_two_patterns_meet_when_one_string_matches_both(a: str, b: str, meet: bool) -> None:
    assert policy._overlap(a, b) is meet and policy._overlap(b, a) is meet


def test_check_on_the_command_line_warns_and_still_passes(tmp_path: Path) -> None:
    config = tmp_path / "mcp-providers.toml"
    config.write_text(
        textwrap.dedent(
            """
            allow = ["ssg_catalog", "policy"]
            [[plugins.policy.rules]]
            effect = "deny"
            targets = ["documpc://ssgs/hugo"]
            """
        )
    )
    result = run_cli("check", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert f"warning: policy: {CODE}: 'documpc://ssgs/hugo': rule 1 (deny)" in result.stdout + result.stderr


def test_patterns_too_long_to_compare_are_taken_to_meet() -> None:
    """Deeper than the interpreter's recursion: doubtful, so never a warning (nor a crash of check)."""
    assert policy._overlap("x://" + "a" * 3000 + "b", "x://" + "a" * 3000 + "c") is True


@pytest.mark.parametrize(
    ("rule", "canon"),
    [
        (_rule("allow", "documcp://ssgs/%68ugo", actions=["read"]), "documcp://ssgs/hugo"),
        (
            _rule("allow", "documcp://ssgs/h\u00fcgo", actions=["read"]),
            "documcp://ssgs/h%C3%BCgo",
        ),  # allows match as given
    ],
)
def test_a_uri_spelled_otherwise_than_its_canonical_form_is_named(rule: dict[str, Any], canon: str) -> None:
    """A client asking for the canonical spelling is never matched by such a rule (tester twenty)."""
    (line,) = _said(rule)
    assert f"policy-target-not-canonical: {rule['targets'][0]!r}: rule 1 ({rule['effect']})" in line
    assert line.endswith(f"fix: write it as {canon!r}")


@pytest.mark.parametrize(
    "rule",
    [
        _rule("deny", "DOCUMCP://SSGS/HUGO"),  # a deny folds case: it matches the canonical form
        _rule("deny", "documcp://ssgs/%68ugo", actions=["read"]),  # a deny reads its escapes (tester 25 f1)
        _rule("deny", "documcp://ssgs/hu*"),  # wildcards: not judged
        _rule("deny", "documcp://ssgs/hugo"),
    ],
)
def test_a_rule_matching_its_own_canonical_form_is_quiet(rule: dict[str, Any]) -> None:
    assert _said(rule) == []


QUERIED = Plugin("ty", prefixes=["ty://"])


@QUERIED.template("ty://q{?n,b}")
def _queried(n: int = 0, b: bool = False) -> str:
    return f"n={n} b={b}"


def test_an_allow_whose_query_is_not_in_the_templates_order_is_named() -> None:
    """The gate asks about a read in its template's order: an allow spelled in another never meets
    it (tester 25 f4), so check names the spelling that does."""
    (line,) = _said(_rule("allow", "ty://q?b=true&n=1", actions=["read"]), plugins={"ty": QUERIED})
    assert "policy-target-not-canonical: 'ty://q?b=true&n=1': rule 1 (allow)" in line
    assert line.endswith("fix: write it as 'ty://q?n=1&b=true'")


def test_a_deny_whose_query_is_in_another_order_is_quiet() -> None:
    """A deny matches a query's parameters in any order (tester 25 f4)."""
    assert _said(_rule("deny", "ty://q?b=true&n=1", actions=["read"]), plugins={"ty": QUERIED}) == []
    assert _said(_rule("allow", "ty://q?n=1&b=true", actions=["read"]), plugins={"ty": QUERIED}) == []
    assert _said(_rule("allow", "documcp://ssgs/hug?", actions=["read"])) == []  # a '?' wildcard
