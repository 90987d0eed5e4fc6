"""A provider that fails to start because its source is down (``UpstreamError``) is logged in one
line with the reason; any other failure keeps its traceback (a bug is shown in full)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import pytest

from mcp_providers.errors import UpstreamError
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Resource
from mcp_providers.providers import Content, ReadRequest, ResourceProvider
from mcp_providers.testing import compose

pytestmark = pytest.mark.anyio


def _failing(exc: Exception) -> object:
    class Down(ResourceProvider):
        name, prefixes = "down", ("down://",)

        def resources(self) -> list[Resource]:
            return [Resource(uri="down://a", name="a")]

        @contextlib.asynccontextmanager
        async def lifespan(self) -> AsyncIterator[None]:
            raise exc
            yield

        async def read(self, request: ReadRequest) -> Content:
            return Content(text="x")

    class Plugin:
        @hookimpl
        def register_resource_providers(self, settings: object) -> list[ResourceProvider]:
            return [Down()]

    return Plugin()


@pytest.mark.parametrize(
    ("exc", "traceback"),
    [(UpstreamError("upstream 'x' (stdio) could not be started: no such file"), False), (RuntimeError("a bug"), True)],
)
async def test_a_source_that_is_down_is_one_line_and_a_bug_keeps_its_traceback(
    exc: Exception, traceback: bool, caplog: pytest.LogCaptureFixture
) -> None:
    composed = compose({"down": _failing(exc)}, strict=False)
    with caplog.at_level(logging.INFO):
        async with composed.running():
            pass
    failed = [r for r in caplog.records if "failed to start" in r.getMessage() and r.levelno == logging.ERROR]
    assert len(failed) == 1, caplog.text
    assert (failed[0].exc_info is not None) is traceback
    if not traceback:
        assert "could not be started: no such file" in failed[0].getMessage()
