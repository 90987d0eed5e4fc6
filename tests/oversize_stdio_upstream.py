"""A raw JSON-RPC stdio MCP server (no SDK) answering with lines as long as asked, for the line
limit tests (``test_upstream_oversize_lines.py``): ``python oversize_stdio_upstream.py``.

Tools: ``big`` (argument ``mib``) answers with a text of that many MiB, its id first, as the Python
SDK writes; ``big_last`` the same with the id last, as the TypeScript SDK writes (``result``
first); ``big_anon`` with no id at all; ``noise`` writes a line of ``mib`` MiB that is no
JSON, then answers; ``slow_small`` answers a small text after ``seconds``, or with ``until`` (a tool's
name) just after the next call of that tool is answered (no timer waited out); ``shout`` first sends a
notification of ``mib`` MiB, then a small answer; ``hello`` answers ``hello``. ``big://a/huge``
reads as a text of ``BIG_MIB`` MiB (default 9), ``big://a/one`` as ``one``. Long texts are written
in 1 MiB pieces, never held whole.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from raw_jsonrpc_lines import requests

MIB = 1024 * 1024
LOCK = threading.Lock()
HELD: dict[str, list[object]] = {}
"""The ids of ``slow_small`` calls with ``until``, by the tool whose next answer releases them."""


def write(prefix: str, mib: float, suffix: str) -> None:
    """One line: ``prefix``, ``mib`` MiB of ``y``, ``suffix``, written in pieces."""
    with LOCK:
        out = sys.stdout.buffer
        out.write(prefix.encode())
        left = int(mib * MIB)
        piece = b"y" * MIB
        while left > 0:
            out.write(piece[: min(left, MIB)])
            left -= MIB
        out.write(suffix.encode() + b"\n")
        out.flush()


def send(obj: dict[str, Any]) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def text(ident: object, words: str) -> None:
    send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": words}]}})


def call(ident: object, name: str, args: dict[str, Any]) -> None:
    if name == "slow_small" and "until" in args:
        HELD.setdefault(str(args["until"]), []).append(ident)
        return
    answered(ident, name, args)
    for held in HELD.pop(name, []):
        text(held, "small")


def answered(ident: object, name: str, args: dict[str, Any]) -> None:
    mib = float(args.get("mib", 9))
    if name == "big":
        write(
            f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {{"content": [{{"type": "text", "text": "',
            mib,
            '"}]}}',
        )
    elif name == "big_last":
        write(
            '{"result": {"content": [{"type": "text", "text": "',
            mib,
            f'"}}]}}, "jsonrpc": "2.0", "id": {json.dumps(ident)}}}',
        )
    elif name == "big_anon":  # an answer that names no id at all
        write('{"result": {"content": [{"type": "text", "text": "', mib, '"}]}, "jsonrpc": "2.0"}')
    elif name == "noise":
        write("DeprecationWarning: ", mib, "")
        text(ident, "after the noise")
    elif name == "big_stray":  # a debug print over the limit: `prefix`, `mib` MiB, `suffix`
        write(str(args["prefix"]), mib, str(args["suffix"]))
        text(ident, "after the stray line")
    elif name == "slow_small":
        later = threading.Timer(float(args.get("seconds", 1)), text, (ident, "small"))
        later.daemon = True  # stdin's end ends the process, answered or not
        later.start()
    elif name == "shout":
        write('{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "', mib, '"}}')
        text(ident, "shouted")
    else:
        text(ident, "hello")


TOOLS = ["big", "big_last", "big_anon", "big_stray", "noise", "slow_small", "shout", "hello"]


def answer(ident: object, method: str, params: dict[str, Any]) -> None:
    if method == "initialize":
        caps = {"resources": {}, "tools": {}, "logging": {}}
        result = {"protocolVersion": params["protocolVersion"], "capabilities": caps,
                  "serverInfo": {"name": "oversize", "version": "1"}}  # fmt: skip
    elif method == "resources/list":
        result = {"resources": [{"uri": f"big://a/{n}", "name": n} for n in ("huge", "one")]}
    elif method == "tools/list":
        result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]}
    elif method in ("resources/templates/list", "prompts/list"):
        result = {"resourceTemplates": []} if "templates" in method else {"prompts": []}
    elif method == "resources/read" and str(params.get("uri")).endswith("huge"):
        mib = float(os.environ.get("BIG_MIB", "9"))
        uri = json.dumps(params["uri"])
        write(
            f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {{"contents": [{{"uri": {uri}, "text": "',
            mib,
            '"}]}}',
        )
        return
    elif method == "resources/read":
        result = {"contents": [{"uri": params["uri"], "text": "one"}]}
    elif method == "tools/call":
        call(ident, str(params.get("name")), params.get("arguments") or {})
        return
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})
        return
    send({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    requests(answer)
