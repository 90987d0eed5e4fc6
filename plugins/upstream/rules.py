"""The core's checks of one declaration, as the upstream plugin applies them to each listed component.

``mcp-providers check`` rejects a whole plugin for any problem in its declarations (a duplicate URI,
a template the SDK's parser refuses ...). An upstream's listing is not the operator's to fix, so
the mapping asks these functions first and leaves out just the component a rule would refuse
(:class:`~mcp_providers.plugins.upstream.mapping.LeftOut`); the rest of that upstream, and every
other upstream, is served.

Plugins may not import ``mcp_providers._host`` (an import-linter contract: built-in plugins use the
public contract only), so the rules are restated here: :func:`canonical` and
:func:`canonical_template` as ``_host/uris.py`` has them, :func:`shape` as ``_host/specificity.py``,
:func:`uri_problem` and :func:`template_problem` as the grammar rules of ``_host/rules.py`` (plus
the catalog's own parse of the canonical template). The SDK's RFC 6570 parser is the same one the
core uses. ``tests/test_upstream_guards.py`` compares every verdict here with the core's, so a
change there that is not made here fails a test.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

__all__ = ["canonical", "canonical_template", "schema_problem", "shape", "template_problem", "uri_problem"]

_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_EXPRESSION = re.compile(r"(\{[^{}]*\})")
_BODY = re.compile(r"\{([^{}]*)\}")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_OPERATORS = frozenset("+#./;?&")
_QUERY = frozenset("?&")


def _encode(text: str) -> str:
    return "".join(f"%{b:02X}" for b in text.encode("utf-8"))


def _recode(match: re.Match[str]) -> str:
    raw = bytes(int(h, 16) for h in match.group(0)[1:].split("%"))
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("has percent-escapes that are not UTF-8") from None
    return "".join(c if c in _UNRESERVED else _encode(c) for c in decoded)


def _canonical_text(text: str) -> str:
    if _BAD_ESCAPE.search(text):
        raise ValueError("has a '%' not followed by two hex digits")
    text = _NON_ASCII.sub(lambda m: _encode(m.group(0)), text)
    return _ESCAPES.sub(_recode, text)


def _lower_scheme(uri: str) -> str:
    scheme, sep, rest = uri.partition(":")
    return scheme.lower() + ":" + rest if sep and scheme else uri


def canonical(uri: str) -> str:
    """``uri`` in the core's canonical form (scheme lower-cased, escapes normalised, IRI encoded).

    :raises ValueError: a malformed percent-escape, or escapes that are not UTF-8 (the core's
        ``uri-invalid``).
    """
    return _lower_scheme(_canonical_text(uri))


def canonical_template(uri_template: str) -> str:
    """``uri_template`` with its literal parts in canonical form; expressions left alone.

    :raises ValueError: a literal part has a malformed percent-escape.
    """
    parts = _EXPRESSION.split(uri_template)
    return _lower_scheme("".join(p if i % 2 else _canonical_text(p) for i, p in enumerate(parts)))


def literal_start(template: str) -> str:
    """The literal text before the first expression: ``"a://x/{id}"`` -> ``"a://x/"``."""
    i = template.find("{")
    return template if i < 0 else template[:i]


def shape(template: str) -> str:
    """``template`` (canonical) with variable names erased and query expressions dropped: two
    templates of one shape match exactly the same URIs (the core's ``template-unreachable``)."""

    def erase(match: re.Match[str]) -> str:
        body = match.group(1)
        op = body[:1] if body[:1] in _OPERATORS else ""
        if op in _QUERY:
            return ""
        names = body[len(op) :].split(",")
        kept = names if op == ";" else ["*" if n.endswith("*") else "" for n in names]
        return "{" + op + ",".join(kept) + "}"

    return _BODY.sub(erase, template)


def uri_problem(uri: str) -> str | None:
    """Why the core would refuse ``uri`` as a fixed resource's URI, or ``None``: no scheme
    (``uri-not-absolute``), a ``{...}`` in it (``uri-is-template``), a malformed escape (``uri-invalid``)."""
    if not _SCHEME.match(uri):
        return "has no scheme"
    if UriTemplate.is_template(uri):
        return "contains {...}, which only a template may"
    try:
        canonical(uri)
    except ValueError as exc:
        return str(exc)
    return None


def template_problem(uri_template: str) -> str | None:
    """Why the core would refuse ``uri_template``, or ``None``: the SDK's strict RFC 6570 parser
    refuses it (adjacent variables too), it has no variable, a variable explodes, its literal start
    has no scheme, or a literal part has a malformed escape."""
    try:
        parsed = UriTemplate.parse(uri_template)
        UriTemplate.parse(canonical_template(uri_template))  # as the catalog compiles it
    except InvalidUriTemplate as exc:
        return f"is not an RFC 6570 template this server serves ({str(exc)[:200]})"
    except ValueError as exc:
        return str(exc)
    if not parsed.variables:
        return "has no {variable}; a fixed URI must be listed as a resource"
    exploding = [v.name for v in parsed.variables if v.explode]
    if exploding:
        return f"explodes variable {exploding[0]!r}, which this server does not serve"
    if not _SCHEME.match(literal_start(uri_template)):
        return "does not start with a scheme"
    return None


def schema_problem(schema: Mapping[str, Any] | None, what: str) -> str | None:
    """Why a tool's ``inputSchema`` or ``outputSchema`` cannot be served, or ``None``: MCP requires
    an object schema (``"type": "object"`` at the root); that it is valid JSON Schema is checked
    when its model is made (:func:`~mcp_providers.plugins.upstream.mapping.schema_model`)."""
    if schema is None or schema.get("type") == "object":
        return None
    return f'{what} is not an object schema (MCP requires "type": "object" at its root)'
