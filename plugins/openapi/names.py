"""The settings that name parts of a service's document, checked against it.

``exclude_operations``, ``exclude_tags`` and the keys of ``effects`` each name operationIds or
tags. A name that matches nothing in the document is a typo until shown otherwise, and a typo
there fails open: an operation the operator meant to hide is served, or a tool keeps the weaker
effects of its method. So such a name refuses the whole service (:func:`refusals`): it serves
nothing, and its providers fail to start saying which setting, which name and the closest match.

``include_operations`` and ``include_tags`` fail safe (a typo serves less, never more), so a name
there that matches nothing is an advisory (:func:`advisories`): ``check`` lists it and the service
serves what the other names select.

Known names: the operationIds of the document's operations (those of HEAD, OPTIONS and TRACE too,
which are not served; an operation without one is named ``<method>_<path>``, e.g. ``get_/pets``),
and the tags those operations carry or the document's ``tags`` list declares.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mcp_providers.config import suggestion
from mcp_providers.plugins.openapi.document import Document
from mcp_providers.plugins.openapi.settings import ServiceSettings

__all__ = ["LeftOut", "advisories", "refusals"]


@dataclass(frozen=True, slots=True)
class LeftOut:
    """Something a service's settings or document offered that is not served, and why (``check``
    prints it as a ``left-out`` advisory: ``value``, ``message``, ``fix``)."""

    value: str
    message: str
    fix: str


def _unknown(setting: str, names: Iterable[str], known: frozenset[str], kind: str) -> list[tuple[str, str]]:
    """``(name, message)`` for each of ``names`` not in ``known``."""
    out = []
    for name in names:
        if name not in known:
            hint = suggestion(name, known) or f"; its {kind}s: {', '.join(sorted(known)[:10]) or '(none)'}"
            out.append((name, f"{setting} names {name!r}, but the document has no such {kind}{hint}"))
    return out


def _known(document: Document) -> tuple[frozenset[str], frozenset[str]]:
    ids = frozenset(op.operation_id for op in document.operations).union(document.unserved)
    tags = frozenset(document.tags).union(*(op.tags for op in document.operations))
    return ids, tags


def refusals(settings: ServiceSettings, document: Document) -> list[str]:
    """Why ``settings`` cannot be served with ``document``: one message per name in
    ``exclude_operations``, ``exclude_tags`` or ``effects`` that the document does not have, and per
    ``effects`` key naming a GET operation (served as a resource, so effects cannot apply).

    :returns: messages like ``"exclude_operations names 'deletPet', but the document has no such
        operationId; did you mean \\"deletePet\\"?"``; empty when every name is known.
    """
    ids, tags = _known(document)
    found = [
        *_unknown("exclude_operations", settings.exclude_operations, ids, "operationId"),
        *_unknown("exclude_tags", settings.exclude_tags, tags, "tag"),
        *_unknown("effects", settings.effects, ids, "operationId"),
    ]
    gets = {op.operation_id for op in document.operations if op.method == "GET"}
    for name in settings.effects:
        if name in gets:
            found.append((name, f"effects names {name!r}, a GET operation: it is served as a read-only resource, "
                                "so no effects apply; remove it, or name the tool's operationId"))  # fmt: skip
    return [message for _, message in found]


def advisories(settings: ServiceSettings, document: Document) -> list[LeftOut]:
    """One :class:`LeftOut` per name in ``include_operations`` or ``include_tags`` that the document
    does not have (nothing is served for it)."""
    ids, tags = _known(document)
    found = [
        *_unknown("include_operations", settings.include_operations, ids, "operationId"),
        *_unknown("include_tags", settings.include_tags, tags, "tag"),
    ]
    return [
        LeftOut(name, f"service {settings.name!r}: {message}", "correct or remove the name") for name, message in found
    ]
