"""Entries of a settings list that share a name: each such entry is left out, the others kept.

Two ``[[plugins.openapi.services]]`` (or ``[[plugins.upstream.servers]]``, or
``[[plugins.servicenow.instances]]``) of one name cannot both be served: the name is in their
providers' names, their URIs and their receipts, and picking one would be a guess. Refusing the
settings would cost every other entry too, so the settings keep only the names configured once
(:func:`distinct`) and report the others in their ``left_out`` attribute, which the core reads
(duck-typed: items with ``value``, ``message`` and ``fix``) into ``left-out`` lines that ``check``
warns about, ``/status`` lists and a reload names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

__all__ = ["LeftOutEntry", "distinct"]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


E = TypeVar("E", bound=_Named)


@dataclass(frozen=True, slots=True)
class LeftOutEntry:
    """Entries of one name, left out of a plugin's settings (the core's ``left-out`` line)."""

    value: str
    """The name they share."""
    message: str
    fix: str


def distinct(entries: Sequence[E], table: str) -> tuple[tuple[E, ...], tuple[LeftOutEntry, ...]]:
    """The entries whose name no other entry has, in config order, and one :class:`LeftOutEntry`
    per name configured more than once, e.g. for ``table`` ``[plugins.openapi] services``::

        duplicate-name: [plugins.openapi] services entries 1 and 3 are both named 'pets'; the server
        never picks a winner: neither is served

    :param entries: validated entries, each with a ``name``.
    :param table: where they are configured, e.g. ``[plugins.upstream] servers``.
    """
    at: dict[str, list[int]] = {}
    for i, entry in enumerate(entries, start=1):
        at.setdefault(entry.name, []).append(i)
    kept = tuple(e for e in entries if len(at[e.name]) == 1)
    left_out = tuple(_said(name, places, table) for name, places in at.items() if len(places) > 1)
    return kept, left_out


def _said(name: str, places: list[int], table: str) -> LeftOutEntry:
    numbers = ", ".join(map(str, places[:-1])) + f" and {places[-1]}"
    both, who = ("both", "neither") if len(places) == 2 else ("all", "none")
    message = (
        f"duplicate-name: {table} entries {numbers} are {both} named {name!r}; the server never picks a winner: "
        f"{who} is served"
    )
    fix = f"give each its own name in {table} (entries {numbers}), or remove all but one"
    return LeftOutEntry(name, message, fix)
