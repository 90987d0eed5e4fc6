"""Lone surrogates in provider text: served as U+FFFD, and the receipt says so (round 4 item 21).

A Python ``str`` may hold a surrogate code point (U+D800 to U+DFFF) that no UTF-8 text can
(RFC 3629 section 3; JSON text exchanged between systems is UTF-8, RFC 8259 section 8.1), e.g.
from ``bytes.decode(errors="surrogateescape")`` or ``os.fsdecode`` of a file name that is not UTF-8.
Encoding it raises ``UnicodeEncodeError``, so one such character in a read, a tool result, a prompt
or a completion value failed the whole request with -32603. Now each lone surrogate becomes U+FFFD
(the replacement character, as a decoder does with ``errors="replace"``) before the result is
digested, and :func:`note` is recorded among the receipt's ``transforms``. A high surrogate
followed by a low one is the pair's character (what UTF-16 would mean), not two replacements.

The happy path costs one ``str.encode`` that the receipt's digest needs anyway.
"""

from __future__ import annotations

import json
from typing import Any

REPLACEMENT = "\ufffd"


def note(count: int) -> str:
    """The receipt transform for ``count`` replaced surrogates."""
    return f"replaced {count} lone surrogate(s), which UTF-8 cannot carry, with U+FFFD"


def encodable(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (holds no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def replaced(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD (a valid pair joined), and how many were.

    >>> replaced("caf\\udce9 x")
    ('caf\\ufffd x', 1)
    """
    if encodable(text):
        return text, 0
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed, fixed.count(REPLACEMENT) - text.count(REPLACEMENT)


def replaced_json(value: Any) -> tuple[Any, int]:
    """A JSON-ready ``value`` (dicts, lists, strings, numbers) with every string, keys included,
    passed through :func:`replaced`; ``value`` itself when none needed it.

    Done on its JSON text, so nesting costs no Python recursion here (the ``json`` module's own
    limits apply, as when the value is sent).
    """
    text = json.dumps(value, ensure_ascii=False)
    fixed, count = replaced(text)
    return (json.loads(fixed), count) if count else (value, 0)
