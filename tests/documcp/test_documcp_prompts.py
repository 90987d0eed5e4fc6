"""Documentation prompts: listing, completion of closed arguments, rendering and bad values."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp import Client, MCPError

from mcp_providers.plugins.documcp.registry import SSG_IDS, by_id

pytestmark = pytest.mark.anyio

WRITERS = ("tutorial-writer", "howto-guide-writer", "reference-writer", "explanation-writer")


async def test_prompts_are_listed_with_required_project_path(client: Client) -> None:
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"setup-documentation", *WRITERS}
    for prompt in prompts.values():
        arguments = {a.name: a for a in prompt.arguments or []}
        assert arguments["project_path"].required is True
        assert not arguments["ssg_type"].required


async def test_ssg_argument_completes_to_registry_ids(client: Client) -> None:
    for name in ("setup-documentation", *WRITERS):
        ref = types.PromptReference(type="ref/prompt", name=name)
        everything = await client.complete(ref, {"name": "ssg_type", "value": ""})
        assert everything.completion.values == list(SSG_IDS)
        some = await client.complete(ref, {"name": "ssg_type", "value": "e"})
        assert some.completion.values == [i for i in SSG_IDS if i.startswith("e")]


async def test_writer_prompt_names_the_page_kind_and_the_ssg_folder(client: Client) -> None:
    result = await client.get_prompt(
        "howto-guide-writer", {"project_path": "./widgets", "ssg_type": "astro", "problem": "rotate keys"}
    )
    (message,) = result.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    text = message.content.text
    astro = by_id("astro")
    assert astro is not None
    assert "./widgets" in text and "how-to guide" in text
    assert f"{astro.content_dir}/how-to-guides/" in text
    assert '"problem": "rotate keys"' in text


async def test_setup_prompt_without_ssg_points_at_recommend_ssg(client: Client) -> None:
    result = await client.get_prompt("setup-documentation", {"project_path": "."})
    text = result.messages[0].content.text  # type: ignore[union-attr]
    assert "recommend_ssg" in text
    assert "documcp://templates/diataxis-structure" in text


async def test_unknown_ssg_value_is_invalid_params(client: Client) -> None:
    with pytest.raises(MCPError) as caught:
        await client.get_prompt("tutorial-writer", {"project_path": ".", "ssg_type": "gatsby"})
    assert caught.value.code == types.INVALID_PARAMS
    assert "ssg_type 'gatsby' is not one of: jekyll" in caught.value.message
