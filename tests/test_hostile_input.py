"""Hostile input, fuzzed with hypothesis through real MCP clients (in-memory, both protocol eras).

The composition is the built-in documentation plugins and ServiceNow against an emulated instance
on 127.0.0.1. Whatever a client sends, every answer is a result or a documented error code
(:mod:`mcp_providers.errors`) with a message; bad input never gets -32603 (internal error) and
never takes the server down (each property ends by checking a normal read still works).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp.shared.uri_template import UriTemplate

from mcp_providers._serve.composition import Composition
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose_installed, connect

DOCUMENTED = {-32602, -32003, -32004, -32005, -32006, -32007, -32008}
"""Every code :mod:`mcp_providers.errors` documents (bad input is -32602)."""

USER, PASSWORD = "fuzz.user", "fuzz-Pa55-5e1f"
FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)


class Peer:
    """A connected client living in a background event loop, called from sync hypothesis tests."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal, self.client = portal, client

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async def run() -> Any:
            return await method(*args, **kwargs)

        return self.portal.call(run)

    def attempt(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """The result, or the MCPError; a documented code and a message are asserted on errors."""
        try:
            return self.call(method, *args, **kwargs)
        except MCPError as exc:
            assert exc.error.code in DOCUMENTED, f"undocumented code {exc.error.code}: {exc.error.message}"
            assert exc.error.message.strip(), "an error without a message"
            return exc

    def still_serves(self) -> None:
        read = self.call(self.client.read_resource, "documcp://ssgs/available")
        assert read.contents[0].uri == "documcp://ssgs/available"


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator("dev", users={USER: PASSWORD}) as emu:
        yield emu


@pytest.fixture(scope="module")
def composition(emulator: Emulator) -> Iterator[Composition]:
    os.environ["SN_FUZZ_PASSWORD"] = PASSWORD
    instance = {"name": "dev", "url": emulator.base_url, "auth": {"type": "basic", "username": USER,
                "password_env": "SN_FUZZ_PASSWORD"}, "timeout_seconds": 10}  # fmt: skip
    names = ["ssg_catalog", "config_templates", "workflows", "documcp_prompts", "servicenow"]
    yield compose_installed(names, {"servicenow": {"instances": [instance]}})
    del os.environ["SN_FUZZ_PASSWORD"]


@pytest.fixture(scope="module", params=["auto", "legacy"])
def peer(request: pytest.FixtureRequest, composition: Composition) -> Iterator[Peer]:
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(connect(composition, mode=request.param)) as client,
    ):
        yield Peer(portal, client)


# -- strategies ----------------------------------------------------------------------------------

SCHEMES = ["documcp://ssgs/", "documcp://templates/", "documcp://workflows/", "servicenow://", "servicenow://dev/",
           "servicenow://dev/incidents/", "servicenow://dev/update-sets/", "ftp://", "file:///", "", "unknown-scheme:",
           "DOCUMCP://ssgs/", "servicenow:/", "servicenow:///"]  # fmt: skip
NASTY = ["%", "%2", "%zz", "%25", "%252e", "%2e%2e", "%2F", "..", "../", "/", "//", "?", "?x=1&y=%", "#", "#frag",
         "%00", "%ff%fe", "%C3%A9", "é", "😀", "\u202e", "{", "}", "{x}", "\\", " ", "\t", "\n", "^", "INC0010001",
         "available", "dev", "ORDERBY", "^NQ", ",", "*", "'", '"', "<script>"]  # fmt: skip
HUGE = 64 * 1024

uris = st.one_of(
    st.text(max_size=200),
    st.builds(lambda s, parts: s + "".join(parts), st.sampled_from(SCHEMES), st.lists(st.sampled_from(NASTY))),
    st.builds(lambda s, t: s + t, st.sampled_from(SCHEMES), st.text(max_size=100)),
    st.builds(lambda s, c: s + c * HUGE, st.sampled_from(SCHEMES), st.sampled_from(["a", "%", "/", "é", "%2e"])),
)

TEMPLATES = [
    "servicenow://{instance}/info",
    "servicenow://{instance}/incidents",
    "servicenow://{instance}/incidents/{number}",
    "servicenow://{instance}/update-sets/{sys_id}",
    "documcp://ssgs/{ssg}",
    "documcp://workflows/{workflowId}",
]
values = st.one_of(st.text(max_size=80), st.sampled_from(NASTY), st.just("x" * HUGE))


def _check_read(peer: Peer, uri: str) -> None:
    answer = peer.attempt(peer.client.read_resource, uri)
    if isinstance(answer, MCPError):
        return
    assert isinstance(answer, types.ReadResourceResult)
    assert [c.uri for c in answer.contents] == [uri], "content must answer the URI asked for"


# -- properties ----------------------------------------------------------------------------------


@FUZZ
@given(uri=uris)
def test_hostile_uris_get_documented_errors(peer: Peer, uri: str) -> None:
    _check_read(peer, uri)
    peer.still_serves()


@FUZZ
@given(template=st.sampled_from(TEMPLATES), data=st.data())
def test_hostile_template_values_get_documented_errors(peer: Peer, template: str, data: st.DataObject) -> None:
    parsed = UriTemplate.parse(template)
    chosen = {name: data.draw(values, label=name) for name in parsed.variable_names}
    if "instance" in chosen and data.draw(st.booleans(), label="real instance"):
        chosen["instance"] = "dev"
    _check_read(peer, parsed.expand(chosen))
    peer.still_serves()


@FUZZ
@given(
    ref=st.one_of(
        st.builds(
            lambda u: types.ResourceTemplateReference(type="ref/resource", uri=u),
            st.one_of(st.sampled_from(TEMPLATES), st.text(max_size=60)),
        ),
        st.builds(lambda n: types.PromptReference(type="ref/prompt", name=n), st.text(max_size=40)),
    ),
    name=st.one_of(st.sampled_from(["instance", "number", "sys_id", "ssg", "workflowId"]), st.text(max_size=20)),
    value=values,
    context=st.one_of(st.none(), st.dictionaries(st.sampled_from(["instance", "number", "x"]), values, max_size=3)),
)
def test_hostile_completion_requests_get_documented_errors(
    peer: Peer, ref: Any, name: str, value: str, context: dict[str, str] | None
) -> None:
    answer = peer.attempt(peer.client.complete, ref, {"name": name, "value": value}, context)
    if not isinstance(answer, MCPError):
        assert isinstance(answer, types.CompleteResult)
        assert len(answer.completion.values) <= 100
    peer.still_serves()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
TOOLS = ["servicenow_query_table", "servicenow_get_record", "servicenow_update_record", "servicenow_add_comment",
         "servicenow_resolve_incident", "recommend_ssg", "generate_config"]  # fmt: skip


@FUZZ
@given(
    name=st.one_of(st.sampled_from(TOOLS), st.text(max_size=30)),
    arguments=st.one_of(
        st.dictionaries(st.text(max_size=15), json_values, max_size=5),
        st.fixed_dictionaries({"instance": json_values, "table": json_values, "sys_id": json_values}),
        st.fixed_dictionaries({"instance": st.just("dev"), "table": values, "limit": json_values}),
    ),
)
def test_tool_arguments_that_break_the_schema_get_a_clear_refusal(
    peer: Peer, name: str, arguments: dict[str, Any]
) -> None:
    answer = peer.attempt(peer.client.call_tool, name, arguments)
    if isinstance(answer, MCPError):
        assert answer.error.code == -32602 and name not in TOOLS, answer.error.message
    else:
        assert isinstance(answer, types.CallToolResult)
        if answer.is_error:
            text = answer.content[0].text  # type: ignore[union-attr]
            assert text.startswith((f"Invalid arguments for {name}:", f"{name} failed:")), text
    peer.still_serves()


cursors = st.one_of(
    st.text(max_size=100),
    st.binary(max_size=200).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4).map(
        lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode()
    ),
    st.just("A" * HUGE),
)


@FUZZ
@given(cursor=cursors, which=st.sampled_from(["resources", "templates", "tools", "prompts"]))
def test_invalid_cursors_get_invalid_params(peer: Peer, cursor: str, which: str) -> None:
    method = {
        "resources": peer.client.list_resources,
        "templates": peer.client.list_resource_templates,
        "tools": peer.client.list_tools,
        "prompts": peer.client.list_prompts,
    }[which]
    answer = peer.attempt(method, cursor=cursor)
    assert isinstance(answer, MCPError), f"cursor {cursor[:40]!r} was accepted"
    assert answer.error.code == -32602
    assert answer.error.message.startswith("Invalid cursor")
    assert len(answer.error.message) < 1000  # the cursor is not echoed back whole
    peer.still_serves()
