"""An upstream's tasks: which of its tools may run as tasks here, and following a task it starts.

Two eras say it two ways:

- 2026-07-28: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663). The upstream advertises
  it in ``server/discover`` (``capabilities.extensions``); task creation is then the upstream's
  call, per request, on any ``tools/call`` that declares the extension, and tools/list says
  nothing per tool. Every tool of such an upstream is declared ``task_support="optional"``; every
  client of an upstream declares the extension (:class:`TasksExtension`); a ``CreateTaskResult``
  (``resultType: "task"``) is followed with ``tasks/get`` until it ends (:func:`follow`).
- 2025-11-25: core tasks (SEP-1686): ``capabilities.tasks.requests.tools.call`` and each tool's
  ``execution.taskSupport``. An ``"optional"`` tool is declared ``"optional"`` and called
  plainly (a downstream task still runs as a task); a ``"required"`` one is left out: the SDK's
  client validates a 2025-11-25 ``tools/call`` answer as a ``CallToolResult``, so a
  task-augmented call's ``CreateTaskResult`` cannot be received through it.

While a task is followed, its ``statusMessage`` goes to the downstream call as progress (a
downstream task's own ``statusMessage``); a downstream cancel sends ``tasks/cancel`` upstream
(best effort, within :data:`CANCEL_SECONDS`); a task that fails, is cancelled upstream, asks for
input (not relayed) or outlives its ``ttlMs`` fails the call with an ``UpstreamError`` naming the
upstream.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, ValidationError

from mcp_providers.errors import UpstreamError
from mcp_providers.providers import ToolCall

if TYPE_CHECKING:
    from mcp import Client

    from mcp_providers.plugins.upstream.link import Link

__all__ = [
    "CANCEL_SECONDS",
    "TASKS_EXTENSION",
    "Created",
    "Handed",
    "Offered",
    "TaskSupport",
    "TasksExtension",
    "follow",
    "offered",
    "task_support_of",
]

log = logging.getLogger(__name__)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TaskSupport = Literal["forbidden", "optional", "required"]
Offered = Literal["extension", "core"] | None
"""How an upstream offers tasks: the 2026-07-28 extension, 2025-11-25's core tasks, or not at all."""
CANCEL_SECONDS = 5.0
"""Longest wait for the upstream's answer to ``tasks/cancel`` (sent once, best effort)."""
POLL_SECONDS = (0.05, 30.0)
"""Bounds of the wait between two ``tasks/get``: the upstream's ``pollIntervalMs`` within them
(1 s when it suggests none)."""
_STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
_ENDED = frozenset({"completed", "failed", "cancelled"})


def offered(c: Client) -> Offered:
    """How ``c``'s upstream offers tasks for ``tools/call`` (see :data:`Offered`)."""
    caps = c.server_capabilities
    if c.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return "extension" if caps.extensions and TASKS_EXTENSION in caps.extensions else None
    requests = caps.tasks.requests if caps.tasks is not None else None
    return "core" if requests is not None and requests.tools is not None and requests.tools.call is not None else None


def task_support_of(tool: types.Tool, offers: Offered) -> TaskSupport:
    """Whether ``tool`` may run as a task here (:func:`offered` said ``offers``): ``"optional"``
    for every tool of an upstream offering the extension (the upstream decides per call), the
    listing's ``execution.taskSupport`` for one offering core tasks, else ``"forbidden"``."""
    if offers == "extension":
        return "optional"
    said = tool.execution.task_support if tool.execution is not None else None
    if offers == "core" and said in ("optional", "required"):
        return said
    return "forbidden"


class Created(types.Result):
    """A 2026-07-28 ``CreateTaskResult`` (``resultType: "task"``) as the SDK parses a claimed result."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class Handed(Exception):
    """Raised out of ``Client.call_tool`` when the upstream answered with a task: the call then
    follows it (:func:`follow`) in requests of its own, each bounded by ``read_timeout``, rather
    than inside the one ``tools/call`` request's bound."""

    def __init__(self, created: Created) -> None:
        super().__init__(f"the upstream started task {created.task_id[:64]!r}")
        self.created = created


async def _hand(created: Created, ctx: ClaimContext) -> types.CallToolResult:
    raise Handed(created)


class TasksExtension(ClientExtension):
    """Declares the tasks extension on every request of an upstream client; a task handle
    answering ``tools/call`` is raised as :class:`Handed` for the call to follow."""

    identifier = TASKS_EXTENSION

    def claims(self) -> Sequence[ResultClaim[Any]]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [ResultClaim(result_type="task", model=Created, resolve=_hand, protocol_versions=versions)]


class TaskRequest(types.Request[dict[str, Any], str]):
    """A ``tasks/*`` request (no SDK method sends them); over HTTP its ``params.taskId`` is sent
    as ``Mcp-Name``, as SEP-2663 asks."""

    name_param: ClassVar[str | None] = "taskId"


@dataclass(frozen=True, slots=True)
class Seen:
    """An upstream task as last seen (``tasks/get``, or the handle)."""

    task_id: str
    status: str
    message: str | None
    ttl: float | None
    """Seconds the task is kept from its creation; ``None``: unlimited."""
    poll: float
    body: Mapping[str, Any]


def _seen(link: Link, what: str, body: Mapping[str, Any], task_id: str) -> Seen:
    """``body`` (a ``Task``, camelCase) checked: a malformed one is the upstream's failure."""
    status, message = body.get("status"), body.get("statusMessage")
    ttl, poll = body.get("ttlMs"), body.get("pollIntervalMs")
    if body.get("taskId", task_id) != task_id or status not in _STATUSES:
        raise UpstreamError(f"{link.who} answered {what} with something that is not its task (status {status!r})")
    if not all(v is None or (isinstance(v, int | float) and v >= 0) for v in (ttl, poll)):
        raise UpstreamError(f"{link.who} answered {what} with a task whose ttlMs or pollIntervalMs is not a duration")
    wait = 1.0 if poll is None else min(max(poll / 1000, POLL_SECONDS[0]), POLL_SECONDS[1])
    return Seen(
        task_id=task_id,
        status=str(status),
        message=link.said(message, 1000) if isinstance(message, str) else None,
        ttl=None if ttl is None else ttl / 1000,
        poll=wait,
        body=body,
    )


class _Answer(BaseModel):
    """Any JSON object, kept as it came (camelCase keys)."""

    model_config = ConfigDict(extra="allow")


async def _send(c: Client, method: str, task_id: str) -> dict[str, Any]:
    answer = await c.session.send_request(TaskRequest(method=method, params={"taskId": task_id}), _Answer)
    return dict(answer.model_extra or {})


async def follow(link: Link, call: ToolCall, name: str, created: Created) -> types.CallToolResult:
    """Poll the upstream task ``created`` (started by ``tools/call`` of the upstream's tool
    ``name`` for ``call``) until it ends, every ``pollIntervalMs`` (within :data:`POLL_SECONDS`),
    for at most its latest ``ttlMs`` from when it was handed over; its result.

    :raises UpstreamError: it failed, was cancelled upstream, asked for input, outlived its
        ``ttlMs``, answered something that is not a task, or a ``tasks/get`` failed (each named).
    """
    what, task_id = f"tasks/get of {name}", created.task_id
    seen = _seen(link, what, created.model_dump(by_alias=True, mode="json", exclude_none=True), task_id)
    started = anyio.current_time()
    said: str | None = None
    steps = 0
    try:
        while seen.status not in _ENDED:
            if seen.message is not None and seen.message != said:
                said, steps = seen.message, steps + 1
                await call.progress(steps, None, seen.message)
            if seen.status == "input_required":
                raise UpstreamError(
                    f"{link.who}: the task of {name} asks for input, which mcp-providers does not relay "
                    "(ask before the task starts, in an input round)"
                )
            left = math.inf if seen.ttl is None else started + seen.ttl - anyio.current_time()
            if left <= 0:
                raise UpstreamError(f"{link.who}: the task of {name} did not end within its ttlMs ({seen.ttl:g} s)")
            await anyio.sleep(min(seen.poll, left))
            body = await link.request(
                what, lambda c: _send(c, "tasks/get", task_id), principal=call.principal, tool=name
            )
            seen = _seen(link, what, body, task_id)
    except BaseException:
        if seen.status not in _ENDED:
            await _cancel(link, call, name, task_id)
        raise
    return _ended(link, name, seen)


def _ended(link: Link, name: str, seen: Seen) -> types.CallToolResult:
    """The result of an ended task, or the error naming the upstream."""
    because = f": {seen.message}" if seen.message else ""
    if seen.status == "cancelled":
        raise UpstreamError(f"{link.who}: the task of {name} was cancelled upstream{because}")
    if seen.status == "failed":
        error = seen.body.get("error")
        error = error if isinstance(error, Mapping) else {}
        said = error.get("message")
        detail = f"error {error.get('code')}: {link.said(said)}" if isinstance(said, str) else because.lstrip(": ")
        raise UpstreamError(f"{link.who}: the task of {name} failed ({detail or 'no reason given'})")
    try:
        return types.CallToolResult.model_validate(seen.body.get("result"), by_name=False)
    except ValidationError:
        raise UpstreamError(f"{link.who}: the task of {name} completed without a tool result") from None


async def _cancel(link: Link, call: ToolCall, name: str, task_id: str) -> None:
    """``tasks/cancel`` to the upstream, once, shielded from the cancellation that asks for it and
    bounded by :data:`CANCEL_SECONDS`; a failure is logged (the upstream's ttl ends the task)."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_SECONDS) as bound:
        try:
            await link.request(
                f"tasks/cancel of {name}",
                lambda c: _send(c, "tasks/cancel", task_id),
                principal=call.principal,
                tool=name,
            )
            log.info("%s: cancelled the task of %s", link.who, name)
        except Exception as exc:
            log.warning("%s: tasks/cancel of %s failed: %s", link.who, name, link.said(str(exc)))
    if bound.cancelled_caught:
        log.warning("%s did not answer tasks/cancel of %s within %s s", link.who, name, CANCEL_SECONDS)
