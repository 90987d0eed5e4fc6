"""Tester thirty-two F1: ``SystemExit``/``KeyboardInterrupt`` from work a read schedules past the
loop's wrapped scheduling calls (a context made empty, the class's method, the loop's private
queue, a task or done callback with a context of its own) ended the server. Every such callback
runs in ``asyncio.events.Handle._run``, contained there on the server's loop (``core/_host/contain.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys

import pytest

from mcp_providers._host import contain

_SERVER = """
import asyncio, contextvars, sys
from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose, connect

HOW, RAISED = sys.argv[1], {"exit": SystemExit, "interrupt": KeyboardInterrupt}[sys.argv[2]]

def boom(*args):
    raise RAISED(3)

async def boom_coro():
    raise RAISED(3)

plugin = Plugin("p", prefixes=["p://"])

@plugin.resource("p://x")
async def x() -> str:
    loop = asyncio.get_running_loop()
    empty = contextvars.Context()
    if HOW == "call_soon with an empty context":
        loop.call_soon(boom, context=empty)
    elif HOW == "call_later with an empty context":
        loop.call_later(0, boom, context=empty)
    elif HOW == "the class's call_soon":
        asyncio.BaseEventLoop.call_soon(loop, boom)
    elif HOW == "loop._call_soon":
        loop._call_soon(boom, (), None)
    elif HOW == "asyncio.Task with an empty context":
        asyncio.Task(boom_coro(), loop=loop, context=empty)
    elif HOW == "a handle put on loop._ready":
        loop._ready.append(asyncio.Handle(boom, (), loop))
    elif HOW == "a done callback with an empty context":
        future = loop.create_future()
        future.add_done_callback(boom, context=empty)
        future.set_result(1)
    elif HOW == "call_soon_threadsafe from another thread":
        import threading
        thread = threading.Thread(target=lambda: loop.call_soon_threadsafe(boom))
        thread.start()
        thread.join()
    return "served"

async def main():
    comp = compose({"p": plugin})
    comp.runtime.process_guards = True
    async with connect(comp) as client:
        try:
            await client.read_resource("p://x")
        except Exception:
            pass
        await asyncio.sleep(0.2)
        await client.read_resource("p://x")
        print("server still answers")

asyncio.run(main())
"""
WAYS = (
    "call_soon with an empty context",
    "call_later with an empty context",
    "the class's call_soon",
    "loop._call_soon",
    "asyncio.Task with an empty context",
    "a handle put on loop._ready",
    "a done callback with an empty context",
    "call_soon_threadsafe from another thread",
)


@pytest.mark.parametrize("raised", ["exit", "interrupt"])
@pytest.mark.parametrize("how", WAYS)
def test_what_work_a_read_scheduled_raises_does_not_end_the_server(how: str, raised: str) -> None:
    done = subprocess.run([sys.executable, "-c", _SERVER, how, raised], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
    assert done.stdout == "server still answers\n", done.stderr[-2000:]
    assert "contained, the server goes on" in done.stderr


def test_a_loop_that_is_not_the_servers_is_left_as_asyncio_makes_it() -> None:
    """The handle's wrapper is process-wide; only the server's loop contains (another loop's
    ``SystemExit`` still stops it), and a second Ctrl-C's forced exit passes."""

    async def schedule_an_exit() -> None:
        asyncio.get_running_loop().call_soon(sys.exit, 3)
        await asyncio.sleep(0.1)

    async def contain_then_exit() -> None:
        contain.contain_tasks()  # installs the wrapper; this loop is then the server's
        await asyncio.sleep(0)

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(contain_then_exit())
    finally:
        loop.close()
    with pytest.raises(SystemExit):
        asyncio.run(schedule_an_exit())


def test_the_forced_exit_of_a_second_ctrl_c_still_ends_the_servers_loop() -> None:
    """``asyncio.run``'s ``SIGINT`` handler cancels the main task first and raises
    ``KeyboardInterrupt`` the second time: that one is the operator's, not a plugin's."""
    import signal

    async def main() -> None:
        contain.contain_tasks()
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler) or handler is signal.default_int_handler:
            pytest.skip("asyncio.run installs its SIGINT handler in the main thread only")
        loop = asyncio.get_running_loop()
        loop.call_soon(handler, signal.SIGINT, None)  # the first Ctrl-C: this task is cancelled
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(1)
        loop.call_soon(handler, signal.SIGINT, None)  # the second: raised from the handler
        await asyncio.sleep(0.1)

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
