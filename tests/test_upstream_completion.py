"""An upstream's completions reach the downstream client, filtered by policy (tester, round 8).

``completion/complete`` on an upstream's template or prompt was never forwarded: every upstream
template completed to ``[]``. It is now asked of the upstream (when it offers completions), and
the core keeps only values the caller may see, as for a native provider: a deny on
``sdk://private/*`` hides ``private/secret``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_types import PromptReference, ResourceTemplateReference
from prefork import upstream_script

from mcp_providers.plugins import policy, upstream
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

UPSTREAM = """
from mcp.server.mcpserver import MCPServer
from mcp_types import Completion
server = MCPServer("completing", log_level="WARNING")

@server.resource("sdk://{+path}", mime_type="text/plain")
def files(path: str) -> str:
    return path

@server.prompt()
def review(topic: str) -> str:
    return "review " + topic

@server.completion()
async def complete(ref, argument, context):
    if argument.name == "path":
        values = ["public/a", "public/b", "private/secret"]
    else:
        values = ["security", "speed"]
    return Completion(values=[v for v in values if v.startswith(argument.value)])

server.run("stdio")
"""


@pytest.fixture
def composition(tmp_path: Path) -> object:
    script = tmp_path / "completing_upstream.py"
    script.write_text(UPSTREAM)
    server = {"name": "c", **upstream_script(str(script)), "prefixes": ["sdk://"],
              "tool_prefix": "c_"}  # fmt: skip  # through the fork server: the SDK is imported already
    rules = [{"effect": "deny", "targets": ["sdk://private/*"]}]
    settings = {"upstream": {"servers": [server]}, "policy": {"rules": rules}}
    return compose({"upstream": upstream, "policy": policy}, settings)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_upstream_templates_and_prompts_complete_through_the_composition(
    composition: object, mode: str
) -> None:
    async with composition.running(), connect(composition, mode=mode) as client:  # type: ignore[attr-defined]
        ref = ResourceTemplateReference(type="ref/resource", uri="sdk://{+path}")
        paths = await client.complete(ref, {"name": "path", "value": ""})
        review = PromptReference(type="ref/prompt", name="c_review")
        prompt = await client.complete(review, {"name": "topic", "value": "s"})
    assert paths.completion.values == ["public/a", "public/b"]  # private/secret: denied, never shown
    assert prompt.completion.values == ["security", "speed"]
