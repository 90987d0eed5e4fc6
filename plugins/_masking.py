"""Masking the secrets a plugin holds for a remote service out of text that came from it.

A remote service (an upstream MCP server, an OpenAPI service) may quote what it was sent: an
error saying ``rejected credential Bearer abc...``, a tool result echoing its environment. Such
text reaches the client, the model and the logs, so every secret this server holds for that
service is replaced by :data:`MASK` first: the values of the variables its settings name
(``auth.token_env``, ``env``, a client secret), and every credential the broker handed for it.
Anything shaped like an ``Authorization`` value (``Bearer``/``Basic`` and a token) is masked too,
whoever's it is.

A secret is found as written, upper- or lower-cased, URL-encoded (every common way) or -decoded,
JSON-escaped, hex-encoded, and base64-encoded (standard or URL-safe alphabet), alone or inside a
longer encoded text; a non-ASCII one also as its bytes through any single-byte charset Python has
(its UTF-8 bytes read in one, ``é`` as ``Ã©``, ``п`` through cp1251 as ``Рї``: a view reads a text
back through each charset, :mod:`~mcp_providers.plugins._single_byte`; re-cased or with an
undefined byte as U+FFFD, and its own bytes in each charset hex-, base64- or URL-encoded, as
spellings). A spelling shorter than :data:`MIN_SECRET_CHARS` is not searched for.
Every spelling of every held secret is searched for in one pass of an Aho-Corasick automaton
(``ahocorasick-rs``), so a message costs about the same with one secret held as with hundreds
(``benchmarks/masking.py``).

Services spell things in more ways than any list of spellings names (PHP's ``\\/``, .NET's
``\\u002B``, Markdown's ``\\_``, a JavaScript-encoded URL keeping ``!``, MIME base64 wrapped at 76
characters, HTML entities, separated hex, byte lists, a soft hyphen inside it, a capitalised first
letter...). So once the text as written is masked, the same spellings are searched for in *views*
of it (:func:`_decoded_views` lists them: decodings applied in turn, then markup and invisible
characters read away, lower-cased, compacted (a long spelling is searched compacted there too, so a
secret holding ``-`` or ``:`` wrapped over lines is found), compacted again after removing the prefix
adjacent lines share (a log's ``ERR  `` on each line of a wrapped secret), byte lists read as bytes;
a byte escape ``\\xNN``, ``=NN`` or a ``%NN`` that is not UTF-8 reads as the Latin-1 character). A
secret a view holds cannot be cut out of the text as written: the whole text is replaced by
:data:`MASK` (fail closed) and a warning names the service, never the secret. Views are computed only
while a secret is held, and each decoding only when the text has a sign of it. Not followed: a
wrapped secret whose lines' prefixes differ (a timestamp per line, ``13:46:23 ERR`` then
``13:46:24 ERR``) is not read whole.

Example::

    secrets = Secrets()
    secrets.add(os.environ["REMOTE_TOKEN"])
    secrets.masked("401: token hu-static-123456 rejected")   # "401: token [redacted] rejected"

What the libraries a plugin sends with log is masked by the same secrets in
:mod:`mcp_providers.plugins._library_logs`.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import contextlib
import html
import itertools
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final
from urllib.parse import quote, quote_plus, unquote

from mcp_providers.plugins import _single_byte

log = logging.getLogger(__name__)

MASK: Final = "[redacted]"
MIN_SECRET_CHARS: Final = 6
"""The shortest held secret that is masked, in characters: the one rule for every source. A shorter
value cannot be cut out of a text usefully (masking ``j`` garbles every word holding a ``j`` and
hides nothing), so a *configured* secret shorter than this (the value of a variable a setting names
as a token, client secret, password or API key) is refused when the settings are validated
(:func:`checked_secret`); a value of an upstream's ``env``, which need not be a secret (``1``,
``true``, a port), and an *obtained* one (a credential a broker handed, a token sent to a token
endpoint) that short are not masked (:meth:`Secrets.add`)."""
MIN_ENCODED_CHARS: Final = 8
"""A run of base64 text shorter than this is not searched for: too short to tell from any other."""
_AUTHORIZATION = re.compile(r"(?i)\b(bearer|basic)(\s+)(?=[A-Za-z._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}")
"""A scheme and a token (8 or more token characters, at least one not a letter: ``a basic
approach`` is prose)."""


def checked_secret(value: str | None, where: str) -> None:
    """Refuse a configured secret too short to be masked (:data:`MIN_SECRET_CHARS`); unset is fine.

    :param value: the variable's value (``None`` or ``""`` when unset: not refused here).
    :param where: the variable as the message names it, ``"upstream 'who': environment variable
        WHO_SECRET (from auth.client_secret_env)"`` (never its value).
    :raises ValueError: ``value`` is shorter than :data:`MIN_SECRET_CHARS` characters.
    """
    if value and len(value) < MIN_SECRET_CHARS:
        raise ValueError(
            f"{where} is shorter than {MIN_SECRET_CHARS} characters; a secret that short cannot be masked out "
            f"of what the service says (it would garble every text and hide nothing); set a real secret of "
            f"{MIN_SECRET_CHARS} characters or more"
        )


def _url_spellings(value: str | bytes) -> set[str]:
    """``value`` URL-encoded every common way: every reserved character, or ``/`` kept (``quote``'s
    default), or form-encoded (``+`` for a space), each in upper- and lower-case hex (a text as its
    UTF-8 bytes, ``bytes`` as they are)."""
    encoded = {quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="/")}
    lower = {re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), e) for e in encoded}
    return encoded | lower


def _base64_spellings(raw: bytes) -> set[str]:
    """``raw`` base64-encoded alone (with and without padding) and, for each of the three places it
    may start at inside a longer encoded text, the run of characters made only of its own bytes
    (standard and URL-safe alphabets)."""
    runs: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + raw).decode()
        first, last = -(-shift // 3), (shift + len(raw)) // 3  # the 3-byte groups that are all raw's
        runs.add(encoded[4 * first : 4 * last])
    whole = base64.b64encode(raw).decode()
    runs |= {whole, whole.rstrip("=")}
    urlsafe = {r.replace("+", "-").replace("/", "_") for r in runs}
    return {r for r in runs | urlsafe if len(r) >= MIN_ENCODED_CHARS}


def _as_latin1(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: the bytes a codec cannot decode, each read as its Latin-1 character
    (what browsers and Windows make of a byte cp1252 leaves undefined; ``%E9`` URL-decoded reads
    ``é``). An encoding error is raised as it came."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return error.object[error.start : error.end].decode("latin-1"), error.end


_LATIN1_FALLBACK: Final = "mcp_providers.masking.latin-1"
codecs.register_error(_LATIN1_FALLBACK, _as_latin1)


def _charset_spellings(value: str) -> set[str]:
    """A non-ASCII ``value``'s spellings through the single-byte charsets
    (:func:`~mcp_providers.plugins._single_byte.charsets`) that a view cannot undo: its UTF-8 bytes
    read in each, upper- and lower-cased, and read with an undefined byte as U+FFFD (as Java does);
    and its own bytes in each charset it encodes in, hex-, base64- and URL-encoded as its UTF-8 bytes
    are (once per distinct byte string). What a charset reads unchanged is undone by a view
    (:func:`~mcp_providers.plugins._single_byte.undone`). ``set()`` for an ASCII value: its bytes are
    the same in all of them."""
    if value.isascii():
        return set()
    raw = value.encode()
    spelled: set[str] = set()
    forms: set[bytes] = set()
    for charset in _single_byte.charsets():
        read = _single_byte.read_as(raw, charset)
        spelled |= {read.upper(), read.lower()} - {read}
        if charset.undefined and any(b in charset.undefined for b in raw):
            java = raw.decode(charset.name, "replace")
            spelled |= {java, java.upper(), java.lower()}
        with contextlib.suppress(UnicodeEncodeError):
            forms.add(value.encode(charset.name))
    for form in forms - {raw}:
        spelled |= _url_spellings(form) | _base64_spellings(form) | {form.hex(), form.hex().upper()}
        # What the views read a byte escape (\\xNN, =NN, %NN) as, and Windows' reading of the bytes.
        spelled |= {form.decode("latin-1"), form.decode("cp1252", "replace")}
        spelled.add(form.decode("cp1252", _LATIN1_FALLBACK))
    return spelled - {value}


def _spellings(value: str) -> set[str]:
    """Every spelling of ``value`` searched for (see the module docstring), ``value`` URL-decoded
    (a secret written percent-encoded, as in a URL's user info, is sent decoded), and its
    spellings through a single-byte charset (:func:`_charset_spellings`)."""
    raw = value.encode()
    cased = {value, value.upper(), value.lower(), unquote(value)}
    hexed = binascii.hexlify(raw).decode()
    wide = {value.encode("utf-16-le"), value.encode("utf-16-be")}  # what Windows and Java services encode
    wide_spelled = {s for w in wide for s in (*_base64_spellings(w), w.hex(), w.hex().upper())}
    spelled = cased | _url_spellings(value) | _base64_spellings(raw) | {hexed, hexed.upper()} | wide_spelled
    return spelled | _charset_spellings(value)


_JSON_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[bfnrt]|[^0-9A-Za-z\s])")
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "'": "'", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_SEPARATOR_BYTES: Final = b" \t\n\r\x0b\x0c:-,;[]{}()"
_HEX_PREFIX = re.compile(r"\\?[0\\]x(?=[0-9A-Fa-f]{2})")
_MARKUP = re.compile(r"<[^<>]{0,40}>")
_BYTE_LIST = re.compile(r"\d{1,3}(?:\s*[,;]\s*\d{1,3}){7,}")  # no \b first: re scans a class fast
"""Eight or more numbers up to 255 in a list (Java's ``Arrays.toString`` of a byte array)."""
_SOFT_BREAK = re.compile(r"=\r?\n")
_QP_ESCAPE = re.compile(r"=([0-9A-F]{2})")
ROUNDS: Final = 3
"""How many times in turn the decodings are applied (a secret URL-encoded twice, then JSON-escaped)."""


def _json_unescaped(text: str) -> str:
    """``text`` with JSON/JavaScript string escapes (``\\uXXXX`` with surrogate pairs, ``\\xXX``,
    ``\\/``, ``\\n``...) and any backslash-escaped punctuation (Markdown's ``\\_``, a regular
    expression's ``\\+``) read; a lone surrogate reads as U+FFFD."""

    def one(found: re.Match[str]) -> str:
        code = found[1]
        if code[0] in "ux" and len(code) > 1:
            return chr(int(code[1:], 16))
        return _ESCAPED.get(code, code)  # any other escaped punctuation is itself (Markdown: \_, \-)

    read = _JSON_ESCAPE.sub(one, text)
    return read.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace") if "\\u" in text else read


def _quoted_printable(text: str) -> str:
    """``text`` with quoted-printable escapes (``=3D``, a soft line break ``=`` at a line's end) read."""
    text = _SOFT_BREAK.sub("", text)
    return _QP_ESCAPE.sub(lambda found: chr(int(found[1], 16)), text)


_DECODINGS: Final[tuple[tuple[str, Callable[[str], bool], Callable[[str], str]], ...]] = (
    ("JSON-unescaped", lambda text: "\\" in text, _json_unescaped),
    ("HTML-unescaped", lambda text: "&" in text, html.unescape),
    ("URL-decoded", lambda text: "%" in text, lambda text: unquote(text, errors=_LATIN1_FALLBACK)),
    ("quoted-printable", lambda text: "=" in text, _quoted_printable),
    ("NFKC-folded", lambda text: not text.isascii(), lambda text: unicodedata.normalize("NFKC", text)),
)
"""Each decoding, with the cheap test of whether a text holds a sign of it. ``+`` is not read as a
space: the form-encoded spellings of a secret are searched for anyway, and a base64 text would
break."""


def _decoded(text: str) -> Iterator[tuple[str, str]]:
    """``text`` decoded by each of :data:`_DECODINGS` in turn, again until nothing changes (at most
    :data:`ROUNDS` times): each text a decoding changed, with the decoding's name (a later one may
    undo what an earlier one revealed: ``%3D4D`` URL-decoded reads ``=4D``, a quoted-printable
    ``M``), the last one last."""
    for _ in range(ROUNDS):
        before = text
        for name, signed, decode in _DECODINGS:
            if signed(text) and (decoded := decode(text)) != text:
                text = decoded
                yield name, text
        if text == before:
            return


def _compacted(text: str) -> str:
    """``text`` without ASCII whitespace, separators and brackets (``:-,;[]{}()``) and ``0x``/``\\x``
    before a hex pair: separated hex (.NET's ``67-68-70``, a C array ``{0x67, 0x68}``) reads as one
    run (bytes' translate: 50 times a regular expression's speed)."""
    if "0x" in text or "\\x" in text:
        text = _HEX_PREFIX.sub("", text)
    raw = text.encode("utf-8", "surrogatepass")
    return raw.translate(None, _SEPARATOR_BYTES).decode("utf-8", "surrogatepass")


def _unsplit(text: str) -> str:
    """``text`` without what splits a word for a reader but not for a copy: markup tags (``<wbr>``,
    ``<b>``) and invisible format characters (a soft hyphen, a zero-width space)."""
    if "<" in text:
        text = _MARKUP.sub("", text)
    if text.isascii():
        return text
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _shared_prefix(first: str, second: str) -> int:
    """How many leading characters ``first`` and ``second`` share (a binary search of slices: C
    compares, a few per pair, where a loop over characters cost 20 Python steps per shared one)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _unprefixed(text: str) -> str:
    """``text`` with each line's leading characters shared with the line before or after it (the
    longer) removed: a log writing every line under one prefix (``ERR  ``, ``[talk] ``) splits a
    wrapped secret by it. ``text`` itself when no adjacent lines share a prefix."""
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    shared = [_shared_prefix(*pair) for pair in itertools.pairwise(lines)]
    cuts = [max(before, after) for before, after in zip([0, *shared], [*shared, 0], strict=True)]
    return "\n".join(line[cut:] for line, cut in zip(lines, cuts, strict=True)) if any(shared) else text


def _byte_lists(text: str) -> str:
    """The lists of eight or more numbers up to 255 in ``text``, each read as bytes (latin-1), one
    per line; ``""`` when there are none."""
    if sum(map(text.count, "0123456789")) < 8:  # str.count is C: far cheaper than the regex's scan
        return ""
    lists = []
    for found in _BYTE_LIST.finditer(text):
        numbers = [int(n) for n in re.findall(r"\d+", found[0])]
        if max(numbers) < 256:
            lists.append(bytes(numbers).decode("latin-1"))
    return "\n".join(lists)


def _decoded_views(text: str, undo: _single_byte.Signs | None = None) -> Iterator[tuple[str, bool]]:
    """The views of ``text`` searched after it is masked, each with whether it is the compacted one
    (searched for spellings of :data:`MIN_ENCODED_CHARS` or more only, so words it joins do not
    spell a short secret): each text :func:`_decoded` makes; the last of them without markup and
    invisible characters (:func:`_unsplit`); that lower-cased; that compacted (:func:`_compacted`);
    that with the prefix adjacent lines share removed (:func:`_unprefixed`), compacted;
    the byte lists in the last decoded text read as bytes (:func:`_byte_lists`); and, with ``undo``
    (the signs of the non-ASCII secrets held), the last decoded text not NFKC-folded (NFKC folds
    mojibake's own characters: ``µ``, a no-break space) read back through each single-byte charset
    whose reading of a held secret's first bytes it holds
    (:meth:`~mcp_providers.plugins._single_byte.Signs.undone`: mojibake read as UTF-8 again). A
    view the same as the one before it is left out."""
    last = unfolded = text
    for name, last in _decoded(text):
        yield last, False
        if name != "NFKC-folded":
            unfolded = last
    unsplit = _unsplit(last)
    if unsplit != last:
        yield unsplit, False
    lowered = unsplit.lower()
    if lowered != unsplit:
        yield lowered, False
    compact = _compacted(unsplit)
    if compact != unsplit:
        yield compact, True
    if "\n" in unsplit and (unprefixed := _unprefixed(unsplit)) != unsplit:
        yield _compacted(unprefixed), True
    if listed := _byte_lists(last):
        yield listed, False
    if undo:
        for view in undo.undone(unfolded):
            yield view, False


class _Literals:
    """Finds any of a set of strings, leftmost and longest first, in one linear pass."""

    __slots__ = ("_automaton",)

    def __init__(self, values: Iterable[str]) -> None:
        from ahocorasick_rs import AhoCorasick, MatchKind  # once a secret is held: serve's start-up does not pay

        self._automaton = AhoCorasick(list(values), matchkind=MatchKind.LeftmostLongest)

    def search(self, text: str) -> bool:
        return bool(self._automaton.find_matches_as_indexes(text))

    def sub(self, text: str) -> str:
        found = self._automaton.find_matches_as_indexes(text)
        if not found:
            return text
        kept: list[str] = []
        at = 0
        for _pattern, start, end in found:
            kept += (text[at:start], MASK)
            at = end
        kept.append(text[at:])
        return "".join(kept)


class Secrets:
    """The secret values held for one service (a secret holding another is masked whole). Values
    added with ``handed`` (credentials a broker handed, one per caller and expiry) are kept up to
    :attr:`HANDED_KEPT`, oldest dropped; configured ones are always kept."""

    HANDED_KEPT = 256

    __slots__ = ("_handed", "_held", "_literals", "_long", "_undo", "who")

    def __init__(self, who: str = "a remote service") -> None:
        """:param who: the service the secrets are held for, as the warning of a text masked whole
        names it (``"upstream 'talk'"``)."""
        self.who = who
        self._held: dict[str, frozenset[str]] = {}  # each secret's spellings, made once
        self._handed: dict[str, frozenset[str]] = {}  # insertion-ordered: the oldest is dropped first
        self._literals: _Literals | None = None
        """Every spelling of every secret, JSON-escaped too: made when next needed after a change."""
        self._long: _Literals | None = None
        """Those of :data:`MIN_ENCODED_CHARS` or more, and each of them compacted (a secret holding
        ``-`` or ``:`` wrapped over two lines), for the compacted views."""
        self._undo: _single_byte.Signs | None = None
        """The signs of the non-ASCII secrets held (:class:`~mcp_providers.plugins._single_byte.Signs`):
        only while one is held are texts read back through single-byte charsets."""

    @classmethod
    def of(cls, who: str, values: Iterable[str | None]) -> Secrets:
        """Secrets held for ``who``: each of ``values`` (credentials sent; ``None``, ``""`` and
        values shorter than :data:`MIN_SECRET_CHARS` skipped, as :meth:`add` says). For one text
        from a service, e.g. a token endpoint's refusal."""
        secrets = cls(who)
        for value in values:
            secrets.add(value)
        return secrets

    def add(self, value: str | None, *, handed: bool = False) -> None:
        """Mask ``value`` from now on. ``None``, and a value shorter than :data:`MIN_SECRET_CHARS`
        (an obtained token that short, an ``env`` value such as ``1``), are not masked: a configured
        secret that short was refused with the settings (:func:`checked_secret`). Nor is a spelling
        of it that short (``%65%20`` URL-decoded is ``e ``: masking it would garble every text); the
        value as written is. A handed value added again is the last one dropped."""
        if not value or len(value) < MIN_SECRET_CHARS or value in self._held:
            return
        if value in self._handed:
            self._handed[value] = self._handed.pop(value)  # in use again: the last to be dropped
            return
        spellings = _spellings(value)
        spellings |= {json.dumps(v, ensure_ascii=False)[1:-1] for v in spellings}
        spellings = {s for s in spellings if len(s) >= MIN_SECRET_CHARS}
        if handed:
            self._handed[value] = frozenset(spellings)
            if len(self._handed) > self.HANDED_KEPT:
                del self._handed[next(iter(self._handed))]
        else:
            self._held[value] = frozenset(spellings)
        self._literals = None

    def _search(self) -> _Literals | None:
        if self._literals is None and (self._held or self._handed):
            every = {v for held in (self._held, self._handed) for s in held.values() for v in s}
            self._literals = _Literals(every)
            long = {v for v in every if len(v) >= MIN_ENCODED_CHARS}
            long |= {c for v in long if len(c := _compacted(v)) >= MIN_ENCODED_CHARS}  # as the compacted view reads it
            self._long = _Literals(long or {MASK})
            held = [v for values in (self._held, self._handed) for v in values if not v.isascii()]
            self._undo = _single_byte.Signs(f(v) for v in held for f in (str, str.upper, str.lower))
        return self._literals

    def _in_views(self, literals: _Literals, text: str) -> bool:
        """Whether a view of ``text`` (:func:`_decoded_views`) holds a spelling of a held secret."""
        long = literals if self._long is None else self._long  # made with literals: never None here
        views = _decoded_views(text, self._undo)
        return any((long if compacted else literals).search(view) for view, compacted in views)

    def __bool__(self) -> bool:
        return bool(self._held or self._handed)

    def found_in(self, text: str) -> bool:
        """Whether ``text`` holds a held secret, in any spelling masked (JSON-escaped ones too)."""
        literals = self._search()
        return literals is not None and (literals.search(text) or self._in_views(literals, text))

    def masked_data(self, data: Any) -> Any:
        """``data`` (parsed JSON) with :meth:`masked` applied to every string in it, keys included;
        a number that spells a held secret becomes the string :data:`MASK`."""
        if isinstance(data, str):
            return self.masked(data)
        if isinstance(data, list):
            return [self.masked_data(item) for item in data]
        if isinstance(data, dict):
            return {self.masked(k): self.masked_data(v) for k, v in data.items()}
        if isinstance(data, int | float) and not isinstance(data, bool) and self.found_in(str(data)):
            return MASK  # a secret of digits sent back as a JSON number: the number is the secret
        return data

    def masked(self, text: str) -> str:
        """``text`` with every held secret, and every ``Bearer``/``Basic`` token, replaced by
        :data:`MASK`; :data:`MASK` alone when a view of it holds a secret that cannot be cut out
        (see the module docstring)."""
        literals = self._search()
        if literals is not None:
            text = literals.sub(text)
            if self._in_views(literals, text):
                log.warning(
                    "%s sent a text holding a secret held for it in a spelling that cannot be cut out of the "
                    "text (encoded, escaped, wrapped or re-cased); the whole text is replaced by %s",
                    self.who,
                    MASK,
                )
                return MASK
        folded = text.casefold()  # what (?i) matches: a cheap test before the regex's slower pass
        if "bearer" not in folded and "basic" not in folded:
            return text
        return _AUTHORIZATION.sub(rf"\1\2{MASK}", text)


_CHARSET = re.compile(r"""(?i);\s*charset\s*=\s*["']?([A-Za-z0-9._:-]+)""")
_BOMS: Final = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def body_text(body: bytes, content_type: str | None) -> tuple[str, str]:
    """``body`` as the text a secret is searched for in, and the codec to encode it back with: in
    the charset ``content_type`` (a ``Content-Type`` value) declares, else the one its byte-order
    mark names (UTF-32 before UTF-16: their marks begin alike), else UTF-8, else latin-1 (each
    byte one character: a binary body is searched byte for byte). A declared charset that is
    unknown or does not decode the body is passed over. Raises nothing."""
    tried: list[str] = []
    if content_type and (declared := _CHARSET.search(content_type)):
        with contextlib.suppress(LookupError):
            tried.append(codecs.lookup(declared[1]).name)
    tried += [codec for mark, codec in _BOMS if body.startswith(mark)][:1]
    for codec in (*tried, "utf-8"):
        with contextlib.suppress(UnicodeDecodeError):
            return body.decode(codec), codec
    return body.decode("latin-1"), "latin-1"  # each byte one character
