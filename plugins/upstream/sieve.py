"""An upstream's list pages taken item by item, between its transport and the SDK's client.

The SDK checks a list page as a whole: ``ClientSession.send_request`` validates the result against
the negotiated version's schema before any result type sees it, so one tool without
``inputSchema`` (one resource without ``uri``, one prompt argument of the wrong type ...) would fail
the whole upstream, and with it every ``tools/list`` the SDK sends on its own (``call_tool``
lists to learn output schemas; a 2026-07-28 ``HEADER_MISMATCH`` lists again). So the sieve sits in
the transport (:func:`sieved`, applied by :func:`~mcp_providers.plugins.upstream.connect.transport`):
it notes each ``resources/list``, ``resources/templates/list``, ``tools/list`` and ``prompts/list``
it sends, and in the answer keeps only the items that validate on their own against both models the
SDK applies (the negotiated version's item, then the version-free ``mcp_types`` one), each no larger
than :data:`MAX_ITEM_BYTES`. The SDK then handles the page as it
always does, for the items kept (its 2026-07-28 ``x-mcp-header`` filter and output-schema cache in
``list_tools`` included).

What was taken out travels in the page's ``_meta[LEFT_OUT_KEY]`` (set only here: an upstream's own
value under that key is dropped), a list of ``{"field": "tools", "index": 3, "name": "get", "why":
"inputSchema: Field required"}``; ``index`` and ``name`` are absent for the page's own fields: a
``tools`` that is not a list (no item of the page is served), a ``nextCursor`` that is not a string
(removed: the pages after it are not read). A tool the SDK's 2026-07-28 filter will drop (an
invalid ``x-mcp-header``) stays in the page and is noted, with ``"kept": true``, so ``check`` can
say why it is missing. A page that is not an object at all is no item: the request gets a parse
error (-32700) naming it, as a streamable HTTP JSON answer gets from the SDK, and that upstream's
listing fails.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Mapping
from functools import cache
from types import TracebackType
from typing import Any, Final, Self

import anyio
from mcp.shared.inbound import find_invalid_x_mcp_header
from mcp.shared.message import SessionMessage
from mcp_types import (
    PARSE_ERROR,
    PROTOCOL_VERSION_META_KEY,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from mcp_types import methods as wire
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from mcp_providers.plugins._masking import Secrets
from mcp_providers.plugins.upstream.answered import answer_problem, kind, recognised, said

__all__ = ["LEFT_OUT_KEY", "LIST_FIELDS", "MAX_ITEM_BYTES", "Sieve", "said", "sieved"]

LIST_FIELDS: Final[Mapping[str, str]] = {
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "tools/list": "tools",
    "prompts/list": "prompts",
}
"""List method -> the field of its page holding the items."""
LEFT_OUT_KEY: Final = "io.mcp-providers/left-out"
"""Where in a page's ``_meta`` the sieve says what it took out."""
MAX_ITEM_BYTES: Final = 1024 * 1024
"""Largest listed item taken (its JSON, in bytes). Not the upstream's ``max_bytes``, which bounds
answers to reads and calls: a server may keep those small and still list a long tool schema."""
_FALLBACK_VERSION = "2025-11-25"  # the SDK's own before a handshake says otherwise
_NAMED_BY = {"resources/list": "uri", "resources/templates/list": "uriTemplate"}


def _name(method: str, raw: object) -> str | None:
    """What an item is called in messages: its ``uri`` (``uriTemplate``), else its ``name``."""
    if not isinstance(raw, dict):
        return None
    for key in (_NAMED_BY.get(method, "name"), "name"):
        if isinstance(raw.get(key), str):
            return str(raw[key])
    return None


@cache
def _models(method: str, version: str) -> tuple[type[BaseModel], ...]:
    """The item models the SDK applies to ``method``'s page at ``version``: the version's
    (surface) item, then the version-free one it parses into."""
    field = LIST_FIELDS[method]
    found: list[type[BaseModel]] = []
    for result in (wire.SERVER_RESULTS.get((method, version)), wire.MONOLITH_RESULTS[method]):
        if not (isinstance(result, type) and issubclass(result, BaseModel)):
            continue
        for name, info in result.model_fields.items():
            if (info.alias or name) == field:
                [item] = typing.get_args(info.annotation)
                found.append(item)
    return tuple(found)


class Sieve:
    """The list requests one connection sent and not yet answered, and how to take their pages
    apart; :meth:`sent` and :meth:`received` see every message (see the module docstring).

    :param limit: the largest item taken, in bytes of its JSON (default :data:`MAX_ITEM_BYTES`).
    """

    def __init__(
        self, limit: int | None = None, secrets: Secrets | None = None, on_end: Callable[[], None] | None = None
    ) -> None:
        self.limit = MAX_ITEM_BYTES if limit is None else limit
        self.on_end = on_end
        """Called when the transport's read stream ends or breaks: the upstream is gone (a stdio
        process that exited while idle is noticed then, not by the next request)."""
        self.secrets = Secrets() if secrets is None else secrets
        """Masked in every message received (:meth:`masked`): what this server holds for the upstream."""
        self.version: str | None = None
        """The protocol version the upstream's ``initialize`` answer named (2025-era)."""
        self._asked: dict[int | str, tuple[str, str | None]] = {}
        self._methods: dict[int | str, str] = {}
        """Every request sent and not yet answered, by id (for messages): at most 1,024, oldest dropped."""
        self.refused: dict[int | str, ErrorData] = {}
        """The error each request gets instead of the transport's own, by id, taken when it comes (an
        HTTP upstream's answer over the limit: :class:`~mcp_providers.plugins.upstream.bounded.Bounds`)."""

    def sent(self, item: SessionMessage) -> None:
        """Note a list request (with the version its ``_meta`` names, 2026-07-28) or ``initialize``."""
        message = item.message
        if isinstance(message, JSONRPCRequest):
            self._methods[message.id] = message.method
            if len(self._methods) > 1024:  # answers that never came (a request given up): forgotten
                del self._methods[next(iter(self._methods))]
        if isinstance(message, JSONRPCRequest) and (message.method in LIST_FIELDS or message.method == "initialize"):
            meta = (message.params or {}).get("_meta")
            stamped = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
            self._asked[message.id] = (message.method, stamped if isinstance(stamped, str) else None)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            self._asked.pop(cancelled, None)  # type: ignore[arg-type]
            self._methods.pop(cancelled, None)  # type: ignore[arg-type]

    def pending(self) -> Mapping[int | str, str]:
        """The requests sent and not answered nor cancelled, id -> method (a copy)."""
        return dict(self._methods)

    def received(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        """``item``, or its page with the items that do not validate taken out (noted in ``_meta``)."""
        if isinstance(item, ValidationError):
            return self._unparsed(item)
        if not isinstance(item, SessionMessage):
            return item
        if self.secrets:
            item = self.masked(item)
        message = item.message
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self._methods.pop(message.id, None)
        if isinstance(message, JSONRPCError) and message.id is not None and message.id in self.refused:
            error = self.refused.pop(message.id)
            item = SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=error), metadata=item.metadata)
        if not isinstance(message, JSONRPCResponse | JSONRPCError) or message.id not in self._asked:
            return item
        method, stamped = self._asked.pop(message.id)
        if isinstance(message, JSONRPCError):
            return item
        if method == "initialize":
            version = message.result.get("protocolVersion")
            self.version = version if isinstance(version, str) else None
            return item
        page = self.page(method, stamped or self.version or _FALLBACK_VERSION, message.result)
        return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=message.id, result=page), metadata=item.metadata)

    def masked(self, item: SessionMessage) -> SessionMessage:
        """``item`` with every secret held for the upstream masked in each of its strings: a
        remote server may quote what it was sent (an ``env`` value in a listing's description, in
        content, in its serverInfo), and nothing it says may carry one on (to a client, a receipt,
        the audit log, ``check``). One JSON dump per message while secrets are held; none else."""
        text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        if not self.secrets.found_in(text):
            return item
        data = self.secrets.masked_data(json.loads(text))
        return SessionMessage(type(item.message).model_validate(data, by_name=False), metadata=item.metadata)

    def _unparsed(self, exc: ValidationError) -> SessionMessage | Exception:
        """A stdio line or SSE event the SDK could not parse: when it answers a request of ours (it
        has a usable id and a ``result`` that is not an object, or an ``error`` that is not one),
        that request gets a parse error naming what was wrong (else it would wait for its
        timeout); anything else is handed on as it came."""
        for found in exc.errors():
            raw = found.get("input")
            if not isinstance(raw, dict) or not _answers_badly(raw) or not recognised(raw, self._methods):
                continue  # a JSON log line ({"level": ..., "id": 99}) is no answer: handed on as it came
            ident = raw.get("id")
            if isinstance(ident, int | str) and not isinstance(ident, bool):
                self._asked.pop(ident, None)
                method = self._methods.pop(ident, "request")
                problem = answer_problem(raw, paged=method in LIST_FIELDS)
                error = ErrorData(code=PARSE_ERROR, message=f"the {method} answer {problem}")
                return SessionMessage(JSONRPCError(jsonrpc="2.0", id=ident, error=error))
        return exc

    def page(self, method: str, version: str, result: Mapping[str, Any]) -> dict[str, Any]:
        """``result`` (one page of ``method``) with what does not validate taken out and noted."""
        field = LIST_FIELDS[method]
        page, notes = dict(result), list[dict[str, Any]]()
        items = page.get(field)
        if not isinstance(items, list):
            notes.append({"field": field, "why": f"is {kind(items)}, not a list; no item of this page is served"})
            page[field] = []
        else:
            page[field] = []
            for index, raw in enumerate(items):
                why, kept = self._problem(method, version, raw)
                if why is not None:
                    named = _name(method, raw)
                    note: dict[str, Any] = {"field": field, "index": index, "why": why}
                    note.update({"name": named[:200]} if named is not None else {})
                    notes.append({**note, "kept": True} if kept else note)
                if why is None or kept:
                    page[field].append(raw)
        cursor = page.get("nextCursor")
        if cursor is not None and not isinstance(cursor, str):
            notes.append({"field": "nextCursor", "why": f"is {kind(cursor)}, not a string"})
            del page["nextCursor"]
        meta = page.get("_meta")
        if isinstance(meta, dict) and LEFT_OUT_KEY in meta:  # only the sieve speaks under its key
            page["_meta"] = meta = {k: v for k, v in meta.items() if k != LEFT_OUT_KEY}
        if notes and (meta is None or isinstance(meta, dict)):  # a _meta of the wrong type fails the page
            page["_meta"] = {**(meta or {}), LEFT_OUT_KEY: notes}
        return page

    def _problem(self, method: str, version: str, raw: object) -> tuple[str | None, bool]:
        """Why ``raw`` is taken out (``None``: it is not), and whether it stays for the SDK to drop."""
        if not isinstance(raw, dict):
            return f"is {kind(raw)}, not an object", False
        try:
            size = len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode())
        except (ValueError, TypeError, RecursionError):
            return "cannot be measured (nested too deep)", False
        if size > self.limit:
            return f"is {size} bytes, over the {self.limit} taken for one listed item", False
        for model in _models(method, version if (method, version) in wire.SERVER_RESULTS else _FALLBACK_VERSION):
            try:
                model.model_validate(raw, by_name=False)
            except ValidationError as exc:
                return f"does not parse: {said(exc)}", False
            except Exception as exc:  # a validator of the SDK's that raised otherwise: that item's fault
                return f"does not parse: {type(exc).__name__}: {str(exc)[:200]}", False
        if method == "tools/list" and version in MODERN_PROTOCOL_VERSIONS:
            invalid = find_invalid_x_mcp_header(raw.get("inputSchema"))
            if invalid is not None:  # the SDK drops it (2026-07-28: clients MUST); said here too
                return f"has an invalid x-mcp-header ({invalid[:200]}), so the client drops it", True
        return None, False


class _Wrapped:
    """A transport stream with the sieve beside it: closing and entering go to the stream itself."""

    def __init__(self, inner: Any, sieve: Sieve) -> None:  # the SDK's Read/WriteStream (a private module's)
        self._inner, self._sieve = inner, sieve

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        closed: bool | None = await self._inner.__aexit__(exc_type, exc, tb)
        return closed


_ENDED = (anyio.EndOfStream, StopAsyncIteration, anyio.ClosedResourceError, anyio.BrokenResourceError)
"""What a read stream raises once its transport is gone."""


class _Read(_Wrapped):
    """The transport's read stream, each item through :meth:`Sieve.received`."""

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item (the SDK reads it where a transport has one)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return self._sieve.received(await self._inner.receive())
        except _ENDED:
            self._ended()
            raise

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return self._sieve.received(await self._inner.__anext__())
        except _ENDED:
            self._ended()
            raise

    def _ended(self) -> None:
        if self._sieve.on_end is not None:
            self._sieve.on_end()


class _Write(_Wrapped):
    """The transport's write stream, each item noted by :meth:`Sieve.sent` first."""

    async def send(self, item: SessionMessage, /) -> None:
        self._sieve.sent(item)
        await self._inner.send(item)


def _answers_badly(raw: Mapping[str, Any]) -> bool:
    """Whether ``raw`` (a message the SDK could not parse) is an answer whose result or error is
    not an object, or that has neither: any other fault of an answer is left to the SDK."""
    if "result" in raw:
        return not isinstance(raw["result"], dict)
    if "error" in raw:
        return not isinstance(raw["error"], dict)
    return "method" not in raw and "id" in raw  # neither: an answer with nothing in it


def sieved(streams: tuple[Any, Any], sieve: Sieve) -> tuple[Any, Any]:
    """A transport's ``(read, write)`` streams with ``sieve`` between them and the SDK's session."""
    read, write = streams
    return _Read(read, sieve), _Write(write, sieve)
