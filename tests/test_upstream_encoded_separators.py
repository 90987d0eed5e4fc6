"""A deny on an upstream's ``private/*`` holds against separators the gate never saw.

Tester, round 8: an SDK ``MCPServer`` upstream serving ``sdk://{+path}`` decodes the URI it is
sent once more. ``sdk://private%252Fsecret`` was judged by the gate as one segment
(``private%2Fsecret``), forwarded as ``sdk://private%2Fsecret``, and served ``private/secret``
past a deny on ``sdk://private/*``. Every such spelling is now refused (-32602) before the gate,
and the upstream is never asked (it records every path it serves).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import MCPError
from upstream_support import behind_a_private_deny

from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

UPSTREAM = """
import json, sys
from mcp.server.mcpserver import MCPServer
server = MCPServer("files-upstream", log_level="WARNING")
LOG = sys.argv[1]

@server.resource("sdk://{+path}", mime_type="text/plain")
def files(path: str) -> str:
    with open(LOG, "a") as log:
        log.write(json.dumps(path) + "\\n")
    return "SECRET" if path.startswith("private/") else "public " + path

server.run("stdio")
"""

SPELLINGS = [
    "sdk://private%252Fsecret",
    "sdk://%2570rivate%252Fsecret",
    "sdk://private%25%32%46secret",
    "sdk://private%25252Fsecret",
    "sdk://private%EF%BC%8Fsecret",
]


@pytest.fixture
def served(tmp_path: Path) -> tuple[object, Path]:
    return behind_a_private_deny(tmp_path, "files", UPSTREAM, "sdk://")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_separator_left_encoded_never_reaches_a_denied_upstream_path(
    served: tuple[object, Path], mode: str
) -> None:
    composition, log = served
    async with composition.running(), connect(composition, mode=mode) as client:  # type: ignore[attr-defined]
        public = await client.read_resource("sdk://public/a")
        assert public.contents[0].text == "public public/a"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as denied:
            await client.read_resource("sdk://private/secret")
        assert "permission-denied" in denied.value.error.message
        for uri in SPELLINGS:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.error.code == -32602, (uri, refused.value.error)
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    assert asked == ["public/a"], asked  # the upstream served nothing else
