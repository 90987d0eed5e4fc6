"""The invoker's read deadline: reads that finish at once, suspend, overrun, fail or are cancelled."""

from __future__ import annotations

import anyio
import pytest

from mcp_providers._serve.steps.invoker import Invoker, Work
from mcp_providers.errors import ProviderFailed, ReadTimeout

pytestmark = pytest.mark.anyio

WORK = Work("plugin", "provider", "reading x://y", "x://y")


async def test_a_read_that_never_suspends_returns_its_value() -> None:
    async def at_once() -> int:
        return 1

    assert await Invoker({}, 1.0, True, {}).run(WORK, at_once, share="k") == 1


async def test_a_suspending_read_gets_values_sent_in_and_may_use_scopes_and_task_groups() -> None:
    async def suspends() -> int:
        with anyio.fail_after(5):  # a scope entered before the first suspension
            await anyio.sleep(0.01)
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.sleep, 0.01)
        return 2

    invoker = Invoker({}, 1.0, True, {})
    assert await invoker.run(WORK, suspends) == 2
    results = []

    async def one() -> None:
        results.append(await invoker.run(WORK, suspends, share="k"))

    async with anyio.create_task_group() as group:  # coalesced waiters too
        for _ in range(3):
            group.start_soon(one)
    assert results == [2, 2, 2]


@pytest.mark.parametrize("inner_scope", [False, True])
async def test_a_read_past_the_deadline_is_cancelled_and_answers_read_timeout(inner_scope: bool) -> None:
    cancelled = False

    async def hangs() -> None:
        nonlocal cancelled
        try:
            if inner_scope:
                with anyio.fail_after(30):
                    await anyio.sleep(30)
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled = True
            raise

    with anyio.fail_after(5), pytest.raises(ReadTimeout, match=r"within 0\.05 s"):
        await Invoker({}, 0.05, True, {}).run(WORK, hangs)
    assert cancelled


async def test_a_provider_error_after_suspending_is_provider_failed() -> None:
    async def fails() -> None:
        await anyio.sleep(0)
        raise KeyError("secret")

    with pytest.raises(ProviderFailed, match=r"failed reading x://y"):
        await Invoker({}, 1.0, True, {}).run(WORK, fails)


async def test_cancelling_the_request_cancels_the_read() -> None:
    async def hangs() -> None:
        await anyio.sleep(30)

    with anyio.move_on_after(0.05) as scope:
        await Invoker({}, 10.0, True, {}).run(WORK, hangs)
    assert scope.cancelled_caught


def test_on_trio_a_read_that_waits_finishes_and_one_past_the_deadline_answers_read_timeout() -> None:
    """The invoker takes the deadline's first step itself on any event loop; on trio the rest of
    a read that waits runs under anyio's deadline (deadline.rest_within)."""

    async def waits() -> str:
        await anyio.sleep(0.01)
        return "after a wait"

    async def hangs() -> None:
        await anyio.sleep(30)

    async def main() -> None:
        invoker = Invoker({}, 0.2, True, {})
        assert await invoker.run(WORK, waits) == "after a wait"
        with anyio.fail_after(5), pytest.raises(ReadTimeout, match=r"within 0\.2 s"):
            await invoker.run(WORK, hangs)

    anyio.run(main, backend="trio")
