"""``within``: a deadline that arms a timer only when the awaited coroutine waits."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from mcp_providers._serve.steps import deadline as deadline_module
from mcp_providers._serve.steps.deadline import deadline_after, within

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def timers(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Each deadline ``within`` armed a timer for."""
    armed: list[float] = []
    real = asyncio.timeout_at

    def counted(when: float) -> Any:
        armed.append(when)
        return real(when)

    monkeypatch.setattr(deadline_module.asyncio, "timeout_at", counted)
    return armed


async def _ready() -> str:
    return "in memory"


async def _waits(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "after a wait"


async def test_a_coroutine_done_at_its_first_step_arms_no_timer(timers: list[float]) -> None:
    assert await within(_ready(), deadline_after(5)) == "in memory"
    assert timers == []


async def test_a_coroutine_that_waits_runs_the_rest_under_the_deadline(timers: list[float]) -> None:
    when = deadline_after(5)
    assert await within(_waits(0.01), when) == "after a wait"
    assert timers == [when]


async def test_the_deadline_passing_while_it_waits_raises_timeout_and_closes_it() -> None:
    finished: list[bool] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            finished.append(True)

    pending = slow()
    started = anyio.current_time()
    with pytest.raises(TimeoutError):
        await within(pending, deadline_after(0.05))
    assert anyio.current_time() - started < 5
    assert finished == [True]  # its finally ran: it was cancelled, not left pending
    assert pending.cr_frame is None  # closed


async def test_a_deadline_already_past_still_lets_a_ready_coroutine_finish() -> None:
    assert await within(_ready(), deadline_after(-1)) == "in memory"


async def test_a_deadline_already_past_stops_one_that_waits() -> None:
    with pytest.raises(TimeoutError):
        await within(_waits(1), deadline_after(-1))


async def test_the_callers_cancellation_reaches_the_coroutine() -> None:
    seen: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    with anyio.move_on_after(0.05):
        await within(waits(), deadline_after(30))
    assert seen == ["cancelled"]


async def test_an_error_raised_after_a_wait_passes_through_unchanged() -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise LookupError("no such row")

    with pytest.raises(LookupError, match="no such row"):
        await within(fails(), deadline_after(5))


async def test_a_future_is_awaited_under_the_deadline_too(timers: list[float]) -> None:
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await within(future, deadline_after(0.05))
    assert len(timers) == 1
