"""The upstream plugin's settings and its mapping of upstream components (no process started)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import mcp_types as types
import pytest
from pydantic import ValidationError

from mcp_providers.plugins.upstream import settings as settings_module
from mcp_providers.plugins.upstream.mapping import Homes, declare, effects_of, schema_model
from mcp_providers.plugins.upstream.settings import ServerSettings, UpstreamSettings, read_variable
from mcp_providers.testing import compose


def test_upstream_settings_example_in_the_module_docstring_validates() -> None:
    doc = settings_module.__doc__ or ""
    example = re.search(r"Example .*?::\n\n(.*?)\n\n(?=\S)", doc, re.DOTALL)
    assert example is not None
    table = tomllib.loads("\n".join(line[4:] for line in example[1].splitlines()))
    servers = UpstreamSettings.model_validate(table["plugins"]["upstream"]).servers
    assert [(s.name, s.transport) for s in servers] == [
        ("everything", "stdio"),
        ("files", "stdio"),
        ("remote", "streamable-http"),
        ("tickets", "streamable-http"),
    ]
    assert servers[3].auth is not None and servers[3].auth.type == "on_behalf_of"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"name": "a", "prefixes": ["a://"]}, "exactly one of command"),
        ({"name": "a", "command": "x", "url": "http://h/mcp", "prefixes": ["a://"]}, "exactly one of command"),
        ({"name": "a", "command": "x"}, "exactly one of prefixes"),
        ({"name": "a", "command": "x", "prefixes": ["a://"], "namespace": "a"}, "exactly one of prefixes"),
        ({"name": "a", "url": "http://h/mcp", "args": ["-v"], "prefixes": ["a://"]}, "are for stdio"),
        (
            {"name": "a", "command": "x", "prefixes": ["a://"], "auth": {"token_env": "T"}},
            "auth is for url upstreams",
        ),
        ({"name": "a", "command": "x", "prefixes": ["a://"], "env": {"KEY": "not a name"}}, "must be the NAME"),
    ],
)
def test_upstream_server_settings_reject_what_is_ambiguous(table: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ServerSettings.model_validate(table)


def test_upstream_settings_leave_out_one_name_twice_and_leave_overlaps_to_the_core() -> None:
    """Overlapping prefixes are judged by the core, where they cost only the two servers
    (``test_upstream_guards.py::test_two_upstreams_sharing_a_provider_name_or_a_prefix_...``); two
    servers of one name are left out by the settings, the others kept
    (``test_duplicate_source_names.py``)."""
    one = {"name": "a", "command": "x", "prefixes": ["demo://"]}
    twice = UpstreamSettings.model_validate({"servers": [one, {**one, "prefixes": ["other://"]}]})
    assert twice.servers == () and [item.value for item in twice.left_out] == ["a"]
    both = UpstreamSettings.model_validate({"servers": [one, {**one, "name": "b", "prefixes": ["demo://x/"]}]})
    assert [s.owned for s in both.servers] == [("demo://",), ("demo://x/",)]


def test_upstream_variables_are_named_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("U1_TOKEN", raising=False)
    with pytest.raises(ValueError, match=r"upstream 'remote': environment variable U1_TOKEN \(from auth\) is not set"):
        read_variable("U1_TOKEN", server="remote", setting="auth")
    monkeypatch.setenv("U1_TOKEN", "s3cret")
    assert read_variable("U1_TOKEN", server="remote", setting="auth") == "s3cret"


def test_upstream_homes_serve_under_prefixes_or_rehome_under_a_namespace() -> None:
    owned = Homes(prefixes=("demo://resource/",))
    assert owned.served("DEMO://resource/a") == "DEMO://resource/a"
    assert owned.served("demo://other/a") is None
    assert owned.served("demo://resource") is None
    ns = Homes(namespace="files")
    for upstream in ("file:///srv/a b.txt", "demo://resource/{id}", "Git://host/repo"):
        served = ns.served(upstream)
        assert served is not None and served.startswith("files://")
        assert ns.upstream(served).lower() == upstream.lower()
    assert ns.served("urn:isbn:1") is None


def test_upstream_tool_effects_follow_annotations_unless_overridden() -> None:
    def tool(**hints: bool) -> types.Tool:
        return types.Tool(name="t", input_schema={"type": "object"}, annotations=types.ToolAnnotations(**hints))

    assert effects_of(tool(read_only_hint=True), {}) == "none"
    assert effects_of(tool(destructive_hint=True), {}) == "destructive"
    assert effects_of(tool(destructive_hint=False), {}) == "additive"
    assert effects_of(tool(), {}) == "destructive"  # MCP's default for an absent destructiveHint
    assert effects_of(types.Tool(name="t", input_schema={"type": "object"}), {}) == "destructive"
    assert effects_of(tool(read_only_hint=True), {"t": "destructive"}) == "destructive"


def test_upstream_tool_input_is_checked_against_the_upstream_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    model = schema_model("AddInput", schema)
    assert model.model_json_schema() == schema
    assert model.model_validate({"n": 2}).model_dump() == {"n": 2}
    with pytest.raises(ValidationError, match="'n' is a required property"):
        model.model_validate({})
    with pytest.raises(ValidationError, match="n: 'two' is not of type 'integer'"):
        model.model_validate({"n": "two"})


def test_upstream_components_that_do_not_convert_are_left_out_with_the_reason() -> None:
    server = ServerSettings(name="ev", command="x", prefixes=("demo://",), tool_prefix="ev_")
    listed = {
        "resources": [types.Resource(uri="other://a", name="a"), types.Resource(uri="demo://b", name="b")],
        "tools": [
            types.Tool(name="bad name!", input_schema={"type": "object"}),
            types.Tool(name="broken", input_schema={"type": "object", "properties": {"x": {"type": 12}}}),
            types.Tool(name="ok", input_schema={"type": "object"}),
        ],
    }
    from mcp_providers.models import Freshness

    listing = declare(server, Homes(prefixes=server.prefixes), listed, Freshness.live(subscribable=False))
    assert [r.uri for r in listing.resources] == ["demo://b"]
    assert [t.name for t in listing.tools] == ["ev_ok"] and listing.tool_names == {"ev_ok": "ok"}
    assert {x.value for x in listing.left_out} == {"other://a", "bad name!", "broken"}


def test_an_upstream_on_another_plugins_prefix_is_left_out_alone(tmp_path: Path) -> None:
    from mcp_providers.plugins import upstream
    from mcp_providers.plugins.documcp import ssg_catalog

    absent = str(tmp_path / "absent")  # nothing is listed: the owned prefix alone collides
    settings = {"upstream": {"servers": [{"name": "docs", "command": absent, "prefixes": ["documcp://ssgs/"]}]}}
    composition = compose({"upstream": upstream, "ssg_catalog": ssg_catalog}, settings, strict=False)
    assert not [line for line in composition.failures if "prefix-overlap" in line]
    [overlap] = [str(p) for p in composition.assembly.left_out]
    assert overlap.startswith("ssg_catalog + upstream: left-out: 'documcp://ssgs/': prefix-overlap:")
    said = "servers \"docs\" prefixes: 'documcp://ssgs/' overlaps 'documcp://ssgs/' of provider 'ssg-catalog'"
    assert said in overlap
    assert {r.name: r.status for r in composition.records} == {"ssg_catalog": "loaded", "upstream": "loaded"}
    assert "ssg-catalog" in {d.provider.name for d in composition.assembly.declared}  # the other side serves


@pytest.mark.anyio
async def test_a_watch_that_fails_or_ends_is_opened_again_while_the_connection_lives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import anyio

    from mcp_providers.plugins.upstream import link as link_module

    monkeypatch.setattr(link_module, "BACKOFF", (0.01,))
    server = ServerSettings.model_validate({"name": "a", "command": "x", "prefixes": ["a://"]})
    opened: list[int] = []

    async def watch(connection: object) -> None:
        opened.append(1)
        if len(opened) == 1:
            raise ConnectionError("the upstream closed its listen stream")  # then it ends normally once

    with anyio.move_on_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(link_module.Link(server)._watching, watch, object())
            while len(opened) < 3:
                await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    assert len(opened) >= 3  # failed, ended, and was watching again each time
