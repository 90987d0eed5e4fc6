"""Work a read starts in a context it made empty (helper C8, kind 2): ``loop.create_task(coro,
context=contextvars.Context())`` starts a task without the read's scope, since the scope is a
context variable. Process-wide, the runtime's task factory sees the context a task is given and ties
a task created while a read runs to that read (in a copy: the context object given is not changed)."""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path

import pytest
from mcp import MCPError

from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose, connect

REFUSED = -32008


@pytest.mark.anyio
async def test_a_task_a_read_starts_in_an_empty_context_is_still_the_reads(tmp_path: Path) -> None:
    target = tmp_path / "written.txt"
    plugin = Plugin("fresh", prefixes=["fresh://"])
    given = contextvars.Context()

    async def write() -> None:
        target.write_text("x")

    @plugin.resource("fresh://task")
    async def task() -> str:
        await asyncio.get_running_loop().create_task(write(), context=given)
        return "never"

    async with connect(compose({"fresh": plugin})) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("fresh://task")
    assert refused.value.error.code == REFUSED, refused.value.error.message
    assert not target.exists()
    assert list(given.keys()) == []  # the context object the read gave is left as it was
