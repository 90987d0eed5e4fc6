"""The wire: declarations and results in the SDK's types, shaped for the session, errors mapped once.

- :func:`error` is the one place an exception raised while serving becomes a JSON-RPC error:
  a :class:`~mcp_providers.errors.RequestError` keeps its code, message and data; an
  ``MCPError`` passes through; anything else becomes -32603 naming no internals (the traceback
  goes to the log, never the text: it may carry secrets).
- :func:`shape` adapts a result to the protocol version the session negotiated (content blocks a
  version does not know are rewritten as text it does).
- The ``*_wire`` functions turn frozen declarations into list items once, at bind time.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import mcp_types as types
from mcp import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcp_providers._host.contain import escapes
from mcp_providers._host.output_schemas import RESULT_KEY, output_schema
from mcp_providers._serve.steps.surrogates import replaced, replaced_json
from mcp_providers.errors import RequestError
from mcp_providers.models import RECEIPT_KEY, Annotations, Icon, Prompt, Resource, ResourceTemplate, Tool
from mcp_providers.providers import Audio, Image, Media, Text

log = logging.getLogger("mcp_providers.server")

R = TypeVar("R")

AUDIO_SINCE = "2025-03-26"
"""The first protocol version with audio content, tool annotations and the completions capability."""
PROGRESS_MESSAGE_SINCE = AUDIO_SINCE
"""The first protocol version whose ``notifications/progress`` carries a ``message``."""
RESOURCE_LINK_SINCE = "2025-06-18"
"""The first protocol version with ``resource_link`` blocks, ``structuredContent``/``outputSchema``,
``title`` fields, ``_meta`` on list items and content, and ``annotations.lastModified``."""
ICONS_SINCE = "2025-11-25"
"""The first protocol version with ``icons``, ``Tool.execution`` and the tasks capability."""
MODERN_RESULT_KEYS = frozenset({"ttlMs", "cacheScope", "resultType"})
"""Result fields of the 2026-07-28 versions (cache hints, ``resultType``), absent from handshake-era ones."""

_SINCE: dict[type[BaseModel], tuple[tuple[str, str], ...]] = {
    types.Tool: (
        ("annotations", AUDIO_SINCE),
        ("title", RESOURCE_LINK_SINCE),
        ("output_schema", RESOURCE_LINK_SINCE),
        ("meta", RESOURCE_LINK_SINCE),
        ("icons", ICONS_SINCE),
        ("execution", ICONS_SINCE),
    ),
    types.Resource: (("title", RESOURCE_LINK_SINCE), ("meta", RESOURCE_LINK_SINCE), ("icons", ICONS_SINCE)),
    types.ResourceTemplate: (("title", RESOURCE_LINK_SINCE), ("meta", RESOURCE_LINK_SINCE), ("icons", ICONS_SINCE)),
    types.Prompt: (("title", RESOURCE_LINK_SINCE), ("meta", RESOURCE_LINK_SINCE), ("icons", ICONS_SINCE)),
    types.PromptArgument: (("title", RESOURCE_LINK_SINCE),),
    types.Annotations: (("last_modified", RESOURCE_LINK_SINCE),),
    types.TextContent: (("meta", RESOURCE_LINK_SINCE),),
    types.ImageContent: (("meta", RESOURCE_LINK_SINCE),),
    types.AudioContent: (("meta", RESOURCE_LINK_SINCE),),
    types.EmbeddedResource: (("meta", RESOURCE_LINK_SINCE),),
    types.TextResourceContents: (("meta", RESOURCE_LINK_SINCE),),
    types.BlobResourceContents: (("meta", RESOURCE_LINK_SINCE),),
    types.CallToolResult: (("structured_content", RESOURCE_LINK_SINCE),),
}
"""Per model: the fields a protocol version before the given one does not define (they are dropped)."""

_INITIALIZE_SINCE: tuple[tuple[str, str, str], ...] = (
    ("capabilities", "completions", AUDIO_SINCE),
    ("capabilities", "tasks", ICONS_SINCE),
    ("serverInfo", "title", RESOURCE_LINK_SINCE),
    ("serverInfo", "icons", ICONS_SINCE),
    ("serverInfo", "description", ICONS_SINCE),
    ("serverInfo", "websiteUrl", ICONS_SINCE),
)


MAX_ERROR_MESSAGE = 2000
"""Characters of an error message sent; longer ones are cut and marked."""
MAX_ERROR_DATA = 4096
"""Bytes of an error's ``data`` (as JSON) sent; bigger data keeps only its short fields."""


def error(exc: BaseException) -> BaseException:
    """The exception to raise to the SDK for ``exc`` (see the module docstring).

    Message and data are capped (:data:`MAX_ERROR_MESSAGE` characters, :data:`MAX_ERROR_DATA`
    bytes), so an error never echoes an unbounded slice of a request or of a provider's output.
    """
    if isinstance(exc, RequestError):  # provider text may hold a lone surrogate: sent as U+FFFD
        return MCPError(exc.code, _capped(replaced(exc.message)[0]), _encodable(_capped_data(exc.data)))
    if isinstance(exc, MCPError) or not (isinstance(exc, Exception) or escapes(exc)):
        return exc  # already on the wire's terms, or a cancellation that must propagate
    # SystemExit & co. from plugin code the invoker does not run (check_watch, say) end here too
    log.error("unexpected failure while serving a request", exc_info=exc)
    return MCPError(types.INTERNAL_ERROR, "internal error; the server log has the details")


def _encodable(data: Any) -> Any:
    """``data`` with any lone surrogate in its strings replaced, when it is JSON-ready."""
    try:
        return replaced_json(data)[0]
    except (TypeError, ValueError):  # not JSON-ready: sent as the SDK would send it
        return data


def _capped(message: str) -> str:
    if len(message) <= MAX_ERROR_MESSAGE:
        return message
    return f"{message[:MAX_ERROR_MESSAGE]}... ({len(message) - MAX_ERROR_MESSAGE} more characters cut)"


def _capped_data(data: Any) -> Any:
    """``data`` if its JSON fits :data:`MAX_ERROR_DATA`; else its short fields and a note."""
    try:
        size = len(json.dumps(data, default=str))
    except (TypeError, ValueError):
        return None
    if size <= MAX_ERROR_DATA:
        return data
    kept: dict[str, Any] = {"truncated": f"error data of {size} bytes cut to its short fields"}
    if isinstance(data, dict):
        for key, value in list(data.items())[:20]:
            if isinstance(value, str | int | float | bool) or value is None:
                kept[str(key)[:100]] = value[:200] if isinstance(value, str) else value
    return kept


def shape(result: R, version: str) -> R:
    """``result`` as a session at protocol ``version`` can parse it: a new object wherever something
    changes, ``result`` itself (and every part of it) left as it was.

    A block a version does not know becomes a text block saying what it was (``resource_link``
    before 2025-06-18 names its URI; ``audio`` before 2025-03-26 names its MIME type and size);
    fields a version does not define are dropped (see ``docs/protocol-versions.md``), the
    2026-era :data:`MODERN_RESULT_KEYS` of a result already in wire form (a ``dict``) too. An
    empty ``version`` (not negotiated) or 2025-11-25 and later are otherwise left as they are.
    Nothing is changed in place: list items and results may be shared by every session (the
    catalog's items are made once, a coalesced read's content serves several callers).
    """
    if not version or version in MODERN_PROTOCOL_VERSIONS:
        return result  # 2026-era or not negotiated: nothing to drop or rewrite (both are after ICONS_SINCE)
    if isinstance(result, dict) and not MODERN_RESULT_KEYS.isdisjoint(result):
        result = cast(R, {k: v for k, v in cast(dict[str, Any], result).items() if k not in MODERN_RESULT_KEYS})
    if not version or version >= ICONS_SINCE:
        return result
    rewritten: list[str] = []
    shaped: Any = _older_fields(result, version, rewritten)
    receipt = (getattr(shaped, "meta", None) or {}).get(RECEIPT_KEY)
    if rewritten and isinstance(receipt, dict):  # the receipt digests the blocks as built; say what changed
        note = f"protocol {version}: {', '.join(rewritten)} block(s) sent as text"
        receipt = {**receipt, "transforms": [*receipt.get("transforms", ()), note]}
        shaped = shaped.model_copy(update={"meta": {**shaped.meta, RECEIPT_KEY: receipt}})
    return cast(R, shaped)


def _older_fields(value: Any, version: str, rewritten: list[str]) -> Any:
    """``value`` without the fields ``version`` lacks and with the blocks it lacks rewritten,
    everywhere in it: ``value`` itself when nothing changes, else a copy (never changed in place)."""
    if isinstance(value, list):
        items = [_older_fields(_older(item, version, rewritten), version, rewritten) for item in value]
        return items if any(a is not b for a, b in zip(value, items, strict=True)) else value
    if not isinstance(value, BaseModel):
        return value
    update: dict[str, Any] = {}
    for name, since in _SINCE.get(type(value), ()):
        if version < since and getattr(value, name, None) is not None:
            update[name] = None
    for name in type(value).model_fields:
        child = getattr(value, name)
        if name in update or not isinstance(child, BaseModel | list):
            continue
        if isinstance(child, BaseModel):
            child = _older(child, version, rewritten)
        shaped = _older_fields(child, version, rewritten)
        if shaped is not getattr(value, name):
            update[name] = shaped
    return value.model_copy(update=update) if update else value


def _older(block: Any, version: str, rewritten: list[str]) -> Any:
    """``block``, or a text block standing in for it when ``version`` does not know its type (its
    type then added to ``rewritten``)."""
    if isinstance(block, types.ResourceLink) and version < RESOURCE_LINK_SINCE:
        rewritten.append(block.type)
        return types.TextContent(type="text", text=f"Resource {block.name}: {block.uri}")
    if isinstance(block, types.AudioContent) and version < AUDIO_SINCE:
        rewritten.append(block.type)
        size = len(block.data) * 3 // 4
        return types.TextContent(
            type="text",
            text=f"[audio ({block.mime_type}, about {size} bytes) omitted: protocol {version} has no audio]",
        )
    return block


def progress_message(message: str | None, version: str) -> str | None:
    """A ``notifications/progress`` message as a session at ``version`` may get it (none before
    :data:`PROGRESS_MESSAGE_SINCE`)."""
    return None if version and version < PROGRESS_MESSAGE_SINCE else message


def shape_initialize(result: dict[str, Any]) -> dict[str, Any]:
    """The serialized ``initialize`` result without what its ``protocolVersion`` does not define
    (a copy where something is dropped; ``result`` is never changed)."""
    version = str(result.get("protocolVersion") or "")
    if not version or version >= ICONS_SINCE:
        return result
    shaped = dict(result)
    for where, key, since in _INITIALIZE_SINCE:
        part = shaped.get(where)
        if version < since and isinstance(part, dict) and key in part:
            shaped[where] = {k: v for k, v in part.items() if k != key}
    return shaped


async def initialize_middleware(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
    """SDK server middleware: ``initialize`` results shaped by :func:`shape_initialize`."""
    result = await call_next(ctx)
    if getattr(ctx, "method", None) == "initialize" and isinstance(result, dict):
        return shape_initialize(result)
    return result


def annotations_wire(a: Annotations | None) -> types.Annotations | None:
    if a is None:
        return None
    return types.Annotations(
        audience=list(a.audience) if a.audience is not None else None,
        priority=a.priority,
        last_modified=a.last_modified.isoformat() if a.last_modified else None,
    )


def icons_wire(icons: tuple[Icon, ...]) -> list[types.Icon] | None:
    """The wire ``icons`` of a declaration or the server; ``None`` (left out) when there are none."""
    if not icons:
        return None
    return [
        types.Icon(src=i.src, mime_type=i.mime_type, sizes=list(i.sizes) if i.sizes else None, theme=i.theme)
        for i in icons
    ]


def resource_wire(r: Resource) -> types.Resource:
    return types.Resource(
        uri=r.uri,
        name=r.name,
        title=r.title,
        description=r.description,
        mime_type=r.mime_type,
        size=r.size,
        annotations=annotations_wire(r.annotations),
        icons=icons_wire(r.icons),
        _meta=r.meta,
    )


def template_wire(t: ResourceTemplate) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        uri_template=t.uri_template,
        name=t.name,
        title=t.title,
        description=t.description,
        mime_type=t.mime_type,
        annotations=annotations_wire(t.annotations),
        icons=icons_wire(t.icons),
        _meta=t.meta,
    )


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True)


def tool_annotations(t: Tool) -> types.ToolAnnotations:
    """``t``'s hints on the wire (derived from its ``effects``: :meth:`Tool.annotations`), titled."""
    hints = t.annotations()
    return types.ToolAnnotations(
        title=t.title,
        read_only_hint=hints["readOnlyHint"],
        destructive_hint=hints["destructiveHint"],
        idempotent_hint=hints["idempotentHint"],
        open_world_hint=hints["openWorldHint"],
    )


def tool_wire(t: Tool) -> types.Tool:
    """The tools/list item of ``t``; its ``outputSchema`` always has an object root (see
    :func:`~mcp_providers._host.output_schemas.output_schema`), and the description says when it is wrapped."""
    served = output_schema(t.output_model) if t.output_model else None
    description = t.description
    if served is not None and served.wrapped:
        description = (
            f"{description.rstrip()} (Structured output is wrapped: it is under {RESULT_KEY!r}.)"
            if description
            else f"Structured output is wrapped: it is under {RESULT_KEY!r}."
        )
    return types.Tool(
        name=t.name,
        title=t.title,
        description=description,
        input_schema=_schema(t.input_model),
        output_schema=served.schema if served is not None else None,
        annotations=tool_annotations(t),
        icons=icons_wire(t.icons),
        _meta=t.meta,
    )


def prompt_wire(p: Prompt) -> types.Prompt:
    return types.Prompt(
        name=p.name,
        title=p.title,
        description=p.description,
        arguments=[
            types.PromptArgument(name=a.name, description=a.description, required=a.required) for a in p.arguments
        ],
        icons=icons_wire(p.icons),
        _meta=p.meta,
    )


def media_wire(block: Media) -> types.TextContent | types.ImageContent | types.AudioContent:
    """The MCP wire model of a text, image or audio block.

    :raises TypeError: ``block`` is not a :class:`Text`, :class:`Image` or :class:`Audio`.
    """
    if isinstance(block, Text):
        return types.TextContent(type="text", text=block.text)
    if isinstance(block, Image):
        return types.ImageContent(type="image", data=base64.b64encode(block.data).decode(), mime_type=block.mime_type)
    if isinstance(block, Audio):
        return types.AudioContent(type="audio", data=base64.b64encode(block.data).decode(), mime_type=block.mime_type)
    raise TypeError(f"{type(block).__name__} is not a media block; use Text, Image or Audio")


def contents_wire(
    uri: str, mime_type: str | None, text: str | None, data: bytes
) -> types.TextResourceContents | types.BlobResourceContents:
    """One resource's contents: ``text`` as is, else ``data`` base64-encoded."""
    if text is not None:
        return types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    return types.BlobResourceContents(uri=uri, mime_type=mime_type, blob=base64.b64encode(data).decode())
