"""Author and operator mistakes ``check`` passed silently (tester twenty-five, f2 f3 f5 f6): an
upstream that cannot be listed, unannotated parameters, a URI or template whose literal part no
valid URI reaches, a policy rule on a template's URIs written as the template. Each is now named
by ``check`` (and by :mod:`mcp_providers.testing`, which reports what the CLI reports)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from mcp import MCPError

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers.errors import CompositionError
from mcp_providers.plugin import Plugin
from mcp_providers.plugins import policy, upstream
from mcp_providers.testing import assert_check_passes, check, compose, compose_installed, connect

pytestmark = pytest.mark.anyio

# -- f5: a literal part no valid URI reaches is refused at declaration -------------------------------

BAD_TEMPLATES = {
    "t25://a b/{uid}": "%20",
    "t25://a|b/{uid}": "%7C",
    "t25://a\\b/{uid}": "%5C",
    "t25://a#b/{uid}": "%23",
    "t25://a?b/{uid}": "%3F",
    "t25://users/../{uid}": "'..' path segment, which clients resolve away",
    "t25://users/./{uid}": "'.' path segment, which clients resolve away",
    "t25://users/%2E%2E/{uid}": "'..' path segment, which clients resolve away",
    # tester twenty-eight F9: what the gate refuses in every read under a policy
    "t25://users/..;/{uid}": "without it",
    "t25://users./{uid}": "without it",
    "t25://users%20/{uid}": "without it",
    "t25://CONFID~1/{uid}": "without it",
    "t25://x::$DATA/{uid}": "without it",
    "t25://users/%252E%252E/{uid}": "without it",
    "t25://a\u200bb/{uid}": "without it",
}
BAD_FIXED = {
    **{"t25://a b": "%20", "t25://x/../y": "clients resolve away", "t25://x#frag": "%23", "t25://a<b>": "%3C"},
    **{"t25://x/..;/y": "without it", "t25://x./y": "without it"},
}
GOOD_TEMPLATES = ["t25://users/{uid}", "t25://search?q={uid}", "t25://v1.2/{uid}", "t25://a%20b/{uid}", "t25://x{?uid}"]
GOOD_FIXED = ["t25://x?y=1", "t25://a%20b", "t25://v1.2/x..y", "t25://gu%C3%ADas"]


def _decorated(kind: str, uri: str) -> Plugin:
    plugin = Plugin("t", prefixes=["t25://"])
    if kind == "template":

        @plugin.template(uri)
        def user(uid: int) -> str:
            return f"user {uid}"

    else:

        @plugin.resource(uri)
        def thing() -> str:
            return "x"

    return plugin


@pytest.mark.parametrize(("kind", "uri", "fix"), [*(("template", u, f) for u, f in BAD_TEMPLATES.items()),
                                                  *(("resource", u, f) for u, f in BAD_FIXED.items())])  # fmt: skip
async def test_a_literal_no_valid_uri_reaches_is_refused_naming_the_fix(kind: str, uri: str, fix: str) -> None:
    composition = compose({"t": _decorated(kind, uri)}, strict=False)
    lines = [line for line in await check(composition) if "uri-invalid" in line]
    assert len(lines) == 1 and repr(uri) in lines[0] and "fix:" in lines[0] and fix in lines[0], lines
    assert not composition.catalog.served_count  # refused: its plugin is not served


@pytest.mark.parametrize(("kind", "uri"), [*(("template", u) for u in GOOD_TEMPLATES),
                                           *(("resource", u) for u in GOOD_FIXED)])  # fmt: skip
async def test_a_literal_a_valid_uri_reaches_passes(kind: str, uri: str) -> None:
    assert await check(compose({"t": _decorated(kind, uri)})) == []


class _Users(ResourceProvider):
    name = "users"
    prefixes = ("t25://",)

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="t25://a b/{uid}", name="user")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="x")


class _ClassPlugin:
    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [_Users()]


async def test_a_class_providers_template_is_refused_the_same_way() -> None:
    composition = compose({"users": _ClassPlugin()}, strict=False)
    lines = await check(composition)
    assert any("uri-invalid" in line and "t25://a b/{uid}" in line and "%20" in line for line in lines), lines


# -- f3: unannotated parameters are named by check --------------------------------------------------


def _unannotated() -> Plugin:
    plugin = Plugin("f3", prefixes=["f3://"])
    namespace: dict[str, Any] = {}
    exec("def add(a, b, ctx) -> str:\n    'Adds two numbers.'\n    return repr(a + b)", namespace)
    plugin.tool()(namespace["add"])
    exec("def user(uid, page=1) -> str:\n    return f'user {uid}'", namespace)
    plugin.template("f3://users/{uid}")(namespace["user"])
    exec("def greet(name) -> str:\n    'Greets.'\n    return f'hello {name}'", namespace)
    plugin.prompt()(namespace["greet"])
    return plugin


async def test_unannotated_parameters_are_a_check_warning_saying_what_they_receive() -> None:
    lines = [line for line in await check(compose({"f3": _unannotated()})) if "parameter-unannotated" in line]
    assert len(lines) == 3, lines
    tool, template, prompt = (next(w for w in lines if f"'{key}'" in w) for key in ("add", "f3://users/{uid}", "greet"))
    assert "'a', 'b'" in tool and "'ctx'" not in tool and "any JSON value" in tool and "fix: annotate" in tool
    assert "'uid'" in template and "'page'" not in template and "a str" in template  # page receives nothing
    assert "'name'" in prompt and "a str" in prompt


async def test_an_unannotated_ctx_of_a_tool_is_not_said_to_be_a_str() -> None:
    lines = [line for line in await check(compose({"f3": _unannotated()})) if "context-unannotated" in line]
    assert len(lines) == 1 and "(a str)" not in lines[0] and "any JSON value" in lines[0], lines


async def test_annotated_parameters_and_any_on_purpose_are_not_warned_about() -> None:
    plugin = Plugin("f3", prefixes=["f3://"])

    @plugin.tool()
    def add(a: int, b: Any) -> str:
        """Adds two numbers."""
        return repr(a + b)

    @plugin.template("f3://users/{uid}")
    def user(uid: str) -> str:
        return f"user {uid}"

    assert await check(compose({"f3": plugin})) == []


# -- f2: the testing helpers report what `mcp-providers check` reports ------------------------------

MISSING = {
    "upstream": {
        "servers": [{"name": "missing", "command": "/nonexistent/bin", "prefixes": ["miss://"], "read_timeout": 2}]
    }
}


def test_compose_strict_refuses_an_upstream_that_cannot_be_listed() -> None:
    with pytest.raises(CompositionError, match="source-unavailable") as refused:
        compose({"upstream": upstream}, MISSING)
    assert "'missing'" in str(refused.value)
    with pytest.raises(CompositionError, match="source-unavailable"):
        compose_installed(["upstream"], MISSING)


async def test_check_and_assert_check_passes_name_an_upstream_that_cannot_be_listed() -> None:
    composition = compose({"upstream": upstream}, MISSING, strict=False)
    lines = [line for line in await check(composition) if "source-unavailable" in line]
    assert len(lines) == 1 and "'missing'" in lines[0] and "fix:" in lines[0], lines
    with pytest.raises(AssertionError, match="source-unavailable"):
        assert_check_passes(composition)  # check fails on it: no warning to let pass


class _Starting(ResourceProvider):
    name = "starting"
    prefixes = ("start://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="start://x", name="x")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="x")

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        raise ConnectionError("the database is down")
        yield


class _StartingPlugin:
    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [_Starting()]


async def test_check_names_a_provider_that_fails_to_start() -> None:
    lines = await check(compose({"starting": _StartingPlugin()}))
    failed = [line for line in lines if "provider-failed-to-start" in line]
    assert len(failed) == 1 and "'starting'" in failed[0] and "the database is down" in failed[0], lines


# -- f6: a policy rule on a template's URIs written as the template is named ------------------------


def _users() -> Plugin:
    plugin = Plugin("t25", prefixes=["t25://"])

    @plugin.template("t25://users/{uid}")
    def user(uid: int) -> str:
        return f"private record of user {uid}"

    return plugin


def _rule(effect: str, actions: list[str], target: str = "t25://users/{uid}", default: str = "allow") -> Any:
    settings = {"policy": {"default": default, "rules": [{"effect": effect, "actions": actions, "targets": [target]}]}}
    return compose({"t25": _users(), "policy": policy}, settings)


@pytest.mark.parametrize(
    ("effect", "actions", "default"),
    [("deny", ["read"], "allow"), ("deny", ["read", "subscribe"], "allow"), ("allow", ["read", "expand"], "deny")],
)
async def test_a_rule_naming_a_template_for_reads_is_named_with_the_glob_to_write(
    effect: str, actions: list[str], default: str
) -> None:
    found = await check(_rule(effect, actions, default=default))
    lines = [line for line in found if "policy-target-is-template" in line]
    assert len(lines) == 1 and "'t25://users/{uid}'" in lines[0] and "fix: " in lines[0], lines
    assert "'t25://users/*'" in lines[0].split("fix: ")[1], lines


async def test_a_deny_on_a_templates_expand_refuses_its_reads_and_is_not_named() -> None:
    composition = _rule("deny", ["read", "expand"])
    assert not [line for line in await check(composition) if "policy-target-is-template" in line]
    async with connect(composition) as client:
        with pytest.raises(MCPError):
            await client.read_resource("t25://users/5")


@pytest.mark.parametrize("target", ["t25://users/*", "t25://users/5"])
async def test_a_rule_naming_the_uris_is_not_named(target: str) -> None:
    assert not [line for line in await check(_rule("deny", ["read"], target)) if "policy-target-is-template" in line]


@pytest.mark.parametrize("actions", [["list"], ["complete", "list"]])
async def test_a_rule_naming_a_template_for_what_is_asked_about_it_is_not_named(actions: list[str]) -> None:
    assert not [line for line in await check(_rule("deny", actions)) if "policy-target-is-template" in line]


# -- tester twenty-eight F8: a rule naming a template in another spelling ------------------------------


@pytest.mark.parametrize(
    ("effect", "target"),
    [("deny", "t25://users/{id}"), ("deny", "t25://users/{+uid}"), ("allow", "t25://users/{id}"),
     ("allow", "t25://users/{+uid}"), ("allow", "t25://users/{UID}")],
)  # fmt: skip
async def test_a_rule_naming_a_template_spelled_otherwise_is_named_with_its_spelling(effect: str, target: str) -> None:
    """``expand`` and ``complete`` are asked about the template as declared: a rule spelling its
    variables otherwise matches nothing they are asked about (a deny denies no read)."""
    composition = _rule(effect, ["read", "expand"], target, default="deny" if effect == "allow" else "allow")
    lines = [line for line in await check(composition) if "policy-target-template-spelling" in line]
    assert len(lines) == 1 and f"{target!r}" in lines[0], lines
    assert "fix: write 't25://users/{uid}'" in lines[0], lines
    if effect == "deny":
        async with connect(composition) as client:
            assert (await client.read_resource("t25://users/5")).contents  # denied nothing


@pytest.mark.parametrize(
    ("actions", "target"),
    [(["expand"], "t25://users/{uid}"), (["complete"], "t25://users/{uid}"), (["read", "expand"], "t25://users/{uid}"),
     (["expand"], "t25://users/{UID}"), (["read"], "t25://users/{id}")],
)  # fmt: skip
async def test_a_rule_naming_the_template_as_it_matches_is_not_named_for_its_spelling(
    actions: list[str], target: str
) -> None:
    """As declared, or in a case a deny folds; or for reads alone (``policy-target-is-template`` says those)."""
    found = await check(_rule("deny", actions, target))
    assert not [line for line in found if "policy-target-template-spelling" in line]


# -- tester twenty-eight F11: a rule naming a parameter at its default value ---------------------------


def _orders(target: str) -> Any:
    plugin = Plugin("t25", prefixes=["t25://"])

    @plugin.template("t25://orders/{oid}{?format,full}")
    def order(oid: int, format: str = "json", full: bool = False) -> str:
        return f"order {oid} as {format}, full {full}"

    settings = {"policy": {"rules": [{"effect": "deny", "actions": ["read"], "targets": [target]}]}}
    return compose({"t25": plugin, "policy": policy}, settings)


@pytest.mark.parametrize(
    ("target", "instead"),
    [
        ("t25://orders/*?format=json", "t25://orders/*"),
        ("t25://orders/5?full=false&format=xml", "t25://orders/5?format=xml"),
        ("t25://orders/*?FORMAT=JSON", "t25://orders/*"),  # a deny folds case
    ],
)
async def test_a_deny_naming_a_parameter_at_its_default_is_named_with_what_to_write(target: str, instead: str) -> None:
    composition = _orders(target)
    lines = [line for line in await check(composition) if "policy-target-names-default" in line]
    assert len(lines) == 1 and f"{target!r}" in lines[0], lines
    assert f"{instead!r}" in lines[0].split("fix: ")[1], lines
    async with connect(composition) as client:
        left_out = "t25://orders/5" if "format=json" in target.lower() else "t25://orders/5?format=xml"
        assert (await client.read_resource(left_out)).contents  # served: the rule does not meet it


@pytest.mark.parametrize("target", ["t25://orders/*?format=xml", "t25://orders/*", "t25://orders/*?full=true"])
async def test_a_deny_naming_no_default_is_not_named_for_it(target: str) -> None:
    found = await check(_orders(target))
    assert not [line for line in found if "policy-target-names-default" in line]
