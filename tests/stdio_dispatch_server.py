"""A composed server served by ``serve_stdio`` (what ``mcp-providers serve`` runs over stdio), with
tools that exercise the dispatcher: one that waits until cancelled, one that reports progress, one
that asks the client's model (a server-to-client request), and one that answers at once.

Run as ``python tests/stdio_dispatch_server.py``; used by ``tests/test_stdio_dispatch.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import anyio
from pydantic import BaseModel

from mcp_providers import Tool, ToolCall, ToolProvider, ToolResult, hookimpl
from mcp_providers._serve.transport.stdio_loop import serve_stdio
from mcp_providers.testing import compose


class NoArguments(BaseModel):
    pass


class Waiter(ToolProvider):
    name = "dispatch-tools"

    def tools(self) -> Sequence[Tool]:
        def tool(name: str, description: str) -> Tool:
            return Tool(name=name, description=description, input_model=NoArguments, effects="none")

        return [
            tool("wait", "Waits until cancelled."),
            tool("steps", "Reports progress 1, 2 and 3 of 3."),
            tool("ask", "Asks the client's model a question."),
            tool("now", "Answers at once."),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        name = call.tool.name
        if name == "wait":
            await anyio.sleep_forever()
        if name == "steps":
            for done in (1, 2, 3):
                await call.progress(done, 3, f"step {done}")
            return ToolResult(text="stepped")
        if name == "ask":
            answer = await call.sample("What is the answer?", max_tokens=10)
            return ToolResult(text=f"the model said {answer.text}")
        return ToolResult(text="now")


def plugin() -> SimpleNamespace:
    @hookimpl
    def register_tool_providers() -> list[ToolProvider]:
        return [Waiter()]

    return SimpleNamespace(register_tool_providers=register_tool_providers)


if __name__ == "__main__":
    server = compose({"dispatch_tools": plugin()}).server
    anyio.run(lambda: serve_stdio(server))
