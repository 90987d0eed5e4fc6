"""A configured source's prefix that overlaps another provider's costs only that source (tester
thirteen): an upstream server whose ``prefixes`` (or ``namespace``) reach into a plugin's prefix is
left out alone, with a ``left-out`` line naming both sides and the setting to change; the
upstream plugin's other servers, the other plugin and everything else are served, at start-up and
after a reload that brings the overlap. Before, the whole upstream plugin and every built-in beside
it were refused. Two plugins' own prefixes that overlap are still both refused, the fix said for
whoever can act.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import prefork
import pytest
from mcp import MCPError

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, SourceSetting, hookimpl
from mcp_providers._cli.report import warnings
from mcp_providers._serve.reload import Reloader
from mcp_providers._serve.transport.status import facts
from mcp_providers.config import Config
from mcp_providers.plugins import upstream
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

TINY = str(Path(__file__).with_name("tiny_stdio_upstream.py"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime hosts providers in an asyncio task of its own


class Owned(ResourceProvider):
    """One fixed resource ``<prefix>x`` under ``prefix``; ``source`` set when made for one."""

    def __init__(self, name: str, prefix: str, source: SourceSetting | None = None) -> None:
        self.name, self.prefixes, self.source = name, (prefix,), source

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=f"{self.prefixes[0]}x", name="x", mime_type="text/plain")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=f"{self.name} x")


class Plugin:
    """A plugin object serving ``providers``."""

    def __init__(self, *providers: ResourceProvider) -> None:
        self.providers = providers

    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return list(self.providers)


def _server(name: str, **owns: Any) -> dict[str, Any]:
    """A tiny stdio upstream (through the fork server) serving ``<name>://note`` and ``<name[0]>_echo``."""
    return {"name": name, **prefork.upstream_script(TINY, name), "tool_prefix": f"{name[0]}_", **owns}


def _upstreams(*servers: dict[str, Any]) -> dict[str, Any]:
    return {"upstream": {"servers": list(servers)}}


def _plugins() -> dict[str, object]:
    return {"native": Plugin(Owned("native-resources", "native://")), "upstream": upstream}


def _providers(composed: Any) -> set[str]:
    return {d.provider.name for d in composed.assembly.declared}


@pytest.mark.parametrize(
    ("owns", "setting", "prefix"),
    [
        ({"prefixes": ["wide://", "native://deep/"]}, 'servers "wide" prefixes', "native://deep/"),
        ({"namespace": "native"}, 'servers "wide" namespace', "native://"),
    ],
    ids=["prefixes", "namespace"],
)
async def test_an_upstreams_prefix_over_a_plugins_leaves_out_that_upstream_alone(
    owns: dict[str, Any], setting: str, prefix: str
) -> None:
    settings = _upstreams(_server("good", prefixes=["good://"]), _server("wide", **owns))
    composed = compose(_plugins(), settings, strict=False)
    assert {r.name: r.status for r in composed.records} == {"native": "loaded", "upstream": "loaded"}
    assert not composed.failures, composed.failures
    assert _providers(composed) == {"native-resources", "upstream-good", "upstream-good-tools", "upstream-good-prompts"}
    [line] = composed.assembly.left_out
    assert (line.rule, line.value, set(line.plugins)) == ("left-out", prefix, {"native", "upstream"})
    said = str(line)
    assert f"prefix-overlap: [plugins.upstream] {setting}: {prefix!r} overlaps 'native://' of provider " in said
    assert "'native-resources' (plugin native)" in said and "only that source is left out" in said
    assert f"fix: give it a prefix of its own in [plugins.upstream] {setting}" in said
    assert "deny" not in said and "their authors" not in said
    assert f"warning: {said}" in warnings(composed)[1]  # what check prints
    assert said in facts(composed, None, None)["left_out"]  # what /status lists
    async with composed.running(), connect(composed) as client:
        assert (await client.read_resource("good://note")).contents[0].text == "note of good"
        assert (await client.read_resource("native://x")).contents[0].text == "native-resources x"
        echoed = await client.call_tool("g_echo", {"text": "hi"})
        assert echoed.structured_content == {"result": "hi"}
        assert "w_echo" not in {t.name for t in (await client.list_tools()).tools}
        with pytest.raises(MCPError):
            await client.read_resource("wide://note")


async def test_a_reload_that_brings_the_overlap_leaves_out_only_that_upstream(tmp_path: Path) -> None:
    before = _upstreams(_server("good", prefixes=["good://"]), _server("wide", prefixes=["wide://"]))
    composed = compose(_plugins(), before)
    wider = _upstreams(_server("good", prefixes=["good://"]), _server("wide", prefixes=["wide://", "native://"]))
    config = {"now": composed.config}
    reloader = Reloader(composed, lambda: config["now"], load_entrypoints=False, plugins=_plugins())
    async with composed.running():
        async with connect(composed) as client:
            assert (await client.read_resource("wide://note")).contents[0].text == "note of wide"
        config["now"] = Config(plugins=wider)
        attempt = await reloader.reload()
        assert attempt.outcome == "applied", attempt
        [warned] = [w for w in attempt.warnings if "left-out" in w]
        assert "prefix-overlap: [plugins.upstream] servers \"wide\" prefixes: 'native://' overlaps" in warned
        assert {r.name: r.status for r in composed.records} == {"native": "loaded", "upstream": "loaded"}
        async with connect(composed) as client:
            assert (await client.read_resource("good://note")).contents[0].text == "note of good"
            assert (await client.read_resource("native://x")).contents[0].text == "native-resources x"
            with pytest.raises(MCPError):
                await client.read_resource("wide://note")


def test_two_configured_sources_that_overlap_are_both_left_out_and_their_plugins_served() -> None:
    a = Owned("a-one", "shared://", SourceSetting('servers "one"', "prefixes"))
    a_other = Owned("a-two", "two://", SourceSetting('servers "two"', "prefixes"))
    b = Owned("b-svc", "shared://deep/", SourceSetting('services "svc"', "prefix"))
    composed = compose({"a": Plugin(a, a_other), "b": Plugin(b), "c": Plugin(Owned("c", "c://"))}, strict=False)
    assert not composed.failures, composed.failures
    assert {r.name: r.status for r in composed.records} == {"a": "loaded", "b": "loaded", "c": "loaded"}
    assert _providers(composed) == {"a-two", "c"}  # the other source of a, and the bystander
    said = sorted(str(p) for p in composed.assembly.left_out)
    assert len(said) == 2 and all("neither is served" in s for s in said)
    assert "[plugins.a] servers \"one\" prefixes: 'shared://' overlaps 'shared://deep/' of [plugins.b]" in said[0]
    assert "[plugins.b] services \"svc\" prefix: 'shared://deep/' overlaps 'shared://' of [plugins.a]" in said[1]


def test_two_plugins_own_prefixes_that_overlap_are_both_refused_the_operator_told_to_deny_one() -> None:
    plugins = {"a": Plugin(Owned("a-own", "shared://")), "b": Plugin(Owned("b-own", "shared://deep/"))}
    composed = compose(plugins, strict=False)
    assert {r.name: r.status for r in composed.records} == {"a": "rejected", "b": "rejected"}
    assert not composed.assembly.left_out
    [problem] = composed.assembly.problems
    assert problem.rule == "prefix-overlap"
    assert problem.fix.startswith('serve only one of them: deny = ["b"] or deny = ["a"] in the config (the operator)')
    assert problem.fix.endswith("or give each provider a prefix of its own (their authors)")


def test_a_source_whose_provider_has_a_plugins_provider_name_is_left_out_alone() -> None:
    """The same kind for provider names: a configured source never displaces a plugin's own
    provider, and the two plugins' own providers of one name still refuse both."""
    mine = Owned("native-resources", "mine://", SourceSetting('servers "mine"', "prefixes"))
    kept = Owned("a-kept", "kept://", SourceSetting('servers "kept"', "prefixes"))
    composed = compose(
        {"native": Plugin(Owned("native-resources", "native://")), "a": Plugin(mine, kept)}, strict=False
    )
    assert not composed.failures, composed.failures
    assert {r.name: r.status for r in composed.records} == {"a": "loaded", "native": "loaded"}
    assert {d.provider.prefixes for d in composed.assembly.declared} == {("native://",), ("kept://",)}
    [line] = composed.assembly.left_out
    assert line.message == (
        "duplicate-provider: [plugins.a] servers \"mine\" makes a provider named 'native-resources', as plugin "
        "native does; a configured source never displaces another provider: only that source is left out"
    )
    over = Owned("native-resources", "native://deep/", SourceSetting('servers "over"', "prefixes"))
    once = compose({"native": Plugin(Owned("native-resources", "native://")), "a": Plugin(over)}, strict=False)
    assert [p.message.split(":")[0] for p in once.assembly.left_out] == ["prefix-overlap"]  # told once, first rule
    twice = compose({"x": Plugin(Owned("same", "x://")), "y": Plugin(Owned("same", "y://"))}, strict=False)
    assert {r.name: r.status for r in twice.records} == {"x": "rejected", "y": "rejected"}
    assert [p.rule for p in twice.assembly.problems] == ["duplicate-provider"]


@pytest.mark.parametrize("source_plugin", ["a", "z"])
def test_two_plugins_providers_of_one_name_are_refused_whatever_source_shares_it(source_plugin: str) -> None:
    """Tester eighteen: with a source's provider of the name compared first, two plugins' own
    providers of that name were compared with it alone, never with each other, and both served."""
    plugins = {
        source_plugin: Plugin(Owned("same", "s://", SourceSetting('servers "s"', "prefixes"))),
        "x": Plugin(Owned("same", "x://")),
        "y": Plugin(Owned("same", "y://")),
    }
    composed = compose(plugins, strict=False)
    statuses = {r.name: r.status for r in composed.records}
    assert (statuses["x"], statuses["y"], statuses[source_plugin]) == ("rejected", "rejected", "loaded")
    assert [p.rule for p in composed.assembly.problems] == ["duplicate-provider"]
    # judged against what is served (tester nineteen): x and y serve nothing, so the source serves
    assert not composed.assembly.left_out, [str(p) for p in composed.assembly.left_out]
    assert [(d.plugin, d.provider.name) for d in composed.assembly.declared] == [(source_plugin, "same")]
