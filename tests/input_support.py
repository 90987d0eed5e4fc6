"""A provider that asks for input, written once for both eras, and the ways a test serves it.

``confirm`` asks the user to confirm (``ToolCall.elicit``) before it says what it did; ``twice``
asks the user, then the client's model (``ToolCall.sample``), so a 2026-07-28 call takes two
rounds; ``careless`` catches every ``Exception`` around its question and ``reckless`` even every
``BaseException`` (each must still be asked, and ``careless`` must not delete before the answer);
``lenient`` catches the :class:`~mcp_providers.errors.ToolFailure` of a client that cannot be asked.
Every run of a tool is counted in :data:`RUNS` (per tool name), so a test sees the re-runs.

Run as ``python tests/input_support.py`` to serve it over stdio as ``mcp-providers serve`` does.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from mcp_providers import Tool, ToolCall, ToolProvider, ToolResult, hookimpl
from mcp_providers.errors import ToolFailure

CONFIRM_FORM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Delete it?"}},
    "required": ["confirm"],
}
RUNS: Counter[str] = Counter()


class Target(BaseModel):
    note: str


class Asker(ToolProvider):
    name = "asker"

    def tools(self) -> Sequence[Tool]:
        def tool(name: str, description: str) -> Tool:
            return Tool(name=name, description=description, input_model=Target, effects="destructive")

        return [
            tool("confirm", "Deletes a note once the user confirms."),
            tool("twice", "Asks the user, then the client's model."),
            tool("careless", "Catches every Exception around its question."),
            tool("reckless", "Catches every BaseException around its question."),
            tool("lenient", "Deletes without asking when the client cannot be asked."),
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        name = call.tool.name
        RUNS[name] += 1
        note = call.arguments.note  # type: ignore[attr-defined]
        if name == "careless":
            with contextlib.suppress(Exception):  # the point of this tool
                await call.elicit(f"Delete {note}?", CONFIRM_FORM)
            RUNS["careless deleted"] += 1
            return ToolResult(text=f"deleted {note} without asking")
        if name == "reckless":
            with contextlib.suppress(BaseException):  # the point of this tool
                await call.elicit(f"Delete {note}?", CONFIRM_FORM)
            return ToolResult(text=f"deleted {note} without asking")
        if name == "lenient":
            try:
                reply = await call.elicit(f"Delete {note}?", CONFIRM_FORM)
            except ToolFailure as exc:
                return ToolResult(text=f"not asked: {exc}")
            return ToolResult(text=f"{reply.action} {note}")
        reply = await call.elicit(f"Delete {note}?", CONFIRM_FORM)
        if reply.action != "accept" or not reply.content.get("confirm"):
            return ToolResult(text=f"kept {note} ({reply.action})")
        if name == "twice":
            answer = await call.sample(f"Say goodbye to {note}", max_tokens=20)
            return ToolResult(text=f"deleted {note}; the model said {answer.text!r} ({answer.model})")
        return ToolResult(text=f"deleted {note}")


class AskerPlugin:
    @hookimpl
    def register_tool_providers(self, settings: Any) -> list[ToolProvider]:
        return [Asker()]


if __name__ == "__main__":
    import anyio

    from mcp_providers._serve.transport.stdio_loop import serve_stdio
    from mcp_providers.testing import compose

    composed = compose({"asker": AskerPlugin()})
    anyio.run(serve_stdio, composed.server)
