"""Template values never carry a path traversal past the gate (round 4 item 17).

A policy denies ``trav://files/private/*``. Before the fix ``trav://files/public/../private/key``,
``.../public/%2E%2E/private/key`` and ``.../public/..%2Fprivate/key`` were served and the provider
received ``path = "public/../private/key"``: the gate judged one value and the provider another.
Now a template value holding a ``.`` or ``..`` segment, in any spelling (literal, ``%2E`` in either
case, double-encoded ``%252E``, backslash separators, full-width dots), is refused with -32602
before the gate or the provider sees it; a single-segment variable (``{name}``) also refuses a
decoded ``/`` or ``\\``, and a ``{+path}`` value may not start with a separator (an absolute path).
A value holding a separator only a further decoding or NFKC folding makes (``private%252Fkey``) is
refused too: an upstream MCP server that decodes its URI once more served ``private/key`` past a
deny on ``private/*`` (tester, round 8).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from mcp import MCPError
from pipeline_support import secrets_plugin

from mcp_providers import Content, ReadRequest, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers.plugins import policy
from mcp_providers.testing import compose, connect
from mcp_providers.uris import value_problem

pytestmark = pytest.mark.anyio


class Files(ResourceProvider):
    """Echoes the params the router hands it."""

    name = "trav-files"
    prefixes = ("trav://",)

    def templates(self) -> Sequence[ResourceTemplate]:
        return [
            ResourceTemplate(uri_template="trav://names/{name}", name="by-name", mime_type="application/json"),
            ResourceTemplate(uri_template="trav://search{?q}", name="search", mime_type="application/json"),
            ResourceTemplate(uri_template="trav://files/{+path}", name="file", mime_type="application/json"),
        ]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=json.dumps(dict(request.params)))


class FilesPlugin:
    @hookimpl
    def register_resource_providers(self, settings: object) -> list[ResourceProvider]:
        return [Files()]


DENY_PRIVATE = {"policy": {"rules": [{"effect": "deny", "actions": ["read"], "targets": ["trav://files/private/*"]}]}}


def _composed() -> object:
    return compose({"trav": FilesPlugin(), "policy": policy}, DENY_PRIVATE)


REFUSED = [
    # the three spellings
    "trav://files/public/../private/key",
    "trav://files/public/%2E%2E/private/key",
    "trav://files/public/..%2Fprivate/key",
    # more of the kind: mixed case, a lone '.', double and triple encoding, backslashes, full-width dots
    "trav://files/public/%2e%2E/private/key",
    "trav://files/./private/key",
    "trav://files/public/%252E%252E/private/key",
    "trav://files/public/%25252e%25252e/private/key",
    "trav://files/public%5C..%5Cprivate%5Ckey",
    "trav://files/public/%EF%BC%8E%EF%BC%8E/private/key",
    "trav://files/..",
    # an absolute path in a {+path} value: f"{base}/{path}" reads base//private/key
    "trav://files//private/key",
    "trav://files/%2Fprivate/key",
    # single-segment {name}: a decoded separator or a dot segment
    "trav://names/..%2F..%2Fetc%2Fpasswd",
    "trav://names/a%2Fb",
    "trav://names/a%5Cb",
    "trav://names/..",
    "trav://names/%2E",
    "trav://names/a%252Fb",
    # a separator the gate never saw: left encoded after the one decoding (double encoding), or a
    # full-width look-alike; a provider or upstream that decodes once more reads private/key
    "trav://files/private%252Fkey",
    "trav://files/%2570rivate%252Fkey",
    "trav://files/private%25%32%46key",
    "trav://files/private%25252Fkey",
    "trav://files/private%255Ckey",
    "trav://files/private%EF%BC%8Fkey",
    # a backslash: a character to the gate, a separator to Windows and IIS
    "trav://files/private%5Ckey",
    "trav://files/private%255Ckey",
    # names Windows and IIS read as private: trailing dots and spaces (an ideographic full stop
    # too), an NTFS stream, an invisible format character; "..." is "." to them (second pass)
    "trav://files/private./key",
    "trav://files/private%2E/key",
    "trav://files/private%20/key",
    "trav://files/private%E3%80%82/key",
    "trav://files/private::$DATA/key",
    "trav://files/private%E2%80%8B/key",
    "trav://files/public/...",
    # an 8.3 short name and invisible characters that are not format characters (third pass)
    "trav://files/PRIVAT~1/key",
    # a dot segment with a ';' parameter (Tomcat, Jetty and Spring read '..;' as '..'), and an
    # NTFS directory stream (IIS reads private:$i30:$INDEX_ALLOCATION as private; fifth pass)
    "trav://files/public/..;/private/key",
    "trav://files/public/..;x/private/key",
    "trav://files/public/%2e%2e;/private/key",
    "trav://files/public/.;/private/key",
    "trav://files/private:$i30:$INDEX_ALLOCATION/key",
    # a trailing full stop a server folds and trims, before a ';' parameter (sixth pass)
    "trav://files/private%EF%BC%8E;/key",
    "trav://files/private%E3%80%82;x/key",
    "trav://files/private.;x/key",
    "trav://files/private%20;x/key",
    "trav://files/private%CD%8F/key",
    "trav://files/private%EF%B8%8F/key",
    "trav://files/private%E3%85%A4/key",
    # a fold then a decoding (U+FF05 2F is %2F), and slash look-alikes NFKC leaves alone
    "trav://files/private%EF%BC%852Fkey",
    "trav://files/private%E2%88%95key",
    "trav://files/private%E2%81%84key",
    # a query value
    "trav://search?q=../private",
    # a NUL cuts a path short in C file APIs
    "trav://files/public/key%00.txt",
    "trav://names/key%00.txt",
]


@pytest.mark.parametrize("uri", REFUSED)
async def test_a_template_value_holding_a_traversal_is_refused_before_gate_and_provider(uri: str) -> None:
    async with connect(_composed()) as client:
        with pytest.raises(MCPError) as denied:
            await client.read_resource("trav://files/private/key")
        assert "permission-denied" in denied.value.error.message
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.error.code == -32602, caught.value.error
    assert "template value" in caught.value.error.message, caught.value.error.message


@pytest.mark.parametrize(
    ("uri", "params"),
    [
        ("trav://files/public/key", {"path": "public/key"}),
        ("trav://files/public/v1.2..3/a.b", {"path": "public/v1.2..3/a.b"}),
        ("trav://files/public/.hidden", {"path": "public/.hidden"}),
        ("trav://files/public/dir/", {"path": "public/dir/"}),
        ("trav://names/report.v2", {"name": "report.v2"}),
        ("trav://names/100%25", {"name": "100%"}),
        ("trav://search?q=a%20b", {"q": "a b"}),
    ],
)
async def test_values_with_dots_that_are_not_dot_segments_are_served(uri: str, params: dict[str, str]) -> None:
    async with connect(_composed()) as client:
        got = await client.read_resource(uri)
    assert json.loads(got.contents[0].text) == params  # type: ignore[union-attr]


def test_the_value_check_names_what_is_wrong() -> None:
    assert value_problem("public/../x", single_segment=False) == "holds a '..' path segment"
    assert value_problem("a/b", single_segment=True) == "holds a path separator ('/' or '\\')"
    assert value_problem("/etc/passwd", single_segment=False) == "starts with a path separator (an absolute path)"
    assert value_problem("private%2Fkey", single_segment=False) == (
        "holds a separator spelled another way (an escape left after decoding, or a look-alike)"
    )
    assert value_problem("public/key", single_segment=False) is None


@pytest.mark.parametrize(
    "asked",
    [
        "https://upstream.test/public/../private/x",  # not served here: the gate alone judges it
        "https://upstream.test/public/%2e%2E/private/x",
        "x://a/public%2F..%2Fsecret",  # served prefix, refused value: judged as sent, still denied
    ],
)
async def test_a_tool_asking_about_a_uri_with_dot_segments_is_denied(asked: str) -> None:
    rules = [
        {"effect": "deny", "actions": ["read"], "targets": ["https://upstream.test/private/*", "x://a/secret"]},
        {"effect": "allow", "actions": ["read"], "targets": ["*"]},
    ]
    tools = secrets_plugin(embed="x://a/index", require=asked)
    async with connect(compose({"x": tools, "policy": policy}, {"policy": {"rules": rules}})) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("show", {})
    said = caught.value.error.message
    assert caught.value.error.code == -32003, caught.value.error
    assert "'..' path segment" in said or "separator spelled another way" in said, said  # refused either way


async def test_a_tool_asking_about_a_plain_uri_is_still_allowed() -> None:
    tools = secrets_plugin(embed="x://a/index", require="https://upstream.test/public/x")
    rules = [{"effect": "deny", "actions": ["read"], "targets": ["https://upstream.test/private/*"]}]
    async with connect(compose({"x": tools, "policy": policy}, {"policy": {"rules": rules}})) as client:
        assert not (await client.call_tool("show", {})).is_error


async def test_the_refusal_names_the_template_only_to_a_caller_who_may_list_it() -> None:
    hidden = [
        {"effect": "deny", "actions": ["list"], "targets": ["trav://files/*"]},
        {"effect": "allow", "actions": ["read", "expand", "list"], "targets": ["*"]},
    ]
    for rules, named in ((DENY_PRIVATE["policy"]["rules"], True), (hidden, False)):
        composition = compose({"trav": FilesPlugin(), "policy": policy}, {"policy": {"rules": rules}})
        async with connect(composition) as client:
            with pytest.raises(MCPError) as caught:
                await client.read_resource("trav://files/public/../private/key")
        assert caught.value.error.code == -32602
        assert ("trav://files/{+path}" in caught.value.error.message) is named, caught.value.error.message


@pytest.mark.parametrize(
    "asked",
    [
        "https://upstream.test/private./x",  # third pass: checked for dot segments only, then allowed
        "https://upstream.test/private%20/x",
        "https://upstream.test/private::$DATA/x",
        "https://upstream.test/private%E2%80%8B/x",
        "https://upstream.test/private%5Cx",
        "https://upstream.test/private%252Fx",
        "https://upstream.test/PRIVAT~1/x",
        "https://upstream.test/public/..;/private/x",
        "https://upstream.test/private:$i30:$INDEX_ALLOCATION/x",
    ],
)
async def test_a_tool_asking_about_a_uri_a_server_reads_as_another_path_is_denied(asked: str) -> None:
    rules = [{"effect": "deny", "actions": ["read"], "targets": ["https://upstream.test/private/*"]}]
    tools = secrets_plugin(embed="x://a/index", require=asked)
    async with connect(compose({"x": tools, "policy": policy}, {"policy": {"rules": rules}})) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("show", {})
    said = caught.value.error.message
    assert caught.value.error.code == -32003 and "ask about the path as its owner names it" in said, said


@pytest.mark.parametrize("value", ["a/..;x/b", "a/.;jsessionid=1/b", "..;/etc"])
def test_a_dot_segment_with_a_parameter_is_named_as_one(value: str) -> None:
    """Servlet containers drop ``;x`` from a segment, so ``..;x`` is ``..`` to them: said so, not
    only refused for its trailing dot (the mutation run since 991900f found the rule untested)."""
    problem = value_problem(value, single_segment=False)
    assert problem is not None and "with a ';' parameter, which servlet containers drop" in problem, problem
