"""A read's template values, checked against their parameters' schemas as a tool's arguments are,
and taken in one spelling only.

A policy rule judges the URI a client read; the service reads the value behind it. A service
reading an integer reads ``1``, ``01``, ``+1`` and ``1.0`` as one number, so a deny of
``openapi://svc/loop/1`` would be read past as ``openapi://svc/loop/01``. So each path and query
value of a read is first made the JSON value its schema takes (the text itself, else the JSON
number, boolean or ``null`` it spells), checked against the parameter's schema by the validator a
tool's arguments are checked with (:func:`~mcp_providers.plugins._schemas.validator`), and taken
only in its canonical spelling:

- a number as its shortest JSON text: ``1`` (not ``01``, ``+1``, ``1.0``, ``1e0``), ``1.5`` (not
  ``1.50``), ``0`` (not ``-0``); a boolean as ``true`` or ``false``; an ``enum`` value exactly;
- a string of ``format`` ``uuid`` lower-case with dashes, ``date`` as ``YYYY-MM-DD``, ``date-time``
  as the instant in UTC, ``YYYY-MM-DDTHH:MM:SS[.f]Z`` (a value that is none of these is refused);
  any other string as it is.

Another spelling of a value the schema takes is refused (-32602) naming the one to use; a value the
schema does not take is refused naming the schema's rule. Nothing is sent either way.
"""

from __future__ import annotations

import datetime
import json
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from mcp_providers.errors import InvalidParams
from mcp_providers.plugins import _schemas
from mcp_providers.plugins.openapi.document import Operation, Parameter
from mcp_providers.plugins.openapi.query import text

__all__ = ["Values", "spelled"]

_NOT = object()
"""No JSON scalar: the text spells none."""
_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}
"""Words a lax reader takes for a boolean (only to name the one spelling in a refusal)."""


def _checker(schema: Mapping[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    return _schemas.validator(schema, draft=Draft202012Validator, checked=True)


def _items(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The items schema of array ``schema``, with the ``$defs`` its references resolve in."""
    items = schema.get("items")
    items = dict(items) if isinstance(items, Mapping) else {}
    return {**items, "$defs": schema["$defs"]} if "$defs" in schema else items


class Values:
    """The checks of one GET operation's template values (made at composition).

    :raises UnsafeSchema: a parameter's schema refers outside itself, loops, or has a pattern not
        run in linear time (as a tool's would be).
    """

    def __init__(self, operation: Operation) -> None:
        self._op = operation
        self._whole = {p.name: _checker(p.schema) for p in operation.parameters}
        self._item = {p.name: _checker(_items(p.schema)) for p in operation.parameters if _is_array(p)}

    def check(self, path: Mapping[str, str], query: Mapping[str, Any]) -> None:
        """Check ``path`` (path parameter name -> text) and ``query`` (query parameter name -> text,
        or list of texts for an array).

        :raises InvalidParams: a value the parameter's schema does not take (its rule named), or
            another spelling of one it takes (the one to use named).
        """
        for p in self._op.parameters:
            given = path.get(p.name) if p.location == "path" else query.get(p.name)
            if given is None:
                continue
            if p.name in self._item:
                texts = given.split(",") if isinstance(given, str) else list(given)
                value: Any = [self._scalar(p, self._item[p.name], text) for text in texts]
                shown = given if isinstance(given, str) else ",".join(given)
            else:
                value = self._scalar(p, self._whole[p.name], given)
                shown = given
            errors = _schemas.errors(self._whole[p.name], value)
            if errors:
                self._refuse(p, shown, f"is not valid: {errors[0].message[:200]}")

    def _scalar(self, p: Parameter, checker: Any, text: str) -> Any:
        """The JSON value ``text`` is in the schema ``checker`` checks, refused in another spelling
        than its one; a value the schema does not take is returned for :meth:`check` to refuse."""
        if checker.is_valid(text):
            canonical = _formatted(checker.schema, text, lambda why: self._refuse(p, text, why))
            if canonical != text:
                self._refuse(p, text, _another(canonical))
            return text
        value = _json_scalar(text)
        if value is not _NOT and checker.is_valid(value):
            if (canonical := _spelling(value)) != text:
                self._refuse(p, text, _another(canonical))
            return value
        for meant in _lax(text, checker.schema):
            if checker.is_valid(meant):
                self._refuse(p, text, _another(meant if isinstance(meant, str) else _spelling(meant)))
        return text if value is _NOT else value  # not valid: check() names the schema's rule

    def _refuse(self, p: Parameter, text: str, why: str) -> NoReturn:
        raise InvalidParams(
            f"{self._op.operation_id}: {p.location} parameter {p.variable!r} = {text[:80]!r} {why}",
            data={"parameter": p.variable},
        )


def spelled(operation: Operation, p: Parameter, value: str) -> None:
    """Refuse string ``value`` of ``p`` (a tool's path argument, its schema checked already) in
    another spelling than its ``format``'s one (``uuid``, ``date``, ``date-time``).

    :raises InvalidParams: another spelling (the one to use named), or not of the format.
    """

    def refuse(why: str) -> NoReturn:
        raise InvalidParams(f"{operation.operation_id}: path parameter {p.name!r} = {value[:80]!r} {why}")

    if (canonical := _formatted(p.schema, value, refuse)) != value:
        refuse(_another(canonical))


def _another(canonical: str) -> str:
    shown = repr(canonical[:80])
    return f"is another spelling of {shown}: use {shown}"


def _is_array(p: Parameter) -> bool:
    kind = p.schema.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def _json_scalar(text: str) -> Any:
    """The JSON number, boolean or ``null`` ``text`` is, else :data:`_NOT` (``NaN`` is none)."""

    def no_constant(_word: str) -> Any:
        raise ValueError("not JSON")

    try:
        value = json.loads(text, parse_constant=no_constant)
    except ValueError:
        return _NOT
    return value if value is None or isinstance(value, bool | int | float) else _NOT


def _spelling(value: Any) -> str:
    """The one text of JSON scalar ``value``: ``true``, ``null``, ``1`` (for 1.0 too), ``1.5``,
    ``10000000000000000`` (for 1e16 too), ``1e-07``."""
    return text(value)


def _lax(text: str, schema: Mapping[str, Any]) -> list[Any]:
    """What a lax reader takes ``text`` for (``01`` -> 1, ``yes`` -> true, ``Sold`` -> ``"sold"``),
    so a refusal can name the one spelling of what was meant."""
    meant: list[Any] = []
    for read in (int, float):
        try:
            number = read(text)
        except ValueError:
            continue
        if math.isfinite(number):
            meant.append(number)
    if text.strip().lower() in _WORDS:
        meant.append(_WORDS[text.strip().lower()])
    choices = schema.get("enum")
    if isinstance(choices, list):
        meant.extend(c for c in choices if isinstance(c, str) and c.lower() == text.strip().lower())
    return meant


def _formatted(schema: Mapping[str, Any], text: str, refuse: Callable[[str], NoReturn]) -> str:
    """``text``'s canonical spelling in the ``format`` of string ``schema`` (``uuid``, ``date``,
    ``date-time``; ``$ref`` followed within ``$defs``, and ``anyOf``/``oneOf``/``allOf`` looked
    through: FastAPI's ``Optional[UUID]``, OpenAPI 3.0's ``allOf: [$ref]``), else ``text`` itself.
    Of several formats, the first ``text`` is in; none, and no alternative without one: refused."""
    formats = _formats(schema, schema.get("$defs", {}), 0)
    known = [f for f in formats if f in _CANONICAL]
    for found in known:
        canonical = _CANONICAL[found](text)
        if canonical is not None:
            return canonical
    if known and None not in formats:
        if known[0] == "date-time":
            _instant(text, refuse)  # says which: not a date-time, or no offset
        return refuse(_NOT_IN[known[0]])
    return text


def _formats(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> list[str | None]:
    """The ``format`` of each alternative ``schema`` allows (``None``: one without a format), a
    ``null`` alternative left out."""
    if isinstance(schema.get("format"), str):
        return [str(schema["format"])]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 8:
        target = defs.get(ref.removeprefix("#/$defs/"))
        return _formats(target, defs, depth + 1) if isinstance(target, Mapping) else [None]
    for combined in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(combined)
        if isinstance(branches, list) and depth < 8:
            found = [f for b in branches if isinstance(b, Mapping) and b.get("type") != "null"
                     for f in _formats(b, defs, depth + 1)]  # fmt: skip
            if combined == "allOf":  # every member applies: a format any of them names
                found = [f for f in found if f is not None] or [None]
            return found or [None]
    return [None]


_COMBINED = ("anyOf", "oneOf", "allOf")


def enum_of(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> list[Any] | None:
    """The closed list of values ``schema`` allows, or ``None`` when it allows others too:
    its ``enum``, found as :func:`_formats` finds a ``format`` (``$ref`` within ``$defs``;
    ``anyOf``/``oneOf``: every alternative but ``null`` has one, joined; ``allOf``: any member's)."""
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 8:
        target = defs.get(ref.removeprefix("#/$defs/"))
        return enum_of(target, defs, depth + 1) if isinstance(target, Mapping) else None
    for combined in _COMBINED:  # the alternatives, as for a format
        branches = schema.get(combined)
        if not isinstance(branches, list) or depth >= 8:
            continue
        found = [enum_of(b, defs, depth + 1) for b in branches if isinstance(b, Mapping) and b.get("type") != "null"]
        if combined == "allOf":
            return next((f for f in found if f is not None), None)
        if found and all(f is not None for f in found):
            joined: list[Any] = []
            for value in (v for f in found for v in f or ()):
                if value not in joined:  # values may be unhashable (an object enum)
                    joined.append(value)
            return joined
        return None
    return None


def _uuid(text: str) -> str | None:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def _date(text: str) -> str | None:
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        return None


def _date_time(text: str) -> str | None:
    def not_one(_why: str) -> NoReturn:
        raise ValueError(_why)

    try:
        return _instant(text, not_one)
    except ValueError:
        return None


_CANONICAL: dict[str, Callable[[str], str | None]] = {"uuid": _uuid, "date": _date, "date-time": _date_time}
"""A format's canonical spelling of a text, ``None`` when the text is not in it."""
_NOT_IN = {
    "uuid": "is not a UUID: give 32 hex digits in lower case, dashed 8-4-4-4-12",
    "date": "is not a date: give YYYY-MM-DD",
}


def _instant(text: str, refuse: Callable[[str], NoReturn]) -> str:
    """``text``, an RFC 3339 date-time, as its instant in UTC: ``2024-01-05T10:00:00.5Z``."""
    try:
        moment = datetime.datetime.fromisoformat(text.upper())
    except ValueError:
        return refuse("is not a date-time: give YYYY-MM-DDTHH:MM:SSZ (RFC 3339, in UTC)")
    if moment.tzinfo is None:
        return refuse("has no time zone offset: give the instant in UTC, YYYY-MM-DDTHH:MM:SSZ")
    utc = moment.astimezone(datetime.UTC)
    fraction = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
    return utc.replace(tzinfo=None, microsecond=0).isoformat() + fraction + "Z"
