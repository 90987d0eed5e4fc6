"""What is said about a document that cannot be parsed or is invalid: where, and what kind of error,
never the document's text.

A document may hold example credentials, internal host names or personal data in its examples and
defaults. The parser's and the validator's own messages quote it (PyYAML prints the offending
lines; jsonschema prints the offending value, ``'sk-live-...' is not of type 'integer'``), and
those messages reach logs, ``check``, ``/status`` and start-up failures. So they are rebuilt from
structured parts: line and column, the error's kind, the path of keys in the document, and what
the *schema* expected (the OpenAPI meta-schema's rule, never the document's value).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from jsonschema.exceptions import ValidationError

__all__ = ["invalid", "unparsable"]

_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_SHORT = 4
"""Quoted text up to this long is kept (``'\\t'``, ``'%'``): PyYAML names single characters so."""
_NAMED_ONLY = frozenset(
    {"ExtraParametersError", "ParameterDuplicateError", "UnresolvableParameterError", "DuplicateOperationIDError"}
)
"""openapi-spec-validator's errors whose messages quote names only (parameters, operationIds, paths)."""
_KEY_CHARS = 60


def _masked(problem: str) -> str:
    """``problem`` with quoted text longer than a few characters replaced, except token names
    such as ``'<stream end>'``."""

    def keep(match: re.Match[str]) -> str:
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        return match.group(0) if len(inner) <= _SHORT or re.fullmatch(r"<[a-z ]+>", inner) else "'...'"

    return _QUOTED.sub(keep, problem)


def unparsable(exc: Exception) -> str:
    """What kind of JSON or YAML error ``exc`` is and where: ``"expected ',' or ']', but got
    '<stream end>' (YAML, line 2, column 1)"``; never the text at that place."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (JSON, line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text (byte {exc.start})"
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return f"{_masked(exc.problem or exc.context or type(exc).__name__)} (YAML{where})"
    if isinstance(exc, yaml.reader.ReaderError):
        return f"a character YAML does not allow (YAML, character {exc.position})"
    return f"{type(exc).__name__} while parsing"


def _key(part: Any) -> str:
    text = str(part)
    return text if len(text) <= _KEY_CHARS else text[: _KEY_CHARS - 3] + "..."


def _expected(exc: ValidationError) -> str:
    """What the schema asked for, in the schema's words."""
    rule, instance = exc.validator, exc.instance
    wanted: Any = exc.validator_value
    if rule == "required" and isinstance(instance, dict) and isinstance(wanted, list):
        missing = [str(name) for name in wanted if name not in instance]
        return f"misses the required propert{'y' if len(missing) == 1 else 'ies'} {', '.join(missing)}"
    if rule == "type":
        return f"should be of type {wanted if isinstance(wanted, str) else ' or '.join(map(str, wanted))}"
    if rule in ("additionalProperties", "unevaluatedProperties", "patternProperties") and isinstance(instance, dict):
        allowed = set(exc.schema.get("properties", {})) if isinstance(exc.schema, dict) else set()
        extra = sorted(_key(k) for k in instance if k not in allowed)[:5]
        return f"has properties the OpenAPI schema does not allow here ({', '.join(extra)})"
    if rule in ("enum", "const") and len(json.dumps(wanted, default=str)) <= 200:
        return f"should be {'one of ' if rule == 'enum' else ''}{json.dumps(wanted, default=str)}"
    if rule in ("oneOf", "anyOf"):
        return "matches none of the shapes the OpenAPI schema allows here"
    return f"fails the OpenAPI schema's {rule!r} rule"


def invalid(exc: ValidationError) -> str:
    """Where in the document and what the OpenAPI meta-schema (or a check of the specification)
    wanted: ``"at paths//pets/get: misses the required property responses"``; never a value
    from the document."""
    where = "/".join(_key(p) for p in exc.absolute_path) or "(root)"
    if type(exc).__name__ in _NAMED_ONLY:
        return f"at {where}: {exc.message[:300]}"
    if isinstance(exc.validator, str):
        return f"at {where}: {_expected(exc)}"
    return f"at {where}: it fails a check of the OpenAPI specification (its message may quote the document)"
