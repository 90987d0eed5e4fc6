"""One canonical form of a URI, used for routing, prefix ownership, collisions, policy and receipts;
and the rules a resource's URI or a template must meet to be served (:func:`uri_problems`,
:func:`template_problems`), which ``check`` applies to every declaration and a provider whose
source is not its author's to fix (an upstream MCP server's listing) applies to each item first.

Two spellings of the same resource must never be told apart by a rule, so every comparison the
core makes is between canonical forms (RFC 3986 section 6.2.2, syntax-based normalisation, plus
the IRI-to-URI mapping of RFC 3987 section 3.1):

- the scheme is lower-cased (``DOCUMCP://x`` -> ``documcp://x``);
- percent-escapes are upper-cased, and those of unreserved characters (``A-Z a-z 0-9 - . _ ~``)
  are decoded (``%61`` -> ``a``); escapes of anything else stay escaped (``%2F`` stays, since
  decoding it would change the path);
- characters outside ASCII are UTF-8 percent-encoded (``guías`` -> ``gu%C3%ADas``), so a URI
  written as an IRI and the same URI percent-encoded are one;
- the host is left as written: custom schemes give the authority their own meaning.

Examples::

    >>> canonical("X://%61/secret")
    'x://a/secret'
    >>> canonical("docs://guías/intro")
    'docs://gu%C3%ADas/intro'

A ``%`` not followed by two hex digits, or escapes that do not decode as UTF-8, make the URI
invalid (:class:`InvalidUri`): the request gets -32602 rather than reaching a provider.

Dot segments (``.`` and ``..``, RFC 3986 section 3.3) are not removed: a template value or a URI
path holding one is refused (:func:`value_problem`, :func:`path_problem`), so the gate and
the provider never judge two different values (``public/../private/key`` is not
``private/key`` to a glob, but is to a file system).
"""

from __future__ import annotations

import re
import string
import unicodedata
from typing import NamedTuple
from urllib.parse import unquote

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

__all__ = [
    "InvalidUri",
    "UriProblem",
    "canonical",
    "canonical_template",
    "ignorable",
    "literal_start",
    "path_problem",
    "shape",
    "template_problems",
    "uri_problems",
    "value_problem",
]

_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_EXPRESSION = re.compile(r"(\{[^{}]*\})")


class InvalidUri(ValueError):
    """A URI with a malformed percent-escape, or escapes that are not UTF-8.

    :param uri: the URI as given.
    :param position: index of the offending ``%`` in ``uri``.
    """

    def __init__(self, uri: str, position: int, why: str) -> None:
        super().__init__(f"{why} at position {position}")
        self.uri = uri
        self.position = position


def _encode(text: str) -> str:
    return "".join(f"%{b:02X}" for b in text.encode("utf-8"))


def _recode_escapes(uri: str, match: re.Match[str]) -> str:
    raw = bytes(int(h, 16) for h in match.group(0)[1:].split("%"))
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidUri(uri, match.start(), "percent-escapes that are not UTF-8") from None
    return "".join(c if c in _UNRESERVED else _encode(c) for c in decoded)


def _canonical_text(uri: str, text: str) -> str:
    bad = _BAD_ESCAPE.search(text)
    if bad is not None:
        raise InvalidUri(uri, uri.find(text) + bad.start(), "a '%' not followed by two hex digits")
    text = _NON_ASCII.sub(lambda m: _encode(m.group(0)), text)
    return _ESCAPES.sub(lambda m: _recode_escapes(uri, m), text)


def _lower_scheme(uri: str) -> str:
    scheme, sep, rest = uri.partition(":")
    if sep and scheme and scheme != scheme.lower():
        return scheme.lower() + ":" + rest
    return uri


def canonical(uri: str) -> str:
    """The canonical form of ``uri`` (see the module docstring).

    :raises InvalidUri: a malformed percent-escape, or escapes that are not UTF-8.
    """
    if "%" not in uri and uri.isascii():  # the common case costs one scan
        return _lower_scheme(uri)
    return _lower_scheme(_canonical_text(uri, uri))


def canonical_template(uri_template: str) -> str:
    """``uri_template`` with its literal parts in canonical form; expressions are left alone.

    >>> canonical_template("DOCS://guías/{slug}")
    'docs://gu%C3%ADas/{slug}'

    :raises InvalidUri: a literal part has a malformed percent-escape.
    """
    parts = _EXPRESSION.split(uri_template)
    out = [p if i % 2 else (_canonical_text(uri_template, p) if p else p) for i, p in enumerate(parts)]
    return _lower_scheme("".join(out))


_SEPARATORS = re.compile(r"[/\\]")
_MAX_DECODES = 8
"""How many layers of percent-encoding a value is looked through (``%25252E`` is three)."""


_MAX_SPELLINGS = 64
"""The most spellings of one value looked through (each step can add three: decoded, folded, mapped)."""
_LOOK_ALIKES = str.maketrans({"\u2215": "/", "\u2044": "/", "\u29f8": "/", "\u2216": "\\", "\u29f5": "\\"})
"""Separators NFKC leaves alone that Windows' best-fit mapping reads as ``/`` or ``\\``."""
_TRIMMED = ". \u3002\uff0e"
"""What Windows and IIS drop from the end of a path segment (with whitespace): ``private.`` is ``private``."""


def _spellings(value: str) -> list[str]:
    """``value``, and every form a provider or server that decodes again, folds full-width
    characters (NFKC, U+FF0E to ``.``) or maps look-alike slashes could read it as, in any order
    (U+FF05 then ``2F`` folds to ``%2F``, which decodes to ``/``), up to :data:`_MAX_DECODES` steps.

    A provider must not find a dot segment or separator the router did not see.
    """
    if "%" not in value and value.isascii():  # the common case: no other spelling to look through
        return [value]
    forms, frontier = [value], [value]
    for _ in range(_MAX_DECODES):
        found = []
        for form in frontier:
            for other in (
                unquote(form, errors="surrogateescape"),
                unicodedata.normalize("NFKC", form),
                form.translate(_LOOK_ALIKES),
            ):
                if other not in forms and len(forms) < _MAX_SPELLINGS:
                    forms.append(other)
                    found.append(other)
        if not found:
            break
        frontier = found
    return forms


def value_problem(value: str, *, single_segment: bool) -> str | None:
    """What makes a decoded template value unsafe to hand a provider, or ``None``.

    Refused, in every spelling (see :func:`_spellings`): a ``.`` or ``..`` segment (split on ``/``
    and ``\\``), a NUL, a leading separator (an absolute path), a separator that only a further
    decoding or NFKC folding makes (``%2F`` left in the decoded value: the gate judged one segment
    where a provider or upstream that decodes again reads two), a backslash (a separator to some
    servers, a character to the gate), and, when ``single_segment``
    (``{name}``: one path segment by RFC 6570 section 3.2.2), any separator at all.

    >>> value_problem("public/../private/key", single_segment=False)
    "holds a '..' path segment"
    >>> value_problem("v1.2..3", single_segment=True) is None
    True

    :param value: the value as the template match decoded it (one layer of escapes removed).
    :returns: a phrase completing "the template value ... ", or ``None`` when it is safe.
    """
    separators = len(_SEPARATORS.findall(value))
    for form in _spellings(value):
        if "\x00" in form:
            return "holds a NUL character"
        segments = _SEPARATORS.split(form)
        if single_segment and len(segments) > 1:
            return "holds a path separator ('/' or '\\')"
        if "\\" in form:  # the gate reads it as a character; Windows and IIS, as a separator
            return "holds a backslash, which some servers read as a path separator; name the path with '/'"
        if len(segments) - 1 != separators:  # e.g. %2F left after one decoding: the gate saw one segment
            return "holds a separator spelled another way (an escape left after decoding, or a look-alike)"
        bare = [segment.split(";", 1)[0] for segment in segments]  # servlet containers drop ';x'
        for dots in ("..", "."):
            if dots in segments:
                return f"holds a {dots!r} path segment"
            if dots in bare:
                return f"holds a {dots!r} path segment with a ';' parameter, which servlet containers drop"
        if len(segments) > 1 and segments[0] == "":
            return "starts with a path separator (an absolute path)"
        if problem := _segment_problem(form, segments):
            return problem
    return None


def _segment_problem(form: str, segments: list[str]) -> str | None:
    """What in ``segments`` (of one spelling) a server could read as another name, or ``None``."""
    for segment in segments:
        bare = segment.split(";", 1)[0]  # as a servlet container reads it
        if any(s and (s != s.rstrip(_TRIMMED) or s.strip() != s) for s in {segment, bare}):
            return "holds a path segment ending in '.' or a space, or starting with one (Windows and IIS drop them)"
        if ":$" in segment:  # private::$DATA, private:$i30:$INDEX_ALLOCATION
            return "holds an NTFS stream name (':$'), which Windows reads as the file or folder before it"
        if _SHORT_NAME.search(segment):
            return "holds a '~' and a digit, which Windows reads as an 8.3 short name (CONFID~1 is confidential)"
    if any(map(ignorable, form)):
        return "holds an invisible character (such as U+200B or U+034F), which some servers drop"
    return None


_SHORT_NAME = re.compile(r"~\d")
_IGNORABLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u3164\uffa0"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))
)
"""Default-ignorable characters that are not of category Cf (Unicode's DerivedCoreProperties):
mappings such as NFKC_Casefold drop them, so ``private`` and ``private`` + U+034F can be one name."""


def ignorable(char: str) -> bool:
    """Whether a lenient compare may drop ``char`` (one character): an invisible format character
    (category Cf, such as U+200B) or another default-ignorable one (U+034F, variation selectors).

    >>> ignorable("\u200b"), ignorable("a")
    (True, False)
    """
    return unicodedata.category(char) == "Cf" or char in _IGNORABLE


def path_problem(uri: str) -> str | None:
    """What in the path of ``uri`` (after ``scheme:``, up to ``?`` or ``#``, as written) a server
    could read as another path, or ``None``: all that :func:`value_problem` refuses in a
    ``{+path}`` value (a dot segment, a backslash, a separator only a decoding makes, a segment a
    server trims, an NTFS stream, an 8.3 short name, an invisible character, a NUL).

    >>> path_problem("https://example.test/private./key")
    "holds a path segment ending in '.' or a space, or starting with one (Windows and IIS drop them)"
    """
    hier = uri.partition(":")[2].split("?", 1)[0].split("#", 1)[0].lstrip("/")
    return value_problem(hier, single_segment=False) if hier else None


SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
"""An absolute URI's start: a scheme and its colon (RFC 3986 section 3.1)."""
_BODY = re.compile(r"\{([^{}]*)\}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_OPERATORS = frozenset("+#./;?&")
_QUERY = frozenset("?&")


class UriProblem(NamedTuple):
    """Why a URI or template cannot be served: ``rule`` (as ``check`` names it, e.g.
    ``"uri-not-absolute"``), ``what`` is wrong and the ``fix``."""

    rule: str
    what: str
    fix: str


def literal_start(template: str) -> str:
    """The literal text before the first expression: ``"a://x/{id}"`` -> ``"a://x/"``."""
    i = template.find("{")
    return template if i < 0 else template[:i]


def uri_problems(uri: str) -> list[UriProblem]:
    """Why ``uri`` cannot be a fixed resource's URI (empty when it can): no scheme, a ``{...}`` in
    it (a template), a malformed percent-escape, a control character, or what no valid URI reaches
    (whitespace, ``#``, a dot segment ...: :func:`_literal_problem`)."""
    found = []
    if not SCHEME.match(uri):
        found.append(UriProblem("uri-not-absolute", "has no scheme", "use an absolute URI such as myplugin://path"))
    if UriTemplate.is_template(uri):
        found.append(
            UriProblem(
                "uri-is-template", "a fixed URI contains {...}", "declare it as ResourceTemplate(uri_template=...)"
            )
        )
    try:
        canonical(uri)
    except InvalidUri as exc:
        fix = "write %XX with two hex digits"
        found.append(UriProblem("uri-invalid", f"has a malformed percent-escape: {exc}", fix))
    if (control := _CONTROL.search(uri)) is not None:
        found.append(_control_problem(control))
    elif (unreachable := _literal_problem(uri, template=False)) is not None:
        found.append(unreachable)
    return found


def _control_problem(control: re.Match[str]) -> UriProblem:
    what = f"has a control character (U+{ord(control.group(0)):04X}) at position {control.start()}"
    return UriProblem("uri-invalid", what, "percent-encode it (RFC 3986 allows no control characters), or leave it out")


_NOT_IN_URI = frozenset(' "<>\\^`|')
"""ASCII characters RFC 3986 allows nowhere in a URI (controls and braces aside, which have rules of
their own): a client sends them escaped."""


def _literal_problem(text: str, *, template: bool) -> UriProblem | None:
    """Why no valid URI reaches the literal part of ``text`` (a fixed URI, or a template's text
    outside its expressions), or ``None``: a character a URI does not hold as written (a client
    sends the escape, which the canonical form keeps escaped), a ``#`` (a fragment, which clients
    drop), a ``.`` or ``..`` path segment (which clients resolve away, RFC 3986 section 5.2.4), in
    a template a ``?`` followed by more path (what follows it is the query), and what
    :func:`path_problem` finds (the gate refuses every read of such a path under a policy)."""
    parts = _EXPRESSION.split(text) if template else [text]
    literal = "".join("v" if i % 2 else part for i, part in enumerate(parts))
    for char in literal:
        if char in _NOT_IN_URI or char == "#":
            what = "whitespace" if char == " " else repr(char)
            why = "a fragment starts there, which clients drop" if char == "#" else "a URI holds it only escaped"
            return UriProblem(
                "uri-invalid",
                f"has {what}{' in its literal part' if template else ''}: {why}, so no valid URI reaches it",
                f"write it percent-encoded, %{ord(char):02X}, if the URI holds it; or leave it out",
            )
    if template and "/" in literal.partition("?")[2]:
        return UriProblem(
            "uri-invalid",
            "has a '?' before more path: what follows it is the URI's query, not its path",
            "write it percent-encoded, %3F, if the path holds it; write a query as {?name}",
        )
    try:
        path = canonical(literal).partition(":")[2].split("?", 1)[0]
    except InvalidUri:
        return None  # reported as a malformed escape
    dots = next((s for s in path.split("/") if s in (".", "..")), None)
    if dots is not None:
        return UriProblem(
            "uri-invalid",
            f"has a {dots!r} path segment, which clients resolve away before sending (RFC 3986 section 5.2.4)",
            f"name the path without the {dots!r} segment",
        )
    if (problem := path_problem(canonical(literal))) is not None:  # what the gate refuses in every read
        return UriProblem(
            "uri-invalid",
            f"{problem}: under any policy the gate refuses every read of it as another name's spelling",
            "name the path without it",
        )
    return None


def template_problems(uri_template: str) -> list[UriProblem]:
    """Why ``uri_template`` cannot be served (empty when it can): the SDK's strict RFC 6570 parser
    refuses it, a literal part has a malformed percent-escape, a control character or what no
    valid URI reaches (:func:`_literal_problem`), it has no variable, a variable explodes, or it
    does not start with a scheme."""
    try:
        parsed = UriTemplate.parse(uri_template)
    except InvalidUriTemplate as exc:
        return [UriProblem("template-invalid", f"is not an RFC 6570 template: {exc}", "write one, e.g. a://x/{id}")]
    try:
        UriTemplate.parse(canonical_template(uri_template))  # the catalog compiles the canonical form
    except InvalidUri as exc:
        return [UriProblem("uri-invalid", f"a literal part {exc}", "write %XX with two hex digits")]
    except InvalidUriTemplate as exc:
        return [UriProblem("template-invalid", f"in canonical form: {exc}", "write %XX only where RFC 3986 allows")]
    found = []
    if (control := _CONTROL.search(uri_template)) is not None:
        found.append(_control_problem(control))
    elif (unreachable := _literal_problem(uri_template, template=True)) is not None:
        found.append(unreachable)
    if not parsed.variables:
        found.append(
            UriProblem("template-without-variables", "has no {variable}", "declare it as a fixed Resource(uri=...)")
        )
    for var in parsed.variables:
        if var.explode:
            fix = "use {+" + var.name + "} and split the value in read()"
            found.append(UriProblem("template-explode-unsupported", f"variable {var.name!r} explodes", fix))
    if not SCHEME.match(literal_start(uri_template)):
        fix = "start with a literal scheme, e.g. myplugin://"
        found.append(UriProblem("uri-not-absolute", "does not start with a scheme", fix))
    return found


def shape(template: str) -> str:
    """``template`` with variable names erased and query expressions dropped: two templates of one
    shape match exactly the same URIs. ``;`` expressions keep their names: they are written into
    the URI (``;x=1``).

    >>> shape("res://x/{a}/y{?q}") == shape("res://x/{b}/y{?r,s}")
    True
    """

    def erase(match: re.Match[str]) -> str:
        body = match.group(1)
        op = body[:1] if body[:1] in _OPERATORS else ""
        if op in _QUERY:
            return ""
        names = body[len(op) :].split(",")
        kept = names if op == ";" else ["*" if n.endswith("*") else "" for n in names]
        return "{" + op + ",".join(kept) + "}"

    return _BODY.sub(erase, template)
