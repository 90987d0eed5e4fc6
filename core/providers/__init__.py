"""Provider base classes: what a plugin's hooks return, and what the core calls at request time.

A plugin subclasses one of these per data source::

    class Catalog(ResourceProvider):
        name = "ssg-catalog"
        prefixes = ("documcp://ssgs/",)

        def resources(self) -> Sequence[Resource]:
            return [Resource(uri="documcp://ssgs/available", name="ssgs", mime_type="application/json")]

        async def read(self, request: ReadRequest) -> Content:
            return Content(text=json.dumps(...))

Declarations (``resources``, ``templates``, ``tools``, ``prompts``) are read once, at composition
time; the request-time methods (``read``, ``complete``, ``call``, ``render``) are called with the
declaration that matched, so a provider never parses URIs itself. ``lifespan`` is entered once when
the server starts and left when it stops: open network clients there, not at import.

What providers return is in :mod:`.content`, what they are called with in :mod:`.requests`, the
base classes in :mod:`.bases`; all are imported from here.
"""

from mcp_providers.providers.bases import (
    ExtensionProvider,
    PromptProvider,
    Publisher,
    ResourceProvider,
    SourceSetting,
    ToolProvider,
)
from mcp_providers.providers.content import Audio, Content, Embed, Image, Link, Media, Message, Text, ToolResult
from mcp_providers.providers.requests import (
    LOG_LEVELS,
    ClientChannel,
    CompletionRequest,
    Elicited,
    ExtensionRequest,
    LogLevel,
    ReadRequest,
    Sampled,
    ToolCall,
)

__all__ = [
    "LOG_LEVELS",
    "Audio",
    "ClientChannel",
    "CompletionRequest",
    "Content",
    "Elicited",
    "Embed",
    "ExtensionProvider",
    "ExtensionRequest",
    "Image",
    "Link",
    "LogLevel",
    "Media",
    "Message",
    "PromptProvider",
    "Publisher",
    "ReadRequest",
    "ResourceProvider",
    "Sampled",
    "SourceSetting",
    "Text",
    "ToolCall",
    "ToolProvider",
    "ToolResult",
]
