"""mcp-providers: compose one MCP server out of resource, tool and prompt provider plugins.

This module is the public API: everything a plugin author or an embedding application needs is
re-exported here, and adding a name is a reviewed decision. The contract modules keep their own
import paths too (``mcp_providers.hookspecs``, ``models``, ``providers``, ``errors``, ``policy``, ``identity``,
``credentials``, ``http``, ``config``, ``skills``, ``checks``, ``testing``, ``embedding``); everything under
``mcp_providers._host`` and ``mcp_providers._serve`` is private and may change without notice.

:func:`compose` and :class:`Composition` are imported on first use, so a plugin importing
``from mcp_providers import hookimpl`` does not load the serving core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_providers import _metadata

try:  # the first pydantic model classes: pydantic reads its plugins' entry points there
    import mcp_providers.config  # noqa: F401
except Exception:
    if not _metadata.repaired_pydantic_plugins():  # broken package metadata is the one failure repaired
        raise
from mcp_providers.config import Config, ServerSettings, load_config
from mcp_providers.credentials import Credential, CredentialBroker, CredentialRefused, Upstream
from mcp_providers.errors import (
    CompositionError,
    ConfigError,
    Denied,
    InvalidParams,
    MCPProvidersDeprecationWarning,
    MCPProvidersError,
    MCPProvidersRemovedIn1Warning,
    MissingCapability,
    NotFound,
    ProviderFailed,
    RateLimited,
    ReadTimeout,
    RequestError,
    SideEffectRefused,
    Stale,
    TooLarge,
    ToolFailure,
    UpstreamError,
)
from mcp_providers.hookspecs import hookimpl
from mcp_providers.identity import Principal
from mcp_providers.models import (
    MAX_AGE_KEY,
    RECEIPT_KEY,
    Annotations,
    Effects,
    Extension,
    ExtensionMethod,
    Freshness,
    Icon,
    Members,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    Tool,
)
from mcp_providers.policy import Action, Decision
from mcp_providers.providers import (
    Audio,
    ClientChannel,
    CompletionRequest,
    Content,
    Elicited,
    Embed,
    ExtensionProvider,
    ExtensionRequest,
    Image,
    Link,
    LogLevel,
    Message,
    PromptProvider,
    Publisher,
    ReadRequest,
    ResourceProvider,
    Sampled,
    SourceSetting,
    Text,
    ToolCall,
    ToolProvider,
    ToolResult,
)
from mcp_providers.skills import SkillFolders, SkillProvider, SkillSource

if TYPE_CHECKING:
    from mcp_providers._serve.composition import Composition, compose

__all__ = [
    "MAX_AGE_KEY",
    "RECEIPT_KEY",
    "Action",
    "Annotations",
    "Audio",
    "ClientChannel",
    "CompletionRequest",
    "Composition",
    "CompositionError",
    "Config",
    "ConfigError",
    "Content",
    "Credential",
    "CredentialBroker",
    "CredentialRefused",
    "Decision",
    "Denied",
    "Effects",
    "Elicited",
    "Embed",
    "Extension",
    "ExtensionMethod",
    "ExtensionProvider",
    "ExtensionRequest",
    "Freshness",
    "Icon",
    "Image",
    "InvalidParams",
    "Link",
    "LogLevel",
    "MCPProvidersDeprecationWarning",
    "MCPProvidersError",
    "MCPProvidersRemovedIn1Warning",
    "Members",
    "Message",
    "MissingCapability",
    "NotFound",
    "Principal",
    "Prompt",
    "PromptArgument",
    "PromptProvider",
    "ProviderFailed",
    "Publisher",
    "RateLimited",
    "ReadRequest",
    "ReadTimeout",
    "RequestError",
    "Resource",
    "ResourceProvider",
    "ResourceTemplate",
    "Sampled",
    "ServerSettings",
    "SideEffectRefused",
    "SkillFolders",
    "SkillProvider",
    "SkillSource",
    "SourceSetting",
    "Stale",
    "Text",
    "TooLarge",
    "Tool",
    "ToolCall",
    "ToolFailure",
    "ToolProvider",
    "ToolResult",
    "Upstream",
    "UpstreamError",
    "compose",
    "hookimpl",
    "load_config",
]


def __getattr__(name: str) -> Any:
    if name in ("Composition", "compose"):
        from mcp_providers._serve import composition

        return getattr(composition, name)
    if name == "__version__":
        from importlib.metadata import version

        return version("mcp-providers")
    raise AttributeError(f"module 'mcp_providers' has no attribute {name!r}")
