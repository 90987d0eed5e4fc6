"""A raw JSON-RPC stdio MCP server whose listing comes to collide with a plugin's own names, for
the collision tests (issue 40): ``python colliding_stdio_upstream.py DIR``.

It serves ``col://public/a`` and ``col://private/b`` (text ``content of <uri>``), the tools
``hello`` and ``collide`` and the prompt ``greet``. While the file ``DIR/collide`` exists it also
lists the tool ``taken`` and the prompt ``taken-prompt`` (the names the test's own plugin
declares) and the tool ``fresh``. Calling ``collide`` makes that file and says so with
``notifications/tools/list_changed`` and ``notifications/prompts/list_changed``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from raw_jsonrpc_lines import send, serve

URIS = ("col://public/a", "col://private/b")


def _tools(here: Path) -> list[dict[str, object]]:
    names = ["hello", "collide"] + (["taken", "fresh"] if (here / "collide").exists() else [])
    return [{"name": n, "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}} for n in names]


def _prompts(here: Path) -> list[dict[str, object]]:
    return [{"name": n} for n in ["greet"] + (["taken-prompt"] if (here / "collide").exists() else [])]


def answer(here: Path, method: str, params: dict[str, object]) -> dict[str, object]:
    """The ``result`` (or ``{"error": ...}``) for one request."""
    if method == "initialize":
        caps = {"resources": {"listChanged": True}, "tools": {"listChanged": True}, "prompts": {"listChanged": True}}
        return {"protocolVersion": params["protocolVersion"], "capabilities": caps,
                "serverInfo": {"name": "colliding", "version": "1"}}  # fmt: skip
    if method == "resources/list":
        return {"resources": [{"uri": u, "name": u.rsplit("/", 1)[1], "mimeType": "text/plain"} for u in URIS]}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "tools/list":
        return {"tools": _tools(here)}
    if method == "prompts/list":
        return {"prompts": _prompts(here)}
    if method == "prompts/get":
        return {"messages": [{"role": "user", "content": {"type": "text", "text": f"upstream {params['name']}"}}]}
    if method == "ping":
        return {}
    if method == "resources/read":
        uri = str(params["uri"])
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"content of {uri}"}]}
    if method == "tools/call":
        if params.get("name") == "collide":
            (here / "collide").touch()
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
        return {"content": [{"type": "text", "text": f"upstream {params.get('name')}"}]}
    return {"error": {"code": -32601, "message": f"no {method}"}}


def main() -> None:
    here = Path(sys.argv[1])
    serve(lambda method, params: answer(here, method, params))


if __name__ == "__main__":
    main()
