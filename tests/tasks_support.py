"""Task-capable tools, and a client side of the tasks extension (SEP-2663) for the SDK's ``Client``.

Tools (plugin :class:`TasksPlugin`):

- ``count`` (``task_support="optional"``): reports progress ``i/n`` and waits ``pause`` seconds
  per step, then says ``counted to n``;
- ``hold`` (``"required"``): waits until cancelled (or ``seconds``), recording its cancellation
  in :data:`EVENTS`;
- ``ask`` (``"optional"``): asks the user to confirm (``elicit``) and says what was answered;
- ``fail`` (``"optional"``): raises a ``RequestError`` (a JSON-RPC error: the task fails);
- ``plain`` (forbidden): an ordinary call.

:class:`TasksClient` is a ``ClientExtension`` declaring ``io.modelcontextprotocol/tasks`` on each
request and resolving task handles by polling; :func:`start` returns a handle as it came;
:func:`tasks_get`, :func:`tasks_cancel` and :func:`tasks_update` send the extension's
methods with the SDK session's ``send_request`` (there is no SDK client for them yet), ``Mcp-Name``
included over HTTP (:class:`TaskRequest`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import BaseModel, TypeAdapter

from mcp_providers import Tool, ToolCall, ToolProvider, ToolResult, hookimpl
from mcp_providers.errors import InvalidParams

TASKS = "io.modelcontextprotocol/tasks"
EVENTS: list[str] = []


class Steps(BaseModel):
    n: int = 3
    pause: float = 0.0


class Hold(BaseModel):
    seconds: float = 60.0


class Empty(BaseModel):
    pass


class Counter(ToolProvider):
    name = "tasks-demo"

    def tools(self) -> Sequence[Tool]:
        return [
            Tool(name="count", description="Counts, slowly.", input_model=Steps, task_support="optional"),
            Tool(name="hold", description="Waits until cancelled.", input_model=Hold, task_support="required"),
            Tool(name="ask", description="Asks the user.", input_model=Empty, task_support="optional"),
            Tool(name="fail", description="Fails with a protocol error.", input_model=Empty, task_support="optional"),
            Tool(name="plain", description="An ordinary call.", input_model=Empty),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        name, args = call.tool.name, call.arguments
        if name == "count":
            assert isinstance(args, Steps)
            for i in range(1, args.n + 1):
                await call.progress(i, args.n, "counting")
                await anyio.sleep(args.pause)
            return ToolResult(text=f"counted to {args.n} for {call.principal.subject}")
        if name == "hold":
            assert isinstance(args, Hold)
            try:
                await anyio.sleep(args.seconds)
            except anyio.get_cancelled_exc_class():
                EVENTS.append("hold cancelled")
                raise
            return ToolResult(text="held")
        if name == "ask":
            reply = await call.elicit("Go ahead?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
            return ToolResult(text=f"{reply.action} {reply.content}")
        if name == "fail":
            raise InvalidParams("the upstream refused this", data={"why": "test"})
        return ToolResult(text="plain")


class TasksPlugin:
    @hookimpl
    def register_tool_providers(self, settings: Any) -> list[ToolProvider]:
        return [Counter()]


PLUGIN = TasksPlugin()
"""What the ``tasks`` entry point names (an instance: pluggy registers the object it is given)."""


class Created(types.Result):
    """The ``CreateTaskResult`` as the SDK parses a claimed result."""

    result_type: Literal["task"] = "task"  # type: ignore[assignment]
    task_id: str
    status: str
    poll_interval_ms: int | None = None
    ttl_ms: int | None = None


class TasksClient(ClientExtension):
    """Declares the tasks extension on every request and, as a client that hides tasks would,
    resolves a task handle by polling ``tasks/get`` until it ends (``call_tool`` returns the result)."""

    identifier = TASKS

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=Created, resolve=self._resolve)]

    async def _resolve(self, created: Created, ctx: ClaimContext) -> types.CallToolResult:
        task = await until(ctx.session, created.task_id, {"completed", "failed", "cancelled"})
        if task["status"] == "completed":
            return types.CallToolResult.model_validate(task["result"])
        if task["status"] == "failed":
            raise MCPError(task["error"]["code"], task["error"]["message"], task["error"].get("data"))
        raise RuntimeError(f"task {created.task_id} was cancelled")


def client(server: Any, **kwargs: Any) -> Client:
    """An in-memory 2026-07-28 client of ``server`` declaring the tasks extension."""
    return Client(server, cache=None, extensions=[TasksClient()], **kwargs)


_ANY = TypeAdapter(dict[str, Any])


class TaskRequest(types.Request[dict[str, Any], str]):
    """A ``tasks/*`` request: over HTTP the SDK session sends its ``params.taskId`` as ``Mcp-Name``
    (SEP-2663, "Streamable HTTP: Routing Headers")."""

    name_param: ClassVar[str | None] = "taskId"


async def _send(session: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = TaskRequest(method=method, params=params)
    result: dict[str, Any] = await session.send_request(request, _ANY)
    return result


async def start(session: Any, tool: str, arguments: dict[str, Any]) -> Created | types.CallToolResult:
    """``tools/call``, a task handle returned as it came (:class:`Created`)."""
    return await session.call_tool(tool, arguments, allow_claimed=True)  # type: ignore[no-any-return]


async def tasks_get(session: Any, task_id: str) -> dict[str, Any]:
    return await _send(session, "tasks/get", {"taskId": task_id})


async def tasks_cancel(session: Any, task_id: str) -> dict[str, Any]:
    return await _send(session, "tasks/cancel", {"taskId": task_id})


async def tasks_update(session: Any, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    return await _send(session, "tasks/update", {"taskId": task_id, "inputResponses": responses})


async def until(session: Any, task_id: str, statuses: set[str], seconds: float = 15.0) -> dict[str, Any]:
    """Poll ``tasks/get`` until the task's status is one of ``statuses``; its last answer."""
    with anyio.fail_after(seconds):
        while True:
            task = await tasks_get(session, task_id)
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.05)
