"""An SDK v2 server (``MCPServer``) whose prompt and tool results carry an embedded resource and a
resource link: the upstream of tests/test_upstream_embeds.py, over stdio.

``show(which)`` is a prompt whose one message embeds ``emb://a/<which>``, and whose second links
it; ``cite(which)`` is a tool answering the same two blocks. ``emb://a/public`` and
``emb://a/secret`` are its resources; ``other://x`` is outside what the composition serves.
"""

from __future__ import annotations

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage

server = MCPServer("embedding-upstream", version="1.0", log_level="WARNING")
TEXTS = {"public": "public words", "secret": "SECRET WORDS", "other": "words from elsewhere"}


def _blocks(which: str) -> list[types.EmbeddedResource | types.ResourceLink]:
    uri = "other://x" if which == "other" else f"emb://a/{which}"
    contents = types.TextResourceContents(uri=uri, text=TEXTS[which], mime_type="text/plain")
    return [
        types.EmbeddedResource(type="resource", resource=contents),
        types.ResourceLink(type="resource_link", uri=uri, name=which),
    ]


@server.resource("emb://a/public", mime_type="text/plain")
def public() -> str:
    return TEXTS["public"]


@server.resource("emb://a/secret", mime_type="text/plain")
def secret() -> str:
    return TEXTS["secret"]


@server.prompt(description="Shows a resource, embedded and linked.")
def show(which: str) -> list[UserMessage]:
    return [UserMessage(block) for block in _blocks(which)]


@server.tool(description="Cites a resource, embedded and linked.")
def cite(which: str) -> list[types.EmbeddedResource | types.ResourceLink]:
    return _blocks(which)


if __name__ == "__main__":
    server.run()
