"""Media content blocks: text, images and audio in tool results and prompt messages.

A tool returns them in :attr:`ToolResult.content <mcp_providers.providers.ToolResult.content>`;
a prompt message carries one in :attr:`Message.content <mcp_providers.providers.Message.content>`::

    ToolResult(content=(Text("Here is the chart"), Image(data=png_bytes, mime_type="image/png")))

Each becomes the MCP content block of the same name (``text``, ``image``, ``audio``); binary data
is base64-encoded by the core, never by the provider. Blocks are checked when they are built, so a
malformed one fails in the provider's own code, not on the wire. Resources go in results as
:class:`~mcp_providers.providers.Link` (a ``resource_link``) or
:class:`~mcp_providers.providers.Embed` (an embedded ``resource``), which the core checks
against the catalog.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import mcp_types as types

__all__ = ["Audio", "Image", "Media", "Text", "media_wire"]


def _check_mime(kind: str, mime_type: str, major: str) -> None:
    if not mime_type.startswith(f"{major}/"):
        example = "png" if major == "image" else "wav"
        raise ValueError(f"{kind} mime_type must be {major}/..., e.g. {major}/{example}; got {mime_type!r}")


@dataclass(frozen=True, slots=True)
class Text:
    """A ``text`` block.

    :param text: the text, sent as is.
    """

    text: str


@dataclass(frozen=True, slots=True)
class Image:
    """An ``image`` block.

    :param data: the raw image bytes (the core base64-encodes them).
    :param mime_type: ``image/...``, e.g. ``image/png``.
    :raises ValueError: the MIME type is not ``image/...`` or ``data`` is empty.
    """

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        _check_mime("Image", self.mime_type, "image")
        if not self.data:
            raise ValueError("Image data is empty")


@dataclass(frozen=True, slots=True)
class Audio:
    """An ``audio`` block.

    :param data: the raw audio bytes (the core base64-encodes them).
    :param mime_type: ``audio/...``, e.g. ``audio/wav``.
    :raises ValueError: the MIME type is not ``audio/...`` or ``data`` is empty.
    """

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        _check_mime("Audio", self.mime_type, "audio")
        if not self.data:
            raise ValueError("Audio data is empty")


Media = Text | Image | Audio
"""A text, image or audio block."""


def media_wire(block: Media) -> types.TextContent | types.ImageContent | types.AudioContent:
    """The MCP wire model of ``block``.

    :raises TypeError: ``block`` is not a :class:`Text`, :class:`Image` or :class:`Audio`.
    """
    if isinstance(block, Text):
        return types.TextContent(type="text", text=block.text)
    if isinstance(block, Image):
        return types.ImageContent(type="image", data=base64.b64encode(block.data).decode(), mime_type=block.mime_type)
    if isinstance(block, Audio):
        return types.AudioContent(type="audio", data=base64.b64encode(block.data).decode(), mime_type=block.mime_type)
    raise TypeError(f"{type(block).__name__} is not a media block; use Text, Image or Audio")
