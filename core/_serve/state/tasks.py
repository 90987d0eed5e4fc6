"""Where tasks are kept: in the process, or in Redis with ``[cluster]`` (SEP-2663 tasks).

A task is one JSON record (:class:`TaskRecord`) under its unguessable id. The replica running it
holds a *lease* on it (``leaseUntil``, wall-clock seconds), renewed every tick; a reader that finds
a task still running with its lease run out marks it ``failed``: the replica running it died, so
it never ends otherwise. Every change goes through :func:`changed`, the one place that says which
transitions are allowed (a terminal task never changes again; only an outstanding input key can
be answered), so both stores apply the same rules.

In Redis the record, sealed (:mod:`.sealing`), is the value of ``{key_prefix}:task:<id>``; each change is an optimistic
transaction (``WATCH``/``MULTI``), so a cancel through one replica and a completion through
another cannot overwrite each other. Keys expire: while running after ``ttl`` plus the lease
(renewed), once ended after ``ttl``.

A task id starts with the millisecond it was made (:func:`new_task_id`), and Redis keeps, beside
the tasks, when its store of them began (``{key_prefix}:tasks:born``, set with the first task
stored, or the first look for a missing one). A task missing from a store that began after the
task was made was lost with Redis's data (a restart without persistence): :meth:`RedisTasks.lost`
says so, and ``tasks/get`` answers :class:`TaskLost` rather than "not found".
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from mcp_providers._holders import Frozen
from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers._serve.state.credentials import MAKE_A_KEY
from mcp_providers._serve.state.ended import DROPPED, REMEMBERED, EndedBudget
from mcp_providers.config import CREDENTIALS_KEY_ENV, TasksSettings
from mcp_providers.errors import BACKEND_UNAVAILABLE, RequestError

if TYPE_CHECKING:
    from mcp_providers._serve.state.sealing import Sealing

log = logging.getLogger("mcp_providers.tasks")

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task as stored (times in wall-clock seconds since the epoch)."""

    task_id: str
    owner: str
    """Digest of the principal's ``(issuer, subject)`` that started it: what per-person caps count."""
    tool: str
    status: Status
    created: float
    updated: float
    ttl: float
    """Seconds the task is kept: from creation while running, from its end once ended."""
    poll_ms: int
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    asked: dict[str, Any] = field(default_factory=dict)
    """Outstanding input requests: key -> ``{"method", "params"}``."""
    answers: dict[str, Any] = field(default_factory=dict)
    """Responses to input requests not yet taken by the running task: key -> response."""
    keys_used: int = 0
    """Input keys issued so far (``input-<n>``: never reused within the task)."""
    cancel: bool = False
    lease_until: float | None = None
    """Until when the running replica holds it (``None``: not leased, in one process)."""
    reader: str = ""
    """Digest of the whole authorization context that started it (``methods.tasks.reader_of``):
    nobody else sees it. ``""`` (a record of an older replica): nobody does."""

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL

    def expires(self) -> float:
        """When the record may be forgotten."""
        return (self.updated if self.ended else self.created) + self.ttl

    def to_json(self) -> str:
        return json.dumps({name: getattr(self, name) for name in self.__dataclass_fields__})

    @classmethod
    def from_json(cls, raw: str | bytes) -> TaskRecord | None:
        try:
            data = json.loads(raw)
            return cls(**data) if isinstance(data, dict) else None
        except (ValueError, TypeError):  # a malformed record is a missing one, not a crash
            return None


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Change(Frozen):
    """What a caller wants changed; :func:`changed` decides what is allowed of it."""

    __slots__ = ("answer", "ask", "cancel", "error", "lease_until", "message", "result", "status", "take")

    status: Status | None
    message: str | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    ask: dict[str, Any] | None
    """Input requests to add (key -> request); the task becomes ``input_required``."""
    answer: Mapping[str, Any] | None
    """Responses from ``tasks/update``; only outstanding keys are kept."""
    take: tuple[str, ...]
    """Answered keys the running task has taken; once none is outstanding it is ``working`` again."""
    cancel: bool
    lease_until: float | None

    def __init__(
        self,
        status: Status | None = None,
        message: str | None = None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        ask: dict[str, Any] | None = None,
        answer: Mapping[str, Any] | None = None,
        take: tuple[str, ...] = (),
        cancel: bool = False,
        lease_until: float | None = None,
    ) -> None:
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "result", result)
        object.__setattr__(self, "error", error)
        object.__setattr__(self, "ask", ask)
        object.__setattr__(self, "answer", answer)
        object.__setattr__(self, "take", take)
        object.__setattr__(self, "cancel", cancel)
        object.__setattr__(self, "lease_until", lease_until)


LEASE_LOST = "the server instance running this task stopped before it finished (its lease of {lease} s ran out)"


def changed(record: TaskRecord, change: Change, now: float) -> TaskRecord:
    """``record`` after ``change`` at ``now``: a terminal record never changes; answers are kept
    only for outstanding keys; a cancel asked of an ended task is ignored; a change that leaves
    the task as it was (a lease renewal, answers to no outstanding key) leaves ``lastUpdatedAt``."""
    if record.ended:
        return record
    kept: dict[str, Any] = {"updated": now}
    if change.lease_until is not None:
        kept["lease_until"] = change.lease_until
    if change.cancel:
        kept["cancel"] = True
    if change.message is not None:
        kept["message"] = change.message[:1000]
    asked, answers = dict(record.asked), dict(record.answers)
    if change.ask:
        asked.update(change.ask)
        kept["keys_used"] = record.keys_used + len(change.ask)
    for key, response in (change.answer or {}).items():
        if key in asked:
            answers[key] = response
    for key in change.take:
        asked.pop(key, None)
        answers.pop(key, None)
    kept["asked"], kept["answers"] = asked, answers
    status: Status = change.status or record.status
    if status in ("working", "input_required"):
        status = "input_required" if asked else "working"
    else:
        kept.update(result=change.result, error=change.error, asked={}, answers={}, lease_until=None)
    new = replace(record, status=status, **kept)
    if replace(new, updated=record.updated, lease_until=record.lease_until) == record:  # nothing else changed
        return replace(record, lease_until=new.lease_until)
    return new


def lapsed(record: TaskRecord, now: float, lease: float) -> Change | None:
    """The change that fails ``record`` if its lease ran out while it was running, else ``None``."""
    if record.ended or record.lease_until is None or record.lease_until >= now:
        return None
    message = LEASE_LOST.format(lease=f"{lease:g}")
    return Change(status="failed", message=message, error={"code": -32603, "message": message})


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class RunningTask(Frozen):
    """A task whose body is running: handed by :class:`~mcp_providers._serve.methods.tasks.Tasks` to
    its body and carried by the body's request (``Exchange.task``), whose rate was counted when the
    task started, which is not made a task again, and whose tool asks through the task."""

    __slots__ = ("ctx", "task_id", "tool")

    task_id: str
    tool: str
    ctx: Any
    """The context of the request that started it (its declared client capabilities)."""

    def __init__(self, task_id: str, tool: str, ctx: Any) -> None:
        object.__setattr__(self, "task_id", task_id)
        object.__setattr__(self, "tool", tool)
        object.__setattr__(self, "ctx", ctx)


def new_task_id(now: float) -> str:
    """A new unguessable task id: the millisecond ``now`` (seconds since the epoch) in hex, a dot,
    and 24 random bytes in URL-safe base64 (``"18c5a3f0e21.Zk3..."``, 44 characters)."""
    return f"{int(now * 1000):x}.{secrets.token_urlsafe(24)}"


def made_at(task_id: str) -> int | None:
    """When the task of ``task_id`` was made (milliseconds since the epoch), from
    :func:`new_task_id`'s form; ``None`` for any other form."""
    stamp, dot, _ = task_id.partition(".")
    if not dot or not 0 < len(stamp) <= 12:
        return None
    try:
        return int(stamp, 16)
    except ValueError:
        return None


class TaskLost(RequestError):
    """The task was lost with the cluster backend's data: Redis came back empty (persistence off)
    after the task was made. JSON-RPC -32010 (:data:`~mcp_providers.errors.BACKEND_UNAVAILABLE`,
    the backend failed us), ``data.rule`` ``task-lost``."""

    code = BACKEND_UNAVAILABLE


LOST = (
    "the task was lost: the cluster backend (Redis) lost its data after the task was made (a restart without "
    "persistence), so its status and result are gone; call the tool again, and ask the operator to run Redis "
    'with AOF (docs/deploy.md, "What is kept where")'
)
"""What ``tasks/get`` (and update, cancel) answers for a task :meth:`RedisTasks.lost`."""


class TaskStore(Protocol):
    """Where tasks live (:class:`InProcessTasks` or :class:`RedisTasks`)."""

    leased: bool
    """Whether running tasks are leased (kept across replicas)."""

    async def create(self, record: TaskRecord) -> None:
        """Store ``record``; it can be read once this returns (the spec's durability rule)."""

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record (``None``: unknown or expired), failed first if its lease ran out."""

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        """Apply ``change`` through :func:`changed`; the new record (``None``: unknown)."""

    async def lost(self, task_id: str) -> bool:
        """Whether ``task_id``, missing, was lost with the store's data (not unknown or expired)."""


SWEEP_SECONDS = 1.0
"""Seconds between the in-process store's sweeps for expired tasks (each looks at every task)."""


class InProcessTasks:
    """Tasks in this process's memory (no ``[cluster]``); an expired one reads as missing, and is
    dropped by a sweep at most every :data:`SWEEP_SECONDS` (not on every operation: every poll,
    and every tick of a question's wait, reads, so a sweep per read cost every stored task)."""

    leased = False

    def __init__(self, clock: Callable[[], float] = time.time, settings: TasksSettings | None = None) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._clock = clock
        self._next_sweep = float("-inf")
        settings = settings or TasksSettings()
        self._ended = EndedBudget(settings.max_ended_bytes_per_subject, settings.max_ended_bytes)
        self._stand_ins: OrderedDict[str, TaskRecord] = OrderedDict()
        """Dropped ended tasks, failed with :data:`DROPPED` and without their result (oldest first)."""

    @property
    def evicted(self) -> int:
        """Ended tasks dropped to stay within ``[server.tasks]``'s byte caps since start-up."""
        return self._ended.evicted

    def ended_bytes(self, owner: str | None = None) -> int:
        """Bytes (record JSON) held by ended tasks: of ``owner``, or of everyone."""
        return self._ended.held(owner)

    def dropped(self, task_id: str) -> str | None:
        """The owner of ``task_id`` if it ended and was dropped to stay within the byte caps."""
        stand_in = self._stand_ins.get(task_id)
        return stand_in.owner if stand_in is not None else None

    async def create(self, record: TaskRecord) -> None:
        self._sweep()
        self._records[record.task_id] = record

    async def get(self, task_id: str) -> TaskRecord | None:
        self._sweep()
        record = self._records.get(task_id) or self._stand_ins.get(task_id)
        return record if record is not None and record.expires() >= self._clock() else None

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        record = await self.get(task_id)
        if record is None:
            return None
        before = record
        record = self._records[task_id] = changed(record, change, self._clock())
        if record.ended and not before.ended:
            for gone in self._ended.add(task_id, record.owner, len(record.to_json())):
                self._drop(gone)
            if task_id not in self._records:
                log.warning("a task of %s ended with %d bytes, more than a [server.tasks] byte cap allows: dropped",
                            record.tool, len(record.to_json()))  # fmt: skip
        return record

    def _drop(self, task_id: str) -> None:
        """Replace an ended task by its stand-in: failed, saying why, without result or error."""
        record = self._records.pop(task_id)
        error = {"code": -32603, "message": DROPPED}
        self._stand_ins[task_id] = replace(record, status="failed", message=DROPPED, result=None, error=error)
        if len(self._stand_ins) > REMEMBERED:
            self._stand_ins.popitem(last=False)

    def _sweep(self) -> None:
        now = self._clock()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_SECONDS
        for task_id in [t for t, r in self._records.items() if r.expires() < now]:
            del self._records[task_id]
            self._ended.forget(task_id)
        for task_id in [t for t, r in self._stand_ins.items() if r.expires() < now]:
            del self._stand_ins[task_id]

    def __len__(self) -> int:
        return len(self._records)

    async def lost(self, task_id: str) -> bool:
        return False  # this store lives and dies with the process that made its tasks


class RedisTasks:
    """Tasks in the cluster's Redis (see the module docstring); ``lease`` is ``[cluster] lease_seconds``.

    Each record is sealed (AES-256-GCM under the deployment key, :mod:`.sealing`): a tool's result,
    its questions and the caller's answers, and the owner digest, are never readable in Redis.
    Without the key (``sealing`` ``None``) every new task is refused with :data:`KEYLESS`.
    """

    leased = True

    def __init__(
        self, backend: RedisBackend, clock: Callable[[], float] = time.time, sealing: Sealing | None = None
    ) -> None:
        self._backend = backend
        self._clock = clock
        self._sealing = sealing
        self.lease = backend.settings.lease_seconds

    def _key(self, task_id: str) -> str:
        return self._backend.key("task", task_id)

    def _sealed(self, record: TaskRecord, key: str) -> bytes:
        if self._sealing is None:
            raise MCPError(INTERNAL_ERROR, KEYLESS)
        return self._sealing.seal(record.to_json().encode(), key)

    def _opened(self, raw: bytes | None, key: str) -> TaskRecord | None:
        """The record kept at ``key``; ``None`` for none, or a value that does not open (tampered,
        another deployment key, or written in the clear by an older version)."""
        if raw is None or self._sealing is None:
            return None
        plain = self._sealing.open(raw, key)
        return TaskRecord.from_json(plain) if plain is not None else None

    async def create(self, record: TaskRecord) -> None:
        seconds, key, born = record.ttl + self.lease, self._key(record.task_id), self._backend.key("tasks", "born")
        value = self._sealed(record, key)

        async def store(r: Any) -> Any:
            async with r.pipeline(transaction=False) as pipe:  # one round trip
                pipe.set(born, int(record.created * 1000), nx=True)  # the store began no later than this task
                pipe.set(key, value, px=_ms(seconds))
                return await pipe.execute()

        await self._backend.call("store a task", store)

    async def lost(self, task_id: str) -> bool:
        """Whether ``task_id`` (missing) was made before this Redis's store of tasks began, so Redis
        lost it with its data; ``False`` for an id not of :func:`new_task_id`'s form. Replicas'
        clocks should agree (NTP): a task made within their skew before a restart reads as unknown.

        :raises ClusterUnavailable: Redis did not answer.
        """
        made = made_at(task_id)
        if made is None:
            return False
        born = self._backend.key("tasks", "born")

        async def began(r: Any) -> Any:
            async with r.pipeline(transaction=False) as pipe:
                pipe.set(born, int(self._clock() * 1000), nx=True)  # an empty Redis's store begins now
                pipe.get(born)
                return (await pipe.execute())[1]

        value = await self._backend.call("read when the task store began", began)
        try:
            return int(value) > made  # both in milliseconds: one made in the store's first one is not lost
        except (TypeError, ValueError):  # not a number: someone else's key; say nothing we do not know
            return False

    async def get(self, task_id: str) -> TaskRecord | None:
        key = self._key(task_id)
        record = self._opened(await self._backend.call("read a task", lambda r: r.get(key)), key)
        if record is None:
            return None
        failing = lapsed(record, self._clock(), self.lease)
        return record if failing is None else await self.change(task_id, failing)

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        key = self._key(task_id)
        out: list[TaskRecord | None] = [None]

        async def apply(pipe: Any) -> None:
            record = self._opened(await pipe.get(key), key)
            out[0] = None
            if record is None:
                return
            new = changed(record, change, self._clock())
            out[0] = new
            pipe.multi()
            left = new.expires() - self._clock() + (0 if new.ended else self.lease)
            pipe.set(key, self._sealed(new, key), px=_ms(max(left, 1.0)))

        await self._backend.call("change a task", lambda r: r.transaction(apply, key))
        return out[0]


KEYLESS = (
    f"tasks cannot run: with [cluster] a task's record (its result, questions and answers) is kept in Redis "
    f"encrypted with the deployment key, and ${CREDENTIALS_KEY_ENV} (or [server.credentials] key_env) is unset; "
    f"the operator must set the same 32 random bytes in base64 on every replica ({MAKE_A_KEY})"
)
"""Why a task is refused under ``[cluster]`` without the deployment key."""


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def store_for(
    shared: object, settings: TasksSettings, clock: Callable[[], float] = time.time, sealing: Sealing | None = None
) -> TaskStore:
    """:class:`RedisTasks` on the cluster's backend (records sealed with ``sealing``), else
    :class:`InProcessTasks` bounded by ``settings``."""
    if isinstance(shared, RedisBackend):
        return RedisTasks(shared, clock, sealing)
    return InProcessTasks(clock, settings)
