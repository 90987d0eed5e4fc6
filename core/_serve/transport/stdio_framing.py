"""stdio framing: each line read from the client turned into JSON-RPC messages (:class:`Framer`: a
2025-03-26 batch split, a bad line answered with its error), and a batch's answers collected back
into one line (:class:`Session`)."""

from __future__ import annotations

import json
import logging
from typing import Any, Final

import mcp_types as types
import pydantic_core

from mcp_providers._serve.transport import batches
from mcp_providers._serve.transport.nesting import MAX_MEMBERS, MAX_NESTING, long_integer, too_deep, too_many

DEFAULT_MAX_LINE_BYTES: Final = 4 * 1024 * 1024
"""The longest JSON-RPC line accepted, in bytes (4 MiB); a longer line is discarded and answered
with -32600 (``id: null``), without ever being buffered whole."""

_BOM: Final = b"\xef\xbb\xbf"

log = logging.getLogger("mcp_providers.stdio")


RequestId = int | str


class Session:
    """What the transport learns from the exchange: the negotiated protocol version and the open batches.

    ``version`` is read from the answer to ``initialize`` as it is written; a batch holds the ids of
    its requests and the answers collected so far, written as one JSON array when the last arrives.
    """

    __slots__ = ("batches", "init_id", "version")

    def __init__(self) -> None:
        self.init_id: RequestId | None = None
        self.version: str | None = None
        self.batches: list[tuple[list[RequestId], list[dict[str, Any]]]] = []

    def expects(self, request_id: Any) -> bool:
        """Whether the answer to ``request_id`` is one this session must see before it is written."""
        if request_id is None:
            return False
        return request_id == self.init_id or any(request_id in ids for ids, _ in self.batches)

    def collect(self, answer: dict[str, Any]) -> bytes | None:
        """The line to write for an expected answer (a JSON-RPC response or error object): itself,
        a completed batch, or nothing yet."""
        request_id = answer.get("id")
        if request_id == self.init_id:  # answered either way: a later request may reuse the id
            if "result" in answer:
                self.version = str(answer["result"].get("protocolVersion") or "") or None
            self.init_id = None
        found, line = self._into_batch(request_id, answer)
        return line if found else json_line(answer)

    def settle(self, request_id: Any) -> bytes | None:
        """A request that will never be answered (the client cancelled it): the line of its batch
        if that completes the batch, else nothing."""
        if request_id == self.init_id:
            self.init_id = None
        return self._into_batch(request_id, None)[1]

    def _into_batch(self, request_id: Any, answer: dict[str, Any] | None) -> tuple[bool, bytes | None]:
        """Close ``request_id`` in its batch, with its answer (``None``: it has none):
        ``(whether it was in a batch, the batch's line once complete and not empty)``."""
        for batch in self.batches:
            ids, answers = batch
            if request_id in ids:
                ids.remove(request_id)
                if answer is not None:
                    answers.append(answer)
                if ids:
                    return True, None
                self.batches.remove(batch)
                return True, json_line(answers) if answers else None  # nothing at all to answer: nothing written
        return False, None


def json_line(payload: Any) -> bytes:
    # What the dispatcher writes a single answer with (a non-finite float as null, as the SDK's models do).
    return pydantic_core.to_json(payload, inf_nan_mode="null") + b"\n"


def _error(code: int, message: str, request_id: RequestId | None = None) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response object (``id`` null when no id could be read)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _unreadable(line: bytes) -> dict[str, Any] | None:
    """The error for a line that cannot be taken as JSON at all (encoding, BOM, nesting, members), else None."""
    if line.startswith(_BOM):
        return _error(
            types.PARSE_ERROR,
            "Parse error: the line starts with a byte-order mark (U+FEFF); send UTF-8 JSON without one",
        )
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error(
            types.PARSE_ERROR, f"Parse error: the line is not valid UTF-8 (byte {exc.start}); send UTF-8 encoded JSON"
        )
    if line.count(b"{") + line.count(b"[") > MAX_NESTING and (deep := too_deep(line)) is not None:
        return deep  # with the request's own id, so the client's call resolves
    return too_many(line) if line.count(b",") >= MAX_MEMBERS else None


class Framer:
    """One inbound line in; the JSON-RPC messages on it out, with the lines answering what was not one.

    A line that is not a JSON-RPC message gets its JSON-RPC error (-32700 does not parse, -32600 not
    a request, too deep, too long, or a batch the session's version does not allow); a 2025-03-26
    session's batch is split into its messages and registered with the session, whose answers are
    then written as one array. ``None`` stands for a line over the length limit (already discarded).
    """

    __slots__ = ("_limit", "_session")

    def __init__(self, session: Session, limit: int) -> None:
        self._session = session
        self._limit = limit

    def frame(self, line: bytes | None) -> tuple[list[types.JSONRPCMessage], list[bytes]]:
        """``(messages, refusals)``: the messages to dispatch and the error lines to write now.

        Never raises: a line whose reading fails (a bug here) is answered -32603 with ``id: null``
        and logged, and the lines after it are read as usual (raised, it would end the pipe's reader
        with them unanswered)."""
        try:
            return self._frame(line)
        except Exception:
            log.exception("reading a line of %d bytes failed", len(line or b""))
            return [], [json_line(_error(types.INTERNAL_ERROR, "Internal error: the line could not be read"))]

    def _frame(self, line: bytes | None) -> tuple[list[types.JSONRPCMessage], list[bytes]]:
        if line is None:
            message = f"Invalid request: a line over {self._limit} bytes was discarded; send smaller messages"
            return [], [json_line(_error(types.INVALID_REQUEST, message))]
        flat = line.count(b"{") + line.count(b"[") <= MAX_NESTING
        if line[:1] == b"{" and flat and (line.count(b",") < MAX_MEMBERS or too_many(line) is None):
            # The common case: one flat message within the members bound (commas in its strings
            # counted out only when there are many), parsed once. The parser refuses what is not
            # UTF-8 and no such line is too deep or too big, so nothing _unreadable looks for can pass.
            try:
                parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception:
                pass  # worked out below, with the error that says why
            else:
                if not isinstance(parsed, types.JSONRPCNotification):  # a bad id reads as a notification
                    return [self._accepted(parsed)], []
        if line.isspace():
            return [], []
        if (problem := _unreadable(line)) is not None:
            return [], [json_line(problem)]
        try:
            data = json.loads(line)
        except (ValueError, RecursionError) as exc:
            if (refused := long_integer(line, exc)) is not None:  # JSON, with the id the client waits on
                return [], [json_line(refused)]
            return [], [json_line(_error(types.PARSE_ERROR, f"Parse error: the line is not JSON ({exc!s:.200})"))]
        if isinstance(data, list):
            return self._batch(data)
        one = self._message(data, line)
        if isinstance(one, dict):
            return [], [json_line(one)]
        return [one], []

    def _message(self, data: Any, raw: bytes) -> types.JSONRPCMessage | dict[str, Any]:
        """One JSON value as a message, or the -32600 error answering it."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
        except Exception:
            return _error(
                types.INVALID_REQUEST,
                'Invalid request: not a JSON-RPC 2.0 message (expected an object with "jsonrpc": "2.0" and '
                "a method, or a response; check for unpaired surrogate escapes and the params' shape)",
                _request_id(data),
            )
        if isinstance(message, types.JSONRPCNotification) and isinstance(data, dict) and "id" in data:
            # The model reads an id that is not a string or an integer as a notification's extra field.
            return _error(types.INVALID_REQUEST, "Invalid request: a request id must be a string or an integer")
        return self._accepted(message)

    def _accepted(self, message: types.JSONRPCMessage) -> types.JSONRPCMessage:
        if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
            self._session.init_id = message.id
        return message

    def _batch(self, items: list[Any]) -> tuple[list[types.JSONRPCMessage], list[bytes]]:
        if (refused := batches.refusal(items, self._session.version)) is not None:
            return [], [json_line(_error(types.INVALID_REQUEST, refused))]
        messages: list[types.JSONRPCMessage] = []
        errors: list[dict[str, Any]] = []
        for item in items:
            one = self._message(item, json.dumps(item).encode())
            (errors if isinstance(one, dict) else messages).append(one)  # type: ignore[arg-type]
        ids = [m.id for m in messages if isinstance(m, types.JSONRPCRequest)]
        if ids:
            self._session.batches.append((ids, errors))
            return messages, []
        return messages, [json_line(errors)] if errors else []


def _request_id(data: Any) -> int | str | None:
    """The id of a JSON-RPC request the message model refused, if it has a usable one."""
    if not isinstance(data, dict) or "method" not in data:
        return None
    request_id = data.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return request_id
