"""One canonical form of a URI, used for routing, prefix ownership, collisions, policy and receipts.

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
"""

from __future__ import annotations

import re
import string

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
