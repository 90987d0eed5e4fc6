"""An upstream's embedded resources and resource links, in prompt messages and tool results, reach
the core as such under the URI this server serves, so the caller's rights are checked on them as
on any read: a deny on a URI holds for a prompt or tool that embeds it (a tester read a denied
resource through a prompt, which had been flattened to text). What this server does not serve is
dropped, never passed on under the upstream's own URI. Real upstream: tests/embedding_upstream.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError

from mcp_providers.plugins import policy, upstream
from mcp_providers.testing import compose, connect

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SERVER = str(Path(__file__).with_name("embedding_upstream.py"))
DENIED = "docs://emb/a/secret"  # emb://a/secret under the namespace "docs"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def composed() -> Any:
    settings = {
        "upstream": {"servers": [{"name": "emb", "command": sys.executable, "args": [SERVER], "namespace": "docs"}]},
        "policy": {"rules": [{"effect": "deny", "actions": ["read"], "targets": [DENIED], "reason": "not for you"}]},
    }
    c = compose({"upstream": upstream, "policy": policy}, settings)
    async with c.running():
        yield c


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_a_prompt_embedding_a_denied_resource_is_refused(composed: Any, era: str) -> None:
    async with connect(composed, era) as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("show", {"which": "secret"})
    assert refused.value.code == -32003
    assert "SECRET" not in str(refused.value)


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_a_tool_result_embedding_a_denied_resource_is_refused(composed: Any, era: str) -> None:
    async with connect(composed, era) as client:
        try:
            result = await client.call_tool("cite", {"which": "secret"})
        except MCPError as refused:
            assert refused.code == -32003
        else:
            assert result.is_error and "SECRET" not in result.model_dump_json()


async def test_an_allowed_embed_and_link_are_served_under_the_served_uri(composed: Any) -> None:
    async with connect(composed) as client:
        shown = await client.get_prompt("show", {"which": "public"})
        cited = await client.call_tool("cite", {"which": "public"})
    embedded, linked = (m.content for m in shown.messages)
    assert isinstance(embedded, types.EmbeddedResource) and isinstance(linked, types.ResourceLink)
    assert str(embedded.resource.uri) == str(linked.uri) == "docs://emb/a/public"
    assert getattr(embedded.resource, "text", None) == "public words"
    uris = {str(b.resource.uri) if isinstance(b, types.EmbeddedResource) else str(b.uri) for b in cited.content}
    assert uris == {"docs://emb/a/public"}


async def test_what_this_server_does_not_serve_is_dropped_not_passed_on(composed: Any) -> None:
    async with connect(composed) as client:
        shown = await client.get_prompt("show", {"which": "other"})
        cited = await client.call_tool("cite", {"which": "other"})
    assert shown.messages == []
    assert "elsewhere" not in cited.model_dump_json() and "other://x" not in cited.model_dump_json()
