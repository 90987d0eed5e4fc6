"""The emulator's reading of ``sysparm_query``: parsing an encoded query and comparing one term.

Supported: ``^``, ``^OR``, ``^NQ``, ``=``, ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``LIKE``,
``NOTLIKE``, ``STARTSWITH``, ``ENDSWITH``, ``IN``, ``NOT IN``, ``ISEMPTY``, ``ISNOTEMPTY``,
``ORDERBY``/``ORDERBYDESC``, one level of dot-walking and a trailing ``^EQ``. ``^^`` is refused
rather than split. Matching rows against a parsed query needs the tables, so it lives in
:mod:`.store`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ParsedQuery", "QuerySyntaxError", "Term", "as_number", "compare", "parse_encoded_query"]

_TERM = re.compile(
    r"^([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)?)"
    r"(ISNOTEMPTY|ISEMPTY|NOT IN|NOTLIKE|STARTSWITH|ENDSWITH|LIKE|IN|!=|>=|<=|=|>|<)(.*)$",
    re.DOTALL,
)


class QuerySyntaxError(ValueError):
    """The encoded query cannot be parsed (the emulator answers 400)."""


@dataclass(frozen=True, slots=True)
class Term:
    """One condition ``<field><operator><value>``."""

    field: str
    operator: str
    value: str


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """An encoded query: OR'd groups (``^NQ``) of AND'd clauses of OR'd terms, plus sort keys."""

    groups: tuple[tuple[tuple[Term, ...], ...], ...]
    orders: tuple[tuple[str, bool], ...]
    unparsed: tuple[str, ...]


def parse_encoded_query(query: str) -> ParsedQuery:
    """Parse ``sysparm_query``.

    >>> parse_encoded_query("active=true^priority=1^ORpriority=2^ORDERBYDESCnumber").orders
    (('number', True),)

    :raises QuerySyntaxError: the query contains ``^^`` (no primary source says it is an escape, so
        it is refused instead of being split silently).
    """
    if "^^" in query:
        raise QuerySyntaxError("'^^' in sysparm_query is not supported: a caret cannot be escaped")
    groups: list[tuple[tuple[Term, ...], ...]] = []
    orders: list[tuple[str, bool]] = []
    unparsed: list[str] = []
    for group_text in query.split("^NQ") if query else []:
        clauses: list[list[Term]] = []
        for part in group_text.split("^"):
            if part in ("", "EQ"):
                continue
            if part.startswith("ORDERBYDESC"):
                orders.append((part[len("ORDERBYDESC") :], True))
                continue
            if part.startswith("ORDERBY"):
                orders.append((part[len("ORDERBY") :], False))
                continue
            is_or = part.startswith("OR") and bool(clauses)
            match = _TERM.match(part[2:] if is_or else part)
            if match is None:
                unparsed.append(part)
                continue
            term = Term(match.group(1), match.group(2), match.group(3))
            if is_or:
                clauses[-1].append(term)
            else:
                clauses.append([term])
        groups.append(tuple(tuple(c) for c in clauses))
    return ParsedQuery(tuple(groups), tuple(orders), tuple(unparsed))


def as_number(value: str) -> float | None:
    """``value`` as a float, or ``None`` when it is not a number."""
    try:
        return float(value)
    except ValueError:
        return None


def compare(operator: str, actual: str, expected: str) -> bool:
    """Whether ``actual <operator> expected`` holds; ``>``/``<`` compare numbers when both are."""
    if operator == "=":
        return actual == expected
    if operator == "!=":
        return actual != expected
    if operator == "LIKE":
        return expected.casefold() in actual.casefold()
    if operator == "NOTLIKE":
        return expected.casefold() not in actual.casefold()
    if operator == "STARTSWITH":
        return actual.casefold().startswith(expected.casefold())
    if operator == "ENDSWITH":
        return actual.casefold().endswith(expected.casefold())
    if operator == "IN":
        return actual in expected.split(",")
    if operator == "NOT IN":
        return actual not in expected.split(",")
    if operator == "ISEMPTY":
        return actual == ""
    if operator == "ISNOTEMPTY":
        return actual != ""
    a, b = as_number(actual), as_number(expected)
    left: Any = a if a is not None and b is not None else actual
    right: Any = b if a is not None and b is not None else expected
    return bool({">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right}[operator])
