"""A raw JSON-RPC stdio MCP server (no SDK) serving list pages exactly as a test writes them, for
the item-by-item listing tests: ``python paged_stdio_upstream.py SPEC.json``.

``SPEC.json``: ``{"era": "2025" | "2026", "pages": {"tools/list": [page, ...], ...}}``; a list
request without a cursor gets page 0, one with cursor ``"pN"`` page N. Each page is sent as
written (any JSON: a test may send a page that is not an object); in the 2026 era a page that is
an object gets ``resultType``, ``ttlMs`` and ``cacheScope`` unless it has them. Every
``resources/read`` answers ``content of URI``, every ``tools/call`` ``called NAME``, every
``prompts/get`` one message ``prompt NAME``. In the 2025 era ``server/discover`` is answered
-32601 (so the client falls back to ``initialize``); in the 2026 era it is answered.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from raw_jsonrpc_lines import serve

CAPS = {"resources": {}, "tools": {}, "prompts": {}}
MODERN = {"resultType": "complete", "ttlMs": 0, "cacheScope": "public"}


def answer(spec: dict[str, Any], method: str, params: dict[str, Any]) -> Any:
    """The ``result`` (or ``{"error": ...}``) for one request."""
    modern = spec.get("era") == "2026"
    if method == "server/discover":
        if not modern:
            return {"error": {"code": -32601, "message": "no server/discover"}}
        info = {"io.modelcontextprotocol/serverInfo": {"name": "paged", "version": "1"}}
        return {"supportedVersions": ["2026-07-28"], "capabilities": CAPS, "_meta": info, **MODERN}
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"], "capabilities": CAPS,
                "serverInfo": {"name": "paged", "version": "1"}}  # fmt: skip
    pages = spec.get("pages", {})
    if method in ("resources/list", "resources/templates/list", "tools/list", "prompts/list"):
        cursor = params.get("cursor")
        listed = pages.get(method, [{}])
        page = listed[int(cursor[1:]) if isinstance(cursor, str) else 0]
        return {**MODERN, **page} if modern and isinstance(page, dict) else page
    done = MODERN if modern else {}
    if method == "resources/read":
        uri = params["uri"]
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"content of {uri}"}], **done}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": f"called {params['name']}"}], **done}
    if method == "prompts/get":
        text = {"type": "text", "text": f"prompt {params['name']}"}
        return {"messages": [{"role": "user", "content": text}], **done}
    if method == "ping":
        return {}
    return {"error": {"code": -32601, "message": f"no {method}"}}


def main() -> None:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    serve(lambda method, params: answer(spec, method, params))


if __name__ == "__main__":
    main()
