"""A raw JSON-RPC stdio MCP server (no SDK: the SDK leaves 2025-11-25's tasks out of its server)
serving 2025-11-25's core tasks (SEP-1686): the 2025-era task-capable upstream of
tests/test_upstream_tasks.py (``python tests/tasks_raw_upstream.py EVENTS [--no-capability]``).

It says ``capabilities.tasks.requests.tools.call`` (not with ``--no-capability``) and lists
``execution.taskSupport``:

- ``count`` (``optional``): ``n`` steps of ``pause`` seconds (status ``step i of n``), then
  ``counted to n``; a plain call answers at once;
- ``hold`` (``required``): works until ``tasks/cancel``, recorded as ``hold <taskId> cancelled``
  in the file ``EVENTS``;
- ``explode`` (``required``): fails after 0.1 s; ``tasks/result`` answers error -32000;
- ``plain`` (no ``execution``).

A task-augmented ``tools/call`` without ``task`` of a required tool is answered -32601 as the
spec says. Every ``tools/call`` appends ``call <name> task|plain`` to ``EVENTS``; the state of
each task is computed from the clock when asked (the loop answers one line at a time).
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EVENTS = Path(sys.argv[1])
FLAGS = sys.argv[2:]
TASKS: dict[str, dict[str, Any]] = {}


def send(obj: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def note(line: str) -> None:
    with EVENTS.open("a") as out:
        out.write(line + "\n")


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def tools() -> list[dict[str, Any]]:
    schema = {"type": "object"}
    return [
        {"name": "count", "inputSchema": schema, "execution": {"taskSupport": "optional"}},
        {"name": "hold", "inputSchema": schema, "execution": {"taskSupport": "required"}},
        {"name": "explode", "inputSchema": schema, "execution": {"taskSupport": "required"}},
        {"name": "plain", "inputSchema": schema},
    ]


def state(task: dict[str, Any]) -> dict[str, Any]:
    """The task now: its fields as ``tasks/get`` answers them."""
    elapsed = time.time() - task["created"]
    if task["status"] == "working" and task["name"] == "count":
        n, pause = task["n"], task["pause"]
        step = min(n, int(elapsed / pause) + 1) if pause > 0 else n
        task["message"] = f"step {step} of {n}"
        if elapsed >= n * pause:
            task["status"], task["message"] = "completed", None
    elif task["status"] == "working" and task["name"] == "explode" and elapsed >= 0.1:
        task["status"], task["message"] = "failed", "the backend exploded"
    out = {"taskId": task["id"], "status": task["status"], "createdAt": iso(task["created"]),
           "lastUpdatedAt": iso(time.time()), "ttl": 60_000, "pollInterval": 50}  # fmt: skip
    if task.get("message"):
        out["statusMessage"] = task["message"]
    return out


def call(params: dict[str, Any]) -> dict[str, Any]:
    name, arguments = params.get("name"), params.get("arguments") or {}
    if "task" not in params:
        note(f"call {name} plain")
        if name in ("hold", "explode"):
            return {"error": {"code": -32601, "message": f"{name} must be called as a task"}}
        return {"content": [{"type": "text", "text": f"{name} answered at once"}]}
    note(f"call {name} task ttl={params['task'].get('ttl')}")
    task = {"id": uuid.uuid4().hex, "name": name, "status": "working", "created": time.time(),
            "n": int(arguments.get("n", 3)), "pause": float(arguments.get("pause", 0.1))}  # fmt: skip
    TASKS[task["id"]] = task
    return {"task": state(task)}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        caps: dict[str, Any] = {"tools": {}}
        if "--no-capability" not in FLAGS:
            caps["tasks"] = {"cancel": {}, "requests": {"tools": {"call": {}}}}
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": caps,
            "serverInfo": {"name": "raw-tasks", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": tools()}
    if method == "ping":
        return {}
    if method == "tools/call":
        return call(params)
    if method in ("tasks/get", "tasks/result", "tasks/cancel"):
        task = TASKS.get(str(params.get("taskId")))
        if task is None:
            return {"error": {"code": -32602, "message": "Failed to retrieve task: Task not found"}}
        now = state(task)
        if method == "tasks/get":
            return now
        if method == "tasks/cancel":
            if now["status"] in ("completed", "failed", "cancelled"):
                return {"error": {"code": -32602, "message": f"Cannot cancel a {now['status']} task"}}
            task["status"], task["message"] = "cancelled", "cancelled by tasks/cancel"
            note(f"{task['name']} {task['id']} cancelled")
            return state(task)
        if now["status"] == "failed":
            return {"error": {"code": -32000, "message": "the backend exploded"}}
        if now["status"] != "completed":
            return {"error": {"code": -32603, "message": "this test upstream answers tasks/result once ended only"}}
        text = f"counted to {task['n']}"
        related = {"io.modelcontextprotocol/related-task": {"taskId": task["id"]}}
        return {"content": [{"type": "text", "text": text}], "_meta": related}
    return {"error": {"code": -32601, "message": f"no {method}"}}


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, ident = message.get("method"), message.get("id")
        if ident is None or method is None:
            continue
        result = answer(method, message.get("params") or {})
        if "error" in result:
            send({"jsonrpc": "2.0", "id": ident, "error": result["error"]})
        else:
            send({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    main()
