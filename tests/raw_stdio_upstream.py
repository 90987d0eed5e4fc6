"""A raw JSON-RPC stdio MCP server (no SDK) that misbehaves on purpose, for the upstream liveness
tests: ``python raw_stdio_upstream.py DIR [--lc] [--banner] [--flip]``.

It serves ``raw://a/one``, ``raw://a/fail`` (answered with error -32000, the generic server
error) and ``raw://a/bye`` (the process exits instead of answering), and the tool ``hello``;
``numeric`` is answered with a result that is not an object (``12345``), ``empty`` with neither a
result nor an error; ``grow`` adds the tool
``extra`` (lasting: the file ``DIR/grown``) and says so with
``notifications/tools/list_changed``; ``bye_later`` answers, then exits 0.3 s later, while idle.
Each ``initialize`` appends a line to ``DIR/connects``.
It exits at once (status 3) while ``DIR/down`` exists, and 1 s after its handshake while
``DIR/brief`` exists. ``--lc``: it sends the three
``list_changed`` notifications right after ``notifications/initialized``, on every connection.
``--banner``: a non-JSON line on stdout before each ``resources/read`` answer. ``--flip``: each
``tools/list`` says ``hello`` is read-only, then that it is not, and so on (counted in ``DIR/flips``).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from raw_jsonrpc_lines import NOTHING, send, serve


def tools(here: Path, flags: list[str]) -> list[dict[str, object]]:
    found: list[dict[str, object]] = [{"name": "hello", "inputSchema": {"type": "object"}}]
    if "--flip" in flags:
        flips = here / "flips"
        count = len(flips.read_text()) if flips.exists() else 0
        flips.write_text("x" * (count + 1))
        found[0]["annotations"] = {"readOnlyHint": count % 2 == 0}
    found.append({"name": "grow", "inputSchema": {"type": "object"}})
    found.append({"name": "numeric", "inputSchema": {"type": "object"}})
    found.append({"name": "empty", "inputSchema": {"type": "object"}})
    found.append({"name": "bye_later", "inputSchema": {"type": "object"}})
    if (here / "grown").exists():
        found.append({"name": "extra", "inputSchema": {"type": "object"}})
    return found


def answer(here: Path, flags: list[str], method: str, params: dict[str, object]) -> dict[str, object]:
    """The ``result`` (or ``{"error": ...}``) for one request."""
    if method == "initialize":
        with (here / "connects").open("a") as log:
            log.write("initialize\n")
        if (here / "brief").exists():  # dies soon after its handshake (after the link's own requests)
            threading.Timer(1.0, os._exit, (1,)).start()
        caps = {"resources": {"listChanged": True}, "tools": {"listChanged": True}, "prompts": {"listChanged": True}}
        return {"protocolVersion": params["protocolVersion"], "capabilities": caps,
                "serverInfo": {"name": "raw", "version": "1"}}  # fmt: skip
    if method == "resources/list":
        return {
            "resources": [{"uri": f"raw://a/{n}", "name": n, "mimeType": "text/plain"} for n in ("one", "fail", "bye")]
        }
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "prompts/list":
        return {"prompts": []}
    if method == "tools/list":
        return {"tools": tools(here, flags)}
    if method == "ping":
        return {}
    if method == "resources/read":
        uri = str(params["uri"])
        if uri.endswith("bye"):
            sys.exit(0)
        if uri.endswith("fail"):
            return {"error": {"code": -32000, "message": "Internal error in the tool backend"}}
        if "--banner" in flags:
            sys.stdout.write("DeprecationWarning: this is printed to stdout, not JSON\n")
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"content of {uri}"}]}
    if method == "tools/call":
        if params.get("name") == "numeric":  # an answer whose result is not an object
            return 12345
        if params.get("name") == "empty":  # an answer with neither a result nor an error
            return NOTHING
        if params.get("name") == "bye_later":  # answers, then exits while idle
            threading.Timer(0.3, os._exit, (0,)).start()
        if params.get("name") == "grow":
            (here / "grown").touch()
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return {"content": [{"type": "text", "text": f"called {params.get('name')}"}]}
    return {"error": {"code": -32601, "message": f"no {method}"}}


def main() -> None:
    here, flags = Path(sys.argv[1]), sys.argv[2:]
    if (here / "down").exists():
        sys.exit(3)

    def notified(method: str) -> None:
        if method == "notifications/initialized" and "--lc" in flags:
            for kind in ("tools", "resources", "prompts"):
                send({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})

    serve(lambda method, params: answer(here, flags, method, params), notified)


if __name__ == "__main__":
    main()
