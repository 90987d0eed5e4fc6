"""What providers return: a read's :class:`Content`, a tool's :class:`ToolResult` and its blocks
(:class:`Text`, :class:`Image`, :class:`Audio`, :class:`Link`, :class:`Embed`), a prompt's
:class:`Message`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel

__all__ = ["Audio", "Content", "Embed", "Image", "Link", "Media", "Message", "Text", "ToolResult"]


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


@dataclass(frozen=True, slots=True)
class Content:
    """What a read returns: exactly one of ``text`` and ``blob``.

    :param text: text content (sent as ``text``).
    :param blob: binary content (sent base64-encoded as ``blob``).
    :param mime_type: overrides the declaration's MIME type for this read.
    :param as_of: when the source produced this content (timezone-aware); a provider with
        ``max_age`` freshness that knows the actual age lets the core serve requests demanding
        fresher data than the declared maximum.
    """

    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    as_of: datetime | None = None

    def __post_init__(self) -> None:
        """:raises ValueError: neither or both of ``text`` and ``blob``.
        :raises TypeError: a field of the wrong type (each goes on the wire as it is)."""
        text, mime_type = self.text, self.mime_type
        if (text is None) == (self.blob is None):
            raise ValueError("Content takes exactly one of text= and blob=")
        if type(text) is str and (mime_type is None or type(mime_type) is str) and self.as_of is None:
            return  # the usual content, every field of its exact type: the loop below would pass it
        for name, value, kinds, expected in (
            ("text", self.text, str, "a str"),
            ("blob", self.blob, bytes | bytearray, "bytes"),
            ("mime_type", self.mime_type, str, "a str such as 'text/plain'"),
            ("as_of", self.as_of, datetime, "a timezone-aware datetime"),
        ):
            if value is not None and not isinstance(value, kinds):
                raise TypeError(f"Content {name}= must be {expected} or None, not {type(value).__name__}")

    @property
    def data(self) -> bytes:
        """The bytes served: UTF-8 of ``text``, or ``blob``."""
        return self.blob if self.blob is not None else (self.text or "").encode()


@dataclass(frozen=True, slots=True)
class Link:
    """A ``resource_link`` content block pointing at a URI a provider serves."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class Embed:
    """A resource embedded in a tool result: bounded evidence for this call.

    The URI must be one this composition serves and the caller may read. Over the server's
    ``max_embed_bytes`` the core replaces the embed with a ``resource_link`` to the same URI
    (``over_budget="link"``, recorded in the receipt) or fails the call (``"error"``).
    """

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    over_budget: Literal["link", "error"] = "link"

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("Embed takes exactly one of text= and blob=")

    @property
    def data(self) -> bytes:
        return self.blob if self.blob is not None else (self.text or "").encode()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns.

    :param output: an instance of the tool's ``output_model`` (sent as ``structuredContent`` and,
        serialized, as a text block), or ``None`` for a tool with no output model.
    :param text: extra text for the model.
    :param links: resource links to URIs served by this composition (never fetched by the core).
    :param embedded: resources embedded as evidence (see :class:`Embed`).
    :param content: media blocks (:class:`Text`,
        :class:`Image`, :class:`Audio`), sent in order
        after ``output`` and ``text``.
    """

    output: BaseModel | None = None
    text: str | None = None
    links: tuple[Link, ...] = ()
    embedded: tuple[Embed, ...] = ()
    content: tuple[Media, ...] = ()


@dataclass(frozen=True, slots=True)
class Message:
    """One prompt message: who says it, and either text or one content block.

    ``Message("user", "Review this")`` or ``Message("user", content=Image(png, "image/png"))``.

    :param role: ``"user"`` or ``"assistant"``.
    :param text: the message text; exactly one of ``text`` and ``content``.
    :param content: a :class:`Text`, :class:`Image`
        or :class:`Audio` block, a :class:`Link`, or an :class:`Embed`
        whose URI this composition serves (the core checks it and the caller's right to read it).
    :raises ValueError: both or neither of ``text`` and ``content`` are given.
    """

    role: Literal["user", "assistant"]
    text: str | None = None
    content: Media | Link | Embed | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.content is None):
            raise ValueError("Message takes exactly one of text= and content=")
