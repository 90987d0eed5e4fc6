"""Evidence: one set of rules for what a result may carry, for reads, tools and prompts alike.

- **Read budget**: content over ``max_bytes`` (or ``server.max_read_bytes``) is refused with a
  message saying how to narrow, or cut when the declaration allows truncation; the cut is recorded.
- **Links** (``resource_link``) must name a URI this composition serves and the caller may read;
  any other is dropped and the drop recorded (a link is never fetched here).
- **Embeds** (embedded ``resource``) must name a served URI the caller may read (``expand`` on its
  template, ``read`` on the URI in canonical form and as sent); over ``server.max_embed_bytes``
  one becomes a link, or fails the request when the provider asked for that.
- **Receipts** of tool and prompt results cover every content block in order: ``sha256`` is over
  the canonical JSON (sorted keys, no spaces) of the blocks and ``structuredContent``, and
  ``blocks`` lists each block's type, URI, size and digest.
- **Lone surrogates** (which UTF-8 cannot carry) in any block or in ``structuredContent`` are
  served as U+FFFD, and the replacement is recorded (:func:`served_blocks`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types

from mcp_providers._host.catalog import Catalog, Entry, Route
from mcp_providers._serve.steps import wire
from mcp_providers._serve.steps.custody import digest, receipt
from mcp_providers._serve.steps.exchange import Exchange
from mcp_providers._serve.steps.gate import Gate
from mcp_providers._serve.steps.surrogates import note, replaced, replaced_json
from mcp_providers._serve.steps.uri_length import too_long
from mcp_providers.errors import TooLarge
from mcp_providers.models import Effects, Resource, ResourceTemplate
from mcp_providers.providers import Content, Embed, Link

log = logging.getLogger("mcp_providers.server")

Block = types.TextContent | types.ImageContent | types.AudioContent | types.ResourceLink | types.EmbeddedResource


def within_budget(
    uri: str, declaration: Resource | ResourceTemplate, content: Content, budget: int
) -> tuple[Content, dict[str, Any] | None]:
    """``content`` if it fits ``budget`` bytes; else its cut (when allowed) or a refusal.

    :returns: the content to serve, and the truncation record for the receipt (``None`` if uncut).
    :raises TooLarge: over the budget and the declaration does not allow truncation.
    """
    size = len(content.data)
    if size <= budget:
        return content, None
    if not declaration.allow_truncation:
        raise TooLarge(
            f"{uri} is {size} bytes, over the read budget of {budget} bytes; read a narrower "
            "resource (a single record or a smaller page) or ask the operator to raise max_read_bytes",
            data={"uri": uri, "bytes": size, "budget": budget},
        )
    if content.text is not None:
        text = content.text.encode()[:budget].decode("utf-8", errors="ignore")
        cut = Content(text=text, mime_type=content.mime_type, as_of=content.as_of)
    else:
        cut = Content(blob=(content.blob or b"")[:budget], mime_type=content.mime_type, as_of=content.as_of)
    record = {
        "originalBytes": size,
        "servedBytes": len(cut.data),
        "budget": budget,
        "reason": "over the read budget; the provider allows truncation",
    }
    return cut, record


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Blocks:
    """Builds the content blocks of one tool or prompt result under the evidence rules."""

    __slots__ = ("catalog", "content", "embed_budget", "gate", "transforms", "who")

    catalog: Catalog
    gate: Gate
    embed_budget: int
    who: str
    """Who produced the result, for messages: ``tool NAME`` or ``prompt NAME``."""
    content: list[Block]
    transforms: list[str]

    def __init__(self, catalog: Catalog, gate: Gate, embed_budget: int, who: str) -> None:
        self.catalog = catalog
        self.gate = gate
        self.embed_budget = embed_budget
        self.who = who
        self.content = []
        self.transforms = []

    def link(self, link: Link) -> Block | None:
        uri = link.uri
        if not self._readable(uri, "resource_link"):
            return None
        return types.ResourceLink(
            type="resource_link", uri=uri, name=link.name, description=link.description, mime_type=link.mime_type
        )

    def embed(self, embed: Embed) -> Block | None:
        route = self._served(embed.uri, "embedded resource")
        if route is None:
            return None
        self.gate.require_route("read", route, embed.uri, asked_by=self.who)
        if embed.text is not None:  # its size is of the UTF-8 served: a lone surrogate becomes U+FFFD first
            text, count = replaced(embed.text)
            if count:
                embed = dataclasses.replace(embed, text=text)
                self.transforms.append(note(count))
        size = len(embed.data)
        if size <= self.embed_budget:
            return types.EmbeddedResource(
                type="resource", resource=wire.contents_wire(embed.uri, embed.mime_type, embed.text, embed.data)
            )
        if embed.over_budget == "error":
            raise TooLarge(
                f"embed-over-budget: {self.who} would embed {embed.uri} ({size} bytes), over the embed budget of "
                f"{self.embed_budget} bytes; read the resource instead",
                data={"uri": embed.uri, "bytes": size, "budget": self.embed_budget, "rule": "embed-over-budget"},
            )
        self.transforms.append(f"embed-over-budget->resource_link {embed.uri} ({size} bytes)")
        return types.ResourceLink(
            type="resource_link", uri=embed.uri, name=embed.uri, mime_type=embed.mime_type, size=size
        )

    def _served(self, uri: str, kind: str) -> Route | None:
        """The route of a URI the result names (``kind``: ``resource_link``, ``embedded resource``),
        or ``None``, dropped and recorded: not served, or longer than ``max_uri_length`` (then never
        routed: routing reads every character; :func:`~.uri_length.too_long`)."""
        if (why := too_long(len(uri), self.gate.max_uri_length)) is not None:
            log.warning("%s named %s...: %s; dropped", self.who, uri[:200], why)
            self.transforms.append(f"dropped {kind}: {why}")
            return None
        route = self.catalog.find(uri)
        if route is None:
            log.warning("%s named %s, which this server does not serve; dropped", self.who, uri[:200])
            self.transforms.append(f"dropped {kind} {uri}: not served by this server")
        return route

    def _readable(self, uri: str, kind: str) -> bool:
        """A link target must be served and readable by the caller; otherwise it is dropped."""
        route = self._served(uri, kind)
        if route is None:
            return False
        readable = self.gate.allows_route("read", route, uri)  # the questions an embed is asked
        if not readable:
            self.transforms.append(f"dropped {kind}: not readable by {self.gate.subject}")
        return readable

    def add(self, block: Block | None) -> None:
        if block is not None:
            self.content.append(block)


def covered(content: Sequence[Block], structured: Any = None) -> tuple[bytes, list[dict[str, Any]]]:
    """What a tool or prompt receipt digests: the canonical JSON of every block (and
    ``structuredContent``), and one summary per block (type, URI, bytes, sha256)."""
    dumped = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in content]
    summaries = []
    for block, raw in zip(content, dumped, strict=True):
        one = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        entry: dict[str, Any] = {"type": block.type, "bytes": len(one), "sha256": digest(one)}
        uri = getattr(block, "uri", None) or getattr(getattr(block, "resource", None), "uri", None)
        if uri is not None:
            entry["uri"] = uri
        summaries.append(entry)
    whole = {"content": dumped, "structuredContent": structured}
    return json.dumps(whole, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(), summaries


def served_blocks(
    content: list[Block], structured: Any, transforms: list[str]
) -> tuple[list[Block], Any, tuple[bytes, list[dict[str, Any]]]]:
    """``content`` and ``structured`` as they are served, and what :func:`covered` says of them.

    Any lone surrogate in them becomes U+FFFD (:mod:`~mcp_providers._serve.steps.surrogates`) and
    one line is added to ``transforms``; untouched blocks are served as they are.
    """
    try:
        return content, structured, covered(content, structured)
    except UnicodeEncodeError:  # only a lone surrogate makes the canonical JSON unencodable
        pass
    count = 0
    fixed: list[Block] = []
    for block in content:
        raw, n = replaced_json(block.model_dump(mode="json", by_alias=True, exclude_none=True))
        fixed.append(type(block).model_validate(raw) if n else block)
        count += n
    structured, n = replaced_json(structured)
    transforms.append(note(count + n))
    return fixed, structured, covered(fixed, structured)


def result_receipt(
    exchange: Exchange,
    origins: Mapping[str, tuple[str | None, str | None]],
    entry: Entry[Any, Any],
    covered_: tuple[bytes, list[dict[str, Any]]],
    transforms: list[str],
    *,
    side_effects: Effects = "none",
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The receipt of a tool or prompt result: ``covered_`` is what :func:`covered` returned for it,
    ``extra`` the method's own keys (the side-effect scope's records are added)."""
    distribution, version = origins.get(entry.plugin, (None, None))
    data, summaries = covered_
    return receipt(
        actor=exchange.actor,
        operation=exchange.method,
        principal=exchange.principal,
        provider=entry.provider.name,
        plugin=entry.plugin,
        distribution=distribution,
        version=version,
        data=data,
        mime_type="application/json",
        side_effects=side_effects,
        transforms=transforms,
        blocks=summaries,
        extra={**extra, **exchange.custody},
    )
