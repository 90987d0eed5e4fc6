"""Tool calls as tasks: the ``io.modelcontextprotocol/tasks`` extension of 2026-07-28 (SEP-2663).

A ``tools/call`` of a tool declared ``task_support = "optional"`` or ``"required"``, from a client
that declared the extension on that request, is answered at once with a ``CreateTaskResult``
(``resultType: "task"``) once the task is stored; the call itself then runs in the background
through the pipeline once more (the ``body`` :class:`Tasks` is made with: gate, invoker, evidence, wire and audit, its
rate already counted), and its result, or its JSON-RPC error, is kept in the task
(:mod:`~mcp_providers._serve.state.tasks`). The client polls ``tasks/get``, answers input requests
with ``tasks/update`` and cancels with ``tasks/cancel``; each goes through the pipeline as well.

A task belongs to the principal that started it: to anyone else it does not exist (the same
``-32602`` "task not found" as an unknown id). While running, a tool's ``progress`` becomes the
task's ``statusMessage``; its ``elicit``/``sample`` make the task ``input_required``
(``inputRequests`` on ``tasks/get``) until a ``tasks/update`` answers. With ``[cluster]`` the
task lives in Redis: polled and cancelled through any replica, failed by the first reader once
the replica running it has stopped renewing its lease; one Redis lost with its data (a restart
without persistence) is answered ``-32010`` ``task-lost``, saying so, rather than "not found".
"""

import hashlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field

from mcp_providers._serve.methods.rounds import InputChannel, checked_answers, wire_request
from mcp_providers._serve.state.cluster import ClusterUnavailable
from mcp_providers._serve.state.tasks import (
    LOST,
    Change,
    RunningTask,
    TaskLost,
    TaskRecord,
    TaskStore,
    new_task_id,
)
from mcp_providers._serve.steps.exchange import Actor, Ctx, Exchange, version_of
from mcp_providers._serve.steps.request_state import Answer, digest
from mcp_providers.config import TasksSettings
from mcp_providers.errors import InvalidParams, MissingCapability, RateLimited, ToolFailure
from mcp_providers.identity import Principal
from mcp_providers.models import Tool

log = logging.getLogger("mcp_providers.tasks")

T = TypeVar("T")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
NEEDS_TASKS: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
STOP_SECONDS = 2.0
"""Longest wait at shutdown for the task bodies to end once cancelled (inside the 10 s SIGTERM budget)."""
"""The extension's request methods; over HTTP each repeats its ``params.taskId`` as ``Mcp-Name``."""
NOT_FOUND = "Failed to retrieve task: Task not found"
"""What an unknown, expired or someone else's task id gets alike (SEP-2663's example message)."""

Body = Callable[[RunningTask, types.CallToolRequestParams], Awaitable[Any]]
"""Runs a task's ``tools/call`` through the pipeline once more, as that task's body (its result, or
the ``MCPError`` it was refused with); the runtime's owner gives it when :class:`Tasks` is made."""


def declared_capabilities(ctx: Ctx) -> Mapping[str, Any]:
    """The client capabilities the request declared in its ``_meta`` (2026-07-28; ``{}`` when none)."""
    meta = getattr(ctx, "meta", None) or {}
    declared = meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, Mapping) else None
    return declared if isinstance(declared, Mapping) else {}


def declares_tasks(ctx: Ctx) -> bool:
    """Whether the request declared the tasks extension in its per-request client capabilities
    (2026-07-28 ``_meta``; earlier eras have no such declaration)."""
    if version_of(ctx) not in MODERN_PROTOCOL_VERSIONS:
        return False
    extensions = declared_capabilities(ctx).get("extensions")
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def owner_of(principal: Principal) -> str:
    """The owner key of ``principal``'s tasks, what their caps count per person: SHA-256 of issuer
    and subject (no identity in Redis)."""
    issuer, subject = principal.key
    return hashlib.sha256(f"{issuer}\0{subject}".encode()).hexdigest()


def reader_of(principal: Principal) -> str:
    """Who may see, answer and cancel a task: SHA-256 of ``principal.share_key`` (issuer, subject,
    client id, scopes, groups, selected claims): the authorization context that made it, so the
    same person's token for another client or with other scopes is not it (MCP tasks bind a task
    to its creator's authorization context)."""
    return hashlib.sha256(json.dumps(principal.share_key).encode()).hexdigest()


def shown(task_id: str) -> str:
    """How audit lines name a task: a digest, since the id itself is what reaches the task."""
    return "task:" + hashlib.sha256(task_id.encode()).hexdigest()[:16]


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_wire(record: TaskRecord, *, detailed: bool) -> dict[str, Any]:
    """The ``Task`` of ``record`` (camelCase); ``detailed`` adds what its status carries
    (``result``, ``error`` or ``inputRequests``: a ``DetailedTask``)."""
    ttl = record.ttl if not record.ended else (record.updated - record.created) + record.ttl
    out: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": _iso(record.created),
        "lastUpdatedAt": _iso(record.updated),
        "ttlMs": int(ttl * 1000),
        "pollIntervalMs": record.poll_ms,
    }
    if record.message is not None:
        out["statusMessage"] = record.message
    if detailed and record.status == "completed":
        out["result"] = record.result or {}
    elif detailed and record.status == "failed":
        out["error"] = record.error or {"code": types.INTERNAL_ERROR, "message": "the task failed"}
    elif detailed and record.status == "input_required":
        out["inputRequests"] = dict(record.asked)
    return out


class Tasks:
    """This process's tasks: started, kept running under their lease, cancelled (one per runtime).

    :param store: where records live (:func:`~mcp_providers._serve.state.tasks.store_for`).
    :param lease: seconds a running task's lease lasts (``[cluster] lease_seconds``; ``None`` in one process).
    :param body: runs each task's call (:data:`Body`).
    """

    def __init__(self, store: TaskStore, settings: TasksSettings, lease: float | None, body: Body) -> None:
        self.store = store
        self.settings = settings
        self.lease = lease
        self._call = body
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._owners: dict[str, int] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._ended: anyio.Event | None = None
        self.tick = 0.1 if lease is None else min(lease / 3, 1.0)
        """Seconds between a running task's lease renewals (its looks for a cancel through another
        replica), and between a waiting question's looks for its answer."""

    @property
    def running(self) -> int:
        """Task bodies running in this process now."""
        return len(self._scopes)

    async def host(self) -> None:
        """Run the task bodies (a runtime background task); ending it stops them."""
        self._ended = anyio.Event()
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                try:
                    await anyio.sleep_forever()
                finally:
                    self._group = None
        finally:
            self._ended.set()

    async def stop(self, within: float = STOP_SECONDS) -> None:
        """Cancel the running task bodies and wait, at most ``within`` seconds, for them to end:
        at shutdown, before the providers' lifespans end, so a body's own clean-up (a relayed
        task's ``tasks/cancel`` upstream) still has its provider."""
        group, ended = self._group, self._ended
        if group is None or ended is None:
            return
        group.cancel_scope.cancel()
        with anyio.move_on_after(within, shield=True):
            await ended.wait()

    def wanted(self, exchange: Exchange, tool: Tool) -> bool:
        """Whether this call of ``tool`` runs as a task (never when it is a task's body already).

        :raises MissingCapability: the tool requires a task and the client did not declare the extension.
        """
        if tool.task_support == "forbidden" or exchange.task is not None:
            return False
        if declares_tasks(exchange.ctx):
            return True
        if tool.task_support == "required":
            raise MissingCapability(
                f"tool {tool.name} runs only as a task: declare the {TASKS_EXTENSION} extension in "
                "the request's client capabilities (2026-07-28)",
                data=NEEDS_TASKS,
            )
        return False

    async def start(self, exchange: Exchange, tool: str, params: types.CallToolRequestParams) -> TaskRecord:
        """Store a new task for this call and start its body; the stored record.

        :raises RateLimited: the caller has ``max_running_per_subject`` tasks running here.
        :raises MCPError: tasks are not running (before start-up, or shutting down).
        """
        if self._group is None:
            raise MCPError(types.INTERNAL_ERROR, "tasks are not running on this server (is it shutting down?)")
        owner = owner_of(exchange.principal)
        cap = self.settings.max_running_per_subject
        if self._owners.get(owner, 0) >= cap:
            raise RateLimited(
                f"you have {cap} tasks running here, the most [server.tasks] max_running_per_subject allows; "
                "wait for one to end (poll tasks/get) or cancel one",
                data={"retryAfter": 1, "limit": "tasks", "allowed": cap},
            )
        now = time.time()
        record = TaskRecord(
            task_id=new_task_id(now),
            owner=owner,
            reader=reader_of(exchange.principal),
            tool=tool,
            status="working",
            created=now,
            updated=now,
            ttl=self.settings.ttl_seconds,
            poll_ms=self.settings.poll_interval_ms,
            lease_until=now + self.lease if self.lease is not None else None,
        )
        self._owners[owner] = self._owners.get(owner, 0) + 1  # before the write: calls at once see it
        try:
            await self.store.create(record)  # durable before the handle is returned (SEP-2663)
        except BaseException:
            self._release(owner)
            raise
        self._group.start_soon(self._run, record, exchange.ctx, params)
        return record

    def _release(self, owner: str) -> None:
        self._owners[owner] -= 1
        if not self._owners[owner]:
            del self._owners[owner]

    async def _run(self, record: TaskRecord, ctx: Ctx, params: types.CallToolRequestParams) -> None:
        scope = self._scopes[record.task_id] = anyio.CancelScope()
        stopped = ending = Change(
            status="failed", message=STOPPED, error={"code": types.INTERNAL_ERROR, "message": STOPPED}
        )
        try:
            with scope:
                ending = await self._body(RunningTask(record.task_id, record.tool, ctx), params, scope)
            if scope.cancelled_caught:
                ending = Change(status="cancelled", message="cancelled by the client (tasks/cancel)")
        finally:
            del self._scopes[record.task_id]
            self._release(record.owner)
            with anyio.CancelScope(shield=True):  # stopping, tried once: a reader fails it past its lease
                await self._end(record.task_id, ending, retry=ending is not stopped)

    async def _body(self, task: RunningTask, params: types.CallToolRequestParams, scope: anyio.CancelScope) -> Change:
        async with anyio.create_task_group() as keeping:
            if self.lease is not None:  # in one process tasks/cancel cancels the scope itself
                keeping.start_soon(self._keep, task.task_id, scope)
            try:
                result = await self._call(task, params)
                ending = Change(status="completed", result=_dumped(result))
            except MCPError as exc:
                error = exc.error.model_dump(mode="json", exclude_none=True)
                ending = Change(status="failed", message=exc.message, error=error)
            keeping.cancel_scope.cancel()
        return ending

    async def _keep(self, task_id: str, scope: anyio.CancelScope) -> None:
        """Renew the lease every :attr:`tick`; cancel the run once a cancel is asked through another
        replica, or once a reader failed the task (its lease had run out after all)."""
        assert self.lease is not None
        while True:
            await anyio.sleep(self.tick)
            record = await self._safely(self.store.change(task_id, Change(lease_until=time.time() + self.lease)))
            if record is not None and (record.cancel or record.ended):
                scope.cancel()
                return

    async def _end(self, task_id: str, ending: Change, *, retry: bool) -> None:
        def changing() -> Awaitable[TaskRecord | None]:
            return self.store.change(task_id, ending)

        record = await self._safely(self.retried(changing) if retry else changing())
        if record is not None:
            log.info("task %s of %s ended %s", shown(task_id), record.tool, record.status)

    async def retried(self, operation: Callable[[], Awaitable[T]]) -> T:
        """``operation()`` on the store, tried again every :attr:`tick` while Redis is unreachable,
        for at most one lease: a pause shorter than the lease neither fails a running task nor
        loses its result (past the lease a reader has failed the task anyway).

        :raises ClusterUnavailable: Redis stayed unreachable for the lease.
        """
        deadline = time.monotonic() + (self.lease or 0.0)
        while True:
            try:
                return await operation()
            except ClusterUnavailable:
                if time.monotonic() + self.tick > deadline:
                    raise
            await anyio.sleep(self.tick)

    async def note(self, task_id: str, message: str) -> None:
        """Set ``task_id``'s ``statusMessage`` to ``message``: a note, not the work, so a store that
        cannot take it (Redis unreachable) is logged and skipped, never raised."""
        await self._safely(self.store.change(task_id, Change(message=message)))

    async def _safely(self, changing: Awaitable[TaskRecord | None]) -> TaskRecord | None:
        try:
            return await changing
        except Exception as exc:  # Redis unreachable (ClusterUnavailable): the lease runs out, a reader fails it
            log.warning("could not update a task: %s", exc)
            return None

    async def find(self, principal: Principal, task_id: str) -> TaskRecord:
        """``task_id``'s record if ``principal`` started it.

        :raises InvalidParams: unknown, expired, or someone else's (one message for all three).
        :raises TaskLost: the cluster's Redis lost it with its data (-32010): not "not found".
        """
        record = await self.store.get(task_id) if len(task_id) <= 200 else None
        if record is None and len(task_id) <= 200 and await self.store.lost(task_id):
            raise TaskLost(LOST, data={"rule": "task-lost"})
        if record is None or not secrets.compare_digest(record.reader, reader_of(principal)):
            raise InvalidParams(NOT_FOUND, data={"rule": "task-not-found"})
        return record

    async def cancel(self, record: TaskRecord) -> None:
        """Ask ``record``'s run to stop: at once when it runs here, else at its replica's next tick."""
        await self.store.change(record.task_id, Change(cancel=True))
        scope = self._scopes.get(record.task_id)
        if scope is not None:
            scope.cancel()


STOPPED = "the server stopped before the task finished"


def _dumped(result: Any) -> dict[str, Any]:
    """The call's result as a task keeps it: the 2026-07-28 ``CallToolResult`` the call would have
    returned, ``resultType: "complete"`` included (SEP-2663: the structure of the original
    request's result; the ext-tasks requester refuses a result without it)."""
    if isinstance(result, BaseModel):
        out: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    else:
        out = dict(result)
    out["resultType"] = "complete"
    return out


class TaskChannel(InputChannel):
    """The channel of a tool call running as a task: progress becomes the task's ``statusMessage``;
    log messages have nowhere to go (the spec sends none for tasks); ``elicit``/``sample`` make
    the task ``input_required`` until ``tasks/update`` answers (keys ``input-<n>``, never reused).

    :param ctx: the context of the request that started the task (its declared capabilities).
    """

    def __init__(self, ctx: Ctx, task_id: str, tasks: Tasks) -> None:
        super().__init__(ctx)
        self._task_id = task_id
        self._tasks = tasks
        self._asked = 0

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Set the task's ``statusMessage``: ``message``, with ``progress``/``total`` after it."""
        counted = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        text = f"{message} ({counted})" if message else f"progress {counted}"
        await self._tasks.note(self._task_id, text)

    async def log(self, level: Any, data: Any, logger: str | None = None) -> None:
        """Nothing: notifications are not sent for tasks (SEP-2663)."""

    def _require(self, capability: types.ClientCapabilities, what: str) -> None:
        have = types.ClientCapabilities.model_validate(dict(declared_capabilities(self._ctx)))
        wanted = capability.model_dump(exclude_none=True)
        if not all(getattr(have, name, None) is not None for name in wanted):
            raise ToolFailure(f"the client did not declare the {what} capability, so this tool cannot ask it")

    async def _response(self, request: types.CreateMessageRequest | types.ElicitRequest) -> dict[str, Any]:
        """Put ``request`` in the task's ``inputRequests`` and wait for its answer (checked)."""
        self._asked += 1
        key = f"input-{self._asked}"
        wire = wire_request(request)
        tasks, task_id = self._tasks, self._task_id
        await tasks.retried(lambda: tasks.store.change(task_id, Change(ask={key: wire})))
        while True:
            await anyio.sleep(tasks.tick)
            record = await tasks.retried(lambda: tasks.store.get(task_id))
            if record is None or record.ended:
                raise ToolFailure("the task ended while it waited for input")
            if key in record.answers:
                break
        response = record.answers[key]
        await tasks.retried(lambda: tasks.store.change(task_id, Change(take=(key,))))
        answer = Answer(method=str(wire["method"]), ask=digest(wire), response=response)
        try:
            checked_answers({key: answer})
        except InvalidParams as exc:
            raise ToolFailure(exc.message) from None
        return dict(response)


class TaskParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel`` params."""

    model_config = ConfigDict(defer_build=True)  # built at the first tasks/* request, not at start-up
    task_id: str = Field(alias="taskId", min_length=1)


class UpdateParams(TaskParams):
    """``tasks/update`` params."""

    input_responses: dict[str, dict[str, Any]] = Field(alias="inputResponses")


class TaskMethod:
    """``tasks/get``, ``tasks/update`` and ``tasks/cancel``: the caller's own task, the gate asking
    ``call`` on its tool as the call did, only from a client that declared the extension."""

    actor: Actor = "application"

    def __init__(self, name: str, tasks: Tasks) -> None:
        self.name = name  # tasks/get, tasks/update or tasks/cancel
        self._tasks = tasks

    def route(self, exchange: Exchange, params: TaskParams) -> TaskParams:
        exchange.target = shown(params.task_id)
        if not declares_tasks(exchange.ctx):
            raise MissingCapability(
                f"{self.name} needs the {TASKS_EXTENSION} extension declared in the request's client capabilities",
                data=NEEDS_TASKS,
            )
        return params

    def authorize(self, exchange: Exchange, target: TaskParams) -> None:
        """Nothing yet: which tool a task runs is known once it is read (:meth:`invoke` asks then)."""

    async def invoke(self, exchange: Exchange, target: TaskParams) -> dict[str, Any]:
        record = await self._tasks.find(exchange.principal, target.task_id)
        exchange.gate.require("call", record.tool)
        if self.name == "tasks/get":
            return task_wire(record, detailed=True)
        if self.name == "tasks/cancel":
            await self._tasks.cancel(record)
        elif isinstance(target, UpdateParams):
            await self._tasks.store.change(record.task_id, Change(answer=target.input_responses))
        return {}

    def evidence(self, exchange: Exchange, target: TaskParams, produced: dict[str, Any]) -> dict[str, Any]:
        exchange.reason = f"{produced['status']}" if "status" in produced else None
        return produced


def params_model(name: str) -> type[TaskParams]:
    return UpdateParams if name == "tasks/update" else TaskParams


def created_wire(record: TaskRecord) -> dict[str, Any]:
    """The ``CreateTaskResult`` of ``record``: the task, ``resultType: "task"``."""
    return {"resultType": "task", **task_wire(record, detailed=False)}
