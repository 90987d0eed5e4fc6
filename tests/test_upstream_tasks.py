"""An upstream's tasks relayed (issue 40, "Rounds and tasks: ... Upstream tasks are relayed"), with
real upstream processes over stdio and a downstream SDK client speaking 2026-07-28 with the tasks
extension (``tasks_support.TasksClient``):

- ``ext``: an SDK v2 server with the ``io.modelcontextprotocol/tasks`` extension
  (tests/tasks_upstream.py): every tool is declared ``task_support="optional"``, a task it starts
  is followed (status messages, result, failure, cancel);
- ``core``: a raw 2025-11-25 server with core tasks (tests/tasks_raw_upstream.py): ``optional``
  tools are declared so and called plainly, ``required`` ones are left out (the SDK's client takes
  no 2025-11-25 ``CreateTaskResult``), and ``nocap`` (the same without the capability) offers none.

One composition per module; each upstream process records its calls and cancellations in a file.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import anyio
import mcp_types as types
import prefork
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import ValidationError
from serve_support import free_port
from tasks_support import Created, TasksClient, start, tasks_cancel, tasks_get, until
from waiting import wait_until

from mcp_providers import Decision, hookimpl
from mcp_providers.config import ServerSettings as Server
from mcp_providers.config import TasksSettings
from mcp_providers.errors import UpstreamError
from mcp_providers.models import Freshness
from mcp_providers.plugins import upstream
from mcp_providers.plugins.upstream import tasks
from mcp_providers.plugins.upstream.listing import served_view
from mcp_providers.plugins.upstream.mapping import Homes, declare
from mcp_providers.plugins.upstream.settings import ServerSettings
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
EXT = str(HERE / "tasks_upstream.py")
RAW = str(HERE / "tasks_raw_upstream.py")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope, for the module-scoped runtime below


class Deny:
    """Denies ``call`` of the tools named in :attr:`tools` (a policy in force for the module)."""

    tools: ClassVar[set[str]] = set()

    @hookimpl
    def authorize(self, action: str, target: str) -> Decision | None:
        return Decision(False, "not for you") if action == "call" and target in self.tools else None


DENY = Deny()


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("upstream-tasks")


def _log(events: Path, name: str) -> list[str]:
    path = events / name
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(scope="module")
def composition(events: Path) -> Any:
    def server(name: str, script: str, *flags: str) -> dict[str, Any]:
        return {"name": name, **prefork.upstream_script(script, str(events / name), *flags),
                "tool_prefix": f"{name}_", "namespace": name, "read_timeout": 10}  # fmt: skip

    settings = {
        "upstream": {
            "servers": [server("ext", EXT), server("core", RAW), server("nocap", RAW, "--no-capability")],
        }
    }
    tasks = TasksSettings(poll_interval_ms=100)
    return compose({"upstream": upstream, "deny": DENY}, settings, server=Server(tasks=tasks))


@pytest.fixture(scope="module")
async def served(composition: Any) -> AsyncIterator[Any]:
    async with composition.running():
        yield composition


def _client(composition: Any) -> Client:
    return Client(composition.server, cache=None, extensions=[TasksClient()])


def _text(result: types.CallToolResult | dict[str, Any]) -> str:
    if isinstance(result, dict):
        return "\n".join(b["text"] for b in result["content"] if b.get("type") == "text")
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_task_support_is_declared_as_each_upstream_offers_it(served: Any) -> None:
    tools = {e.declaration.name: e.declaration.task_support for e in served.assembly.catalog.tools}
    assert {k: v for k, v in tools.items() if k.startswith("ext_")} == dict.fromkeys(
        ("ext_count", "ext_hold", "ext_explode", "ext_ask", "ext_plain"), "optional"
    )  # 2026-07-28: the upstream decides per call, so each may be a task
    assert {k: v for k, v in tools.items() if k.startswith("core_")} == {
        "core_count": "optional",
        "core_plain": "forbidden",
    }
    assert {k: v for k, v in tools.items() if k.startswith("nocap_")} == {
        "nocap_count": "forbidden",  # its listing says optional, but the server offers no tasks
        "nocap_hold": "forbidden",
        "nocap_explode": "forbidden",
        "nocap_plain": "forbidden",
    }


def test_a_2025_tool_that_runs_only_as_a_task_is_left_out_saying_why() -> None:
    s = ServerSettings.model_validate({"name": "u", "command": "x", "tool_prefix": "u_", "namespace": "u"})
    listed = {"tasks": "core", "tools": [_listed("must", "required"), _listed("may", "optional"), _listed("no", None)]}
    listing = declare(s, Homes(), listed, Freshness.live(subscribable=False))
    assert {t.name: t.task_support for t in listing.tools} == {"u_may": "optional", "u_no": "forbidden"}
    [why] = listing.left_out
    assert why.value == "must" and "runs only as a 2025-11-25 task" in why.message
    assert "2026-07-28" in why.fix
    # without the server's tasks capability the listing's word is not taken: nothing may be a task
    listed["tasks"] = None
    listing = declare(s, Homes(), listed, Freshness.live(subscribable=False))
    assert {t.name: t.task_support for t in listing.tools} == dict.fromkeys(("u_must", "u_may", "u_no"), "forbidden")


def _listed(name: str, support: str | None) -> types.Tool:
    execution = types.ToolExecution(task_support=support) if support else None  # type: ignore[arg-type]
    return types.Tool(name=name, input_schema={"type": "object"}, execution=execution)


async def test_an_upstream_task_is_followed_to_its_result_and_its_status_relayed(served: Any, events: Path) -> None:
    async with _client(served) as c:
        handle = await start(c.session, "ext_count", {"n": 3, "pause": 0.3})
        assert isinstance(handle, Created) and handle.status == "working"
        with anyio.fail_after(10):
            while "step" not in str((await tasks_get(c.session, handle.task_id)).get("statusMessage")):
                await anyio.sleep(0.05)
        seen = await tasks_get(c.session, handle.task_id)
        assert seen["status"] == "working" and seen["statusMessage"].startswith("step ")
        done = await until(c.session, handle.task_id, {"completed", "failed", "cancelled"})
    assert done["status"] == "completed", done.get("error")
    assert _text(done["result"]) == "counted to 3"  # the upstream's result, not a stand-in
    receipt = done["result"]["_meta"]["io.mcp-providers/receipt"]
    assert receipt["tool"] == "ext_count"  # the evidence step ran on the relayed result
    assert "call count task" in _log(events, "ext")  # the upstream ran it as a task


async def test_a_client_that_hides_tasks_gets_the_upstream_result(served: Any) -> None:
    async with _client(served) as c:
        result = await c.call_tool("ext_count", {"n": 2, "pause": 0.05})
    assert _text(result) == "counted to 2" and not result.is_error


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_plain_downstream_call_follows_the_upstream_task_itself(served: Any, mode: str) -> None:
    # a client without the extension (2026-07-28), or of 2025-11-25, calls plainly; the upstream
    # still answers with a task (this server declares the extension to it), followed within the call
    async with Client(served.server, cache=None, mode=mode) as c:  # type: ignore[arg-type]
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        result = await c.call_tool("ext_hold", {"seconds": 0.3})
        assert _text(result) == "held"


async def test_cancelling_the_downstream_task_cancels_the_upstream_one(served: Any, events: Path) -> None:
    before = _log(events, "ext").count("call hold task")
    async with _client(served) as c:
        handle = await start(c.session, "ext_hold", {"seconds": 60})
        assert isinstance(handle, Created)
        with anyio.fail_after(10):  # the upstream has started its task (and answered with it)
            while _log(events, "ext").count("call hold task") == before:
                await anyio.sleep(0.05)
        await anyio.sleep(0.3)
        await tasks_cancel(c.session, handle.task_id)
        ended = await until(c.session, handle.task_id, {"cancelled", "completed", "failed"})
        assert ended["status"] == "cancelled"
        with anyio.fail_after(10):  # the upstream observes the cancel (it records it)
            while not any(line.startswith("hold ") and line.endswith(" cancelled") for line in _log(events, "ext")):
                await anyio.sleep(0.05)


async def test_shutting_down_cancels_a_relayed_task_upstream_before_the_connection_closes(tmp_path: Path) -> None:
    """Found by a tester: at shutdown the providers (the upstream's connection) stopped before the
    task bodies were cancelled, so the relayed ``tasks/cancel`` met a closed connection and the
    upstream task ran on to its ttl. Now the bodies are cancelled first (``Tasks.stop``)."""
    ext = {"name": "ext", **prefork.upstream_script(EXT, str(tmp_path / "ext")), "tool_prefix": "ext_",
           "namespace": "ext", "read_timeout": 10}  # fmt: skip
    own = compose({"upstream": upstream}, {"upstream": {"servers": [ext]}}, server=Server(tasks=TasksSettings()))
    async with own.running(), _client(own) as c:
        handle = await start(c.session, "ext_hold", {"seconds": 60})
        assert isinstance(handle, Created)
        with anyio.fail_after(10):  # the upstream has started its task
            while not _log(tmp_path, "ext").count("call hold task"):
                await anyio.sleep(0.05)
        await anyio.sleep(0.3)
    asked = [line for line in _log(tmp_path, "ext") if line.startswith("tasks/cancel ")]
    assert len(asked) == 1, _log(tmp_path, "ext")  # sent while the connection was still open


async def test_an_upstream_task_that_fails_fails_the_downstream_task_naming_the_upstream(served: Any) -> None:
    async with _client(served) as c:
        handle = await start(c.session, "ext_explode", {})
        assert isinstance(handle, Created)
        ended = await until(c.session, handle.task_id, {"cancelled", "completed", "failed"})
    assert ended["status"] == "failed"
    message = ended["error"]["message"]
    assert "upstream 'ext' (stdio)" in message and "the backend exploded" in message
    assert ended["error"]["code"] == -32006  # UpstreamError


async def test_a_denied_tool_refuses_the_task_augmented_call(served: Any, events: Path) -> None:
    before = _log(events, "ext").count("call count task")
    Deny.tools = {"ext_count"}
    try:
        async with _client(served) as c:
            with pytest.raises(MCPError) as denied:
                await start(c.session, "ext_count", {"n": 1})
    finally:
        Deny.tools = set()
    assert denied.value.code == -32003
    assert _log(events, "ext").count("call count task") == before  # nothing reached the upstream


async def test_a_2025_optional_tool_runs_as_a_downstream_task_over_a_plain_upstream_call(
    served: Any, events: Path
) -> None:
    async with _client(served) as c:
        handle = await start(c.session, "core_count", {"n": 2})
        assert isinstance(handle, Created)
        done = await until(c.session, handle.task_id, {"completed", "failed", "cancelled"})
    assert done["status"] == "completed" and _text(done["result"]) == "count answered at once"
    assert "call count plain" in _log(events, "core")


def _cancelled(events: Path, name: str) -> int:
    return sum(1 for line in _log(events, "ext") if line.startswith(f"{name} ") and line.endswith(" cancelled"))


async def _until_cancelled_upstream(events: Path, name: str, before: int) -> None:
    with anyio.fail_after(10):
        while _cancelled(events, name) == before:
            await anyio.sleep(0.05)


async def test_an_upstream_task_past_its_ttl_fails_the_call_and_is_cancelled_upstream(
    served: Any, events: Path
) -> None:
    before = _cancelled(events, "hold")
    async with _client(served) as c:
        handle = await start(c.session, "ext_hold", {"seconds": 60, "ttl_ms": 400})
        assert isinstance(handle, Created)
        ended = await until(c.session, handle.task_id, {"cancelled", "completed", "failed"})
    assert ended["status"] == "failed"
    assert ended["error"]["message"].endswith(
        "upstream 'ext' (stdio): the task of hold did not end within its ttlMs (0.4 s)"
    )
    await _until_cancelled_upstream(events, "hold", before)


async def test_an_upstream_task_asking_for_input_fails_naming_the_upstream_and_is_cancelled(
    served: Any, events: Path
) -> None:
    before = _cancelled(events, "ask")
    async with _client(served) as c:
        handle = await start(c.session, "ext_ask", {})
        assert isinstance(handle, Created)
        ended = await until(c.session, handle.task_id, {"cancelled", "completed", "failed"})
    assert ended["status"] == "failed"
    assert (
        "upstream 'ext' (stdio): the task of ask asks for input, which mcp-providers does not relay"
        in (ended["error"]["message"])
    )
    await _until_cancelled_upstream(events, "ask", before)


LINK = SimpleNamespace(who="upstream 'u' (stdio)", said=lambda text, limit=300: text[:limit])


def _task(**fields: Any) -> dict[str, Any]:
    return {"taskId": "t1", "status": "working", "ttlMs": 1000, "pollIntervalMs": 200, **fields}


@pytest.mark.parametrize(
    "fields",
    [{"status": "done"}, {"status": None}, {"taskId": "another"}, {"ttlMs": -1}, {"pollIntervalMs": "soon"}],
)
def test_an_answer_that_is_not_the_task_is_the_upstreams_failure(fields: dict[str, Any]) -> None:
    with pytest.raises(UpstreamError) as failed:
        tasks._seen(LINK, "tasks/get of x", _task(**fields), "t1")  # type: ignore[arg-type]
    assert str(failed.value).startswith("upstream 'u' (stdio) answered tasks/get of x with")


@pytest.mark.parametrize(("poll_ms", "seconds"), [(200, 0.2), (0, 0.05), (10**12, 30.0), (None, 1.0)])
def test_the_poll_interval_is_the_upstreams_within_bounds(poll_ms: int | None, seconds: float) -> None:
    seen = tasks._seen(LINK, "tasks/get of x", _task(pollIntervalMs=poll_ms), "t1")  # type: ignore[arg-type]
    assert seen.poll == seconds and seen.ttl == 1.0


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"status": "cancelled", "statusMessage": "operator"}, "the task of x was cancelled upstream: operator"),
        (
            {"status": "failed", "error": {"code": -32000, "message": "boom"}},
            "the task of x failed (error -32000: boom)",
        ),
        ({"status": "failed", "statusMessage": "disk full"}, "the task of x failed (disk full)"),
        ({"status": "failed"}, "the task of x failed (no reason given)"),
        ({"status": "completed"}, "the task of x completed without a tool result"),
        ({"status": "completed", "result": {"content": "text"}}, "the task of x completed without a tool result"),
    ],
)
def test_an_ended_task_that_did_not_complete_is_an_error_naming_the_upstream(fields: dict[str, Any], said: str) -> None:
    seen = tasks._seen(LINK, "tasks/get of x", _task(**fields), "t1")  # type: ignore[arg-type]
    with pytest.raises(UpstreamError) as failed:
        tasks._ended(LINK, "x", seen)  # type: ignore[arg-type]
    assert str(failed.value) == f"upstream 'u' (stdio): {said}"


def test_a_completed_task_is_its_tool_result() -> None:
    result = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}], "isError": True}
    seen = tasks._seen(LINK, "tasks/get of x", _task(status="completed", result=result), "t1")  # type: ignore[arg-type]
    ended = tasks._ended(LINK, "x", seen)  # type: ignore[arg-type]
    assert ended.is_error and _text(ended) == "ok"


def test_how_an_upstream_offers_tasks_is_part_of_what_decides_what_is_served() -> None:
    # a relisting that finds the offer changed (an upstream gaining the extension) asks for a reload
    listed = {"tools": [_listed("may", "optional")], "tasks": None}
    assert served_view(listed) != served_view({**listed, "tasks": "extension"})
    assert served_view(listed) == served_view(dict(listed))


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


async def test_an_upstream_task_over_streamable_http_is_followed_and_cancelled(tmp_path: Path) -> None:
    # the same over streamable HTTP: each tasks/get and tasks/cancel is a POST of its own
    port, events = free_port(), tmp_path / "events"
    with (tmp_path / "server.log").open("ab") as log:
        proc = subprocess.Popen([*prefork.python(), EXT, str(events), "--http", str(port)], stdout=log, stderr=log)
    try:
        wait_until(lambda: _listening(port), "the tasks upstream listens", alive=proc)
        settings = {"upstream": {"servers": [
            {"name": "web", "url": f"http://127.0.0.1:{port}/mcp", "tool_prefix": "web_", "namespace": "web"},
        ]}}  # fmt: skip
        composed = compose({"upstream": upstream}, settings, server=Server(tasks=TasksSettings(poll_interval_ms=100)))
        async with composed.running(), _client(composed) as c:
            assert _text(await c.call_tool("web_count", {"n": 2, "pause": 0.05})) == "counted to 2"
            handle = await start(c.session, "web_hold", {"seconds": 60})
            assert isinstance(handle, Created)
            with anyio.fail_after(10):
                while "call hold task" not in (events.read_text() if events.exists() else ""):
                    await anyio.sleep(0.05)
            await anyio.sleep(0.3)
            await tasks_cancel(c.session, handle.task_id)
            ended = await until(c.session, handle.task_id, {"cancelled", "completed", "failed"})
            assert ended["status"] == "cancelled"
            with anyio.fail_after(10):
                while " cancelled" not in events.read_text():
                    await anyio.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(10)


async def test_the_sdk_client_takes_no_2025_create_task_result_which_is_why_required_tools_are_left_out(
    tmp_path: Path,
) -> None:
    # the reason a 2025-11-25 "required" tool is left out: a task-augmented tools/call sent through
    # the SDK client's public send_request reaches the upstream, and its CreateTaskResult is refused
    # as a CallToolResult of that era. When the SDK takes it, this fails: relay those tools then.
    events = tmp_path / "events"
    params = StdioServerParameters(command=sys.executable, args=[RAW, str(events)])
    async with Client(stdio_client(params), cache=None) as c:
        assert c.protocol_version == "2025-11-25"
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name="hold", arguments={}, task=types.TaskMetadata(ttl=1000))
        )
        with pytest.raises(ValidationError, match="CallToolResult"):
            await c.session.send_request(request, types.CallToolResult)
    assert events.read_text().splitlines() == ["call hold task ttl=1000"]
