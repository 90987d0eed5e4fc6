"""A raw JSON-RPC stdio MCP server (no SDK) answering tool calls with malformed lines, for
``test_upstream_malformed_lines.py``: ``python malformed_stdio_upstream.py``.

Each tool in :data:`LINES` answers its call with that one line (``ID`` replaced by the request's
id, ``SECRET`` by the value of the variable ``ECHOED``, as an upstream quoting its environment
would), then nothing: the request is answered by that line or not at all. ``notify_bad`` first
sends a notification that does not parse, then a good answer; ``stray`` prints its ``line`` (a
stray debug print; ``<ID>`` replaced by the call's own id), then a good answer; ``slow`` answers after ``seconds``,
or with ``until_hello`` just before the next ``hello`` call's answer; a ``stray`` and a ``slow`` both called with
``paired`` are answered once both have arrived, in either order (no timer waited out for a call to stay pending);
``hello`` answers ``hello``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from raw_jsonrpc_lines import requests

LOCK = threading.Lock()
HELD: dict[str, tuple[object, dict[str, Any]]] = {}  # a paired call waiting for its partner: name -> (id, arguments)
TEXT = b'{"content": [{"type": "text", "text": "SECRET"}]}'
LINES: dict[str, bytes] = {
    "bad_utf8": b'{"jsonrpc": "2.0", "id": ID, "result": {"content": [{"type": "text", "text": "SECRET \xff\xfe"}]}}',
    "bad_nul": b'{"jsonrpc": "2.0", "id": ID, "result": {"content": [{"type": "text", "text": "SECRET \x00"}]}}',
    "bad_truncated": b'{"jsonrpc": "2.0", "id": ID, "result": {"content": [{"type": "text", "text": "SECRET',
    "bad_array": b'[{"jsonrpc": "2.0", "id": ID, "result": ' + TEXT + b"}]",
    "bad_scalar": b'"SECRET"',
    "bad_no_jsonrpc": b'{"id": ID, "result": ' + TEXT + b"}",
    "bad_version": b'{"jsonrpc": "1.0", "id": ID, "result": ' + TEXT + b"}",
    "bad_id_type": b'{"jsonrpc": "2.0", "id": true, "result": ' + TEXT + b"}",
    "bad_unknown_id": b'{"jsonrpc": "2.0", "id": "nobody-asked", "result": ' + TEXT + b"}",
    "bad_null_id": b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error SECRET"}}',
    "bad_surrogate": b'{"jsonrpc": "2.0", "id": ID, "result": {"content": [{"type": "text", "text": "\\ud800"}]}}',
    "bad_nested": b'{"jsonrpc": "2.0", "id": ID, "result": {"content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
    "bad_big_int": b'{"jsonrpc": "2.0", "id": ID, "result": {"content": [], "n": ' + b"9" * 1_000_000 + b"}}",
    "bad_big_float": b'{"jsonrpc": "2.0", "id": ID, "result": {"content": [], "structuredContent": {"n": 1e999999}}}',
    "bad_id_last": b'{"result": {"content": [{"type": "text", "text": "SECRET\x00"}]}, "jsonrpc": "2.0", "id": ID}',
    "bad_no_id": b'{"jsonrpc": "2.0", "result": {"content": [{"type": "text", "text": "SECRET\x00"}]}}',
}


def write(line: bytes) -> None:
    with LOCK:
        sys.stdout.buffer.write(line + b"\n")
        sys.stdout.buffer.flush()


def send(obj: dict[str, Any]) -> None:
    write(json.dumps(obj).encode())


def text(ident: object, words: str) -> None:
    send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": words}]}})


def stray(ident: object, args: dict[str, Any]) -> None:
    line = str(args["line"]).replace("SECRET", os.environ.get("ECHOED", "")).replace("<ID>", json.dumps(ident))
    write(line.encode())
    text(ident, "after the stray line")


def answer_pair() -> None:
    """A paired ``stray`` and ``slow`` are answered once both have arrived, in either order: the stray
    line, the stray call's answer, then the slow one's, so both calls are pending when the line is read."""
    if "stray" in HELD and "slow" in HELD:
        stray(*HELD.pop("stray"))
        text(HELD.pop("slow")[0], "slow")


def call(ident: object, name: str, args: dict[str, Any]) -> None:
    if name in LINES:
        secret = os.environ.get("ECHOED", "").encode()
        write(LINES[name].replace(b"ID", json.dumps(ident).encode()).replace(b"SECRET", secret))
    elif name == "notify_bad":
        secret = os.environ.get("ECHOED", "")
        write(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "' + secret.encode() + b"\x00")
        text(ident, "after the notification")
    elif name == "stray" and args.get("paired"):
        HELD["stray"] = (ident, args)
        answer_pair()
    elif name == "stray":
        stray(ident, args)
    elif name == "slow" and args.get("paired"):
        HELD["slow"] = (ident, args)
        answer_pair()
    elif name == "slow" and args.get("until_hello"):
        HELD["until_hello"] = (ident, args)
    elif name == "slow":
        later = threading.Timer(float(args.get("seconds", 1)), text, (ident, "slow"))
        later.daemon = True
        later.start()
    else:
        if "until_hello" in HELD:
            text(HELD.pop("until_hello")[0], "slow")
        text(ident, "hello")


TOOLS = [*LINES, "notify_bad", "stray", "slow", "hello"]


def answer(ident: object, method: str, params: dict[str, Any]) -> None:
    if method == "initialize":
        result: dict[str, Any] = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                                  "serverInfo": {"name": "malformed", "version": "1"}}  # fmt: skip
    elif method == "tools/list":
        result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]}
    elif method == "resources/list":
        result = {"resources": []}
    elif method == "resources/templates/list":
        result = {"resourceTemplates": []}
    elif method == "prompts/list":
        result = {"prompts": []}
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
