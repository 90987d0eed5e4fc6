"""The notes server of the authoring issue (issue 39, must-show 1), in the decorator form.

``docs/examples/notes.py`` is the file the docs show; this test imports that very file, checks it
stays within 60 lines and 8 imported names, and runs the same client script against it in both
protocol eras: list with icons, read the index, read a note, complete both variables, call the
search tool with structured output, read a missing note (an error).
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from mcp import MCPError

from mcp_providers.testing import check, compose, connect

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "notes.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notes_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_is_at_most_60_lines_importing_at_most_8_names() -> None:
    source = EXAMPLE.read_text()
    assert len(source.splitlines()) <= 60
    imported = [
        alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert len(imported) <= 8, imported


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_notes_client_script(mode: str) -> None:
    example = _load()
    composition = compose({"notes": example.notes}, {"notes": {"max_results": 1}})
    assert await check(composition) == []
    async with connect(composition, mode) as client:  # type: ignore[arg-type]
        resources = (await client.list_resources()).resources
        assert [(r.uri, r.mime_type) for r in resources] == [("notes://index", "application/json")]
        assert resources[0].icons and resources[0].icons[0].src == "https://example.com/notes.png"
        templates = (await client.list_resource_templates()).resource_templates
        assert [(t.uri_template, t.mime_type) for t in templates] == [("notes://{notebook}/{note}", "text/plain")]

        index = json.loads((await client.read_resource("notes://index")).contents[0].text)  # type: ignore[union-attr]
        assert index == {"work": ["roadmap", "standup"], "home": ["groceries", "plants"]}
        note = (await client.read_resource("notes://work/standup")).contents[0]
        assert note.text == "Daily at 9:30 in room 4."  # type: ignore[union-attr]

        ref = {"type": "ref/resource", "uri": "notes://{notebook}/{note}"}
        books = await client.complete(ref, {"name": "notebook", "value": "h"})  # type: ignore[arg-type]
        assert books.completion.values == ["home"]
        names = await client.complete(
            ref,  # type: ignore[arg-type]
            {"name": "note", "value": "g"},
            context_arguments={"notebook": "home"},
        )
        assert names.completion.values == ["groceries"]

        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["notes_search"]
        assert tools[0].description == "Find the notes whose text contains `query` (case-insensitive)."
        assert tools[0].input_schema["required"] == ["query"]
        assert tools[0].output_schema is not None and "hits" in tools[0].output_schema["properties"]
        assert tools[0].annotations is not None and tools[0].annotations.read_only_hint is True
        found = await client.call_tool("notes_search", {"query": "the"})
        assert not found.is_error
        # settings are validated and reach the function: max_results = 1
        assert found.structured_content == {"hits": [{"notebook": "work", "note": "roadmap"}]}

        with pytest.raises(MCPError) as missing:
            await client.read_resource("notes://work/nothing")
        assert "no note 'nothing' in notebook 'work'" in missing.value.error.message


def test_invalid_settings_are_refused_naming_the_field() -> None:
    example = _load()
    composition = compose({"notes": example.notes}, {"notes": {"max_results": 0}}, strict=False)
    assert any("max_results" in line for line in composition.failures), composition.failures


@pytest.mark.anyio
async def test_the_readme_plugin_runs_as_shown() -> None:
    readme = (EXAMPLE.parents[2] / "README.md").read_text()
    section = readme.split("## Writing a provider plugin", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    async with connect(compose({"notes": namespace["notes"]})) as client:
        assert (await client.read_resource("notes://today")).contents[0].text == "buy milk"  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="no note for 'tomorrow'"):
            await client.read_resource("notes://tomorrow")
