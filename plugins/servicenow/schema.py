"""What the plugin knows of table shapes: reference targets and choice fields.

Used for two things:

- **dot-walk authorization**: ``caller_id.email`` on ``incident`` reads ``sys_user``, so a tool asks
  the policy about ``servicenow://{instance}/sys_user`` too (:func:`walk`). A dot-walk through a
  field not listed here is refused: the plugin cannot tell which table it reaches.
- **record shape** (:func:`normalise`): every record the plugin returns holds reference and
  choice fields as ``{"value": <raw>, "display_value": <label>}`` and every other field as a plain
  string. Records are fetched with ``sysparm_display_value=all`` and normalised, so the shape is the
  same whatever was asked; an empty reference is ``{"value": "", "display_value": ""}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from mcp_providers.plugins.servicenow.seed import REFERENCES

__all__ = ["CHOICE_FIELDS", "RECORD_SHAPE", "REFERENCE_FIELDS", "UnknownDotWalk", "normalise", "raw", "walk"]

RECORD_SHAPE = "normalised: reference and choice fields are {value, display_value}, every other field a plain string"
"""What ``metadata.record_shape`` (resources) and the tools' descriptions say about records."""

_TASK_REFERENCES = {
    "caller_id": "sys_user", "assigned_to": "sys_user", "opened_by": "sys_user", "closed_by": "sys_user",
    "resolved_by": "sys_user", "requested_by": "sys_user", "sys_domain": "sys_user_group",
    "assignment_group": "sys_user_group", "cmdb_ci": "cmdb_ci", "company": "core_company",
    "location": "cmn_location", "problem_id": "problem", "rfc": "change_request", "parent": "task",
    "business_service": "cmdb_ci_service", "caused_by": "change_request",
}  # fmt: skip


def _merged() -> dict[str, dict[str, str]]:
    tables: dict[str, dict[str, str]] = {
        t: dict(_TASK_REFERENCES) for t in ("task", "incident", "problem", "change_request", "sc_req_item")
    }
    tables["sys_user"] = {
        "manager": "sys_user",
        "department": "cmn_department",
        "company": "core_company",
        "location": "cmn_location",
    }
    tables["sys_user_group"] = {"manager": "sys_user", "parent": "sys_user_group"}
    tables["sys_update_xml"] = {"update_set": "sys_update_set"}
    tables["sys_update_set"] = {"parent": "sys_update_set"}
    for table, fields in REFERENCES.items():  # the emulator's schema
        tables.setdefault(table, {}).update(fields)
    return tables  # fmt: skip


REFERENCE_FIELDS: Final[dict[str, dict[str, str]]] = _merged()
"""``{table: {reference field: target table}}`` for well-known tables."""

CHOICE_FIELDS: Final[dict[str, frozenset[str]]] = {
    **{t: frozenset({"state", "priority", "urgency", "impact", "category", "close_code", "type", "risk",
                     "incident_state", "approval"})
       for t in ("task", "incident", "problem", "change_request", "sc_req_item")},
    "sys_update_set": frozenset({"state"}),
    "sys_update_xml": frozenset({"action"}),
}  # fmt: skip
"""``{table: choice fields}`` for well-known tables."""


class UnknownDotWalk(ValueError):
    """A dot-walk passes through a field not known to be a reference; the message says which."""


def walk(table: str, path: str) -> list[str]:
    """The tables a dot-walked ``path`` reads beyond ``table``, in order.

    >>> walk("incident", "assignment_group.manager.email")
    ['sys_user_group', 'sys_user']

    :raises UnknownDotWalk: a segment other than the last is not a known reference field.
    """
    reached: list[str] = []
    current = table
    for name in path.split(".")[:-1]:
        target = REFERENCE_FIELDS.get(current, {}).get(name)
        if target is None:
            known = ", ".join(sorted(REFERENCE_FIELDS.get(current, {}))) or "none"
            raise UnknownDotWalk(
                f"dot-walk {path!r}: {name!r} is not a known reference field of table {current!r}, so the "
                f"table it reaches cannot be authorized; known reference fields of {current}: {known}"
            )
        reached.append(target)
        current = target
    return reached


def _cell(value: Any) -> tuple[str, str, bool]:
    """(raw value, display value, carries a reference link) of one field as the instance sent it."""
    if isinstance(value, Mapping):
        raw = value.get("value", value.get("display_value", ""))
        display = value.get("display_value", raw)
        return str(raw if raw is not None else ""), str(display if display is not None else ""), "link" in value
    text = "" if value is None else value if isinstance(value, str) else str(value)
    return text, text, False


def raw(value: Any) -> str:
    """The raw value of a normalised field, whichever shape it has (``""`` for anything else)."""
    if isinstance(value, Mapping):
        value = value.get("value")
    return value if isinstance(value, str) else ""


def normalise(table: str, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Records in the plugin's one shape (see the module docstring).

    A field is rich (``{"value", "display_value"}``) when it is a known reference or choice field
    of ``table``, or when any record of this batch carries a reference link or a display value
    different from its value for it; so within one answer every record has the same types.
    """
    cells = [{name: _cell(value) for name, value in record.items()} for record in records]
    rich = set(REFERENCE_FIELDS.get(table, {})) | set(CHOICE_FIELDS.get(table, ()))
    for row in cells:
        rich.update(name for name, (raw, display, link) in row.items() if link or raw != display)
    return [
        {name: {"value": raw, "display_value": display} if name in rich else raw
         for name, (raw, display, _) in row.items()}
        for row in cells
    ]  # fmt: skip
