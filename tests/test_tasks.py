"""Tool calls as tasks (issue 27, SEP-2663 ``io.modelcontextprotocol/tasks``), in one process,
through the SDK's ``Client`` in 2026-07-28 mode with a client extension declaring tasks.

The handle, polling to a result (by hand and by a client that hides tasks), progress as the
status message, cancellation, a failing call, input during a task (``tasks/update``), who may see
a task, what a client without the extension gets, the per-caller cap, the time a task may run
(not ``read_timeout``), what is advertised in each era, and the store's rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from tasks_support import (
    EVENTS,
    TASKS,
    Created,
    TasksPlugin,
    client,
    start,
    tasks_cancel,
    tasks_get,
    tasks_update,
    until,
)

from mcp_providers import Decision, hookimpl
from mcp_providers._serve.state.tasks import Change, InProcessTasks, TaskRecord, changed, lapsed
from mcp_providers.config import ServerSettings, TasksSettings
from mcp_providers.identity import Principal, serving_as
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

ALICE = Principal("alice", issuer="https://idp.example/")
BOB = Principal("bob", issuer="https://idp.example/")


def _server(**server: Any) -> Any:
    return compose({"tasks": TasksPlugin()}, server=ServerSettings(**server)).server


def _text(result: types.CallToolResult | dict[str, Any]) -> str:
    if isinstance(result, dict):
        return str(result["content"][0]["text"])
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_a_task_handle_comes_at_once_and_polling_reaches_the_result_with_its_receipt() -> None:
    async with client(_server()) as c:
        assert c.protocol_version == "2026-07-28"
        handle = await start(c.session, "count", {"n": 2, "pause": 0.3})
        assert isinstance(handle, Created) and handle.status == "working"
        assert handle.poll_interval_ms == 1000 and handle.ttl_ms == 3_600_000
        first = await tasks_get(c.session, handle.task_id)
        assert first["status"] == "working" and first["resultType"] == "complete"
        assert "result" not in first
        done = await until(c.session, handle.task_id, {"completed"})
        assert _text(done["result"]) == "counted to 2 for local"
        assert done["result"]["_meta"]["io.mcp-providers/receipt"]["tool"] == "count"  # the evidence step ran
        assert done["statusMessage"] == "counting (2/2)"  # progress became the status message
        assert done["ttlMs"] >= 3_600_000  # kept for the ttl from its end


async def test_a_completed_tasks_result_is_the_calls_2026_result_with_its_result_type() -> None:
    # SEP-2663: the result "matches the result type of the original request", a 2026-07-28
    # CallToolResult, which carries resultType "complete" (the ext-tasks requester refuses one without)
    async with client(_server()) as c:
        handle = await start(c.session, "count", {"n": 1})
        assert isinstance(handle, Created)
        done = await until(c.session, handle.task_id, {"completed", "failed"})
    assert done["result"]["resultType"] == "complete" and _text(done["result"]) == "counted to 1 for local"


async def test_a_client_that_hides_tasks_gets_the_plain_result_from_call_tool() -> None:
    async with client(_server()) as c:
        result = await c.call_tool("count", {"n": 3})  # the extension's claim polls tasks/get
    assert _text(result) == "counted to 3 for local" and not result.is_error


async def test_progress_is_the_status_message_while_it_runs() -> None:
    async with client(_server()) as c:
        handle = await start(c.session, "count", {"n": 3, "pause": 0.4})
        assert isinstance(handle, Created)
        with anyio.fail_after(10):
            while (await tasks_get(c.session, handle.task_id)).get("statusMessage") is None:
                await anyio.sleep(0.05)
        seen = await tasks_get(c.session, handle.task_id)
        assert seen["status"] == "working" and seen["statusMessage"].startswith("counting (")


async def test_a_cancelled_task_stops_its_work_and_reads_cancelled() -> None:
    EVENTS.clear()
    async with client(_server()) as c:
        handle = await start(c.session, "hold", {"seconds": 60})
        assert isinstance(handle, Created)
        assert await tasks_cancel(c.session, handle.task_id) == {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mcp-providers", "version": "0.1.0"}},
        }
        ended = await until(c.session, handle.task_id, {"cancelled", "completed", "failed"}, seconds=5)
        assert ended["status"] == "cancelled" and "result" not in ended and "error" not in ended
        assert EVENTS == ["hold cancelled"]  # the provider's work was cancelled, not left running
        again = await tasks_cancel(c.session, handle.task_id)  # cancelling an ended task changes nothing
        assert "resultType" in again
        assert (await tasks_get(c.session, handle.task_id))["status"] == "cancelled"


async def test_a_json_rpc_error_fails_the_task_with_that_error() -> None:
    async with client(_server()) as c:
        handle = await start(c.session, "fail", {})
        assert isinstance(handle, Created)
        failed = await until(c.session, handle.task_id, {"failed", "completed"})
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": -32602, "message": "the upstream refused this", "data": {"why": "test"}}
    assert failed["statusMessage"] == "the upstream refused this"


async def test_a_bad_argument_is_an_error_result_at_once_not_a_task() -> None:
    async with client(_server()) as c:
        result = await start(c.session, "count", {"n": "many"})
    assert isinstance(result, types.CallToolResult) and result.is_error
    assert "Invalid arguments for count" in _text(result)


async def _never(context: Any, params: Any) -> Any:
    raise AssertionError("a task asks through inputRequests, never a server-to-client request")


async def test_input_during_a_task_is_asked_on_tasks_get_and_answered_by_tasks_update() -> None:
    async with client(_server(), elicitation_callback=_never) as c:
        handle = await start(c.session, "ask", {})
        assert isinstance(handle, Created)
        asking = await until(c.session, handle.task_id, {"input_required"})
        assert list(asking["inputRequests"]) == ["input-1"]
        request = asking["inputRequests"]["input-1"]
        assert request["method"] == "elicitation/create" and request["params"]["message"] == "Go ahead?"
        again = await tasks_get(c.session, handle.task_id)  # asked again until answered, same key
        assert again["inputRequests"] == asking["inputRequests"]
        ignored = {"nope": {"action": "accept", "content": {"ok": False}}}  # no such key: ignored
        await tasks_update(c.session, handle.task_id, ignored)
        answer = {"input-1": {"action": "accept", "content": {"ok": True}}}
        assert (await tasks_update(c.session, handle.task_id, answer))["resultType"] == "complete"
        done = await until(c.session, handle.task_id, {"completed", "failed"})
    assert _text(done["result"]) == "accept {'ok': True}"
    assert "inputRequests" not in done


async def test_an_answer_of_the_wrong_shape_reaches_the_tool_as_a_failure_not_as_an_answer() -> None:
    async with client(_server(), elicitation_callback=_never) as c:
        handle = await start(c.session, "ask", {})
        assert isinstance(handle, Created)
        await until(c.session, handle.task_id, {"input_required"})
        await tasks_update(c.session, handle.task_id, {"input-1": {"text": "not an elicitation result"}})
        done = await until(c.session, handle.task_id, {"completed", "failed"})
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert "inputResponses['input-1'] is not an elicitation result" in _text(done["result"])


@pytest.mark.parametrize(
    "other",
    [
        BOB,
        Principal("alice", issuer="https://other-idp.example/"),
        Principal("alice", issuer="static"),
        Principal("alice", issuer="https://idp.example/", client_id="another-app"),
        Principal("alice", issuer="https://idp.example/", scopes=frozenset({"read"})),
    ],
    ids=[
        "another subject",
        "alice of another issuer (round 4 item 1)",
        "alice of the static tokens",
        "alice through another client",  # a task is bound to the authorization context that made it
        "alice with other scopes",
    ],
)
async def test_a_task_belongs_to_the_principal_that_started_it(other: Principal) -> None:
    composed = compose({"tasks": TasksPlugin()})
    with serving_as(ALICE):
        async with Client(composed.server, cache=None, extensions=[_ext()]) as alice:
            handle = await start(alice.session, "hold", {"seconds": 60})
            assert isinstance(handle, Created)
            with serving_as(other):
                async with Client(composed.server, cache=None, extensions=[_ext()]) as bob:
                    for send in (tasks_get, tasks_cancel):
                        with pytest.raises(MCPError) as theirs:
                            await send(bob.session, handle.task_id)
                        assert (theirs.value.code, theirs.value.message) == (
                            -32602,
                            "Failed to retrieve task: Task not found",
                        )
                    with pytest.raises(MCPError) as unknown:
                        await tasks_get(bob.session, "no-such-task")
                    assert unknown.value.message == theirs.value.message
                    with pytest.raises(MCPError):
                        await tasks_update(bob.session, handle.task_id, {"input-1": {"action": "decline"}})
            assert (await tasks_get(alice.session, handle.task_id))["status"] == "working"  # bob's cancel did nothing
            await tasks_cancel(alice.session, handle.task_id)
            assert (await until(alice.session, handle.task_id, {"cancelled"}))["status"] == "cancelled"


async def test_the_same_subject_from_another_issuer_does_not_own_the_task() -> None:
    """Round 4 item 24: a task owner keyed by the subject alone (without the issuer) survived the
    mutation run. A subject is unique only within its issuer."""
    namesake = Principal("alice", issuer="https://other-idp.example/")
    composed = compose({"tasks": TasksPlugin()})
    with serving_as(ALICE):
        async with Client(composed.server, cache=None, extensions=[_ext()]) as alice:
            handle = await start(alice.session, "hold", {"seconds": 60})
            assert isinstance(handle, Created)
            with serving_as(namesake):
                async with Client(composed.server, cache=None, extensions=[_ext()]) as other:
                    with pytest.raises(MCPError) as theirs:
                        await tasks_get(other.session, handle.task_id)
                    assert theirs.value.code == -32602
            await tasks_cancel(alice.session, handle.task_id)


def _ext() -> Any:
    from tasks_support import TasksClient

    return TasksClient()


async def test_without_the_extension_optional_runs_plainly_and_required_is_refused_with_32021() -> None:
    async with Client(_server(), cache=None) as c:
        plain = await c.call_tool("count", {"n": 1})
        assert _text(plain) == "counted to 1 for local"
        with pytest.raises(MCPError) as refused:
            await c.call_tool("hold", {"seconds": 1})
        assert refused.value.code == -32021
        assert refused.value.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
        assert TASKS in refused.value.message
        with pytest.raises(MCPError) as polled:
            await tasks_get(c.session, "whatever")
        assert polled.value.code == -32021


async def test_a_tool_that_forbids_tasks_answers_plainly_even_to_a_tasks_client() -> None:
    async with client(_server()) as c:
        result = await start(c.session, "plain", {})
    assert isinstance(result, types.CallToolResult) and _text(result) == "plain"


async def test_a_client_that_cannot_be_asked_gives_the_tool_a_failure_it_can_report() -> None:
    async with client(_server()) as c:  # no elicitation capability declared
        handle = await start(c.session, "ask", {})
        assert isinstance(handle, Created)
        done = await until(c.session, handle.task_id, {"completed", "failed"})
    assert done["result"]["isError"] is True and "did not declare the elicitation capability" in _text(done["result"])


async def test_the_per_caller_cap_refuses_the_next_task_until_one_ends() -> None:
    server = _server(tasks=TasksSettings(max_running_per_subject=1))
    async with client(server) as c:
        first = await start(c.session, "hold", {"seconds": 60})
        assert isinstance(first, Created)
        with pytest.raises(MCPError) as refused:
            await start(c.session, "hold", {"seconds": 60})
        assert refused.value.code == -32009 and "max_running_per_subject" in refused.value.message
        await tasks_cancel(c.session, first.task_id)
        await until(c.session, first.task_id, {"cancelled"})
        second = await start(c.session, "hold", {"seconds": 60})
        assert isinstance(second, Created)
        await tasks_cancel(c.session, second.task_id)


async def test_the_cap_counts_per_person_not_per_grant_nor_across_issuers() -> None:
    """``max_running_per_subject`` counts a person (issuer and subject): Alice's other client is
    still Alice, and refused; the same name at another issuer is someone else, and served."""
    server = _server(tasks=TasksSettings(max_running_per_subject=1))
    other_client = Principal("alice", issuer=ALICE.issuer, client_id="other-app")
    namesake = Principal("alice", issuer="https://other-idp.example/")
    with serving_as(ALICE):
        async with Client(server, cache=None, extensions=[_ext()]) as alice:
            first = await start(alice.session, "hold", {"seconds": 60})
            assert isinstance(first, Created)
            with serving_as(other_client):
                async with Client(server, cache=None, extensions=[_ext()]) as again:
                    with pytest.raises(MCPError) as refused:
                        await start(again.session, "hold", {"seconds": 60})
                    assert refused.value.code == -32009
            with serving_as(namesake):
                async with Client(server, cache=None, extensions=[_ext()]) as other:
                    theirs = await start(other.session, "hold", {"seconds": 60})
                    assert isinstance(theirs, Created)
                    await tasks_cancel(other.session, theirs.task_id)
            await tasks_cancel(alice.session, first.task_id)


async def test_a_task_runs_past_read_timeout_which_still_bounds_a_plain_call() -> None:
    server = _server(read_timeout=0.3)
    async with client(server) as c:
        handle = await start(c.session, "count", {"n": 2, "pause": 0.3})
        assert isinstance(handle, Created)
        done = await until(c.session, handle.task_id, {"completed", "failed"})
        assert done["status"] == "completed"
    async with Client(server, cache=None) as plain:
        with pytest.raises(MCPError) as late:
            await plain.call_tool("count", {"n": 2, "pause": 0.3})
    assert "server.read_timeout" in late.value.message


async def test_the_body_is_not_counted_twice_by_the_rate_limit() -> None:
    from mcp_providers.config import LimitsSettings

    server = _server(limits=LimitsSettings(calls=1, anonymous=1, reads=1000, lists=1))  # reads: the polls
    with serving_as(ALICE):
        async with client(server) as c:
            handle = await start(c.session, "count", {"n": 1})
            assert isinstance(handle, Created)
            done = await until(c.session, handle.task_id, {"completed", "failed"})
    assert done["status"] == "completed", done  # the run did not spend a second tools/call


async def test_the_extension_is_advertised_to_2026_clients_only_where_a_tool_runs_tasks() -> None:
    async with client(_server()) as c:
        discovered = c.server_capabilities
        assert discovered is not None and discovered.extensions is not None and TASKS in discovered.extensions
    async with Client(_server(), cache=None, mode="legacy") as old:
        legacy = old.server_capabilities
        assert legacy is not None and TASKS not in (legacy.extensions or {})
    from serve_support import NotesPlugin

    async with client(compose({"notes": NotesPlugin()}).server) as none:
        plain = none.server_capabilities
        assert plain is not None and TASKS not in (plain.extensions or {})


async def test_the_audit_names_a_task_by_a_digest_and_writes_the_run_as_a_call(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    async with client(_server(audit_log=audit)) as c:
        handle = await start(c.session, "count", {"n": 1})
        assert isinstance(handle, Created)
        await until(c.session, handle.task_id, {"completed"})
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert handle.task_id not in audit.read_text()
    calls = [line for line in lines if line["operation"] == "tools/call"]
    assert calls[0].get("reason", "").startswith("started as task:")
    assert any(c["decision"] == "allowed" and c.get("receipt") for c in calls[1:])  # the run itself
    assert any(line["operation"] == "tasks/get" for line in lines)


def _modern(port: int, method: str, params: dict[str, Any], **headers: str) -> tuple[int, dict[str, Any]]:
    """POST one 2026-07-28 request declaring the tasks extension; (status, the JSON-RPC answer)."""
    from serve_support import post

    capabilities = {"extensions": {TASKS: {}}}
    meta = {types.PROTOCOL_VERSION_META_KEY: "2026-07-28", types.CLIENT_CAPABILITIES_META_KEY: capabilities}
    message = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": meta}}
    status, _, body = post(port, message, "2026-07-28", mcp_method=method, **headers)
    if isinstance(body, bytes):  # an SSE response: its one message
        body = json.loads(next(line for line in body.decode().splitlines() if line.startswith("data: "))[6:])
    return status, body


@pytest.mark.parametrize(("stateless", "json_response"), [(True, True), (False, False)], ids=["fast-path", "sdk-path"])
def test_over_http_a_tasks_request_must_name_its_task_in_mcp_name(stateless: bool, json_response: bool) -> None:
    # SEP-2663 "Streamable HTTP: Routing Headers": tasks/get, tasks/update and tasks/cancel carry
    # params.taskId as Mcp-Name (intermediaries route by it); one that disagrees with its body is
    # refused as the SDK refuses a tools/call whose Mcp-Name is not its tool (-32020, HTTP 400)
    from serve_support import served

    with served(compose({"tasks": TasksPlugin()}), stateless=stateless, json_response=json_response) as port:
        status, created = _modern(port, "tools/call", {"name": "hold", "arguments": {"seconds": 60}}, mcp_name="hold")
        assert status == 200 and created["result"]["resultType"] == "task", created
        task_id = created["result"]["taskId"]
        update = {"taskId": task_id, "inputResponses": {}}
        for method, params, name in [
            ("tasks/get", {"taskId": task_id}, "another-task"),
            ("tasks/get", {"taskId": task_id}, ""),  # no Mcp-Name at all
            ("tasks/update", update, ""),
            ("tasks/cancel", {"taskId": task_id}, "another-task"),
        ]:
            status, refused = _modern(port, method, params, mcp_name=name)
            assert status == 400, (method, name, refused)
            assert refused["id"] == 7 and refused["error"]["code"] == types.HEADER_MISMATCH
            assert "Mcp-Name" in refused["error"]["message"] and "taskId" in refused["error"]["message"]
        status, got = _modern(port, "tasks/get", {"taskId": task_id}, mcp_name=task_id)
        assert status == 200 and got["result"]["status"] == "working"  # the refused cancel did nothing
        status, cancelled = _modern(port, "tasks/cancel", {"taskId": task_id}, mcp_name=task_id)
        assert status == 200 and cancelled["result"]["resultType"] == "complete", cancelled


def _record(**kwargs: Any) -> TaskRecord:
    base: dict[str, Any] = dict(task_id="t", owner="o", tool="x", status="working", created=0.0, updated=0.0,
                                ttl=10.0, poll_ms=1000)  # fmt: skip
    return TaskRecord(**{**base, **kwargs})


def test_an_ended_task_never_changes_again() -> None:
    done = changed(_record(), Change(status="completed", result={"content": []}), 1.0)
    assert done.status == "completed"
    for change in (Change(status="working"), Change(cancel=True), Change(message="x"), Change(status="failed")):
        assert changed(done, change, 2.0) is done


def test_only_outstanding_input_keys_are_answered() -> None:
    asked = changed(_record(), Change(ask={"input-1": {"method": "elicitation/create"}}), 1.0)
    assert asked.status == "input_required" and asked.keys_used == 1
    answered = changed(asked, Change(answer={"input-1": {"action": "accept"}, "input-9": {"x": 1}}), 2.0)
    assert answered.answers == {"input-1": {"action": "accept"}}
    taken = changed(answered, Change(take=("input-1",)), 3.0)
    assert taken.status == "working" and not taken.asked and not taken.answers


def test_a_lapsed_lease_fails_a_running_task_only() -> None:
    running = _record(lease_until=5.0)
    assert lapsed(running, 4.0, 3.0) is None
    failing = lapsed(running, 6.0, 3.0)
    assert failing is not None and failing.status == "failed" and "lease of 3 s" in (failing.message or "")
    assert lapsed(_record(status="completed", lease_until=1.0), 6.0, 3.0) is None
    assert lapsed(_record(lease_until=None), 6.0, 3.0) is None  # one process: never leased


async def test_the_in_process_store_forgets_a_task_its_ttl_after_it_ended() -> None:
    now = [100.0]
    store = InProcessTasks(clock=lambda: now[0])
    await store.create(_record(created=100.0, updated=100.0, ttl=10.0))
    now[0] = 105.0
    await store.change("t", Change(status="completed", result={}))
    now[0] = 114.0  # 19 s after creation, 9 after its end: kept
    assert (await store.get("t")) is not None
    now[0] = 115.5
    assert (await store.get("t")) is None and len(store) == 0


def test_a_lease_renewal_alone_is_not_an_update_of_the_task() -> None:
    renewed = changed(_record(lease_until=5.0), Change(lease_until=9.0), 7.0)
    assert renewed.lease_until == 9.0 and renewed.updated == 0.0
    assert changed(renewed, Change(message="halfway"), 8.0).updated == 8.0


async def test_tasks_get_asks_the_gate_about_the_tool_each_time() -> None:
    class Flip:
        deny = False

        @hookimpl
        def authorize(self, action: str, target: str) -> Decision | None:
            return Decision(False, "no longer allowed") if self.deny and target == "hold" else None

    flip = Flip()
    async with client(compose({"tasks": TasksPlugin(), "flip": flip}).server) as c:
        handle = await start(c.session, "hold", {"seconds": 60})
        assert isinstance(handle, Created)
        flip.deny = True
        with pytest.raises(MCPError) as denied:
            await tasks_get(c.session, handle.task_id)
        assert denied.value.code == -32003
        flip.deny = False
        await tasks_cancel(c.session, handle.task_id)


@pytest.mark.parametrize("stateless", [False, True])
async def test_tasks_over_streamable_http_stateless_included(stateless: bool) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from serve_support import served
    from tasks_support import TasksClient

    composed = compose({"tasks": TasksPlugin()})
    with served(composed, stateless=stateless) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(streamable_http_client(url), cache=None, extensions=[TasksClient()]) as c:
            assert c.protocol_version == "2026-07-28"
            handle = await start(c.session, "count", {"n": 2, "pause": 0.2})
            assert isinstance(handle, Created)
            done = await until(c.session, handle.task_id, {"completed", "failed"})
            assert done["status"] == "completed" and _text(done["result"]) == "counted to 2 for anonymous"
            assert _text(await c.call_tool("count", {"n": 1})) == "counted to 1 for anonymous"
