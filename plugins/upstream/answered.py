"""Which request an upstream's line answered when it cannot be delivered, and what was wrong with it.

A line from an upstream's stdout is not delivered when it is over the line limit (:mod:`.stdio`
discards it as it is read, keeping only its first and last bytes), when it does not parse as a
JSON-RPC message (not UTF-8, not JSON, a raw control character or a lone surrogate in a string,
nested too deep, a number out of range, a batch, an object that is not JSON-RPC), or when it
is an answer naming an id no request of ours had. Each would leave the request it answered waiting
for ``read_timeout``; :class:`Undelivered` fails that request at once instead, by one rule:

1. the line's first members (:func:`first_members`): a message of the upstream's own (``method``
   among them) is dropped, logged; an answer naming the id of a request pending fails that
   request; one naming an id sent earlier and no longer pending (answered, given up) is dropped;
2. else an answer (``result`` or ``error`` first, as the TypeScript SDK writes), or a batch (an
   array beginning ``[{"``), fails the only request pending, when one is;
3. else the id among the line's last members (:func:`last_id`), when that request is pending;
4. else every request pending fails ("it may have answered this one").

A line that cannot be JSON-RPC (:func:`stray`: it does not begin ``{"``, or names no ``jsonrpc``
or ``id`` member; a banner, a debug ``print`` of a dict, a bare JSON value) answers nothing, JSON or
not: it is handed on as the SDK hands it (the link warns once) and fails no request. So does a line
that is not recognisably a message (:func:`recognised`: a JSON log line, ``{"level": "info",
"id": "job-42"}``, or one quoting a request in a nested member): only a top-level ``jsonrpc``
member, or a top-level ``id`` naming a pending request beside a ``result`` or ``error``, makes a
line one. Errors say
what was wrong, never the line: it may hold a secret the upstream echoed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = [
    "Fault",
    "Undelivered",
    "answer_problem",
    "first_members",
    "kind",
    "last_id",
    "opens_message",
    "recognised",
    "recognised_value",
    "request_id",
    "said",
    "same",
    "stray",
]

log = logging.getLogger(__name__)

Fault = Callable[[str, bool], types.ErrorData]
"""``fault(method, named)``: the error a request (of ``method``) gets for the line; ``named``: the
line named the request's id (else it may have answered it, or another)."""

# the id among an object's last members: `,"id":7}` or `,"id":7,"jsonrpc":"2.0"}` at the very end
# (a nested object's last id would be followed by two closing braces)
_SCALAR = rb'(?:-?\d{1,30}|"[^"\\]{0,200}"|true|false|null)'
_TAIL_ID = re.compile(
    rb'[{,]\s*"id"\s*:\s*(-?\d{1,30}|"[^"\\]{0,200}")(?:\s*,\s*"\w{1,40}"\s*:\s*' + _SCALAR + rb")*\s*\}\s*$"
)


# what a JSON-RPC message (or a batch of them) begins with, and the member names one has
_OPENS = re.compile(rb'\s*(?:\[\s*)?\{\s*"')
_NAMES = re.compile(rb'"(?:jsonrpc|id)"\s*:')


def opens_message(head: bytes | bytearray) -> bool:
    """Whether ``head`` begins as a JSON-RPC message can: ``{"`` (``[{"``: a batch), after whitespace."""
    return _OPENS.match(head) is not None


def stray(*parts: bytes | bytearray) -> bool:
    """Whether a line (whole, or its kept head and tail as ``parts``) cannot be JSON-RPC: it does
    not begin ``{"`` (:func:`opens_message`), or no ``"jsonrpc"``/``"id"`` member name is in it.
    Such a line (a debug ``print`` of a dict, a bare JSON value) is stray output: it answers nothing."""
    return not opens_message(parts[0]) or not any(_NAMES.search(part) for part in parts)


# a "jsonrpc" member among an object's last members (as the TypeScript SDK writes it: after result)
_TAIL_JSONRPC = re.compile(
    rb'[{,]\s*"jsonrpc"\s*:\s*"[^"\\]{0,20}"(?:\s*,\s*"\w{1,40}"\s*:\s*' + _SCALAR + rb")*\s*\}\s*$"
)


def recognised(members: Mapping[str, Any], pending: Iterable[int | str], tail: bytes = b"") -> bool:
    """Whether a JSON object is recognisably a JSON-RPC message: a ``jsonrpc`` member at its top
    level, or (none) an ``id`` naming one of ``pending`` beside a ``result`` or ``error``.

    ``members``: its top-level members (all when it parsed; its first ones, :func:`first_members`,
    when it did not); ``tail``: a line that did not parse, its last bytes (its last members may
    name ``jsonrpc`` or the ``id``). A nested ``id`` or ``jsonrpc`` (a log line quoting a request)
    counts for nothing: such a line is stray output."""
    if "jsonrpc" in members or _TAIL_JSONRPC.search(tail):
        return True
    if "result" not in members and "error" not in members:
        return False
    waiting = {same(i) for i in pending}
    return any(i is not None and same(i) in waiting for i in (request_id(members.get("id")), last_id(tail)))


def recognised_value(value: object, pending: Iterable[int | str]) -> bool:
    """Whether a parsed JSON value is (an object) or holds (a batch, a list) a message
    :func:`recognised` as one; a scalar never is."""
    found = value if isinstance(value, list) else [value]
    return any(recognised(item, pending) for item in found if isinstance(item, dict))


def kind(value: object) -> str:
    """How a JSON value reads in messages: ``a list``, ``null``, ``an int``."""
    if value is None:
        return "null"
    name = {"str": "string", "dict": "object", "bool": "boolean", "float": "number"}.get(
        type(value).__name__, type(value).__name__
    )
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def said(exc: ValidationError, whole: str = "(item)") -> str:
    """A validation error as ``inputSchema: Field required; ...`` (no input values repeated, no
    links), at most 300 characters; ``whole`` names the value itself when the error is at its root."""
    parts = [f"{'.'.join(map(str, e['loc'])) or whole}: {e['msg']}" for e in exc.errors(include_input=False)]
    more = f" (and {len(parts) - 3} more)" if len(parts) > 3 else ""
    return ("; ".join(parts[:3]) + more)[:300]


def answer_problem(raw: Mapping[str, Any], paged: bool = False) -> str | None:
    """What is wrong with ``raw``, an answer (no ``method``) the SDK could not parse, as ``is not a
    JSON-RPC answer: its result is an int, not an object``; ``None`` when its ``jsonrpc``, ``id``,
    ``result`` and ``error`` are each of the right type. ``paged``: it answered a list request."""
    if raw.get("jsonrpc") != "2.0":
        held = "it has no jsonrpc member" if "jsonrpc" not in raw else "its jsonrpc member is not"
        return f'is not a JSON-RPC message: {held} "2.0"'
    if "id" in raw and request_id(raw["id"]) is None and raw["id"] is not None:
        return f"is not a JSON-RPC answer: its id is {kind(raw['id'])}, not a string or an integer"
    part = "result" if "result" in raw else "error" if "error" in raw else None
    if part is None:
        return "is not a JSON-RPC answer: it has neither a result nor an error"
    if isinstance(raw[part], dict):
        return None
    if part == "result" and paged:
        return f"is not a page: its result is {kind(raw['result'])}, not an object"
    return f"is not a JSON-RPC answer: its {part} is {kind(raw[part])}, not an object"


def _skip_nested(text: str, i: int) -> int | None:
    """Where the object or array starting at ``text[i]`` ends (``None``: not within ``text``)."""
    depth, in_string, escaped = 0, False, False
    for j in range(i, len(text)):
        ch = text[j]
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return j + 1
    return None


def first_members(head: bytes) -> dict[str, Any] | None:
    """The members of the JSON object ``head`` begins, as far as ``head`` shows them whole (an
    object or array value as ``...``); ``None`` when ``head`` begins no object."""
    text, decoder, found = head.decode("utf-8", "replace"), json.JSONDecoder(), dict[str, Any]()
    i = len(text) - len(text.lstrip())
    if not text.startswith("{", i):
        return None
    i += 1
    try:
        while True:
            i = len(text) - len(text[i:].lstrip(" \t\r\n,"))
            if text.startswith("}", i):
                return found
            key, i = decoder.raw_decode(text, i)
            if not isinstance(key, str):
                return found
            i = len(text) - len(text[i:].lstrip(" \t\r\n:"))
            value: Any = ...
            after = _skip_nested(text, i) if text.startswith(("{", "["), i) else _scalar_end(decoder, text, i)
            if after is None or after >= len(text):  # the value is cut by the head's end: its key is known
                found.setdefault(key, ...)
                return found
            if not text.startswith(("{", "["), i):
                value = decoder.raw_decode(text, i)[0]
            found[key], i = value, after
    except ValueError:  # a key cut by the head's end, or no JSON
        return found


def _scalar_end(decoder: json.JSONDecoder, text: str, i: int) -> int | None:
    try:
        return decoder.raw_decode(text, i)[1]
    except ValueError:
        return None


def request_id(value: object) -> int | str | None:
    """``value`` when it can be a request's id (a string or an integer), else ``None``."""
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def last_id(tail: bytes) -> int | str | None:
    """The id among the last members of the object ``tail`` ends, if it is one of them."""
    found = _TAIL_ID.search(tail)
    if found is None:
        return None
    with contextlib.suppress(ValueError):
        return request_id(json.loads(found.group(1)))
    return None


def same(ident: int | str) -> int | str:
    """``ident`` as the SDK correlates it: ``"7"`` is ``7``."""
    if isinstance(ident, str):
        with contextlib.suppress(ValueError):
            return int(ident)
    return ident


class Undelivered:
    """Which pending requests a line that cannot be delivered fails (the module docstring's rule).

    :param who: the upstream as messages name it.
    :param pending: the requests sent and not answered, id -> method (read at each line).
    :param sent: ids of requests sent lately (answered or not): an answer naming one that is no
        longer pending came late, and answers nothing pending.
    :param masked: applied to what a log line quotes of the line (the secrets held for the upstream).
    """

    def __init__(
        self,
        who: str,
        pending: Callable[[], Mapping[int | str, str]],
        sent: Container[int | str],
        masked: Callable[[str], str] = str,
    ) -> None:
        self.who, self.pending, self.sent, self.masked = who, pending, sent, masked

    def failed(self, ident: int | str, fault: Fault, named: bool = True) -> SessionMessage:
        """The error answer ``ident`` gets."""
        method = self.pending().get(ident, "request")
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=ident, error=fault(method, named)))

    def first(self, members: Mapping[str, Any], fault: Fault, what: str) -> list[SessionMessage] | None:
        """Steps 1 and 2 by the line's first ``members``; ``None``: they do not settle it.
        ``what`` says what was wrong (``that is not JSON``, ``over 10 bytes``) for the log when
        the line is dropped."""
        if "method" in members:
            method = members["method"] if isinstance(members["method"], str) else "?"
            log.warning("%s sent a message (%s) %s; dropped", self.who, self.masked(method)[:100], what)
            return []
        answer, ident = "result" in members or "error" in members, request_id(members.get("id"))
        pending = {same(i): i for i in self.pending()}
        if ident is not None and same(ident) in pending:
            return [self.failed(pending[same(ident)], fault)]
        if ident is not None and same(ident) in self.sent:
            log.warning("%s sent an answer to a request no longer pending %s; dropped", self.who, what)
            return []
        if answer and len(pending) == 1:
            return [self.failed(next(iter(pending.values())), fault, named=False)]
        return None

    def last(self, ident: int | str | None, fault: Fault) -> list[SessionMessage]:
        """Steps 3 and 4, by the id among the line's last members (``None``: none)."""
        pending = {same(i): i for i in self.pending()}
        if ident is not None and same(ident) in pending:
            return [self.failed(pending[same(ident)], fault)]
        if ident is not None and same(ident) in self.sent:
            return []
        return [self.failed(i, fault, named=False) for i in pending.values()]

    def anonymous(self, fault: Fault) -> list[SessionMessage]:
        """Steps 2 and 4 for a line that names no request: the only one pending, else every one."""
        return self.last(None, fault)
