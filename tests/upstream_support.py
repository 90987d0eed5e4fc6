"""What the upstream tests that break an upstream on purpose share: its link, and the error a call
ends with in good time."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import MCPError

from mcp_providers.plugins.upstream.providers import UpstreamResources


def link_of(composed: Any, name: str | None = None) -> Any:
    """The :class:`~mcp_providers.plugins.upstream.link.Link` of the composition's one upstream (or
    of the upstream ``name``, when it has several)."""
    found = [d.provider for d in composed.assembly.declared if isinstance(d.provider, UpstreamResources)]
    [one] = [p for p in found if name is None or p.link.server.name == name]
    return one.link


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
