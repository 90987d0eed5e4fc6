"""An SDK v2 server (``MCPServer``) serving the tasks extension (``io.modelcontextprotocol/tasks``,
SEP-2663) with the SDK's own ``Extension`` seam: the 2026-07-28 task-capable upstream of
tests/test_upstream_tasks.py, over stdio (``python tests/tasks_upstream.py EVENTS``) or streamable
HTTP on loopback (``... EVENTS --http PORT``, at ``/mcp``).

Task creation is the server's decision (the 2026-07-28 extension has no per-tool declaration):

- ``count`` (a task when the call declares the extension, else a plain call): status messages
  ``step i of n``, ``pause`` seconds apart, then ``counted to n``;
- ``hold`` (a task only: -32021 without the extension): waits ``seconds`` (60), or until
  ``tasks/cancel``; a cancelled run appends ``<name> <taskId> cancelled`` to the file ``EVENTS``;
- ``explode`` (a task only): fails with the JSON-RPC error -32000 ``the backend exploded``;
- ``ask`` (a task only): goes ``input_required`` (an elicitation in ``inputRequests``) and waits;
- ``plain``: never a task.

Every tool call appends ``call <name> task|plain`` to ``EVENTS``. ``tasks/get`` answers the
``DetailedTask`` (``pollIntervalMs`` 50; ``ttlMs`` 60000, or a tool's ``ttl_ms`` argument);
``tasks/cancel`` cancels the run.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import MCPError
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from pydantic import Field

TASKS = "io.modelcontextprotocol/tasks"
EVENTS = Path(sys.argv[1]) if len(sys.argv) > 1 else None


def note(line: str) -> None:
    if EVENTS is not None:
        with EVENTS.open("a") as out:
            out.write(line + "\n")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Running:
    def __init__(self, task_id: str, ttl_ms: int) -> None:
        self.task_id, self.ttl_ms = task_id, ttl_ms
        self.asked: dict[str, Any] = {}
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = now()
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.job: asyncio.Task[None] | None = None

    def set(self, status: str, message: str | None = None) -> None:
        self.status, self.message, self.updated = status, message, now()

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"taskId": self.task_id, "status": self.status, "createdAt": self.created,
                               "lastUpdatedAt": self.updated, "ttlMs": self.ttl_ms, "pollIntervalMs": 50}  # fmt: skip
        if self.message is not None:
            out["statusMessage"] = self.message
        if self.status == "completed":
            out["result"] = self.result
        elif self.status == "failed":
            out["error"] = self.error
        elif self.status == "input_required":
            out["inputRequests"] = self.asked
        return out


TASKS_RUNNING: dict[str, Running] = {}


def text_result(text: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}]}


async def body(task: Running, name: str, arguments: dict[str, Any]) -> None:
    try:
        if name == "count":
            n, pause = int(arguments.get("n", 3)), float(arguments.get("pause", 0.1))
            for i in range(1, n + 1):
                task.set("working", f"step {i} of {n}")
                await asyncio.sleep(pause)
            task.result = text_result(f"counted to {n}")
            task.set("completed")
        elif name == "ask":
            form = {"message": "Go ahead?", "requestedSchema": {"type": "object", "properties": {}}}
            task.asked = {"q1": {"method": "elicitation/create", "params": {"mode": "form", **form}}}
            task.set("input_required", "waiting for an answer")
            await asyncio.sleep(60)
        elif name == "hold":
            await asyncio.sleep(float(arguments.get("seconds", 60)))
            task.result = text_result("held")
            task.set("completed")
        else:
            await asyncio.sleep(0.1)
            task.error = {"code": -32000, "message": "the backend exploded"}
            task.set("failed", "the backend exploded")
    except asyncio.CancelledError:
        note(f"{name} {task.task_id} cancelled")
        task.set("cancelled", "cancelled by tasks/cancel")


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class Tasks(Extension):
    identifier = TASKS

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self.get),
            MethodBinding("tasks/cancel", TaskParams, self.cancel),
        ]

    def _find(self, params: TaskParams) -> Running:
        task = TASKS_RUNNING.get(params.task_id)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return task

    async def get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        return {"resultType": "complete", **self._find(params).wire()}

    async def cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        note(f"tasks/cancel {params.task_id}")  # asked, as distinct from a run ended by this process exiting
        task = self._find(params)
        if task.job is not None and not task.job.done():
            task.job.cancel()
        return {"resultType": "complete"}

    async def intercept_tool_call(self, params: types.CallToolRequestParams, ctx: Any, call_next: Any) -> Any:
        declared = ctx.session.client_capabilities
        wants = bool(declared and declared.extensions and TASKS in declared.extensions)
        if params.name == "plain" or (params.name == "count" and not wants):
            note(f"call {params.name} plain")
            return await call_next(ctx)
        if not wants:
            raise MCPError(
                types.MISSING_REQUIRED_CLIENT_CAPABILITY, f"{params.name} runs only as a task",
                {"requiredCapabilities": {"extensions": {TASKS: {}}}},
            )  # fmt: skip
        note(f"call {params.name} task")
        task = Running(uuid.uuid4().hex, int((params.arguments or {}).get("ttl_ms", 60_000)))
        TASKS_RUNNING[task.task_id] = task
        task.job = asyncio.get_running_loop().create_task(body(task, params.name, dict(params.arguments or {})))
        return {"resultType": "task", **task.wire()}


server = MCPServer("tasks-upstream", version="1.0", log_level="WARNING", extensions=[Tasks()])


@server.tool(description="Counts, slowly; a task when the client takes one.", structured_output=False)
def count(n: int = 3, pause: float = 0.1) -> str:
    return f"counted to {n} (no task)"


@server.tool(description="Waits until cancelled; runs only as a task.", structured_output=False)
def hold(seconds: float = 60.0, ttl_ms: int = 60_000) -> str:
    return "not reached"


@server.tool(description="Asks for input within its task; runs only as a task.", structured_output=False)
def ask() -> str:
    return "not reached"


@server.tool(description="Fails; runs only as a task.", structured_output=False)
def explode() -> str:
    return "not reached"


@server.tool(description="Never a task.", structured_output=False)
def plain(note: str = "") -> str:
    return f"plain {note}"


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run("stdio")
