"""A raw 2025-11-25 stdio MCP server (no SDK) whose tool asks its questions by server-to-client
requests that name no request, as a 2025-era stdio upstream does: ``python asking_stdio_upstream.py LOG``.

Tool ``ask`` (arguments: ``message``, ``kind`` ``"elicit"`` or ``"sample"``, ``after`` seconds,
``count`` questions, ``parallel``, ``answer_first``): waits ``after`` s, answers at once when
``answer_first`` (and asks later anyway), then asks ``count`` questions (one after another, or all
at once when ``parallel``); each answer it got (a ``result`` or an ``error``) is appended to
``LOG`` as a JSON line ``{"message": ..., "answer": ...}``; with ``until_held`` it asks only once a
``sleep`` call with ``hold`` has arrived (another caller's call in flight). Tool ``sleep``
(``seconds``) answers after sleeping; with ``hold``, once the held question was answered instead.
Requests run in threads, so calls overlap.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

LOCK = threading.Lock()
ANSWERS: dict[str, dict[str, Any]] = {}
ARRIVED = threading.Condition(LOCK)
COUNTER = [0]
HELD = threading.Event()
"""A ``sleep`` call with ``hold`` is in flight."""
ASKED = threading.Event()
"""The question of an ``ask`` with ``until_held`` got its answer."""
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}
TOOLS = [
    {"name": "ask", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "sleep", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
]


def send(obj: dict[str, Any]) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def question(kind: str, message: str) -> dict[str, Any]:
    with LOCK:
        COUNTER[0] += 1
        ident = f"q{COUNTER[0]}"
    if kind == "sample":
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": message}}], "maxTokens": 20}
        return {"jsonrpc": "2.0", "id": ident, "method": "sampling/createMessage", "params": params}
    params = {"mode": "form", "message": message, "requestedSchema": SCHEMA}
    return {"jsonrpc": "2.0", "id": ident, "method": "elicitation/create", "params": params}


def answered(ident: str, log: str, message: str) -> dict[str, Any]:
    with ARRIVED:
        ARRIVED.wait_for(lambda: ident in ANSWERS, timeout=30)
        got = ANSWERS.pop(ident, {"error": "no answer within 30 s"})
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps({"message": message, "answer": got}) + "\n")
    return got


def ask(log: str, ident: Any, arguments: dict[str, Any]) -> None:
    time.sleep(float(arguments.get("after", 0)))
    if arguments.get("until_held") and not arguments.get("answer_first"):
        HELD.wait(30)
    done = {"content": [{"type": "text", "text": "answered first"}]}
    if arguments.get("answer_first"):
        send({"jsonrpc": "2.0", "id": ident, "result": done})
        time.sleep(float(arguments.get("then", 0.5)))
        if arguments.get("until_held"):
            HELD.wait(30)
    asked = [question(arguments.get("kind", "elicit"), arguments["message"]) for _ in range(arguments.get("count", 1))]
    got: list[dict[str, Any]] = []
    if arguments.get("parallel"):
        for q in asked:
            send(q)
        got = [answered(q["id"], log, arguments["message"]) for q in asked]
    else:
        for q in asked:
            send(q)
            got.append(answered(q["id"], log, arguments["message"]))
    ASKED.set()
    if not arguments.get("answer_first"):
        accepted = sum(1 for g in got if "result" in g)
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": f"answers {accepted}"}]}})


def call(log: str, ident: Any, params: dict[str, Any]) -> None:
    arguments = params.get("arguments") or {}
    if params.get("name") == "sleep" and arguments.get("hold"):
        HELD.set()
        ASKED.wait(30)
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "held"}]}})
    elif params.get("name") == "sleep":
        time.sleep(float(arguments.get("seconds", 1)))
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "slept"}]}})
    else:
        ask(log, ident, arguments)


def main() -> None:
    log = sys.argv[1]
    for line in sys.stdin:
        message = json.loads(line)
        ident, method = message.get("id"), message.get("method")
        if method is None and ident is not None:  # an answer to one of our questions
            with ARRIVED:
                ANSWERS[str(ident)] = message
                ARRIVED.notify_all()
        elif ident is None:
            continue
        elif method == "initialize":
            info = {"name": "asking", "version": "1"}
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": ident, "result": {}})
        elif method == "tools/call":
            threading.Thread(target=call, args=(log, ident, message.get("params") or {}), daemon=True).start()
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
