"""mcp-providers: compose one MCP server out of resource, tool and prompt provider plugins.

This module is the public API; everything a plugin author or an embedding application needs is
re-exported here.
"""

from __future__ import annotations

from typing import Any

from mcp_providers.composition import Composition, compose
from mcp_providers.config import Config, ServerSettings, load_config
from mcp_providers.errors import InvalidParams, NotFound, ToolFailure, UpstreamError
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import Annotations, Freshness, Prompt, PromptArgument, Resource, ResourceTemplate, Tool
from mcp_providers.policy import Decision
from mcp_providers.providers import (
    CompletionRequest,
    Content,
    Link,
    Message,
    PromptProvider,
    ReadRequest,
    ResourceProvider,
    ToolCall,
    ToolProvider,
    ToolResult,
)

__all__ = [
    "Annotations",
    "CompletionRequest",
    "Composition",
    "Config",
    "Content",
    "Decision",
    "Freshness",
    "InvalidParams",
    "Link",
    "Message",
    "NotFound",
    "Prompt",
    "PromptArgument",
    "PromptProvider",
    "ReadRequest",
    "Resource",
    "ResourceProvider",
    "ResourceTemplate",
    "ServerSettings",
    "Tool",
    "ToolCall",
    "ToolFailure",
    "ToolProvider",
    "ToolResult",
    "UpstreamError",
    "compose",
    "hookimpl",
    "load_config",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("mcp-providers")
    raise AttributeError(f"module 'mcp_providers' has no attribute {name!r}")
