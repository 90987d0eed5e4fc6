"""A text value's conversion to a decorated function's parameter type, and its one spelling.

Template variables and prompt arguments arrive as text; :func:`converter` makes each the value of
its parameter's type. A template variable is taken in one spelling only: a policy rule judges the
URI as sent, so two texts reaching one value (``1`` and ``01``; ``1`` and ``1.0`` for a Decimal; one
instant at two UTC offsets) would let one read past a rule naming the other.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pydantic_core
from pydantic import TypeAdapter, ValidationError

from mcp_providers.errors import InvalidParams


def converter(hint: Any, name: str, one_spelling: bool = False) -> Callable[[str], Any] | None:
    """How a text value (template variable, prompt argument) becomes a parameter ``name`` annotated
    ``hint`` (``None``: none), or ``None`` when the parameter takes the text as it is.

    ``one_spelling`` (template variables): a value is taken only in its canonical spelling, the
    type's own JSON text (``1`` not ``01``, ``true`` not ``yes``, a lower-case dashed UUID, what a
    validator of the type folds it to), else :class:`~mcp_providers.errors.InvalidParams` names the spelling to use. The
    gate judges the URI as sent, so two URIs reaching one value would let one read past a rule
    naming the other. A type with no JSON form has no spelling to compare and is taken as sent.
    """
    if hint is None or hint is str:  # Annotated[str, ...] is validated: its validators may fold it
        return None
    adapter = TypeAdapter(hint)

    def convert(text: str) -> Any:
        try:
            value = adapter.validate_python(text)
        except ValidationError as exc:
            first = exc.errors()[0]["msg"] if exc.errors() else str(exc)
            raise InvalidParams(f"{name}={text[:80]!r} is not valid: {first}") from None
        if one_spelling and (canonical := _spelling(adapter, value)) not in (None, text):
            shown = repr(canonical[:80])
            raise InvalidParams(f"{name}={text[:80]!r} is another spelling of {shown}: use {shown}")
        return value

    return convert


def _spelling(adapter: TypeAdapter[Any], value: Any) -> str | None:
    """``value``'s canonical text: the JSON form of the one value of those equal to it (a string as
    it is), so equal values have one text; ``None`` if it has none."""
    if isinstance(value, Decimal) and value.is_finite():  # 1, 1.0 and 1.00 are equal Decimals
        return "0" if value.is_zero() else format(value.normalize(), "f")
    try:
        dumped = adapter.dump_python(_one_of_equals(value), mode="json")
    except (pydantic_core.PydanticSerializationError, ValueError, TypeError):
        return None
    return dumped if isinstance(dumped, str) else pydantic_core.to_json(dumped).decode()


def _one_of_equals(value: Any) -> Any:
    """One value for each class of equal ones: 0.0 for -0.0, an aware datetime or time at UTC
    (``01:00+01:00`` and ``00:00Z`` are one instant)."""
    if isinstance(value, float) and value == 0:
        return 0.0
    if isinstance(value, datetime.datetime) and value.utcoffset() is not None:
        return value.astimezone(datetime.UTC)
    if isinstance(value, datetime.time) and value.utcoffset() is not None:
        return datetime.datetime.combine(datetime.date(2000, 1, 3), value).astimezone(datetime.UTC).timetz()
    return value
