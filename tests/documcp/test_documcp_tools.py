"""recommend_ssg and generate_config through the server: schemas, annotations, results, errors."""

from __future__ import annotations

import tomllib
from typing import Any

import mcp_types as types
import pytest
import yaml
from documcp_support import read_text
from mcp import Client

from mcp_providers.plugins.documcp.registry import SSG_IDS, SSGS
from mcp_providers.plugins.documcp.tools import RecommendIn, recommend

pytestmark = pytest.mark.anyio


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await client.call_tool(name, arguments)


async def test_tools_are_read_only_with_output_schemas(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"recommend_ssg", "generate_config"}
    for tool in tools.values():
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.output_schema is not None


async def test_recommend_is_deterministic_and_ranks_every_ssg(client: Client) -> None:
    facts = {"team_language": "python", "purposes": ["documentation"], "priority": "simplicity"}
    first = await _call(client, "recommend_ssg", facts)
    second = await _call(client, "recommend_ssg", facts)
    assert not first.is_error
    assert first.structured_content == second.structured_content
    out = first.structured_content
    assert out is not None
    ranked = out["recommendations"]
    assert sorted(r["ssg"] for r in ranked) == sorted(SSG_IDS)
    assert [r["rank"] for r in ranked] == list(range(1, len(SSG_IDS) + 1))
    scores = [r["score"] for r in ranked]
    assert scores == sorted(scores, reverse=True)
    assert out["recommended"] == ranked[0]["ssg"]


@pytest.mark.parametrize(
    ("facts", "winner"),
    [
        ({"team_language": "python", "purposes": ["documentation"], "priority": "simplicity"}, "mkdocs"),
        ({"needs": ["versioning"], "purposes": ["api-docs"]}, "docusaurus"),
        ({"team_language": "ruby", "needs": ["github-pages-native"]}, "jekyll"),
        ({"team_language": "go", "expected_pages": 5000}, "hugo"),
        (
            {"team_language": "typescript", "needs": ["built-in-search", "i18n"], "purposes": ["multilingual-docs"]},
            "astro",
        ),
    ],
)
def test_recommend_follows_the_stated_facts(facts: dict[str, Any], winner: str) -> None:
    out = recommend(RecommendIn.model_validate(facts))
    assert out.recommended == winner
    top = out.recommendations[0]
    # The score is the sum of the points its reasons list.
    assert top.score == sum(int(r.split()[0]) for r in top.reasons)


def test_recommend_lists_missing_features_as_tradeoffs() -> None:
    out = recommend(RecommendIn(needs=("versioning",)))
    for rec in out.recommendations:
        assert ("no built-in versioning" in rec.tradeoffs) == (rec.ssg != "docusaurus")


async def test_recommend_rejects_an_unknown_purpose(client: Client) -> None:
    result = await _call(client, "recommend_ssg", {"purposes": ["wikis"]})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "unknown purposes ['wikis']" in text and "documentation" in text


async def test_generate_config_renders_and_links_its_template(client: Client) -> None:
    result = await _call(
        client,
        "generate_config",
        {"ssg": "mkdocs", "site_name": "Widgets", "repository_url": "https://github.com/acme/widgets"},
    )
    assert not result.is_error
    out = result.structured_content
    assert out is not None
    assert out["config_file"] == "mkdocs.yml"
    config = yaml.safe_load(out["text"])
    assert config["site_name"] == "Widgets"
    assert config["site_url"] == "https://acme.github.io/widgets/"
    assert config["repo_url"] == "https://github.com/acme/widgets"
    links = [c for c in result.content if isinstance(c, types.ResourceLink)]
    assert [link.uri for link in links] == ["documcp://templates/mkdocs-config"]
    # The link resolves, and the text came from that template.
    template = await read_text(client, links[0].uri)
    assert template.mime_type == links[0].mime_type == out["mime_type"]


async def test_generate_config_for_a_user_site_serves_at_the_root(client: Client) -> None:
    result = await _call(
        client,
        "generate_config",
        {"ssg": "hugo", "site_name": "Acme", "repository_url": "https://github.com/Acme/acme.github.io"},
    )
    out = result.structured_content
    assert out is not None
    assert tomllib.loads(out["text"])["baseURL"] == "https://acme.github.io/"
    assert out["values"]["base_path"] == "/"


async def test_generate_config_without_repository_says_what_to_replace(client: Client) -> None:
    result = await _call(client, "generate_config", {"ssg": "jekyll", "site_name": "Docs"})
    out = result.structured_content
    assert out is not None
    assert any("repository_url not given" in note for note in out["notes"])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"ssg": "gatsby", "site_name": "X"}, "unknown SSG 'gatsby'; expected one of: jekyll"),
        (
            {"ssg": "hugo", "site_name": "X", "repository_url": "https://gitlab.com/a/b"},
            "expected https://github.com/<owner>/<repo>",
        ),
        ({"ssg": "hugo", "site_name": "X", "site_url": "ftp://x"}, "must be an absolute http(s) URL"),
        ({"ssg": "hugo", "site_name": "X", "branch": "../etc"}, "not a plain git branch name"),
        ({"ssg": "hugo", "site_name": "X", "language": "English"}, "not a BCP 47 tag"),
        ({"ssg": "hugo"}, "site_name"),
    ],
)
async def test_generate_config_rejects_bad_input_clearly(
    client: Client, arguments: dict[str, Any], message: str
) -> None:
    result = await _call(client, "generate_config", arguments)
    assert result.is_error
    assert message in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("ssg", [s.id for s in SSGS])
async def test_generate_config_writes_nothing(
    client: Client, ssg: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = await _call(client, "generate_config", {"ssg": ssg, "site_name": "X"})
    assert not result.is_error
    assert list(tmp_path.iterdir()) == []
