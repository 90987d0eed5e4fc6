"""How deep and how big a JSON-RPC message may be, measured before it is parsed; one rule for stdio
and HTTP. Also the one reading of a request's id from bytes that are not parsed (:func:`request_id_of`).

:data:`MAX_NESTING` bounds the arrays and objects enclosing the deepest value of a whole message
(the envelope counts: a ``tools/call`` spends 2 levels on the message and ``params``, leaving
126 to ``arguments``, its own object included). A deeper message is answered -32600 with
the request's own id (:func:`request_id_of`), so the client's call resolves.

Why 128: the SDK parses every message with pydantic-core, whose JSON parser refuses more than 200
levels (a message past that cannot be answered by the SDK at all), and 128 is serde_json's default
limit, so MCP servers in Rust refuse deeper arguments anyway. Real tool arguments (filters,
JSON Schema documents, small syntax trees) stay far below it; 64, the limit this replaced, refused
arguments 62 levels deep that every client can send.

:data:`MAX_MEMBERS` bounds the array items and object members of a whole message (:func:`too_many`,
-32600 with the id), and :func:`long_integer` answers a message that is JSON but holds an integer
Python will not convert (-32602 with the id, where ``json`` says only "not JSON"): tester 27 F9, F13.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Final

MAX_NESTING: Final = 128
"""The deepest nesting of arrays and objects accepted in one message (envelope included)."""

MAX_MEMBERS: Final = 20_000
"""The most array items and object members one message may hold, counted as one more than the
commas between them outside strings (a message spends 4 on its envelope, a ``tools/call`` 1 more on
``params``).

Why 20,000: each value costs the server while it is parsed, validated and answered (200,000
argument keys held the event loop 3 s, tester 27 F9), so the bound caps one request at about a
tenth of that; real messages stay far below it (a table of 1,000 rows of 20 fields, or a dozen
embedding vectors of 1,536 numbers, fit)."""

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')  # run once escapes are gone: one scan per string, never a rescan
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+|"', re.DOTALL)


def nesting(line: bytes) -> int:
    """How deep arrays and objects nest in ``line`` (string contents ignored); cheap for flat input.

    Counting stops once past :data:`MAX_NESTING` (the result is then ``MAX_NESTING + 1``).
    """
    # Escapes first, then strings, then all but brackets: each a single linear pass. (One pattern
    # matching strings with their escapes rescans to the end from every quote of an unterminated
    # run of escaped quotes: quadratic, hours for one 4 MiB line.)
    skeleton = _STRING.sub(b"", _ESCAPE.sub(b"", line)).translate(None, _NOT_BRACKETS)
    if len(skeleton) <= MAX_NESTING:
        return len(skeleton) // 2 + 1
    depth = deepest = 0
    for byte in skeleton:
        depth += 1 if byte in b"[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > MAX_NESTING:
                break
    return deepest


def request_id_of(line: bytes) -> str | int | None:
    """The ``id`` member of the top-level JSON object in ``line``, found without parsing the rest
    (a shallow scan that skips nested values); ``None`` when there is none, or it is not a string
    or an integer (Python can hold: at most ``sys.get_int_max_str_digits()`` digits), or the line
    is not an object. Linear in the length of ``line``; never raises."""
    depth, key, expect_value = 0, None, False
    for match in _TOKEN.finditer(line):
        token = match[0]
        if token in (b"{", b"["):
            if depth == 1 and expect_value and key == "id":
                return None  # an id that is an object or array
            depth, expect_value = depth + 1, False
        elif token in (b"}", b"]"):
            depth -= 1
            if depth <= 0:
                return None
        elif depth == 0 or token == b'"':
            return None  # not an object, or an unterminated string: nothing further is readable
        elif depth == 1 and token == b":":
            expect_value = True
        elif depth == 1 and token == b",":
            key, expect_value = None, False
        elif depth == 1 and expect_value:
            if key == "id":
                return _scalar_id(token)
            expect_value = False
        elif depth == 1 and token[:1] == b'"':
            key = _string(token)
    return None


def _string(token: bytes) -> str | None:
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _scalar_id(token: bytes) -> str | int | None:
    if token[:1] == b'"':
        return _string(token)
    if re.fullmatch(rb"-?(0|[1-9][0-9]*)", token):
        try:
            return int(token)
        except ValueError:  # past int_max_str_digits (4,300): no id that can be answered
            return None
    return None


def too_deep(line: bytes) -> dict[str, Any] | None:
    """The -32600 error answering ``line`` when it nests deeper than :data:`MAX_NESTING`, with the
    request's own id when one can be read; ``None`` when it is within the limit."""
    if nesting(line) <= MAX_NESTING:
        return None
    message = (
        f"Invalid request: arrays and objects nested deeper than {MAX_NESTING} levels (the whole message "
        "counts: a tools/call's arguments may nest 126 levels, their own object included); send a flatter message"
    )
    return {"jsonrpc": "2.0", "id": request_id_of(line), "error": {"code": -32600, "message": message}}


def long_integer(line: bytes, failure: BaseException) -> dict[str, Any] | None:
    """The -32602 error answering ``line`` when ``json.loads`` refused it (``failure``) only for
    holding an integer of more digits than Python converts (``sys.get_int_max_str_digits()``, 4,300
    unless changed), with the request's own id when it can be read; ``None`` otherwise.

    RFC 8259 sets no limit on a number's digits, so such a line is JSON: answering -32700 with
    ``id: null`` would leave the client's call unresolved. Only a plain ``ValueError`` (not a
    syntax or encoding error) can be that; the line is then parsed again with every integer
    counted rather than converted, which also tells a long integer from any other reason.
    """
    limit = sys.get_int_max_str_digits()
    if not limit or type(failure) is not ValueError:
        return None
    longest = 0

    def counted(text: str) -> int:
        nonlocal longest
        longest = max(longest, len(text) - text.startswith("-"))
        return 0

    try:
        json.loads(line, parse_int=counted)
    except (ValueError, RecursionError):
        return None
    if longest <= limit:
        return None
    message = (
        f"Invalid params: an integer of {longest} digits; this server reads integers of at most {limit} "
        "digits (Python's int_max_str_digits): send a longer number as a string"
    )
    return _refusal(line, -32602, message)


def too_many(line: bytes) -> dict[str, Any] | None:
    """The -32600 error answering ``line`` when it holds more than :data:`MAX_MEMBERS` array items
    and object members, with the request's own id when one can be read; ``None`` otherwise.
    Linear in the length of ``line``, without parsing it; a caller may skip it when
    ``line.count(b",") < MAX_MEMBERS`` (commas in strings only make that count larger)."""
    # Escapes gone, the strings are every other run between quotes: half the work of _STRING.sub.
    values = b"".join(_ESCAPE.sub(b"", line).split(b'"')[::2]).count(b",") + 1
    if values <= MAX_MEMBERS:
        return None
    message = (
        f"Invalid request: more than {MAX_MEMBERS} array items and object members in one message "
        f"({values} or more); send fewer values, or split the work over several requests"
    )
    return _refusal(line, -32600, message)


def _refusal(line: bytes, code: int, message: str) -> dict[str, Any]:
    """The JSON-RPC error ``code`` answering ``line``, with the request's own id when one can be read."""
    return dict(jsonrpc="2.0", id=request_id_of(line), error={"code": code, "message": message})
