"""Issue 42 (build 3): Redis as the shipped deployments run it (AOF, fsync every second) keeps
tasks, stored stream events and poll snapshots across a restart; with persistence off they are gone,
and a task lost that way is answered as lost (-32010, ``task-lost``), not as "not found".

Real ``redis-server``, started with the arguments of ``deploy/compose.yaml``'s Redis service.
"""

from __future__ import annotations

import secrets
import time
import uuid
from pathlib import Path

import mcp_types as types
import pytest
import yaml
from cluster_support import RedisServer

from mcp_providers._serve.methods.tasks import Tasks, owner_of, reader_of
from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers._serve.state.events import UNSTORED, RedisEventStore
from mcp_providers._serve.state.sealing import Sealing
from mcp_providers._serve.state.tasks import RedisTasks, TaskLost, TaskRecord, new_task_id
from mcp_providers.config import ClusterSettings, TasksSettings
from mcp_providers.errors import InvalidParams
from mcp_providers.identity import LOCAL

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


SEALING = Sealing(secrets.token_bytes(32))
"""Task records are sealed with the deployment key in Redis (round 4 item 14): one key for the whole test."""


COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose.yaml"


def _shipped_redis_args() -> tuple[str, ...]:
    """The Redis service's arguments in ``deploy/compose.yaml`` (after ``redis-server``)."""
    command = yaml.safe_load(COMPOSE.read_text())["services"]["redis"]["command"]
    assert command[0] == "redis-server"
    return tuple(command[1:])


async def _keep_and_find(redis: RedisServer) -> tuple[bool, bool, bool]:
    """Keep a task, a stream event and a snapshot; restart Redis cleanly; which are still there.
    A task that is gone must be answered as lost; one that is kept, as itself."""
    settings = ClusterSettings(redis_url=redis.url, key_prefix=f"t{uuid.uuid4().hex[:8]}")
    made = time.time()
    task_id = new_task_id(made)
    record = TaskRecord(task_id=task_id, tool="echo", owner=owner_of(LOCAL), reader=reader_of(LOCAL),
                        status="completed", created=made, updated=made, ttl=3600, poll_ms=1000,
                        result={"content": []})  # fmt: skip
    async with (backend := RedisBackend(settings)).running():
        await RedisTasks(backend, sealing=SEALING).create(record)
        event = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/resources/updated",
                                          params={"uri": "count://report"})  # fmt: skip
        stored = await RedisEventStore(backend, "session-1").store_event("_GET_stream", event)
        assert stored != UNSTORED
        await backend.remember("poll/dev", "snapshot")
    redis.stop()
    redis.start()
    async with (backend := RedisBackend(settings)).running():
        task = await RedisTasks(backend, sealing=SEALING).get(task_id)
        replayed: list[object] = []

        async def collect(message: object) -> None:
            replayed.append(message)

        await RedisEventStore(backend, "session-1").replay_events_after(stored.split(".")[0] + ".0-0", collect)
        snapshot = await backend.recall("poll/dev")
        await _answered_as_lost_or_found(RedisTasks(backend, sealing=SEALING), task_id, found=task is not None)
    return task is not None and task.result == record.result, bool(replayed), snapshot == "snapshot"


async def _never_run(task: object, params: object) -> None:
    raise AssertionError("no task is started here")


async def _answered_as_lost_or_found(store: RedisTasks, task_id: str, *, found: bool) -> None:
    """``tasks/get``'s lookup (:meth:`Tasks.find`): the lost task says so; ids never stored (made up
    now, or of another form) stay "not found", whether or not Redis restarted."""
    tasks = Tasks(store, TasksSettings(), lease=store.lease, body=_never_run)
    if found:
        assert (await tasks.find(LOCAL, task_id)).task_id == task_id
    else:
        with pytest.raises(TaskLost) as lost:
            await tasks.find(LOCAL, task_id)
        assert lost.value.code == -32010 and lost.value.data == {"rule": "task-lost"}
        assert "lost its data" in lost.value.message and "AOF" in lost.value.message
    for never in (new_task_id(time.time()), uuid.uuid4().hex, "zz." + uuid.uuid4().hex):
        with pytest.raises(InvalidParams, match="Task not found"):
            await tasks.find(LOCAL, never)


async def test_the_shipped_redis_keeps_tasks_events_and_snapshots_across_a_restart(tmp_path: Path) -> None:
    args = _shipped_redis_args()
    assert args[args.index("--appendonly") : args.index("--appendonly") + 2] == ("--appendonly", "yes")
    assert args[args.index("--appendfsync") + 1] == "everysec"
    redis = RedisServer(extra=(*args, "--dir", str(tmp_path)))
    try:
        assert await _keep_and_find(redis.start()) == (True, True, True)
    finally:
        redis.stop()


async def test_with_persistence_off_a_restart_loses_them(tmp_path: Path) -> None:
    redis = RedisServer(extra=("--dir", str(tmp_path)))  # the test default: --save "" --appendonly no
    try:
        assert await _keep_and_find(redis.start()) == (False, False, False)
    finally:
        redis.stop()
