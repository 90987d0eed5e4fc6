"""What the core knows of the SDK without its private state (issue 43, "house"): the session
manager's run and sessions (``transport/manager.py``), the methods a server answers
(``binding.served_methods``) and whether a one-exchange connection has anything to unwind
(``http_app._Watched``). Each answer is compared with what the SDK itself holds."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcp_providers._serve.binding import served_methods
from mcp_providers._serve.transport import manager as watched
from mcp_providers._serve.transport.fast_path import Watched, pushed
from mcp_providers.testing import compose


class _Transport:
    def __init__(self, session: str) -> None:
        self.mcp_session_id = session
        self.is_terminated = False


class _Manager:
    """The two things :func:`watched.watch` wraps, as the SDK's manager has them."""

    def __init__(self) -> None:
        self.count = 0

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        yield

    def _admit_session(self, requestor: Any) -> _Transport | None:
        self.count += 1
        return None if requestor == "full" else _Transport(f"s{self.count}")


@pytest.mark.anyio
async def test_a_watched_manager_tells_its_sessions_and_when_its_run_ended() -> None:
    manager = _Manager()
    assert watched.run_ended(manager) is False  # never watched
    watched.watch(manager)
    watched.watch(manager)  # once: a second call wraps nothing twice
    first, second = manager._admit_session(None), manager._admit_session(None)
    assert manager._admit_session("full") is None  # refused at the SDK's cap: nothing recorded
    assert first is not None and second is not None
    assert watched.holds(manager, "s1") and watched.holds(manager, "s2") and not watched.holds(manager, "s3")
    first.is_terminated = True  # the SDK ended it (DELETE, idle timeout, crash)
    assert not watched.holds(manager, "s1")
    assert watched.live_transports(manager) == [second]
    async with manager.run():
        assert watched.run_ended(manager) is False
    assert watched.run_ended(manager) is True
    assert watched.live_transports(manager) == [] and not watched.holds(manager, "s2")


@pytest.mark.anyio
async def test_a_run_that_ends_by_cancellation_is_ended_too() -> None:
    import anyio

    manager = _Manager()
    watched.watch(manager)
    with anyio.CancelScope() as scope:
        async with manager.run():
            scope.cancel()
            await anyio.sleep(1)
    assert watched.run_ended(manager) is True


def test_ended_sessions_are_forgotten_as_admissions_go_on() -> None:
    manager = _Manager()
    watched.watch(manager)
    for _ in range(500):
        transport = manager._admit_session(None)
        assert transport is not None
        transport.is_terminated = True
    assert len(watched._watched[manager].transports) <= 64  # memory stays bounded by the live sessions


def test_served_methods_are_the_methods_the_sdk_holds_handlers_for() -> None:
    server = compose({}).server
    sdk = set(server._request_handlers) - {"initialize"}  # what the SDK itself holds (private, read in a test)
    assert served_methods(server) == sorted(sdk)
    assert {"tools/call", "resources/read", "ping", "logging/setLevel"} <= set(served_methods(server))


@pytest.mark.parametrize(
    "push",
    [
        lambda s: s.callback(lambda: None),
        lambda s: s.push(lambda *exc: None),
        lambda s: s.enter_context(contextlib.nullcontext()),
        lambda s: s.push_async_exit(lambda *exc: None),
        lambda s: s.push_async_callback(lambda: None),
    ],
    ids=["callback", "push", "enter_context", "push_async_exit", "push_async_callback"],
)
def test_an_exit_stack_knows_it_was_pushed_on(push: Any) -> None:
    stack = Watched()
    assert pushed(stack) is False  # the usual exchange: nothing to unwind
    push(stack)
    assert pushed(stack) is True
    assert pushed(contextlib.AsyncExitStack()) is True  # a stack a handler put there: unwound


@pytest.mark.anyio
async def test_an_exit_stack_knows_an_async_context_was_entered() -> None:
    stack = Watched()
    await stack.enter_async_context(contextlib.AsyncExitStack())
    assert pushed(stack) is True
    await stack.aclose()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_read_gets_its_deadline_on_either_event_loop(backend: str) -> None:
    import anyio

    from mcp_providers._serve.steps.invoker import Invoker, Work
    from mcp_providers.errors import ReadTimeout

    async def slow() -> None:
        await anyio.sleep(5)

    async def main() -> None:
        with anyio.fail_after(4), pytest.raises(ReadTimeout):
            await Invoker({}, 0.05, False, {}).run(Work("p", "q", "reading x://y", "x://y", scoped=False), slow)

    anyio.run(main, backend=backend)  # asyncio.get_running_loop() raises under trio: a bare cancel scope
