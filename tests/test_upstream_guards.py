"""Guards of the upstream plugin (round 6 hardening): credentials never in cleartext, variable names
never echoed as values, one upstream's bad listing never rejecting the plugin, MCP's cautious
defaults for absent tool hints, override names checked, paging that does not end told.

Listings are made here (``mcp_types`` records handed to the plugin in place of a live upstream's),
so no process starts; ``test_upstream_stdio.py`` and ``test_upstream_http.py`` use real upstreams.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.uri_template import UriTemplate
from pydantic import ValidationError

import mcp_providers.plugins.upstream as upstream
from mcp_providers import uris
from mcp_providers._host.advisories import advisories
from mcp_providers.config import format_validation_error
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Freshness, Resource, ResourceTemplate
from mcp_providers.plugins.upstream import built, link, listing, rules
from mcp_providers.plugins.upstream.mapping import Homes, declare
from mcp_providers.plugins.upstream.settings import ServerSettings, UpstreamSettings, read_variable
from mcp_providers.providers import ResourceProvider
from mcp_providers.testing import compose

SECRET = "sk-live-0123456789abcdef"
NAMELIKE_SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"  # passes as a variable name
OBJECT = {"type": "object"}
OAUTH = {"token_endpoint": "https://idp.example.com/token", "client_id_env": "CID", "client_secret_env": "CSECRET"}
AUTHS = {
    "bearer": {"type": "bearer", "token_env": "TOKEN"},
    "client_credentials": {"type": "client_credentials", **OAUTH},
    "on_behalf_of": {"type": "on_behalf_of", **OAUTH},
}


def _http(url: str, auth: Mapping[str, Any] | None = None) -> dict[str, Any]:
    table: dict[str, Any] = {"name": "remote", "url": url, "prefixes": ["remote://"]}
    return table if auth is None else {**table, "auth": dict(auth)}


def _refused(table: Mapping[str, Any], model: Any = ServerSettings) -> str:
    """The error a table gets, as pydantic says it and as ``check``/``serve`` print it, in one string."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate(table)
    return f"{caught.value}\n{format_validation_error(caught.value, 'plugins.upstream', model)}"


# 1. A credential never crosses the network in cleartext.


@pytest.mark.parametrize("kind", sorted(AUTHS))
@pytest.mark.parametrize("url", ["http://mcp.example.com/mcp", "http://10.0.0.5:8000/mcp", "http://[2001:db8::1]/mcp"])
def test_an_upstream_with_auth_is_refused_over_plain_http_to_a_remote_host(kind: str, url: str) -> None:
    said = _refused(_http(url, AUTHS[kind]))
    assert "plain http to a host that is not loopback" in said and "use https://" in said
    assert repr(url) in said  # shown as written, its port too


@pytest.mark.parametrize("kind", sorted(AUTHS))
@pytest.mark.parametrize(
    "url", ["https://mcp.example.com/mcp", "http://127.0.0.1:8000/mcp", "http://127.8.9.10/mcp", "http://[::1]:80/mcp"]
)
def test_https_and_loopback_http_carry_credentials(kind: str, url: str) -> None:
    assert ServerSettings.model_validate(_http(url, AUTHS[kind])).url == url
    assert ServerSettings.model_validate(_http("http://localhost:9/mcp", AUTHS[kind])).auth is not None


def test_plain_http_without_a_credential_is_allowed_but_not_with_a_query_or_user_info() -> None:
    assert ServerSettings.model_validate(_http("http://mcp.example.com/mcp")).auth is None
    said = _refused(_http(f"http://mcp.example.com/mcp?key={SECRET}"))
    assert "its query" in said and "use https://" in said and SECRET not in said
    for url in (f"https://user:{SECRET}@mcp.example.com/mcp", f"http://user:{SECRET}@127.0.0.1/mcp"):
        said = _refused(_http(url))
        assert "must not carry user info" in said and SECRET not in said


@pytest.mark.parametrize("kind", ["client_credentials", "on_behalf_of"])
def test_an_oauth_token_endpoint_is_https_unless_loopback(kind: str) -> None:
    remote = {**AUTHS[kind], "token_endpoint": "http://idp.example.com/oauth/token"}
    said = _refused(_http("https://mcp.example.com/mcp", remote))
    assert "auth.token_endpoint 'http://idp.example.com/oauth/token' is plain http" in said
    sent = "the client secret and each caller's token" if kind == "on_behalf_of" else "the client secret"
    assert f"{sent} would cross the network in cleartext; use https://" in said
    local = {**AUTHS[kind], "token_endpoint": "http://127.0.0.1:4000/token"}
    assert ServerSettings.model_validate(_http("https://mcp.example.com/mcp", local)).auth is not None
    with_user = {**AUTHS[kind], "token_endpoint": f"https://c:{SECRET}@idp.example.com/token"}
    said = _refused(_http("https://mcp.example.com/mcp", with_user))
    assert "must not carry user info" in said and SECRET not in said


# 2. What should be a variable's name is never echoed.


@pytest.mark.parametrize(
    "table",
    [
        {"name": "a", "command": "x", "prefixes": ["a://"], "env": {"OPENAI_KEY": SECRET}},
        {"name": "a", "command": "x", "prefixes": ["a://"], "env": {SECRET: "OURS"}},
        _http("https://h/mcp", {"type": "bearer", "token_env": SECRET}),
        _http("https://h/mcp", {**AUTHS["client_credentials"], "client_secret_env": SECRET}),
        _http("https://h/mcp", {**AUTHS["on_behalf_of"], "client_id_env": SECRET}),
    ],
)
def test_a_value_where_a_variable_name_belongs_is_refused_without_echo(table: dict[str, Any]) -> None:
    said = _refused(table)
    assert SECRET not in said, said
    assert "must be the NAME of one of our environment variables" in said or "key 1 must be the name" in said


@pytest.mark.parametrize(
    "table",
    [
        {"servers": [], "server": SECRET},
        {"servers": [{"name": "a", "command": "x", "prefixes": ["a://"], "token": SECRET}]},
        {"servers": [_http("https://h/mcp", {"type": "bearer", "token_env": "T", "token": SECRET})]},
        {"servers": [_http("https://h/mcp", {**AUTHS["client_credentials"], "client_secret": SECRET})]},
    ],
)
def test_unknown_settings_are_refused_and_their_values_not_shown(table: dict[str, Any]) -> None:
    said = _refused(table, UpstreamSettings)
    assert "Extra inputs are not permitted" in said and SECRET not in said


def test_a_missing_variable_is_named_only_when_it_cannot_be_a_pasted_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAMELIKE_SECRET, raising=False)
    monkeypatch.delenv("FILES_GITHUB_TOKEN", raising=False)
    with pytest.raises(ValueError) as unset:
        read_variable(NAMELIKE_SECRET, server="files", setting="env.GITHUB_TOKEN")
    assert NAMELIKE_SECRET not in str(unset.value)
    assert "the environment variable named in env.GITHUB_TOKEN is not set" in str(unset.value)
    with pytest.raises(ValueError, match=r"environment variable FILES_GITHUB_TOKEN \(from env.GITHUB_TOKEN\)"):
        read_variable("FILES_GITHUB_TOKEN", server="files", setting="env.GITHUB_TOKEN")
    with pytest.raises(ValueError) as not_a_name:  # settings refuse it; a caller that skipped them too
        read_variable(SECRET, server="files", setting="env.GITHUB_TOKEN")
    assert SECRET not in str(not_a_name.value) and "must be the NAME" in str(not_a_name.value)


def test_starting_an_upstream_with_an_unset_pasted_secret_never_shows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAMELIKE_SECRET, raising=False)
    stdio = ServerSettings.model_validate(
        {"name": "files", "command": "x", "prefixes": ["f://"], "env": {"GITHUB_TOKEN": NAMELIKE_SECRET}}
    )
    http = ServerSettings.model_validate(_http("https://h/mcp", {"token_env": NAMELIKE_SECRET}))
    found = listing.list_at_start([stdio, http])  # the variables are read before anything is started or sent
    assert "the environment variable named in env.GITHUB_TOKEN is not set" in str(found["files"])
    assert "the environment variable named in auth.token_env is not set" in str(found["remote"])
    assert NAMELIKE_SECRET not in f"{found}"


# 3. One bad component is left out alone; every other one, and every other upstream, is served.


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``{server name: listing}`` handed to the plugin in place of listing live upstreams."""
    made: dict[str, Any] = {}
    monkeypatch.setattr(
        built, "list_at_start", lambda servers: {s.name: made.get(s.name, "not listed") for s in servers}
    )
    return made


def _composed(servers: list[dict[str, Any]]) -> tuple[Any, dict[str, str]]:
    """The composition (not strict) and its ``left-out`` advisories, value -> message."""
    c = compose({"upstream": upstream}, {"upstream": {"servers": servers}}, strict=False)
    left = {p.value: p.message for p in advisories(c.assembly.declared) if p.rule == "left-out"}
    return c, left


def _resource(uri: str) -> types.Resource:
    return types.Resource(uri=uri, name=uri.rsplit("/", 1)[-1] or "r")


def _template(uri_template: str) -> types.ResourceTemplate:
    return types.ResourceTemplate(uri_template=uri_template, name="t")


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


BAD_KINDS: dict[str, tuple[dict[str, list[Any]], str, str]] = {
    "duplicate resource URI": ({"resources": [_resource("a://x/1"), _resource("a://x/1")]}, "a://x/1", "repeats"),
    "one URI, two spellings": ({"resources": [_resource("a://x/%7E"), _resource("A://x/~")]}, "A://x/~", "repeats"),
    "{x} in a fixed URI": ({"resources": [_resource("a://x/{id}")]}, "a://x/{id}", "contains {...}"),
    "malformed escape": ({"resources": [_resource("a://x/%zz")]}, "a://x/%zz", "not followed by two hex"),
    "escape not UTF-8": ({"resources": [_resource("a://x/%C3")]}, "a://x/%C3", "not UTF-8"),
    "control character": ({"resources": [_resource("a://x/sec\x00ret")]}, "a://x/sec\x00ret", "control character"),
    "control in template": ({"templates": [_template("a://x/\x1b/{id}")]}, "a://x/\x1b/{id}", "control character"),
    "unclosed template": ({"templates": [_template("a://x/{id")]}, "a://x/{id", "not an RFC 6570"),
    "adjacent variables": ({"templates": [_template("a://x/{a}{b}")]}, "a://x/{a}{b}", "not an RFC 6570"),
    "template without variable": ({"templates": [_template("a://x/fixed")]}, "a://x/fixed", "has no {variable}"),
    "exploding variable": ({"templates": [_template("a://x{/p*}")]}, "a://x{/p*}", "explodes"),
    "template literal escape": ({"templates": [_template("a://x/%zz/{id}")]}, "a://x/%zz/{id}", "two hex"),
    "duplicate template": ({"templates": [_template("a://x/{id}"), _template("a://x/{id}")]}, "a://x/{id}", "repeats"),
    "template of one shape": (
        {"templates": [_template("a://x/{id}"), _template("a://x/{key}")]},
        "a://x/{key}",
        "repeats one listed before as 'a://x/{id}'",
    ),
    "duplicate tool": (
        {"tools": [types.Tool(name="t", input_schema=OBJECT), types.Tool(name="t", input_schema=OBJECT)]},
        "t",
        "repeats",
    ),
    "tool input not an object schema": (
        {"tools": [types.Tool(name="t", input_schema={"type": "string"})]},
        "t",
        "inputSchema is not an object schema",
    ),
    "tool output not an object schema": (
        {"tools": [types.Tool(name="t", input_schema=OBJECT, output_schema={"type": "array"})]},
        "t",
        "outputSchema is not an object schema",
    ),
    "tool input not JSON Schema": (
        {"tools": [types.Tool(name="t", input_schema={"type": "object", "properties": {"x": {"type": 12}}})]},
        "t",
        "does not convert",
    ),
    "tool schema too deep to check": (
        {"tools": [types.Tool(name="t", input_schema=OBJECT | {"properties": {"x": _deep(5000)}})]},
        "t",
        "does not convert",
    ),
    "tool schema fetching a remote $ref": (
        {"tools": [types.Tool(name="t", input_schema=OBJECT | {"properties": {"x": {"$ref": "http://h/x.json"}}})]},
        "t",
        "tool 't' does not convert: $ref 'http://h/x.json' refers to a schema outside this one",
    ),
    "tool schema with a pattern not run in linear time": (
        {"tools": [types.Tool(name="t", input_schema=OBJECT | {"properties": {"x": {"pattern": "(?=a)b"}}})]},
        "t",
        "pattern '(?=a)b' cannot be checked in linear time",
    ),
    "tool schema that loops": (
        {"tools": [types.Tool(name="t", input_schema=OBJECT | {"$ref": "#"})]},
        "t",
        "refers to itself without end",
    ),
    "tool name the core refuses": ({"tools": [types.Tool(name="a b", input_schema=OBJECT)]}, "a b", "not a valid"),
    "duplicate prompt": ({"prompts": [types.Prompt(name="p"), types.Prompt(name="p")]}, "p", "repeats"),
    "prompt argument without a name": (  # the core's words, not pydantic's first line
        {"prompts": [types.Prompt(name="q", arguments=[types.PromptArgument(name="")])]},
        "q",
        "prompt 'q' does not convert: invalid declaration: a prompt argument: name must not be empty",
    ),
}


def _healthy() -> dict[str, list[Any]]:
    return {
        "resources": [_resource("a://ok/1")],
        "templates": [_template("a://ok/{id}")],
        "tools": [types.Tool(name="ok", input_schema=OBJECT)],
        "prompts": [types.Prompt(name="ok")],
    }


@pytest.mark.parametrize("kind", sorted(BAD_KINDS))
def test_one_bad_component_is_left_out_alone(kind: str, listings: dict[str, Any]) -> None:
    bad, value, said = BAD_KINDS[kind]
    healthy = _healthy()
    listings["one"] = {k: [*healthy.get(k, []), *bad.get(k, [])] for k in healthy}
    listings["two"] = _healthy()
    c, left = _composed(
        [
            {"name": "one", "command": "x", "prefixes": ["a://"]},
            {"name": "two", "command": "x", "namespace": "two", "tool_prefix": "two_"},
        ]
    )
    assert not c.failures, c.failures
    assert said in left[value], left
    served = c.catalog
    assert {"a://ok/1", "two://a/ok/1"} <= {e.declaration.uri for e in served.resources}
    assert {"a://ok/{id}", "two://a/ok/{id}"} <= {e.declaration.uri_template for e in served.templates}
    assert {"ok", "two_ok"} <= {e.declaration.name for e in served.tools}
    assert {"ok", "two_ok"} <= {e.declaration.name for e in served.prompts}


def test_what_two_upstreams_both_serve_is_kept_by_the_first_configured(listings: dict[str, Any]) -> None:
    listings["first"] = {"tools": [types.Tool(name="search", input_schema=OBJECT)], "prompts": [types.Prompt(name="p")]}
    listings["second"] = {
        "tools": [types.Tool(name="search", input_schema=OBJECT), types.Tool(name="fetch", input_schema=OBJECT)],
        "prompts": [types.Prompt(name="p")],
    }
    c, left = _composed(
        [
            {"name": "first", "command": "x", "prefixes": ["f://"]},
            {"name": "second", "command": "x", "prefixes": ["s://"]},
        ]
    )
    assert not c.failures, c.failures
    tools = {e.declaration.name: e.provider.name for e in c.catalog.tools}
    assert tools == {"search": "upstream-first-tools", "fetch": "upstream-second-tools"}
    assert {e.declaration.name: e.provider.name for e in c.catalog.prompts} == {"p": "upstream-first-prompts"}
    assert left["search"] == "upstream-second: tool 'search' is also served by upstream 'first', configured before it"
    assert left["p"].startswith("upstream-second: prompt 'p' is also served by upstream 'first'")
    second = next(p for p in c.assembly.declared if p.provider.name == "upstream-second-tools").provider
    assert second.listing.tool_names == {"fetch": "fetch"}  # a call of 'search' never reaches the second


def test_two_upstreams_sharing_a_provider_name_or_a_prefix_are_left_out_and_the_others_served(
    listings: dict[str, Any],
) -> None:
    for name in ("a", "a-tools", "b", "c", "p", "q", "ok"):
        listings[name] = {"tools": [types.Tool(name=f"{name.replace('-', '_')}_t", input_schema=OBJECT)]}
    c, left = _composed(
        [
            {"name": "a", "command": "x", "prefixes": ["a://"]},
            {"name": "a-tools", "command": "x", "prefixes": ["t://"]},  # makes upstream-a-tools, as 'a' does
            {"name": "b", "command": "x", "prefixes": ["x://a/"]},
            {"name": "c", "command": "x", "prefixes": ["x://%61/"]},  # 'x://a/' in canonical form
            {"name": "p", "command": "x", "prefixes": ["ns://"]},
            {"name": "q", "command": "x", "namespace": "ns"},
            {"name": "ok", "command": "x", "prefixes": ["ok://"]},
        ]
    )
    assert not c.failures, c.failures  # the plugin is served: only the six servers at fault are left out
    assert {e.declaration.name for e in c.catalog.tools} == {"ok_t"}
    left = {p.value: p.message for p in c.assembly.left_out}
    said = {p.message for p in c.assembly.left_out if p.value == "upstream-a-tools"}
    assert said == {
        f"duplicate-provider: [plugins.upstream] servers \"{one}\" makes a provider named 'upstream-a-tools', as "
        f'[plugins.upstream] servers "{other}" does; both are configured sources, and the server never picks a '
        "winner: neither is served"
        for one, other in (("a", "a-tools"), ("a-tools", "a"))
    }
    fixes = {p.fix for p in c.assembly.left_out if p.value == "upstream-a-tools"}
    assert fixes == {
        f'give servers "{n}" another name in [plugins.upstream], or remove it there' for n in ("a", "a-tools")
    }
    assert "prefix-overlap: [plugins.upstream] servers \"c\" prefixes: 'x://%61/' overlaps" in left["x://%61/"]
    assert (
        "servers \"q\" namespace: 'ns://' overlaps 'ns://' of [plugins.upstream] servers \"p\" prefixes"
        in left["ns://"]
    )
    assert "not followed by two hex digits" in _refused({"name": "a", "command": "x", "prefixes": ["a://%zz/"]})


_URI_TEXT = st.text(alphabet="aA:/%2Fce7zZ{}+*?&;.,#=~é -", max_size=14)


def _model_refuses(make: Any) -> bool:
    try:
        make()
    except ValidationError:
        return True
    return False


@settings(max_examples=500, deadline=None)
@given(tail=_URI_TEXT, scheme=st.sampled_from(["a://", "A://", "", "1a:", "a:"]))
def test_what_the_rules_pass_the_catalog_compiles(tail: str, scheme: str) -> None:
    """The rules the plugin applies to each listed component are the core's own
    (:mod:`mcp_providers.uris`); what they pass, the catalog can compile (a template whose canonical
    form the SDK's parser refused once crashed the composition and lost every plugin)."""
    text = scheme + tail
    if not _model_refuses(lambda: Resource(uri=text, name="r")) and rules.uri_problem(text) is None:
        assert rules.canonical(text) == uris.canonical(text)
    if not _model_refuses(lambda: ResourceTemplate(uri_template=text, name="t")):
        if rules.template_problem(text) is None:
            UriTemplate.parse(uris.canonical_template(text))  # raises if the catalog would crash
        else:
            assert uris.template_problems(text), text


# 4. Absent hints keep MCP's cautious defaults; "none" is not the operator's to give a writing tool.


def _declared_tools(server: dict[str, Any], *tools: types.Tool) -> tuple[dict[str, Any], dict[str, str]]:
    s = ServerSettings.model_validate({"name": "u", "command": "x", "prefixes": ["u://"], **server})
    listing = declare(s, Homes(prefixes=s.prefixes), {"tools": list(tools)}, Freshness.live(subscribable=False))
    return {t.name: t for t in listing.tools}, {x.value: x.message for x in listing.left_out}


def _tool(name: str, **hints: bool) -> types.Tool:
    annotations = types.ToolAnnotations(**hints) if hints else None
    return types.Tool(name=name, input_schema=OBJECT, annotations=annotations)


def test_absent_hints_are_mcps_defaults_destructive_and_open_world() -> None:
    tools, _ = _declared_tools(
        {},
        _tool("bare"),
        _tool("empty", idempotent_hint=True),
        _tool("reads", read_only_hint=True),
        _tool("adds", destructive_hint=False, open_world_hint=False),
        _tool("both", read_only_hint=True, destructive_hint=True),
    )
    assert {n: (t.effects, t.open_world, t.idempotent) for n, t in tools.items()} == {
        "bare": ("destructive", True, False),
        "empty": ("destructive", True, True),
        "reads": ("none", True, False),
        "adds": ("additive", False, False),
        "both": ("destructive", True, False),  # contradicting hints: the careful one (tester, round 8)
    }


@pytest.mark.parametrize(
    ("hints", "word"),
    [
        ({"destructive_hint": True}, "destructive (destructiveHint: true)"),
        ({"read_only_hint": False}, "not read-only"),
        ({"read_only_hint": True, "destructive_hint": True}, "destructive (destructiveHint: true)"),
    ],
)
def test_effects_none_on_a_tool_the_upstream_says_writes_is_refused(hints: dict[str, bool], word: str) -> None:
    tools, left = _declared_tools({"effects": {"wipe": "none", "bare": "none"}}, _tool("wipe", **hints), _tool("bare"))
    assert tools["wipe"].effects == "destructive"  # the upstream's word (and MCP's default), not the override
    assert left["effects.wipe"] == (
        f"effects of 'wipe' cannot be 'none': the upstream declares it {word}, and a read-only tool's call would "
        "be forwarded as a side-effect exemption; it is served as 'destructive'"
    )
    assert tools["bare"].effects == "none"  # no hint said anything: the operator's word stands
    assert "effects.bare" not in left


# 5. Override names the upstream does not list are reported.


def test_an_override_naming_no_listed_tool_is_reported_with_the_closest_name(listings: dict[str, Any]) -> None:
    listings["ev"] = {"tools": [_tool("search"), _tool("echo")]}
    effects = {"serch": "none", "everything_echo": "none", "zzzz": "additive", "search": "additive"}
    c, left = _composed(
        [{"name": "ev", "command": "x", "prefixes": ["ev://"], "tool_prefix": "everything_", "effects": effects}]
    )
    assert not c.failures
    assert left["effects.serch"] == "upstream-ev: upstream 'ev' lists no tool 'serch'; did you mean 'search'? " + (
        "(the override does nothing)"
    )
    # a served name (with tool_prefix) for the upstream's: too far apart for difflib, named all the same
    assert "lists no tool 'everything_echo'; did you mean 'echo'?" in left["effects.everything_echo"]
    assert left["effects.zzzz"].endswith("lists no tool 'zzzz' (the override does nothing)")
    assert "effects.search" not in left
    assert {e.declaration.name: e.declaration.effects for e in c.catalog.tools}["everything_search"] == "additive"


def test_a_prefix_under_which_the_upstream_lists_nothing_is_reported(listings: dict[str, Any]) -> None:
    listings["ev"] = {"resources": [_resource("demo://resource/static/a.md")], "tools": [_tool("t")]}
    listings["tools-only"] = {"tools": [_tool("u")]}
    c, left = _composed(
        [
            {"name": "ev", "command": "x", "prefixes": ["demo://resourse/", "demo://resource/static/"]},
            {"name": "tools-only", "command": "x", "prefixes": ["t://"], "tool_prefix": "t_"},
        ]
    )
    assert not c.failures
    assert left["demo://resourse/"] == (
        "upstream-ev: upstream 'ev' lists no resource or template under prefix 'demo://resourse/'; "
        "did you mean 'demo://resource/'?"
    )
    assert "demo://resource/static/" not in left and "t://" not in left  # covers one; lists no URIs at all


# 6. Paging that does not end is cut, and said.


def _paged(cursors: Iterator[str | None], field: str = "tools") -> Any:
    async def fetch(cursor: str | None) -> Any:
        return SimpleNamespace(**{field: [_tool("t")]}, next_cursor=next(cursors))

    return fetch


@pytest.mark.anyio
async def test_paging_stops_at_a_repeated_cursor_and_at_the_page_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    cut: list[tuple[str, str]] = []
    items = await listing._pages(_paged(iter(["a", "b", "a", "c"])), "tools", cut, "tools/list")
    assert len(items) == 3 and cut == [("tools/list", "the upstream sent a cursor it had sent before, after 3 pages")]
    monkeypatch.setattr(listing, "MAX_PAGES", 5)
    cut.clear()
    endless = (f"c{i}" for i in range(10**6))
    items = await listing._pages(_paged(endless), "tools", cut, "tools/list")
    assert len(items) == 5 and cut == [("tools/list", "its pages did not end within 5")]
    cut.clear()
    assert len(await listing._pages(_paged(iter(["a", None])), "tools", cut, "tools/list")) == 2 and not cut


@pytest.mark.anyio
async def test_a_cut_list_is_logged_and_reported_as_left_out(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caps = types.ServerCapabilities(tools=types.ToolsCapability())
    stub = SimpleNamespace(
        server_capabilities=caps, server_info=None, protocol_version="2025-11-25", list_tools=_repeating()
    )

    @contextlib.asynccontextmanager
    async def opened(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        yield stub

    monkeypatch.setattr(listing, "client", opened)
    server = ServerSettings.model_validate({"name": "loop", "command": "x", "prefixes": ["l://"]})
    with caplog.at_level(logging.WARNING, logger=listing.__name__):
        listed = await listing._list_one(server)
    assert "upstream 'loop' (stdio): tools/list was cut short: the upstream sent a cursor it had sent before" in (
        caplog.text
    )
    declared = declare(server, Homes(prefixes=server.prefixes), listed, Freshness.live(subscribable=False))
    [cut] = [x for x in declared.left_out if x.value == "tools/list"]
    assert cut.message.startswith("the rest of tools/list is not served: the upstream sent a cursor it had sent")
    assert [t.name for t in declared.tools] == ["same"]  # listed on both pages: served once


def _repeating() -> Any:
    async def list_tools(cursor: str | None = None) -> Any:
        return SimpleNamespace(tools=[_tool("same")], next_cursor="again")

    return list_tools


def test_a_template_with_a_malformed_escape_is_refused_by_check_not_a_crash() -> None:
    """Found while restating the core's rules: a plugin's template whose literal part has a bad
    ``%`` escape passed every rule, then the catalog's canonical parse raised out of composition
    (every plugin lost). The core's own ``check`` now refuses it like a fixed URI's."""

    class Bad(ResourceProvider):
        name = "bad"
        prefixes = ("x://",)

        def templates(self) -> list[ResourceTemplate]:
            return [ResourceTemplate(uri_template="x://a%zz/{id}", name="t")]

    class Plugin:
        @staticmethod
        @hookimpl
        def register_resource_providers() -> list[ResourceProvider]:
            return [Bad()]

    c = compose({"bad": Plugin()}, strict=False)
    assert [(p.rule, p.value) for p in c.problems] == [("uri-invalid", "x://a%zz/{id}")]
    assert c.records[0].status == "rejected"


@pytest.mark.parametrize(("version", "shown"), [("", "tiny"), ("1.2", "tiny 1.2")])
def test_the_receipts_server_info_has_no_trailing_space(
    version: str, shown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded: list[Mapping[str, str]] = []
    monkeypatch.setattr(link.credentials, "record_upstream", recorded.append)
    served = link.Link(ServerSettings.model_validate(_http("http://127.0.0.1:1/mcp")))
    served.info = types.Implementation(name="tiny", version=version)
    served.served_by(uri="remote://a")
    assert recorded[0]["serverInfo"] == shown


# 8. A change notice never tells a caller about what the upstream would hide from them (tester 30).


def test_an_on_behalf_of_upstreams_resources_are_not_watched() -> None:
    """An ``on_behalf_of`` upstream is watched through the pooled connection, as the client itself:
    its change notices would reach every caller the local policy lets subscribe, also one the
    upstream would not show the resource to. So its resources are live but not watchable, as a
    ServiceNow instance with ``jwt_bearer`` auth; one with one identity for every caller still is."""
    listed = {"subscribe": True}
    behalf = ServerSettings.model_validate(_http("https://h/mcp", AUTHS["on_behalf_of"]))
    shared = ServerSettings.model_validate(_http("https://h/mcp", AUTHS["client_credentials"]))
    assert not built._freshness(listed, behalf).watchable
    assert built._freshness(listed, shared).watchable
    assert not built._freshness({"subscribe": False}, shared).watchable
