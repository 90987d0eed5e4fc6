"""The scaffold's tool under a policy (tester 31 F9): rendered, imported in-process and called.

``mcp-providers new`` teaches by example: its ``count_words`` must not count a note the caller may
not read, nor name such a note's id in its error (the index and the template already hide it).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import MCPError

from mcp_providers._cli.scaffold import render_plugin_package
from mcp_providers.plugins import policy
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

NAME = "policy_notes_t31"
TODO = "policy-notes-t31://notes/by-id/todo"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("copier")
    rendered = render_plugin_package(NAME, tmp_path_factory.mktemp("rendered") / "pkg")
    sys.path.insert(0, str(rendered / "src"))
    try:
        yield importlib.import_module(f"mcp_providers_{NAME}.plugin").plugin
    finally:
        sys.path.remove(str(rendered / "src"))


async def test_the_scaffolds_tool_counts_no_denied_note_and_names_none(plugin: Any) -> None:
    rules = [{"effect": "deny", "actions": ["read"], "targets": [TODO]}]
    composition = compose({NAME: plugin, "policy": policy}, {"policy": {"rules": rules}})
    async with connect(composition) as client:
        with pytest.raises(MCPError) as denied:
            await client.call_tool(f"{NAME}_count_words", {"note_id": "todo"})
        assert denied.value.code == -32003
        unknown = await client.call_tool(f"{NAME}_count_words", {"note_id": "nope"})
        text = unknown.content[0].text  # type: ignore[union-attr]
        assert unknown.is_error and "welcome" in text and "todo" not in text, text
        counted = await client.call_tool(f"{NAME}_count_words", {"note_id": "welcome"})
        assert not counted.is_error and counted.structured_content == {"note_id": "welcome", "words": 3}
