"""Tasks (SEP-2663) attacked as a hostile client, a careless plugin author and an operator would.

Each test whose docstring starts "Was:" failed before its fix: the per-caller cap outrun by calls
started at once on Redis; a Redis pause failing a task (its progress note or its wait for an
answer) or losing its result, and a stopping replica then waiting a lease; the task methods and
extension methods escaping ``[server.limits]``; the in-process store looking at every task on
every read; ``subscriptions/listen`` taking ``taskIds`` from a client without the extension; an
ignored ``tasks/update`` moving ``lastUpdatedAt``. The others ("Held:") guard what held: a
``SystemExit`` and its kin fail their task without leaking the caller's slot, no task id reaches
the audit or the log, guessed ids, a result over ``max_result_bytes``, a reload dropping a
running task's plugin.
"""

from __future__ import annotations

import base64
import contextlib
import secrets
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest
from mcp import MCPError
from pydantic import BaseModel
from tasks_support import Created, TasksPlugin, client, start, tasks_cancel, tasks_get, tasks_update, until

from mcp_providers import Tool, ToolCall, ToolProvider, ToolResult, hookimpl
from mcp_providers._serve.state.tasks import InProcessTasks, TaskRecord
from mcp_providers.config import ClusterSettings, LimitsSettings, ServerSettings, TasksSettings
from mcp_providers.identity import Principal, serving_as
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

ALICE = Principal("alice", issuer="https://idp.example/")


class Raise(BaseModel):
    kind: str = "system-exit"


class Raising(ToolProvider):
    """``boom``: raises the ``BaseException`` its ``kind`` names (a careless provider)."""

    name = "raising"

    def tools(self) -> Sequence[Tool]:
        return [Tool(name="boom", description="Raises.", input_model=Raise, task_support="optional")]

    async def call(self, call: ToolCall) -> ToolResult:
        assert isinstance(call.arguments, Raise)
        kinds = {"system-exit": SystemExit(3), "keyboard-interrupt": KeyboardInterrupt(), "base": BaseException("x")}
        raise kinds[call.arguments.kind]


class RaisingPlugin:
    @hookimpl
    def register_tool_providers(self, settings: Any) -> list[ToolProvider]:
        return [Raising()]


def _server(cluster: ClusterSettings | None = None, **server: Any) -> Any:
    plugins = {"tasks": TasksPlugin(), "raising": RaisingPlugin()}
    return compose(plugins, server=ServerSettings(**server), cluster=cluster).server


@contextlib.contextmanager
def _cluster(lease: float = 3.0) -> Iterator[tuple[ClusterSettings, str]]:
    from real_parts import redis_server

    # task records in Redis are sealed with the deployment key (round 4 item 14): no key, no tasks
    with redis_server() as (url, _), pytest.MonkeyPatch.context() as env:
        env.setenv("MCP_PROVIDERS_CREDENTIALS_KEY", base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())
        yield ClusterSettings(redis_url=url, key_prefix="attacks", lease_seconds=lease), url


def _pause_redis(url: str, ms: int) -> None:
    """``CLIENT PAUSE`` the Redis at ``url`` for ``ms``: it stops answering, keeping its data."""
    import redis

    with contextlib.closing(redis.Redis.from_url(url)) as r:
        r.client_pause(ms)


async def _poll(session: Any, task_id: str, statuses: set[str], seconds: float = 20.0) -> dict[str, Any]:
    """:func:`until`, riding out the ``-32010`` answers of a pause in Redis (the client retries)."""
    with anyio.fail_after(seconds):
        while True:
            try:
                task = await tasks_get(session, task_id)
            except MCPError as exc:
                assert exc.code == -32010, exc  # the cluster backend is unreachable: asked again
                await anyio.sleep(0.2)
                continue
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.05)


ENDED = {"completed", "failed", "cancelled"}


async def _send(session: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Any request, as it is (no ``Mcp-Name`` routing header: these are no ``tasks/*``)."""
    import mcp_types as types
    from pydantic import TypeAdapter

    request = types.Request[dict[str, Any], str](method=method, params=params)
    result: dict[str, Any] = await session.send_request(request, TypeAdapter(dict[str, Any]))
    return result


@pytest.mark.parametrize("kind", ["system-exit", "keyboard-interrupt", "base"])
async def test_a_base_exception_in_a_task_fails_it_and_gives_the_callers_slot_back(kind: str) -> None:
    """Held: contained as a provider failure (-32603); a leaked slot refuses the second call."""
    async with client(_server(tasks=TasksSettings(max_running_per_subject=1))) as c:
        for _ in range(2):  # the second is refused (-32009) if the first leaked its slot
            handle = await start(c.session, "boom", {"kind": kind})
            assert isinstance(handle, Created)
            failed = await until(c.session, handle.task_id, ENDED)
            assert failed["status"] == "failed" and failed["error"]["code"] == -32603
            assert "failed running boom" in failed["error"]["message"]
        assert (await c.call_tool("count", {"n": 1})).content  # the server goes on


async def test_the_per_caller_cap_holds_for_calls_started_at_once_on_redis() -> None:
    """Was: the cap was checked before the record was written to Redis and counted after, so
    calls started together all passed the check (six of six started with a cap of one)."""
    with _cluster() as (cluster, _):
        async with client(_server(cluster, tasks=TasksSettings(max_running_per_subject=1))) as c:
            outcomes: list[Any] = []

            async def one() -> None:
                try:
                    outcomes.append(await start(c.session, "hold", {"seconds": 60}))
                except MCPError as exc:
                    outcomes.append(exc.code)

            async with anyio.create_task_group() as group:
                for _ in range(6):
                    group.start_soon(one)
            started = [o for o in outcomes if isinstance(o, Created)]
            for handle in started:
                await tasks_cancel(c.session, handle.task_id)
    assert len(started) == 1 and sorted(o for o in outcomes if not isinstance(o, Created)) == [-32009] * 5


async def test_a_redis_pause_while_a_task_reports_progress_and_ends_neither_fails_it_nor_loses_its_result() -> None:
    """Was: the progress note written while Redis did not answer raised -32006 into the tool, so
    the task failed ("cannot change a task ... retried automatically"); a result written then was
    dropped with a warning, leaving the task to be failed as if its replica had died."""
    with _cluster(lease=4.0) as (cluster, url):
        async with client(_server(cluster)) as c:
            handle = await start(c.session, "count", {"n": 4, "pause": 0.3})
            assert isinstance(handle, Created)
            await anyio.sleep(0.2)
            _pause_redis(url, 1800)  # over timeout_seconds (1 s), under the lease
            done = await _poll(c.session, handle.task_id, ENDED)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "counted to 4 for local"


async def test_a_redis_pause_while_a_task_waits_for_input_does_not_fail_it() -> None:
    """Was: the wait for the answer read the task every tick, and a read while Redis did not
    answer raised -32006 through the tool: the task failed before the user could answer."""

    async def never(context: Any, params: Any) -> Any:
        raise AssertionError("a task asks through inputRequests")

    with _cluster(lease=6.0) as (cluster, url):
        async with client(_server(cluster), elicitation_callback=never) as c:
            handle = await start(c.session, "ask", {})
            assert isinstance(handle, Created)
            await _poll(c.session, handle.task_id, {"input_required"})
            _pause_redis(url, 2500)  # a read each tick (1 s) waits past timeout_seconds (1 s)
            await anyio.sleep(2.7)  # the pause is over
            asking = await _poll(c.session, handle.task_id, {"input_required", *ENDED})
            assert asking["status"] == "input_required", asking
            await tasks_update(c.session, handle.task_id, {"input-1": {"action": "accept", "content": {"ok": True}}})
            done = await _poll(c.session, handle.task_id, ENDED)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "accept {'ok': True}"


async def test_the_task_methods_count_against_the_callers_rate_limit() -> None:
    """Was: ``tasks/get`` and ``tasks/update`` were in no budget, so neither an authenticated
    caller nor the anonymous bucket ("all methods") bounded a flood of them; ``tasks/cancel``,
    which only gives something back, stays unrefused as ``resources/unsubscribe`` does."""
    limits = LimitsSettings(calls=100, reads=3, lists=100, anonymous=3)
    server = _server(limits=limits)
    with serving_as(ALICE):
        async with client(server) as c:
            handle = await start(c.session, "hold", {"seconds": 60})
            assert isinstance(handle, Created)
            await tasks_get(c.session, handle.task_id)
            await tasks_update(c.session, handle.task_id, {"input-1": {"action": "decline"}})
            await tasks_get(c.session, handle.task_id)
            for send in (tasks_get, lambda s, t: tasks_update(s, t, {})):
                with pytest.raises(MCPError) as refused:
                    await send(c.session, handle.task_id)
                assert refused.value.code == -32009 and refused.value.data["limit"] == "reads"
            for _ in range(5):
                await tasks_cancel(c.session, handle.task_id)  # never refused
    with serving_as(Principal("anonymous")):
        async with client(server) as c:
            for _ in range(3):
                with pytest.raises(MCPError) as unknown:
                    await tasks_get(c.session, "no-such-task")
                assert unknown.value.code == -32602
            with pytest.raises(MCPError) as refused:
                await tasks_get(c.session, "no-such-task")
            assert refused.value.code == -32009 and refused.value.data["limit"] == "anonymous"


async def test_the_in_process_store_does_not_look_at_every_task_on_each_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: every create, read and change swept all records for expired ones, so a store of n
    tasks cost n per operation (every tasks/get, every tick of a question's wait): with 10 000
    stored, 3.4 ms a read, and filling it took quadratic time."""
    looked = [0]
    expires = TaskRecord.expires

    def counting(record: TaskRecord) -> float:
        looked[0] += 1
        return expires(record)

    now = [1000.0]
    store = InProcessTasks(clock=lambda: now[0])
    for i in range(1000):
        await store.create(TaskRecord(f"t{i}", "o", "x", "working", now[0], now[0], 60.0, 1000))
    monkeypatch.setattr(TaskRecord, "expires", counting)
    for _ in range(200):
        assert await store.get("t7") is not None
    assert looked[0] < 2000, looked[0]  # a sweep of 1000 at most once in a while, not per read
    now[0] += 61  # every task expired: a read says so, whether or not the sweep ran
    assert await store.get("t7") is None
    now[0] += 5
    await store.get("t8")
    assert len(store) == 0  # and expired ones are dropped


async def test_asking_for_task_notifications_without_declaring_the_extension_is_refused_with_32021() -> None:
    """Was: ``subscriptions/listen`` ignored ``notifications.taskIds`` from a client that had not
    declared the extension; SEP-2663 says the server MUST answer -32021 naming it."""
    from mcp import Client
    from tasks_support import TASKS

    async with Client(_server(), cache=None) as plain:
        with pytest.raises(MCPError) as refused, anyio.fail_after(5):  # not refused: a stream opens
            await _send(plain.session, "subscriptions/listen", {"notifications": {"taskIds": ["some-task"]}})
    assert refused.value.code == -32021
    assert refused.value.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    async with client(_server()) as declaring:  # declared: the stream opens (no task notifications are sent)
        with anyio.move_on_after(1.0) as waited:
            await _send(declaring.session, "subscriptions/listen", {"notifications": {"taskIds": ["some-task"]}})
        assert waited.cancelled_caught


class Find(BaseModel):
    query: str = ""


class Finder:
    """An extension method (SEP-2133): served through the same pipeline as the task methods."""

    @hookimpl
    def register_extension_providers(self, settings: Any) -> list[Any]:
        from mcp_providers import Extension, ExtensionMethod, ExtensionProvider

        class Search(ExtensionProvider):
            name = "finder"

            def extensions(self) -> list[Extension]:
                method = ExtensionMethod(name="com.example/find/go", description="Finds.", params_model=Find)
                return [Extension(identifier="com.example/find", settings={}, methods=(method,))]

            async def handle(self, request: Any) -> dict[str, Any]:
                return {"found": []}

        return [Search()]


async def test_an_extension_method_counts_against_the_callers_calls_as_a_tool_call_does() -> None:
    """Was: the same hole as the task methods (in no budget), for every extension method."""

    limits = LimitsSettings(calls=2, reads=100, lists=100, anonymous=2)
    server = compose({"finder": Finder(), "tasks": TasksPlugin()}, server=ServerSettings(limits=limits)).server
    with serving_as(ALICE):
        async with client(server) as c:
            for _ in range(2):
                assert (await _send(c.session, "com.example/find/go", {"query": "x"}))["found"] == []
            with pytest.raises(MCPError) as refused:
                await _send(c.session, "com.example/find/go", {"query": "x"})
    assert refused.value.code == -32009 and refused.value.data["limit"] == "calls"


async def test_no_task_id_reaches_the_audit_or_the_log(tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Held: the id is what reaches a task (a bearer token, SEP-2663): audit lines and log lines
    name it by a digest, for every method and outcome, a refusal and an unknown id included."""
    import logging

    caplog.set_level(logging.DEBUG, logger="mcp_providers")
    audit = tmp_path / "audit.jsonl"
    guess = "guessed-" + "x" * 40
    async with client(_server(audit_log=audit)) as c:
        handle = await start(c.session, "hold", {"seconds": 60})
        assert isinstance(handle, Created)
        await tasks_get(c.session, handle.task_id)
        await tasks_update(c.session, handle.task_id, {"input-1": {"action": "decline"}})
        await tasks_cancel(c.session, handle.task_id)
        await until(c.session, handle.task_id, {"cancelled"})
        with pytest.raises(MCPError):
            await tasks_get(c.session, guess)
    written = audit.read_text()
    assert written.count('"tasks/') >= 4  # the task methods were audited
    for secret in (handle.task_id, guess):
        assert secret not in written and secret not in caplog.text


def test_an_ignored_answer_is_no_update_of_the_task() -> None:
    """Was: a ``tasks/update`` whose keys were none outstanding (ignored, as SEP-2663 says) still
    moved ``lastUpdatedAt``, so a flood of them showed a task changing that did not."""
    from mcp_providers._serve.state.tasks import Change, changed

    record = TaskRecord("t", "o", "x", "working", 0.0, 0.0, 10.0, 1000, lease_until=5.0)
    asked = changed(record, Change(ask={"input-1": {"method": "elicitation/create"}}), 1.0)
    assert asked.updated == 1.0
    ignored = changed(asked, Change(answer={"input-9": {"action": "accept"}}), 5.0)
    assert ignored == asked
    renewed = changed(asked, Change(answer={"input-9": {}}, lease_until=9.0), 6.0)  # with a renewal
    assert renewed.updated == 1.0 and renewed.lease_until == 9.0
    answered = changed(asked, Change(answer={"input-1": {"action": "accept"}}), 7.0)
    assert answered.updated == 7.0 and answered.answers == {"input-1": {"action": "accept"}}


async def test_a_replica_stopping_while_redis_does_not_answer_does_not_wait_a_lease_per_task() -> None:
    """Guards the retries above: a task's end is tried again only while the replica serves; a
    replica stopping with Redis paused marks what it can at once and goes (a reader fails the
    rest once their lease runs out), rather than retrying each end for a lease."""
    import time

    with _cluster(lease=8.0) as (cluster, url):
        async with client(_server(cluster)) as c:
            for _ in range(3):
                assert isinstance(await start(c.session, "hold", {"seconds": 60}), Created)
            _pause_redis(url, 10_000)
            stopping = time.monotonic()
        took = time.monotonic() - stopping
    assert took < 5.0, took  # timeout_seconds (1 s) for a write or two, not the lease (8 s)


@pytest.mark.parametrize("task_id", ["x" * 100_000, "é∆😀", "../../etc", "*", "task:*", " ", "\x00"])
async def test_a_guessed_or_malformed_task_id_is_not_found_like_any_other(task_id: str) -> None:
    """Held: huge, unicode, path- and pattern-like ids are "not found", as an unknown one is."""
    async with client(_server()) as c:
        for send in (tasks_get, tasks_cancel, lambda s, t: tasks_update(s, t, {"input-1": {"action": "decline"}})):
            with pytest.raises(MCPError) as refused:
                await send(c.session, task_id)
            assert (refused.value.code, refused.value.message) == (-32602, "Failed to retrieve task: Task not found")


async def test_a_task_result_over_max_result_bytes_completes_as_the_refusal_a_plain_call_gets() -> None:
    """Held: the evidence step runs on the task's result too (an ``isError`` result, completed)."""
    async with client(_server(max_result_bytes=10)) as c:
        handle = await start(c.session, "count", {"n": 1})  # "counted to 1 for local": over 10 bytes
        assert isinstance(handle, Created)
        done = await until(c.session, handle.task_id, ENDED)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert "over the server's max_result_bytes of 10" in done["result"]["content"][0]["text"]


async def test_a_task_started_before_a_reload_that_drops_its_plugin_runs_on_and_can_be_cancelled() -> None:
    """Held: the run keeps the generation it started on (its provider is not stopped under it),
    and tasks/get and tasks/cancel still answer once no tool runs tasks any more."""
    from mcp_providers._serve.composition import compose as compose_config
    from mcp_providers._serve.reload import Reloader
    from mcp_providers.config import Config

    plugins = {"tasks": TasksPlugin()}
    wanted = {"config": Config()}
    composition = compose_config(Config(), load_entrypoints=False, plugins=plugins)
    reloader = Reloader(composition, lambda: wanted["config"], load_entrypoints=False, plugins=plugins)
    async with client(composition.server) as c:
        counted = await start(c.session, "count", {"n": 3, "pause": 0.3})
        held = await start(c.session, "hold", {"seconds": 60})
        assert isinstance(counted, Created) and isinstance(held, Created)
        wanted["config"] = Config(deny=("tasks",))
        assert (await reloader.reload()).outcome == "applied"
        done = await until(c.session, counted.task_id, ENDED)
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "counted to 3 for local"
        assert (await tasks_get(c.session, held.task_id))["status"] == "working"
        await tasks_cancel(c.session, held.task_id)
        assert (await until(c.session, held.task_id, ENDED))["status"] == "cancelled"
