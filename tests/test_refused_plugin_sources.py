"""A configured source (or a listed declaration) is judged against what is served (tester nineteen,
finding 6): a plugin refused by the checks (two plugins declaring one tool), or whose provider
failed to declare, serves nothing, so a source under its prefix, making a provider of its name or
listing its tool's name costs nothing, as when the plugin is refused earlier (its settings). The
order in which the plugin is refused never changes what the source costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel
from test_source_prefix_overlap import Owned

from mcp_providers import SourceSetting, Tool, ToolProvider, ToolResult, hookimpl
from mcp_providers.models import ORIGIN_KEY
from mcp_providers.testing import compose

SOURCE = SourceSetting('servers "s"', "prefixes")


class _Empty(BaseModel):
    pass


class Tools(ToolProvider):
    """One tool ``tool`` (made from a listing when ``listed``); raises on ``tools()`` when ``broken``."""

    def __init__(self, name: str, tool: str = "same_tool", *, listed: bool = False, broken: bool = False) -> None:
        self.name, self.tool, self.listed, self.broken = name, tool, listed, broken

    def tools(self) -> Sequence[Tool]:
        if self.broken:
            raise RuntimeError("cannot list")
        meta = {ORIGIN_KEY: {"name": self.tool}} if self.listed else None
        return [Tool(name=self.tool, description="d", input_model=_Empty, meta=meta)]

    async def call(self, call: Any) -> ToolResult:
        return ToolResult(text=self.name)


class Mixed:
    """A plugin object serving resource and tool providers; with settings it takes none."""

    def __init__(self, *providers: object) -> None:
        self.providers = providers

    @hookimpl
    def register_resource_providers(self) -> list[object]:
        return [p for p in self.providers if not isinstance(p, ToolProvider)]

    @hookimpl
    def register_tool_providers(self) -> list[object]:
        return [p for p in self.providers if isinstance(p, ToolProvider)]


SOURCES = {
    "prefix": Owned("src-res", "x://", SOURCE),  # under x's prefix
    "name": Owned("x-res", "s://", SOURCE),  # a provider named like x's
}


def _x(*, broken: bool = False) -> Mixed:
    return Mixed(Owned("x-res", "x://"), Tools("x-tools", broken=broken))


def _served(composed: Any) -> set[str]:
    return {d.provider.name for d in composed.assembly.declared}


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_a_source_costs_nothing_beside_a_plugin_the_checks_refuse(kind: str) -> None:
    plugins = {"x": _x(), "y": Mixed(Tools("y-tools")), "src": Mixed(SOURCES[kind])}
    composed = compose(plugins, strict=False)
    assert {r.name: r.status for r in composed.records} == {"src": "loaded", "x": "rejected", "y": "rejected"}
    assert _served(composed) == {SOURCES[kind].name}
    assert {e.declaration.uri for e in composed.catalog.resources} == {f"{SOURCES[kind].prefixes[0]}x"}
    assert not composed.assembly.left_out, [str(p) for p in composed.assembly.left_out]
    assert [p.rule for p in composed.assembly.problems] == ["duplicate-tool"]  # why x and y are refused


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_both_paths_agree_refused_by_settings_or_by_the_checks(kind: str) -> None:
    """x refused for its settings (it takes none) never declares: the source is served; refused by a
    provider that failed to declare, the same."""
    by_settings = compose({"x": _x(), "src": Mixed(SOURCES[kind])}, {"x": {"a": 1}}, strict=False)
    by_declaring = compose({"x": _x(broken=True), "src": Mixed(SOURCES[kind])}, strict=False)
    for composed in (by_settings, by_declaring):
        assert {r.name: r.status for r in composed.records} == {"src": "loaded", "x": "rejected"}
        assert _served(composed) == {SOURCES[kind].name}
        assert not composed.assembly.left_out, [str(p) for p in composed.assembly.left_out]


def test_a_listed_tool_costs_nothing_beside_a_refused_plugins_tool() -> None:
    plugins = {"x": _x(), "y": Mixed(Tools("y-tools")), "src": Mixed(Tools("src-tools", listed=True))}
    composed = compose(plugins, strict=False)
    assert {e.provider.name for e in composed.catalog.tools} == {"src-tools"}
    assert not composed.assembly.left_out, [str(p) for p in composed.assembly.left_out]


def test_a_source_beside_a_served_plugin_is_still_left_out() -> None:
    """The guard: judged against what is served, a served plugin's prefix still wins."""
    composed = compose({"x": _x(), "src": Mixed(SOURCES["prefix"])}, strict=False)
    assert {r.name: r.status for r in composed.records} == {"src": "loaded", "x": "loaded"}
    assert _served(composed) == {"x-res", "x-tools"}
    [line] = composed.assembly.left_out
    assert "prefix-overlap: [plugins.src] servers \"s\" prefixes: 'x://' overlaps 'x://' of provider 'x-res'" in str(
        line
    )


def test_a_source_left_in_is_then_judged_like_any_other() -> None:
    """Two sources under a refused plugin's prefix: served once x is refused, they are judged
    against each other (both left out), never against x."""
    other = Owned("src2-res", "x://", SourceSetting('servers "t"', "prefixes"))
    plugins = {"x": _x(), "y": Mixed(Tools("y-tools")), "src": Mixed(SOURCES["prefix"], other)}
    composed = compose(plugins, strict=False)
    assert _served(composed) == set()
    lines = [str(p) for p in composed.assembly.left_out]
    assert len(lines) == 2 and all("both are configured sources" in line for line in lines), lines
    assert not any("plugin x" in line for line in lines), lines


def test_two_plugins_own_tool_behind_a_listed_one_are_still_both_refused() -> None:
    """The listed tool came first and is left out; it never stands in for the two own tools behind
    it, which are judged against each other (never both served under one name)."""
    listed = Mixed(Tools("src-tools", listed=True))
    plugins = {"src": listed, "x": Mixed(Tools("x-tools")), "y": Mixed(Tools("y-tools"))}
    composed = compose(plugins, strict=False)
    assert {r.name: r.status for r in composed.records} == {"src": "loaded", "x": "rejected", "y": "rejected"}
    [problem] = composed.assembly.problems
    assert (problem.rule, problem.plugins, problem.value) == ("duplicate-tool", ("x", "y"), "same_tool")
    assert {e.provider.name for e in composed.catalog.tools} == {"src-tools"}
