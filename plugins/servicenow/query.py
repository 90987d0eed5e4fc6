"""The one place an encoded query (``sysparm_query``) is built from caller values.

ServiceNow's encoded query has no escape for its separators, so a caller value is validated and
refused rather than escaped: ``^`` (term separator, e.g. ``INC0010001^ORactive=true`` widens a
lookup to every active record), ``,`` (splits ``IN`` lists) and ``@`` (splits ``BETWEEN``) are
refused in every value, and so is ``javascript:`` in any case and however spaced (a real instance
evaluates such a value as server-side script), and field names, table names, numbers and sys_ids must match strict
patterns. By example::

    >>> build_query([Filter(field="active", value="true")], [Order(field="sys_created_on", descending=True)])
    'active=true^ORDERBYDESCsys_created_on'
    >>> build_query([Filter(field="number", operator="IN", value=["INC0010001", "INC0010002"])])
    'numberININC0010001,INC0010002'

Every refusal raises :class:`QueryError` (a ``ValueError``) whose message says what was wrong and
what is accepted; resources turn it into ``InvalidParams`` (-32602), tools into a tool failure.
"""

import re
import unicodedata
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "Filter",
    "Operator",
    "Order",
    "QueryError",
    "build_query",
    "check_field",
    "check_number",
    "check_sys_id",
    "check_table",
    "check_value",
]

NUMBER_PATTERN = re.compile(r"^[A-Z]{2,10}[0-9]{4,12}$")
SYS_ID_PATTERN = re.compile(r"^[0-9a-f]{32}$")
TABLE_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,79}$")
FIELD_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,79}(\.[a-z_][a-z0-9_]{0,79}){0,3}$")
_FORBIDDEN = {"^": "a caret (^) separates query terms", ",": "a comma (,) separates IN values",
              "@": "an at-sign (@) separates BETWEEN bounds"}  # fmt: skip

Operator = Literal[
    "=", "!=", ">", ">=", "<", "<=", "LIKE", "NOTLIKE", "STARTSWITH", "ENDSWITH", "IN", "NOT IN",
    "ISEMPTY", "ISNOTEMPTY",
]  # fmt: skip
"""Encoded-query operators a filter may use. ``IN``/``NOT IN`` take a list; ``ISEMPTY`` and
``ISNOTEMPTY`` take no value; the rest take one string."""

_NO_VALUE = ("ISEMPTY", "ISNOTEMPTY")
_LIST_VALUE = ("IN", "NOT IN")


class QueryError(ValueError):
    """A caller value cannot go into an encoded query; the message says why and what is accepted."""


def _caret_hint(value: str) -> str:
    return " (it contains a caret, which ServiceNow would read as a query operator)" if "^" in value else ""


def _squeezed(value: str) -> str:
    """``value`` case-folded (NFKC) without whitespace, control or format characters (e.g. zero-width
    spaces), which a script prefix could hide behind."""
    folded = unicodedata.normalize("NFKC", value).casefold()
    return "".join(c for c in folded if not (c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Zs")))


def check_value(value: str, *, what: str = "value") -> str:
    """Return ``value`` if it is safe inside an encoded query.

    :raises QueryError: it contains ``^``, ``,``, ``@``, a control character, or ``javascript:``
        (any case, with any whitespace or invisible characters in between).
    """
    if "javascript:" in _squeezed(value):
        raise QueryError(
            f"{what} {value!r} contains 'javascript:', which ServiceNow evaluates as server-side script in a "
            f"query; it is refused: give a literal value"
        )
    for char, why in _FORBIDDEN.items():
        if char in value:
            raise QueryError(
                f"{what} {value!r} contains {char!r}: {why} in an encoded query and has no escape, "
                f"so it is refused; remove it"
            )
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise QueryError(f"{what} {value!r} contains a control character; remove it")
    return value


def check_number(value: str) -> str:
    """Return ``value`` if it is a record number such as ``INC0010001``.

    :raises QueryError: it is not 2-10 capital letters followed by 4-12 digits (another case names
        the one to use: ``inc0010001`` -> ``INC0010001``).
    """
    if not NUMBER_PATTERN.fullmatch(value):
        if NUMBER_PATTERN.fullmatch(value.upper()):  # a rule names the one spelling: another reads past it
            use = value.upper()
            raise QueryError(f"number {value!r} is another spelling of {use!r}: use {use!r} (expected 2-10 capital "
                             "letters then 4-12 digits)")  # fmt: skip
        hint = _caret_hint(value)
        raise QueryError(
            f"number {value!r} is not a record number{hint}: expected 2-10 capital letters then "
            f"4-12 digits, e.g. INC0010001"
        )
    return value


def check_sys_id(value: str) -> str:
    """Return ``value`` if it is a sys_id (32 lowercase hex digits).

    :raises QueryError: otherwise (upper-case hex names the one spelling to use).
    """
    if not SYS_ID_PATTERN.fullmatch(value):
        if SYS_ID_PATTERN.fullmatch(value.lower()):  # a rule names the one spelling: another reads past it
            use = value.lower()
            raise QueryError(f"sys_id {value!r} is another spelling of {use!r}: use {use!r} (expected 32 lowercase "
                             "hexadecimal characters)")  # fmt: skip
        raise QueryError(
            f"sys_id {value!r} is not a sys_id{_caret_hint(value)}: expected 32 lowercase hexadecimal characters, "
            f"e.g. 9d385017c611228701d22104cc95c371"
        )
    return value


def check_table(value: str) -> str:
    """Return ``value`` if it is a table name such as ``incident`` or ``u_custom_table``.

    :raises QueryError: otherwise.
    """
    if not TABLE_PATTERN.fullmatch(value):
        raise QueryError(
            f"table {value!r} is not a table name: expected a lowercase letter then up to 79 lowercase "
            f"letters, digits or underscores, e.g. incident"
        )
    return value


def check_field(value: str) -> str:
    """Return ``value`` if it is a field name, optionally dot-walked (``assignment_group.name``).

    :raises QueryError: otherwise.
    """
    if not FIELD_PATTERN.fullmatch(value):
        raise QueryError(
            f"field {value!r} is not a field name: expected lowercase letters, digits and underscores, "
            f"optionally dot-walked (assignment_group.name)"
        )
    return value


class Filter(BaseModel):
    """One condition: ``field``, ``operator`` and ``value`` (a list for ``IN``/``NOT IN``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str = Field(description="Field name, optionally dot-walked, e.g. 'priority' or 'caller_id.name'.")
    operator: Operator = Field(default="=", description="Comparison operator.")
    value: str | list[str] | None = Field(
        default=None,
        description="A string; a list of strings for IN / NOT IN; omitted for ISEMPTY / ISNOTEMPTY. "
        "'^', ',' and '@' are refused.",
    )

    @field_validator("field")
    @classmethod
    def _field(cls, value: str) -> str:
        return check_field(value)

    @model_validator(mode="after")
    def _value_shape(self) -> "Filter":
        if self.operator in _NO_VALUE:
            if self.value not in (None, "", []):
                raise QueryError(f"operator {self.operator} takes no value; omit value")
        elif self.operator in _LIST_VALUE:
            if not isinstance(self.value, list) or not self.value:
                raise QueryError(f"operator {self.operator} takes a non-empty list of values, e.g. ['1', '2']")
            for item in self.value:
                check_value(item, what=f"{self.field} value")
        else:
            if not isinstance(self.value, str):
                raise QueryError(f"operator {self.operator} takes one string value, e.g. '1'")
            check_value(self.value, what=f"{self.field} value")
        return self

    def encode(self) -> str:
        """This condition as one encoded-query term, e.g. ``priority<=2``."""
        if self.operator in _NO_VALUE:
            return f"{self.field}{self.operator}"
        if isinstance(self.value, list):
            return f"{self.field}{self.operator}{','.join(self.value)}"
        return f"{self.field}{self.operator}{self.value}"


class Order(BaseModel):
    """Sort by ``field``, ascending unless ``descending``."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built at first use (issue 43)

    field: str = Field(description="Field name to sort by, e.g. 'sys_created_on'.")
    descending: bool = False

    @field_validator("field")
    @classmethod
    def _field(cls, value: str) -> str:
        return check_field(value)

    def encode(self) -> str:
        """``ORDERBY<field>`` or ``ORDERBYDESC<field>``."""
        return f"{'ORDERBYDESC' if self.descending else 'ORDERBY'}{self.field}"


def build_query(filters: Sequence[Filter] = (), order_by: Sequence[Order] = ()) -> str:
    """Join filters (AND) and sort terms into one encoded query.

    :param filters: conditions, all of which must hold.
    :param order_by: sort keys, most significant first.
    :returns: the encoded query, e.g. ``active=true^priority<=2^ORDERBYDESCsys_created_on``;
        ``""`` when both are empty.
    :raises QueryError: a value is unsafe (filters and orders are checked when built; this checks
        again so no unchecked instance gets through ``model_construct``).
    """
    terms: list[str] = []
    for condition in filters:
        check_field(condition.field)
        values = condition.value if isinstance(condition.value, list) else [condition.value or ""]
        for item in values:
            check_value(item, what=f"{condition.field} value")
        terms.append(condition.encode())
    for order in order_by:
        check_field(order.field)
        terms.append(order.encode())
    return "^".join(terms)
