"""Ended tasks are bounded in memory (round 4 item 5).

Was: an ended task kept its whole result (up to ``max_result_bytes``, 4 MiB) for ``ttl_seconds``
with no cap, so one caller could pile up hundreds of MiB. Now the bytes of ended tasks are
bounded per subject (``[server.tasks] max_ended_bytes_per_subject``) and in total
(``max_ended_bytes``); the oldest ended ones are dropped first, counted
(``mcp_providers_tasks_evicted``), and their owner is told why on ``tasks/get``.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import MCPError
from pydantic import ValidationError
from tasks_support import Created, TasksPlugin, client, start, tasks_get, until

from mcp_providers._serve.methods.tasks import NOT_FOUND, owner_of
from mcp_providers._serve.state.ended import DROPPED
from mcp_providers._serve.state.tasks import Change, InProcessTasks, TaskRecord
from mcp_providers.config import ServerSettings, TasksSettings
from mcp_providers.identity import Principal, serving_as
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

KIB = 1024


def _store(per_subject: int = 4 * KIB, total: int = 10 * KIB) -> tuple[InProcessTasks, list[float]]:
    now = [100.0]
    settings = TasksSettings(max_ended_bytes_per_subject=per_subject, max_ended_bytes=total)
    return InProcessTasks(clock=lambda: now[0], settings=settings), now


async def _ended(store: InProcessTasks, task_id: str, owner: str, size: int, *, failed: bool = False) -> None:
    await store.create(TaskRecord(task_id, owner, "x", "working", 100.0, 100.0, 3600.0, 1000))
    if failed:
        change = Change(status="failed", error={"code": -32603, "message": "e" * size})
    else:
        change = Change(status="completed", result={"content": [{"type": "text", "text": "r" * size}]})
    await store.change(task_id, change)


async def _kept(store: InProcessTasks, task_id: str) -> bool:
    """Whether ``task_id`` still holds what it ended with (a dropped one reads as its stand-in)."""
    record = await store.get(task_id)
    assert record is not None, task_id  # kept, or its stand-in: never silently gone before its ttl
    return record.message != DROPPED


async def _fill(store: InProcessTasks, prefix: str, owner: str, count: int, *, failed: bool = False) -> int:
    """End ``count`` tasks of ~1 KiB each; how many of them one owner's 4 KiB cap holds."""
    for n in range(count):
        await _ended(store, f"{prefix}{n}", owner, 1000, failed=failed)
        if n == 0:
            size = store.ended_bytes(owner)
    return (4 * KIB) // size


async def test_a_subjects_oldest_ended_tasks_go_first_once_its_bytes_pass_the_cap() -> None:
    store, _ = _store()
    fit = await _fill(store, "a", "alice", 6)
    assert fit == 3  # a record is its result plus ~300 bytes of fields
    assert [await _kept(store, f"a{n}") for n in range(6)] == [False] * 3 + [True] * 3
    assert store.evicted == 3 and store.dropped("a0") == "alice" and store.dropped("a5") is None
    assert store.ended_bytes("alice") <= 4 * KIB


async def test_failed_tasks_count_as_well() -> None:
    store, _ = _store()
    fit = await _fill(store, "f", "alice", 6, failed=True)
    assert [await _kept(store, f"f{n}") for n in range(6)] == [False] * (6 - fit) + [True] * fit
    assert store.evicted == 6 - fit > 0


async def test_the_total_cap_drops_the_oldest_of_anyone() -> None:
    store, _ = _store(per_subject=4 * KIB, total=6 * KIB)
    await _fill(store, "b", "bob", 3)
    await _fill(store, "c", "carol", 3)
    # 6 x ~1.3 KiB: each subject within its cap, the total over it: bob's oldest go first
    assert not await _kept(store, "b0") and not await _kept(store, "b1") and await _kept(store, "b2")
    assert all([await _kept(store, f"c{n}") for n in range(3)])
    assert store.ended_bytes() <= 6 * KIB and store.evicted == 2


async def test_running_tasks_are_never_dropped() -> None:
    store, _ = _store()
    await store.create(TaskRecord("running", "alice", "x", "working", 100.0, 100.0, 3600.0, 1000))
    fit = await _fill(store, "a", "alice", 8)
    assert await _kept(store, "running") and store.evicted == 8 - fit


async def test_a_result_bigger_than_the_cap_is_dropped_at_once() -> None:
    store, _ = _store()
    await _ended(store, "small", "alice", 100)
    await _ended(store, "huge", "alice", 5 * KIB)
    assert not await _kept(store, "huge") and store.dropped("huge") == "alice"
    assert await _kept(store, "small")  # not sacrificed for one that could never fit


async def test_expired_tasks_give_their_bytes_back() -> None:
    store, now = _store()
    for n in range(3):
        await _ended(store, f"a{n}", "alice", 1000)
    now[0] += 3601 + 2  # all three expired (and a sweep is due)
    await _ended(store, "later", "alice", 1000)
    assert store.evicted == 0 and store.ended_bytes("alice") < 2 * KIB


def test_a_subject_cap_above_the_total_is_refused() -> None:
    with pytest.raises(ValidationError, match="max_ended_bytes_per_subject"):
        TasksSettings(max_ended_bytes_per_subject=64 * KIB * KIB, max_ended_bytes=32 * KIB * KIB)


# -- through a real client ------------------------------------------------------------------------

ALICE = Principal("alice", issuer="https://idp.example/")
BOB = Principal("bob", issuer="https://idp.example/")


async def _finished(c: Any, n: int) -> str:
    handle = await start(c.session, "count", {"n": n})
    assert isinstance(handle, Created)
    await until(c.session, handle.task_id, {"completed"})
    return handle.task_id


async def test_the_owner_of_a_dropped_task_is_told_why_and_anyone_else_gets_not_found() -> None:
    tasks = TasksSettings(max_ended_bytes_per_subject=3 * KIB, max_ended_bytes=8 * KIB)
    composition = compose({"tasks": TasksPlugin()}, server=ServerSettings(tasks=tasks))
    with serving_as(ALICE):
        async with client(composition.server) as c:
            ids = [await _finished(c, 1) for _ in range(6)]  # each result ~1 KiB with its receipt
            dropped = await tasks_get(c.session, ids[0])
            assert dropped["status"] == "failed" and "result" not in dropped
            assert "max_ended_bytes_per_subject" in dropped["statusMessage"]
            assert "max_ended_bytes_per_subject" in dropped["error"]["message"]
            assert (await tasks_get(c.session, ids[-1]))["status"] == "completed"
    with serving_as(BOB):
        async with client(composition.server) as c:
            with pytest.raises(MCPError) as unknown:
                await tasks_get(c.session, ids[0])
            assert NOT_FOUND in str(unknown.value) and "max_ended" not in str(unknown.value)
    store = composition.runtime.tasks.store
    assert store.evicted >= 1 and store.dropped(ids[0]) == owner_of(ALICE)

    from prometheus_client import CollectorRegistry, generate_latest

    from mcp_providers._serve.transport.ops import _Gauges

    registry = CollectorRegistry()
    registry.register(_Gauges(composition.runtime))
    assert f"mcp_providers_tasks_evicted_total {float(store.evicted)}" in generate_latest(registry).decode()


async def test_a_stand_in_is_forgotten_when_the_task_would_have_expired() -> None:
    store, now = _store()
    await _fill(store, "a", "alice", 6)
    assert not await _kept(store, "a0")
    now[0] += 3601 + 2
    assert await store.get("a0") is None and store.dropped("a0") is None
