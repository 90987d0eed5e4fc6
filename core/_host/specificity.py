"""Which of an owner's templates answers a URI that several match: the most specific one.

Declaration order never decides (round 4 item 18): ``res://users/{id}`` answers ``res://users/42``
whether it is declared before or after ``res://{kind}/{id}``. Templates are tried in the order of
:func:`specificity`:

1. the longer literal start first (``res://users/`` before ``res://``), since it is what the
   prefix index routes on and a literal beats a variable at the first place they differ;
2. then more literal characters in all (``res://{a}/detail`` before ``res://{a}/{b}``);
3. then fewer multi-segment variables (``{name}`` before ``{+path}``: one segment is narrower);
4. then declaration order.

Two templates of one :func:`shape` (the same literals and expressions, variable names aside, and
query expressions aside since a query is matched leniently) match exactly the same URIs, so no
order reaches the second: :func:`unreachable` reports them and ``check`` fails
(``template-unreachable``), unless one is listed (made from a source's listing): that one is then
left out alone (:mod:`~mcp_providers._host.collisions`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcp_providers._host.collisions import Collisions, Side
from mcp_providers._host.declarations import Declared
from mcp_providers.uris import InvalidUri, canonical_template, literal_start, shape

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_OPERATORS = frozenset("+#./;?&")
_MULTI_SEGMENT = frozenset("+#")


def _expressions(template: str) -> list[tuple[str, list[str]]]:
    """``(operator, variable specs)`` of each expression; ``""`` is the simple operator."""
    out = []
    for body in _EXPRESSION.findall(template):
        op = body[:1] if body[:1] in _OPERATORS else ""
        out.append((op, body[len(op) :].split(",")))
    return out


def specificity(template: str, index: int) -> tuple[int, int, int, int]:
    """The sort key of a canonical template: smaller keys are tried first (see the module docstring).

    >>> specificity("res://users/{id}", 1) < specificity("res://{kind}/{id}", 0)
    True
    """
    literal = len(_EXPRESSION.sub("", template))
    multi = sum(len(names) for op, names in _expressions(template) if op in _MULTI_SEGMENT)
    return (-len(literal_start(template)), -literal, multi, index)


def unreachable(declared: Iterable[Declared], found: Collisions) -> None:
    """Templates of one provider that another of its templates of the same shape always answers
    (a listed one is left out alone, :mod:`~mcp_providers._host.collisions`)."""
    for d in declared:
        seen: dict[str, Side] = {}
        for t in list(d.templates):
            try:
                key = shape(canonical_template(t.uri_template))
            except InvalidUri:
                continue  # the grammar rules report it
            first = seen.setdefault(key, Side(d, t, t.uri_template))
            if first.value != t.uri_template:  # the same string is duplicate-template's to report
                found.clash(
                    "template-unreachable",
                    Side(d, t, t.uri_template),
                    first,
                    f"provider {d.provider.name!r} also declares {first.value}, which matches exactly the same URIs, "
                    "so one of the two can never answer",
                    "drop one, or add a literal that tells them apart (e.g. res://users/{id})",
                )
