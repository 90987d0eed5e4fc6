"""What a lenient service may read a policy target as, for the policy plugin's deny rules.

A deny rule matches a target in each of its *readings* (:class:`Readings`): as given; its path as
servlet containers, Windows, IIS and file systems read it (:func:`path_reading`); its query as a
lenient service reads each parameter (decoded, ``+`` a space, trimmed); all of them folded for case
and Unicode compatibility (:func:`folded`). A deny's pattern is tried as given and, when it spells
something in escapes, as what they spell (:func:`pattern_readings`), and a pattern with a query on
the target's parameters too, in any order (:func:`query_matches`), a value that may be a list also
as its items (:func:`list_items`), and each field of the path too (:func:`path_lists`).
"""

import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from functools import lru_cache
from math import prod
from unicodedata import combining, normalize
from urllib.parse import unquote, unquote_plus


class Readings:
    """The names a service may read ``target`` as, for deny rules (computed once per decision).

    ``plain``: ``target`` as given, and its *path reading*: after ``://``, the query and fragment
    dropped, escapes decoded (again while any is left, up to 4 times), ``\\`` read as ``/``, each
    segment's ``;`` parameters and trailing dots and spaces dropped (servlet containers, Windows and
    IIS do), and empty segments removed, a trailing one too (file systems do); and when the target
    has a query, both with the query in its *query reading* (:func:`_item_reading`: each name and
    value decoded, ``+`` as a space, surrounding spaces and trailing dots trimmed), each such
    parameter also as its list items (:func:`list_items`: ``ids=4,5`` is ``ids=4`` and ``ids=5`` too).
    ``folded``: all of them, case-folded, compatibility forms decomposed, combining marks and
    invisible characters dropped (:func:`folded`; for services that compare case-insensitively:
    IIS, Windows and macOS file systems, Java's and .NET's case-insensitive compares, SQL
    collations).
    """

    __slots__ = ("_folded", "_plain", "_query", "_read", "_wide", "target")

    def __init__(self, target: str) -> None:
        self.target = target
        self._plain: tuple[str, ...] | None = None
        self._folded: tuple[str, ...] | None = None
        self._query: dict[bool, _Query | None] = {}
        self._read: tuple[str, ...] = ()
        """The query's items in their query reading (made with :attr:`plain`), not folded."""
        self._wide: dict[bool, tuple[str, ...]] = {}

    @property
    def plain(self) -> tuple[str, ...]:
        if self._plain is None:
            path = path_reading(self.target)
            split = _split_query(self.target)
            base = split[0] if split else self.target.split("#", 1)[0]
            sources = [path, _decoded(base)] if _MAY_LIST.search(base) else []
            if split is None:
                readings = [self.target, path]
            else:
                self._read = tuple(map(_item_reading, _items(split[1])))
                read = "&".join(self._read)
                readings = [self.target, path, f"{split[0]}?{read}", f"{path}?{read}"]
                sources = [f"{s}?{read}" for s in sources]
            self._wide[False] = self._listed(readings, sources)
            self._plain = tuple(dict.fromkeys(readings))
        return self._plain

    @property
    def folded(self) -> tuple[str, ...]:
        if self._folded is None:
            readings = list({folded(r): None for r in self.plain})
            # Split once folded too: a full-width comma is a comma to a lenient service.
            self._wide[True] = self._listed(readings, [r for r in readings if _LIST.search(r.split("?", 1)[0])])
            self._folded = tuple(dict.fromkeys(readings))
        return self._folded

    def wide(self, fold: bool) -> tuple[str, ...]:
        """Globs of the readings whose path lists have more combinations than :data:`MAX_LIST_READINGS`,
        each list field a ``*``; a deny that may meet one matches (``()`` when every combination is read)."""
        _ = self.folded if fold else self.plain
        return self._wide[fold]

    @staticmethod
    def _listed(readings: list[str], sources: list[str]) -> tuple[str, ...]:
        """Add to ``readings`` each of ``sources`` with its path lists read as their items
        (:func:`path_lists`); the globs of those with too many combinations."""
        wide = []
        for source in sources:
            combinations, glob = path_lists(source)
            readings.extend(combinations)
            if glob is not None:
                wide.append(glob)
        return tuple(wide)

    def query(self, fold: bool) -> "_Query | None":
        """The target's query as parameters (``None`` without one): the part before ``?`` as given
        and in its path reading, and each ``name=value`` item as given and in its query reading,
        folded when ``fold``."""
        if fold not in self._query:
            split = _split_query(self.target)
            if split is None:
                self._query[fold] = None
            else:
                f = folded if fold else str
                path = self.plain[1]  # the path reading drops the query: the same for the part before it
                listed = (r.split("?", 1)[0] for r in (self.folded if fold else self.plain)[2:])
                bases = tuple(dict.fromkeys((f(split[0]), f(path), *listed)))
                read = [f(r).rstrip(_TRIMMED) for r in self._read]
                items = [*map(f, _items(split[1])), *read]
                # Split once folded (a full-width comma is a comma to a lenient service too); one
                # search over the whole query spares the common query with no list in it.
                if _LIST.search("&".join(read)):
                    items += [i for r in read for i in list_items(r)]
                self._query[fold] = (bases, frozenset(items))
        return self._query[fold]


_Query = tuple[tuple[str, ...], frozenset[str]]
"""A target's query as parameters: the readings of the part before ``?``, and its ``name=value`` items."""
_QueryGlob = tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]
"""A pattern's query as parameters: the glob before ``?``, and for each of its items the glob one
parameter must match or, failing that, the globs of its list items that must each match one
(none for a value that is no list)."""


def _split_query(uri: str) -> tuple[str, str] | None:
    """``uri`` up to its first ``?`` after ``://``, and its query (the fragment dropped); ``None``
    for a URI without a query or a name."""
    scheme, sep, rest = uri.partition("://")
    if not sep or "?" not in rest:
        return None
    base, _, query = rest.partition("?")
    return f"{scheme}://{base}", query.split("#", 1)[0]


def _items(query: str) -> tuple[str, ...]:
    return tuple(item for item in query.split("&") if item)


_LIST = re.compile(r"[,|\s]")
"""Where a service may split a list value once decoded: at ``,`` (an OpenAPI ``form`` array without
``explode``, an RFC 6570 ``{?ids}`` list, a server splitting a template value), ``|``
(``pipeDelimited``) and whitespace (``spaceDelimited``)."""


def list_items(item: str) -> list[str]:
    """``name=value``'s value read as a list: ``name=piece`` for each piece between :data:`_LIST`
    delimiters, trimmed as a value is (:func:`_trimmed`), empty ones dropped (``ids=4,5`` is
    ``ids=4`` and ``ids=5``); ``[]`` for an item with no ``=`` or no delimiter in its value."""
    name, eq, value = item.partition("=")
    if not eq or not _LIST.search(value):
        return []
    return [f"{name}={piece}" for part in _LIST.split(value) if (piece := _trimmed(part))]


_MAY_LIST = re.compile(r"[,|\s%;]|[^\x00-\x7f]")
"""What a path that may hold a list once decoded and folded holds: a delimiter, an escape,
non-ASCII, a ``;`` parameter."""

_FIELD = re.compile(r"([;=])")
"""Where a segment's fields end: a ``;`` parameter, its ``=`` value."""

_AFFIX = re.compile(r"[.\-_:~@]")
"""Where an item's stem or suffix may end or start: ``{.x}`` puts ``r.`` before a list's first
item only (``r.xml,json``), ``{x}.json`` puts ``.json`` after its last (``a,b.json``)."""

MAX_LIST_READINGS = 256
"""The most combinations of a path's list items read one by one (a target with lists in many fields
has as many as the product of their lengths); past it, each list field is read as any value."""


def path_lists(target: str) -> tuple[list[str], str | None]:
    """``target`` (up to its query, which is kept as it is) with each segment of its path read as
    a lenient service may (:func:`_segment_readings`: a field holding a list delimiter as each of
    its items, a ``;`` parameter among others alone): every combination, and ``None``; past
    :data:`MAX_LIST_READINGS` combinations, none and a glob in which each such segment is ``*``
    and every other character literal (``([], None)`` for a path with none)."""
    base, mark, query = target.partition("?") if "://" in target else (target, "", "")
    scheme, sep, rest = base.rpartition("://")
    segments = rest.split("/")
    pieces = [_segment_readings(segment) for segment in segments]
    if all(p == [s] for p, s in zip(pieces, segments, strict=True)):
        return [], None
    tail, head = mark + query, scheme + sep
    if prod(map(len, pieces)) > MAX_LIST_READINGS:
        glob = "/".join("*" if p != [s] else _escaped(s) for p, s in zip(pieces, segments, strict=True))
        return [], _escaped(head) + glob + _escaped(tail)
    combinations = [head]
    for number, choices in enumerate(pieces):
        joint = "/" if number else ""
        combinations = [c + joint + choice for c in combinations for choice in choices]
    return [c + tail for c in combinations], None


def _segment_readings(segment: str) -> list[str]:
    """``segment`` as given, each of its ``;`` parameters alone when it has several (``{;x,y}``:
    ``items;x=1;id=5`` is ``items;id=5`` too), and in each of those each field (between ``;``
    and ``=``) holding a list delimiter as each of its items (:func:`_list_field`)."""
    name, *parameters = segment.split(";")
    variants = [segment, *(f"{name};{p}" for p in parameters)] if len(parameters) > 1 else [segment]
    out: dict[str, None] = {}
    for variant in variants:
        readings = [""]
        for field in _FIELD.split(variant):
            items = _list_field(field)
            readings = [r + item for r in readings for item in items][: MAX_LIST_READINGS + 1]
        out.update(dict.fromkeys(readings))
    return list(out)


def _list_field(field: str) -> list[str]:
    """``field`` as each of its list items, trimmed, and each item also with the first's stem and
    the last's suffix (:data:`_AFFIX`); ``[field]`` for one with no list."""
    if not _LIST.search(field) or not (items := [i for part in _LIST.split(field) if (i := _trimmed(part))]):
        return [field]
    first, last = items[0], items[-1]
    stems = [first[: m.end()] for m in _AFFIX.finditer(first)][:4]
    suffixes = [last[m.start() :] for m in _AFFIX.finditer(last)][-4:]
    more = [s + i for s in stems for i in items[1:]] + [i + x for x in suffixes for i in items[:-1]]
    return list(dict.fromkeys(items + more))


def _escaped(text: str) -> str:
    """``text`` as an fnmatch glob matching only itself."""
    return re.sub(r"([*?\[])", r"[\1]", text)


_TO_READ = re.compile(r"[%+ ]|\.=|[^\x21-\x7e]")
"""What makes an item's query reading differ from it but at its end: an escape, a ``+``, a space,
a dot ending the name, anything not printable ASCII."""


def _item_reading(item: str) -> str:
    """One ``name=value`` as a lenient service reads it: each side decoded (again while an escape
    is left: ``%2572`` is ``r``), ``+`` read as a space (form encoding), then surrounding spaces
    and trailing dots trimmed (SQL compares pad trailing spaces; services strip)."""
    if not _TO_READ.search(item):  # the common case: nothing to decode, no space or dot but at the end
        return item.rstrip(_TRIMMED)
    name, eq, value = item.partition("=")
    return _trimmed(_decoded(name, unquote_plus)) + eq + _trimmed(_decoded(value, unquote_plus))


def _decoded(text: str, decode: Callable[[str], str] = unquote) -> str:
    """``text`` with its escapes decoded, again while any is left (a service may decode more than
    once: ``%2550`` is ``P`` to a second decoding), :data:`_DECODINGS` times at most."""
    for _ in range(_DECODINGS):
        if (decoded := decode(text)) == text:
            break
        text = decoded
    return text


def _trimmed(text: str) -> str:
    return text.strip().rstrip(_TRIMMED)


_TRIMMED = ". \u3002\uff0e"
"""Trailing characters a service may drop from a value (with whitespace): ``root.`` is ``root``."""


@lru_cache(maxsize=1024)
def pattern_readings(pattern: str, fold: bool) -> tuple[tuple[str, _QueryGlob | None], ...]:
    """The globs a deny's ``pattern`` is tried as: as given and, when it spells something in
    escapes or non-ASCII, with them read as what they spell (the target's readings decode, so
    ``pr%C3%AFvate`` must meet ``PR%C3%8FVATE``); each with its query as parameters when it has
    one (:func:`_query_glob`). A reading whose escapes would spell a wildcard (``%2A``) is left out."""
    f = folded if fold else str
    forms = [(f(pattern), _query_glob(pattern, f, decode=False))]
    if "%" in pattern or "+" in pattern or not pattern.isascii():
        split = _split_query(pattern)
        base = split[0] if split else pattern
        decoded = _decoded(base) + ("?" + "&".join(map(_item_reading, _items(split[1]))) if split else "")
        if _wildcards(decoded) <= _wildcards(pattern):
            forms.append((f(decoded), _query_glob(pattern, f, decode=True)))
    return tuple(dict.fromkeys(forms))


def _query_glob(pattern: str, fold: Callable[[str], str], *, decode: bool) -> _QueryGlob | None:
    """``pattern``'s query as parameters (see :data:`_QueryGlob`), its escapes read when ``decode``;
    a value holding a ``[`` class is never split (a ``[,]`` is one character)."""
    if (split := _split_query(pattern)) is None:
        return None
    base, items = split
    if decode:
        base, globs = _decoded(base), [fold(_item_reading(i)).rstrip(_TRIMMED) for i in _items(items)]
    else:
        globs = list(map(fold, _items(items)))
    return fold(base), tuple((g, () if "[" in g else tuple(list_items(g))) for g in globs)


def _wildcards(text: str) -> int:
    return sum(text.count(c) for c in "*?[")


def query_matches(glob: _QueryGlob, query: _Query | None) -> bool:
    """Whether a target's ``query`` holds every item ``glob`` names, in any order, among others,
    under a base ``glob`` matches (``?b=true&n=1`` holds for ``?n=1&x=2&b=true``); an item whose
    value is a list, as a set: each of its list items held (``?ids=4,5`` holds for ``?ids=6|5|4``)."""
    if query is None:
        return False
    base, items = glob
    bases, held = query
    if not any(fnmatchcase(b, base) for b in bases):
        return False
    return all(_holds(held, whole) or (parts and all(_holds(held, p) for p in parts)) for whole, parts in items)


def _holds(held: frozenset[str], glob: str) -> bool:
    if not _WILDCARD.search(glob):  # a literal glob matches only itself: one set look-up
        return glob in held
    return any(fnmatchcase(h, glob) for h in held)


_WILDCARD = re.compile(r"[*?\[]")


def path_reading(target: str) -> str:
    """``target``'s path as a lenient service reads it (see :class:`Readings`); a name as it is."""
    scheme, sep, rest = target.partition("://")
    if not sep:
        return target
    kept = []
    for segment in _decoded(rest.split("#", 1)[0].split("?", 1)[0]).replace("\\", "/").split("/"):
        name = segment.split(";", 1)[0].rstrip(". ")
        if name:
            kept.append(name)
    return f"{scheme}://{'/'.join(kept)}"


_DECODINGS = 4
"""Escapes are decoded this many times at most in a reading (each decoding a service may make)."""


@lru_cache(maxsize=4096)
def folded(text: str) -> str:
    """``text`` as a lenient compare sees it: compatibility forms decomposed, combining marks and
    invisible characters (:func:`~mcp_providers.uris.ignorable`) dropped, upper- then case-folded
    (so the dotless i and the dotted capital I are i, as Java's and .NET's case-insensitive
    compares have them)."""
    if text.isascii():  # NFKD keeps ASCII as it is, with no mark or invisible character to drop
        return text.lower()
    # Imported here: mcp_providers.uris brings the SDK, which loading the policy plugin need not (issue 43).
    from mcp_providers.uris import ignorable

    bare = "".join(c for c in normalize("NFKD", text) if not combining(c) and not ignorable(c))
    return bare.upper().casefold()
