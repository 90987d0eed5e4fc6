"""Issue 24 item 23: a failed delivery to a 2025-era session is never silent.

A session whose stream has closed (what the SDK's memory streams and sockets raise then) loses its
watches with an info line; any other failure is a bug, logged with its traceback, the watch kept,
and the other sessions still served. The sessions are stand-ins for the SDK connection: only their
``send_resource_updated`` matters here, and it is what raises.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from mcp_providers import Content, Freshness, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers.identity import Principal
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio

URI = "status://service/current"


class Live(ResourceProvider):
    name = "live"
    prefixes = ("status://",)

    def resources(self) -> Sequence[Resource]:
        return [Resource(uri=URI, name="status", mime_type="text/plain", freshness=Freshness.live())]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="up")


class Plugin:
    @hookimpl
    def register_resource_providers(self, settings: Any) -> Sequence[ResourceProvider]:
        return [Live()]


class Session:
    """A per-request session whose ``_connection`` is itself: ``send_resource_updated`` records, or
    raises ``error``."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error, self.sent = error, []  # type: list[str]
        self._connection = self  # the seam the hub keys watches by
        self.exit_stack = contextlib.ExitStack()  # the connection's teardown (not run here)

    async def send_resource_updated(self, uri: str) -> None:
        if self.error is not None:
            raise self.error
        self.sent.append(uri)


GONE = [anyio.ClosedResourceError(), anyio.BrokenResourceError(), anyio.EndOfStream(), ConnectionResetError()]
BUGS = [RuntimeError("a bug"), KeyError("uri"), AttributeError("no such thing"), ValueError("bad")]


async def _deliver_twice(sessions: list[Session]) -> Any:
    hub = compose({"live": Plugin()}).runtime.hub
    for session in sessions:
        hub.subscribe(session, Principal("alice", issuer="static"), URI)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(hub.relay)
        for _ in range(2):
            await hub.publish(URI)
            with anyio.fail_after(5):
                while hub._pending:
                    await anyio.sleep(0.01)
            await anyio.sleep(0.05)
        tasks.cancel_scope.cancel()
    return hub


@pytest.mark.parametrize("error", BUGS, ids=[type(e).__name__ for e in BUGS])
async def test_a_delivery_bug_is_logged_with_its_traceback_and_the_others_still_get_updates(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    broken, good = Session(error), Session()
    with caplog.at_level(logging.INFO, "mcp_providers.subscriptions"):
        hub = await _deliver_twice([broken, good])
    assert good.sent == [URI, URI]
    failures = [r for r in caplog.records if "failed" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info and r.exc_info[1] is error for r in failures), caplog.text
    assert URI in failures[0].getMessage() and "alice" in failures[0].getMessage()
    assert hub.watch_count() == 2  # a bug is not a closed session: the watch stays


@pytest.mark.parametrize("error", GONE, ids=[type(e).__name__ for e in GONE])
async def test_a_closed_session_loses_its_watches_with_a_log_line(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    gone, good = Session(error), Session()
    with caplog.at_level(logging.INFO, "mcp_providers.subscriptions"):
        hub = await _deliver_twice([gone, good])
    assert good.sent == [URI, URI]
    (dropped,) = [r for r in caplog.records if "closed session" in r.getMessage()]
    assert type(error).__name__ in dropped.getMessage() and dropped.exc_info is None
    assert hub.watch_count() == 1
