"""What the upstream tests share: an upstream's link, the error a call ends with in good time, and
the stand-ins the relay's unit tests hand it (a recording channel, a call with no arguments, an
upstream session)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers.identity import LOCAL, Principal
from mcp_providers.models import Tool
from mcp_providers.plugins import policy, upstream
from mcp_providers.plugins.upstream.providers import UpstreamResources
from mcp_providers.providers import ClientChannel, Elicited, ToolCall
from mcp_providers.testing import compose


def behind_a_private_deny(folder: Path, name: str, source: str, prefix: str) -> tuple[Any, Path]:
    """A composition of the stdio upstream ``name`` running ``source`` (a script given the path of
    the log it writes what it was asked to), owning ``prefix`` (``"sdk://"``), with a deny on
    ``<prefix>private/*``; and that log."""
    script, log = folder / f"{name}_upstream.py", folder / "asked.log"
    script.write_text(source)
    log.touch()
    server = {"name": name, "command": sys.executable, "args": [str(script), str(log)], "prefixes": [prefix]}
    settings = {
        "upstream": {"servers": [server]},
        "policy": {"rules": [{"effect": "deny", "targets": [f"{prefix}private/*"], "reason": "private"}]},
    }
    return compose({"upstream": upstream, "policy": policy}, settings), log


def link_of(composed: Any, name: str | None = None) -> Any:
    """The :class:`~mcp_providers.plugins.upstream.link.Link` of the composition's one upstream (or
    of the upstream ``name``, when it has several)."""
    found = [d.provider for d in composed.assembly.declared if isinstance(d.provider, UpstreamResources)]
    [one] = [p for p in found if name is None or p.link.server.name == name]
    return one.link


@contextlib.contextmanager
def read_timeout_meanwhile(composed: Any, seconds: float, name: str | None = None) -> Iterator[None]:
    """The upstream's ``read_timeout`` is ``seconds`` for what is sent meanwhile (its link reads the
    settings at each request), then the configured one again: a call meant to time out waits out a
    short bound, while the composition keeps the long one a loaded machine needs for the others."""
    link = link_of(composed, name)
    configured = link.server
    link.server = configured.model_copy(update={"read_timeout": seconds})
    try:
        yield
    finally:
        link.server = configured


async def refusal(call: Any, seconds: float) -> str:
    """The error message ``await call`` ends with (an MCP error, or a tool result flagged as one),
    within ``seconds``: far less than the upstream's ``read_timeout``, so only a timely error passes."""
    with anyio.fail_after(seconds):
        try:
            result = await call
        except MCPError as exc:
            return exc.message
    assert result.is_error, result
    return "\n".join(getattr(b, "text", "") for b in result.content)


class RecordingChannel(ClientChannel):
    """A downstream channel that records what it is asked (and would accept it)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, message: str, schema: Any) -> Elicited:
        self.asked.append(message)
        return Elicited(action="accept", content={})


class _NoArguments(BaseModel):
    pass


def tool_call(channel: ClientChannel, principal: Principal = LOCAL) -> ToolCall:
    """A call of a tool that takes no arguments, by ``principal``, over ``channel``."""
    tool = Tool(name="t", description="A tool.", input_model=_NoArguments)
    return ToolCall(tool=tool, arguments=_NoArguments(), channel=channel, principal=principal)


class UpstreamSession:
    """Stands for an upstream's ``ClientSession`` (the relay keeps a weak reference to it)."""
