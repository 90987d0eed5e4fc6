"""`mcp_providers.coalesce`: identical in-flight reads share one provider read; nothing is cached."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from mcp_providers._serve.state.coalesce import Coalescer
from mcp_providers.config import ServerSettings
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Freshness, Resource
from mcp_providers.providers import Content, ReadRequest, ResourceProvider
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


async def test_concurrent_identical_keys_share_one_read() -> None:
    coalescer: Coalescer[int] = Coalescer()
    calls = 0
    gate = anyio.Event()

    async def read() -> int:
        nonlocal calls
        calls += 1
        mine = calls
        await gate.wait()
        return mine

    results: list[int] = []

    async def one(key: str) -> None:
        results.append(await coalescer.run(key, read))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(one, "a")
        tg.start_soon(one, "b")
        await anyio.wait_all_tasks_blocked()
        gate.set()
    assert calls == 2  # one for "a", one for "b"
    assert coalescer.shared == 4
    assert len(set(results)) == 2  # every "a" caller got the one "a" result


async def test_an_error_reaches_every_waiter_and_is_not_kept() -> None:
    coalescer: Coalescer[int] = Coalescer()
    gate = anyio.Event()

    async def failing() -> int:
        await gate.wait()
        raise ValueError("upstream down")

    errors: list[str] = []

    async def one() -> None:
        try:
            await coalescer.run("k", failing)
        except ValueError as exc:
            errors.append(str(exc))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
        await anyio.wait_all_tasks_blocked()
        gate.set()
    assert errors == ["upstream down"] * 3

    async def ok() -> int:
        return 7

    assert await coalescer.run("k", ok) == 7  # the failure was not cached


async def test_a_cancelled_leader_hands_over_to_a_waiter() -> None:
    coalescer: Coalescer[str] = Coalescer()
    calls: list[str] = []
    release = anyio.Event()

    async def read_as(who: str) -> str:
        calls.append(who)
        await release.wait()
        return who

    got: list[str] = []
    async with anyio.create_task_group() as tg:
        leader = anyio.CancelScope()

        async def lead() -> None:
            with leader:
                await coalescer.run("k", lambda: read_as("leader"))

        async def follow() -> None:
            got.append(await coalescer.run("k", lambda: read_as("follower")))

        tg.start_soon(lead)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(follow)
        await anyio.wait_all_tasks_blocked()
        leader.cancel()
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert calls == ["leader", "follower"]
    assert got == ["follower"]


class Counting(ResourceProvider):
    name = "counting"
    prefixes = ("count://",)

    def __init__(self) -> None:
        self.reads = 0
        self.gate = anyio.Event()

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri="count://live", name="live", mime_type="text/plain", freshness=Freshness.live())]

    async def read(self, request: ReadRequest) -> Content:
        self.reads += 1
        await self.gate.wait()
        return Content(text=f"read {self.reads}")


def _plugin(provider: Counting) -> object:
    class Plugin:
        @hookimpl
        def register_resource_providers(self, settings: object) -> list[ResourceProvider]:
            return [provider]

    return Plugin()


@pytest.mark.parametrize("coalesce", [True, False], ids=["coalesced", "not-coalesced"])
async def test_server_coalesces_concurrent_reads_of_a_live_resource_only_while_in_flight(coalesce: bool) -> None:
    provider = Counting()
    composition = compose({"counting": _plugin(provider)}, server=ServerSettings(coalesce_reads=coalesce))
    async with connect(composition) as client:
        texts: list[str] = []

        async def read() -> None:
            result = await client.read_resource("count://live")
            texts.append(result.contents[0].text)  # type: ignore[union-attr]

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(read)
            while provider.reads < (1 if coalesce else 4):
                await anyio.sleep(0.01)
            await anyio.sleep(0.05)
            provider.gate.set()
        assert provider.reads == (1 if coalesce else 4)
        if coalesce:
            assert texts == ["read 1"] * 4
        # A later read is a new read: nothing was cached, whatever the freshness.
        await client.read_resource("count://live")
        assert provider.reads == (2 if coalesce else 5)


@pytest.mark.parametrize("fails", [False, True])
async def test_the_leaders_request_scope_collects_its_own_list_again_after_the_read(fails: bool) -> None:
    """While the leader reads, its request's scope collects into the flight's list (for waiters);
    afterwards the scope holds the request's own list again, with what the read used added once."""
    from mcp_providers.credentials import CredentialBroker, CredentialScope, current_scope

    earlier = {"name": "crm", "subject": "svc", "grant": "client_credentials"}
    used = {"name": "tickets", "subject": "alice", "grant": "jwt_bearer"}
    own: list[dict[str, str]] = [earlier]
    scope = CredentialScope(CredentialBroker(), own)
    during: list[list[dict[str, str]]] = []

    async def read() -> int:
        recording = current_scope.get()
        assert recording is scope
        during.append(recording.used)
        recording.used.append(used)
        await anyio.sleep(0)
        if fails:
            raise LookupError("upstream said no")
        return 1

    token = current_scope.set(scope)
    try:
        if fails:
            with pytest.raises(LookupError):
                await Coalescer[int]().run("a", read)
        else:
            assert await Coalescer[int]().run("a", read) == 1
    finally:
        current_scope.reset(token)
    assert during[0] is not own  # the flight's own list, which waiters are given
    assert scope.used is own
    assert own == [earlier, used]
