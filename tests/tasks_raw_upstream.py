"""A raw JSON-RPC stdio MCP server (no SDK: the SDK leaves 2025-11-25's tasks out of its server)
offering 2025-11-25's core tasks (SEP-1686): the 2025-era task-capable upstream of
tests/test_upstream_tasks.py (``python tests/tasks_raw_upstream.py EVENTS [--no-capability]``).

It says ``capabilities.tasks.requests.tools.call`` (not with ``--no-capability``) and lists
``execution.taskSupport``: ``count`` ``optional``, ``hold`` and ``explode`` ``required``, ``plain``
none. A plain ``tools/call`` of ``count`` or ``plain`` answers at once (``<name> answered at
once``); of a required one, -32601 as the spec says. A task-augmented one (``params.task``)
answers a ``CreateTaskResult`` (which the SDK's 2025-11-25 client cannot take: the test shows
it). Every ``tools/call`` appends ``call <name> task|plain`` to the file ``EVENTS``.
"""

from __future__ import annotations

import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from raw_jsonrpc_lines import serve

EVENTS = Path(sys.argv[1])
FLAGS = sys.argv[2:]


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


def created(name: str) -> dict[str, Any]:
    now = iso(time.time())
    task = {"taskId": uuid.uuid4().hex, "status": "working", "createdAt": now, "lastUpdatedAt": now}
    return {**task, "ttl": 60_000, "pollInterval": 50, "statusMessage": f"{name} started"}


def call(params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if "task" not in params:
        note(f"call {name} plain")
        if name in ("hold", "explode"):
            return {"error": {"code": -32601, "message": f"{name} must be called as a task"}}
        return {"content": [{"type": "text", "text": f"{name} answered at once"}]}
    note(f"call {name} task ttl={params['task'].get('ttl')}")
    return {"task": created(str(name))}


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
    return {"error": {"code": -32601, "message": f"no {method}"}}


def main() -> None:
    serve(answer)


if __name__ == "__main__":
    main()
