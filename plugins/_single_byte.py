"""The single-byte charsets Python has, and undoing what reading UTF-8 in one of them makes (mojibake).

A service that reads the UTF-8 bytes of ``пароль`` in cp1251 shows ``РїР°СЂРѕР»СЊ``; in KOI8-R,
Latin-1, cp866 or mac_roman something else again. Rather than spell every held secret through every
charset, :func:`undone` turns a text's characters back into the bytes a charset gave them and reads
those bytes as UTF-8 (``РїР°СЂРѕР»СЊ`` through cp1251 reads ``пароль`` again), one view per charset
whose reading of a held secret's characters' first two bytes the text holds (:class:`Signs`).

The charsets (:func:`charsets`) are every codec of the standard library's ``encodings`` package
built on a 256-entry decoding table (``iso8859_*``, ``cp125x``, ``cp4xx``/``cp8xx``, ``koi8_*``,
``mac_*``, ``kz1048``, ``ptcp154``, ``hp_roman8``, ``tis_620``...) plus Latin-1, and whose bytes
below 0x80 read as ASCII (EBCDIC's do not: the text around a secret would not read either). Found
from the package rather than listed, so a codec Python adds is covered; charsets with the same
table are kept once. A byte a charset leaves undefined reads as its Latin-1 character (what browsers
and Windows make of it: cp1252's 0x81 as U+0081).
"""

from __future__ import annotations

import codecs
import encodings
import functools
import importlib
import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

_ASCII = bytes(range(128))
_FAMILIES = re.compile(r"iso8859_\d+|cp\d+|koi8_\w+|mac_\w+|kz1048|ptcp154|hp_roman8|tis_620|latin_1")


class Charset(NamedTuple):
    """One single-byte charset: ``table[b]`` is what byte ``b`` reads as (an undefined byte: ``chr(b)``)."""

    name: str
    table: str
    undefined: bytes
    """The bytes the charset leaves undefined (a strict decode fails on them)."""
    high: frozenset[str]
    """The characters bytes 0x80 to 0xFF read as: a text holding none of them was not read in it."""
    encoding: Any
    """``codecs.charmap_build(table)``: encodes a text back to the bytes it was read from."""


def _charset(name: str) -> Charset | None:
    """``name`` as a :class:`Charset`, or ``None`` when it is not a single-byte, ASCII-keeping one."""
    module = importlib.import_module(f"encodings.{name}")
    if name != "latin_1" and len(getattr(module, "decoding_table", "")) != 256:
        return None  # a multi-byte codec (cp932) or one not built on a table
    if _ASCII.decode(name, "replace") != _ASCII.decode("ascii"):
        return None  # EBCDIC (cp037, cp500...): not what a service echoing ASCII text reads in
    reads = [bytes([b]).decode(name, "ignore") for b in range(256)]
    table = "".join(read or chr(b) for b, read in enumerate(reads))
    undefined = bytes(b for b, read in enumerate(reads) if not read)
    return Charset(name, table, undefined, frozenset(table[128:]), codecs.charmap_build(table))


@functools.cache
def charsets() -> tuple[Charset, ...]:
    """Every single-byte charset Python has (see the module docstring), each table once; built on
    first use (about 60 codecs; some milliseconds, once per process)."""
    import pkgutil  # here, not at the top: the masking plugins import this module at start-up

    found: dict[str, Charset] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(encodings.__path__)):
        if _FAMILIES.fullmatch(module) and (charset := _charset(module)) is not None:
            found.setdefault(charset.table, charset)
    return tuple(found.values())


class Signs:
    """What each charset reads the first two UTF-8 bytes of each held non-ASCII character as (``п``,
    D0 BF, through cp1251: ``Рї``; through KOI8-R: ``п©``): a text holding none of a charset's pairs
    holds no reading of a held secret in it, so that charset is not tried. All charsets' pairs are
    found in one pass (an Aho-Corasick automaton). False when no value is non-ASCII."""

    __slots__ = ("_automaton", "_charsets")

    def __init__(self, values: Iterable[str] = ()) -> None:
        """:param values: the secrets held, as they may be revealed (as written, upper-, lower-cased)."""
        heads = {c.encode("utf-8", "surrogatepass")[:2] for value in values for c in value if c >= "\x80"}
        pairs: dict[str, list[Charset]] = {}
        for charset in charsets() if heads else ():
            for head in heads:
                pairs.setdefault(charset.table[head[0]] + charset.table[head[1]], []).append(charset)
        self._charsets = list(pairs.values())
        self._automaton: Any = None
        if pairs:
            from ahocorasick_rs import AhoCorasick, MatchKind  # as _masking's: loaded once a secret is held

            self._automaton = AhoCorasick(list(pairs), matchkind=MatchKind.Standard)

    def __bool__(self) -> bool:
        return self._automaton is not None

    def undone(self, text: str) -> Iterator[str]:
        """``text`` read back through each charset whose pairs it holds: its characters encoded in
        that charset (a character the charset has not as ``?``), the bytes read as UTF-8 (an invalid
        sequence as U+FFFD), in :func:`charsets`' order. Nothing for an ASCII text; each view once."""
        if self._automaton is None or text.isascii():
            return
        hits = {id(c): c for found, _, _ in self._automaton.find_matches_as_indexes(text, overlapping=True)
                for c in self._charsets[found]}  # fmt: skip
        seen = {text}
        for charset in charsets():
            if id(charset) in hits:
                view = codecs.charmap_encode(text, "replace", charset.encoding)[0].decode("utf-8", "replace")
                if view not in seen:
                    seen.add(view)
                    yield view


def read_as(raw: bytes, charset: Charset) -> str:
    """``raw`` read in ``charset``, an undefined byte as its Latin-1 character."""
    return "".join(charset.table[b] for b in raw)
