"""Seed data for the Table API emulator: two instances, ``dev`` and ``prod``, with different data.

All values are strings, as the real Table API returns them; reference fields hold the target's
sys_id. sys_ids are derived from the instance, table and position, so they are stable across runs
and differ between instances. By instance:

========  =========  ========  ===============  ===================================
instance  incidents  problems  change requests  update sets (sys_update_xml records)
========  =========  ========  ===============  ===================================
dev       12         4         3                3 (250, 7, 0)
prod      9          3         5                2 (130, 12)
========  =========  ========  ===============  ===================================

Incident numbers start at ``INC0010001`` on both instances, but the records differ (each short
description names its instance), so a read served by the wrong instance is visible.

People (``sys_user``, the same on both instances; ``sys_user_grmember`` puts them in groups;
``roles`` is a comma-separated list of role names). Incident ``i`` (0-based) is assigned to group
``i % 3``, so on ``dev`` Service Desk has INC0010001/04/07/10, Network INC0010002/05/08/11 and
Database INC0010003/06/09/12 (on ``prod``: 01/04/07, 02/05/08, 03/06/09):

=============  ======================  ======  ==========  =========================
user_name      email                   active  roles       groups
=============  ======================  ======  ==========  =========================
alice          alice@example.test      true    itil        Service Desk, Network
bob            bob@example.test        true    itil        Service Desk, Database
carol          carol@example.test      true    admin,itil  (none: admin sees all)
dan            dan@example.test        false   itil        Service Desk
abel.tuter     abel.tuter@<inst>...    true    itil        Service Desk (its manager)
beth.anglin    beth.anglin@<inst>...   true    itil        Network (its manager)
charlie...     charlie...@<inst>...    true    itil        Database (its manager)
david.loo      david.loo@<inst>...     true    itil        (none)
=============  ======================  ======  ==========  =========================

The emails of alice and bob are those of the test identity provider's accounts
(``tests/identity/identity_support.py``), so a JWT bearer assertion with ``sub`` = the caller's
email maps to them.
"""

from __future__ import annotations

import hashlib
from typing import Final

__all__ = ["PEOPLE", "REFERENCES", "TABLE_LABELS", "seed_tables", "sys_id_for"]

Record = dict[str, str]

REFERENCES: Final[dict[str, dict[str, str]]] = {
    "incident": {
        "assigned_to": "sys_user",
        "caller_id": "sys_user",
        "assignment_group": "sys_user_group",
        "parent_incident": "incident",
    },
    "problem": {"assigned_to": "sys_user"},
    "change_request": {"assigned_to": "sys_user"},
    "sys_update_xml": {"update_set": "sys_update_set"},
    "sys_user_group": {"manager": "sys_user"},
    "sys_user_grmember": {"user": "sys_user", "group": "sys_user_group"},
    "sys_db_object": {"super_class": "sys_db_object"},
    "sys_journal_field": {},
}
"""Reference fields per table: ``{table: {field: referenced table}}``."""

TABLE_LABELS: Final[dict[str, str]] = {
    "task": "Task",
    "incident": "Incident",
    "problem": "Problem",
    "change_request": "Change Request",
    "sys_update_set": "Local Update Set",
    "sys_update_xml": "Customer Update",
    "sys_user": "User",
    "sys_user_group": "Group",
    "sys_user_grmember": "Group Member",
    "sys_db_object": "Table",
    "sys_journal_field": "Journal Entry",
}

_TASK_TABLES = ("incident", "problem", "change_request")
_XML_TYPES = ("Business Rule", "Client Script", "Script Include", "UI Policy", "Form Layout", "Dictionary")


def sys_id_for(instance: str, table: str, index: int) -> str:
    """The seeded sys_id of row ``index`` of ``table`` on ``instance`` (32 lowercase hex)."""
    return hashlib.md5(f"{instance}/{table}/{index}".encode(), usedforsecurity=False).hexdigest()


def _stamp(day: int, minute: int) -> str:
    return f"2026-10-{day:02d} {8 + minute // 60:02d}:{minute % 60:02d}:00"


_STAFF = ("Abel Tuter", "Beth Anglin", "Charlie Whitherspoon", "David Loo")

PEOPLE: Final[tuple[tuple[str, str, bool, str, tuple[int, ...]], ...]] = (
    ("alice", "Alice Example", True, "itil", (0, 1)),
    ("bob", "Bob Example", True, "itil", (0, 2)),
    ("carol", "Carol Example", True, "admin,itil", ()),
    ("dan", "Dan Example", False, "itil", (0,)),
)
"""The people acting through the JWT bearer grant: ``(user_name, name, active, roles, group
indexes)``; their email is ``<user_name>@example.test`` on every instance."""


def _user(instance: str, index: int, user_name: str, name: str, email: str, active: bool, roles: str) -> Record:
    return {
        "sys_id": sys_id_for(instance, "sys_user", index),
        "user_name": user_name,
        "name": name,
        "email": email,
        "active": "true" if active else "false",
        "roles": roles,
        "sys_created_on": _stamp(1, index),
        "sys_updated_on": _stamp(1, index),
    }


def _users(instance: str) -> list[Record]:
    rows = []
    for i, full in enumerate(_STAFF):
        user_name = full.lower().replace(" ", ".")
        rows.append(_user(instance, i, user_name, f"{full} ({instance})", f"{user_name}@{instance}.example.com",
                          True, "itil"))  # fmt: skip
    for j, (user_name, full, active, roles, _) in enumerate(PEOPLE, start=len(_STAFF)):
        rows.append(_user(instance, j, user_name, full, f"{user_name}@example.test", active, roles))
    return rows


def _groups(instance: str) -> list[Record]:
    return [
        {
            "sys_id": sys_id_for(instance, "sys_user_group", i),
            "name": f"{name} ({instance})",
            "manager": sys_id_for(instance, "sys_user", i),
            "active": "true",
            "sys_created_on": _stamp(1, 30 + i),
            "sys_updated_on": _stamp(1, 30 + i),
        }
        for i, name in enumerate(["Service Desk", "Network", "Database"])
    ]


def _memberships(instance: str) -> list[Record]:
    pairs = [(i, i) for i in range(3)]  # each group's manager is a member
    pairs += [(len(_STAFF) + j, g) for j, person in enumerate(PEOPLE) for g in person[4]]
    return [
        {
            "sys_id": sys_id_for(instance, "sys_user_grmember", n),
            "user": sys_id_for(instance, "sys_user", user),
            "group": sys_id_for(instance, "sys_user_group", group),
            "sys_created_on": _stamp(1, 40 + n),
            "sys_updated_on": _stamp(1, 40 + n),
        }
        for n, (user, group) in enumerate(pairs)
    ]


def _incidents(instance: str, count: int) -> list[Record]:
    topics = ["Email not syncing", "VPN drops every hour", "Printer offline on floor 3", "Password reset loop",
              "Disk nearly full on db01", "Slow ERP reports", "Laptop will not boot", "Wi-Fi auth failures",
              "Certificate expiring", "Teams calls choppy", "Badge reader broken", "Backup job failed"]  # fmt: skip
    rows = []
    for i in range(count):
        state = ("1", "2", "3", "2", "6", "7")[i % 6]
        rows.append({
            "sys_id": sys_id_for(instance, "incident", i),
            "number": f"INC{10001 + i:07d}",
            "short_description": f"[{instance}] {topics[i % len(topics)]}",
            "description": f"Seeded {instance} incident {i + 1}: {topics[i % len(topics)].lower()}.",
            "state": state,
            "priority": str(1 + i % 5),
            "urgency": str(1 + i % 3),
            "impact": str(1 + (i + 1) % 3),
            "category": ("network", "software", "hardware", "inquiry")[i % 4],
            "assigned_to": sys_id_for(instance, "sys_user", i % 4),
            "assignment_group": sys_id_for(instance, "sys_user_group", i % 3),
            "caller_id": sys_id_for(instance, "sys_user", (i + 1) % 4),
            "active": "false" if state in ("6", "7") else "true",
            "close_code": "Solved (Permanently)" if state in ("6", "7") else "",
            "close_notes": "Fixed in seed." if state in ("6", "7") else "",
            "comments": "",
            "work_notes": "",
            "sys_created_on": _stamp(2 + i, i),
            "sys_created_by": "admin",
            "sys_updated_on": _stamp(2 + i, i + 5),
            "sys_updated_by": "admin",
        })  # fmt: skip
    return rows


def _problems(instance: str, count: int) -> list[Record]:
    return [
        {
            "sys_id": sys_id_for(instance, "problem", i),
            "number": f"PRB{40001 + i:07d}",
            "short_description": f"[{instance}] Recurring fault {i + 1}",
            "state": ("101", "102", "103", "107")[i % 4],
            "priority": str(2 + i % 3),
            "assigned_to": sys_id_for(instance, "sys_user", i % 4),
            "active": "false" if i % 4 == 3 else "true",
            "sys_created_on": _stamp(3 + i, 10 + i),
            "sys_updated_on": _stamp(3 + i, 20 + i),
        }
        for i in range(count)
    ]


def _changes(instance: str, count: int) -> list[Record]:
    return [
        {
            "sys_id": sys_id_for(instance, "change_request", i),
            "number": f"CHG{30001 + i:07d}",
            "short_description": f"[{instance}] Planned change {i + 1}",
            "state": ("-5", "-4", "-2", "0", "3")[i % 5],
            "type": ("normal", "standard", "emergency")[i % 3],
            "risk": ("2", "3", "4")[i % 3],
            "priority": str(1 + i % 4),
            "assigned_to": sys_id_for(instance, "sys_user", i % 4),
            "start_date": _stamp(20 + i, 0),
            "end_date": _stamp(20 + i, 120),
            "active": "false" if i % 5 == 4 else "true",
            "sys_created_on": _stamp(4 + i, i),
            "sys_updated_on": _stamp(4 + i, 30 + i),
        }
        for i in range(count)
    ]


def _update_sets(instance: str, sizes: tuple[int, ...]) -> tuple[list[Record], list[Record]]:
    sets: list[Record] = []
    records: list[Record] = []
    for s, size in enumerate(sizes):
        set_id = sys_id_for(instance, "sys_update_set", s)
        sets.append({
            "sys_id": set_id,
            "name": f"[{instance}] Release 2026.{11 + s} ({size} changes)",
            "description": f"Seeded update set {s + 1} on {instance}",
            "state": "complete" if s == 1 else "in progress",
            "application": "global",
            "sys_created_on": _stamp(5 + s, 0),
            "sys_updated_on": _stamp(12 - s, s),  # the largest set is the most recently updated
        })  # fmt: skip
        for r in range(size):
            kind = _XML_TYPES[r % len(_XML_TYPES)]
            target = sys_id_for(instance, f"target/{s}", r)
            records.append({
                "sys_id": sys_id_for(instance, f"sys_update_xml/{s}", r),
                "update_set": set_id,
                "name": f"{kind.lower().replace(' ', '_')}_{target}",
                "type": kind,
                "target_name": f"{kind} {r + 1}",
                "action": "DELETE" if r % 17 == 16 else "INSERT_OR_UPDATE",
                "category": "customer",
                "application": "global",
                "payload": f"<?xml version=\"1.0\"?><record_update><sys_id>{target}</sys_id></record_update>",
                "sys_created_on": _stamp(5 + s, r % 600),
                "sys_updated_on": _stamp(5 + s, r % 600),
            })  # fmt: skip
    return sets, records


def _tables(instance: str) -> list[Record]:
    rows = []
    for i, (name, label) in enumerate(TABLE_LABELS.items()):
        rows.append({
            "sys_id": sys_id_for(instance, "sys_db_object", i),
            "name": name,
            "label": label,
            "super_class": sys_id_for(instance, "sys_db_object", 0) if name in _TASK_TABLES else "",
            "is_extendable": "true" if name == "task" else "false",
            "sys_created_on": _stamp(1, 0),
            "sys_updated_on": _stamp(1, 0),
        })  # fmt: skip
    return rows


# (incidents, problems, change requests, records per update set)
_SHAPES: Final[dict[str, tuple[int, int, int, tuple[int, ...]]]] = {
    "dev": (12, 4, 3, (250, 7, 0)),
    "prod": (9, 3, 5, (130, 12)),
}


def seed_tables(instance: str) -> dict[str, list[Record]]:
    """Fresh seeded tables for ``instance`` (``dev`` and ``prod`` differ; any other name gets the
    ``dev`` shape with its own sys_ids and descriptions).

    :returns: ``{table name: [record, ...]}`` for incident, problem, change_request,
        sys_update_set, sys_update_xml, sys_user, sys_user_group, sys_user_grmember, sys_db_object
        and sys_journal_field (empty).
    """
    incidents, problems, changes, sizes = _SHAPES.get(instance, _SHAPES["dev"])
    sets, xml = _update_sets(instance, sizes)
    return {
        "incident": _incidents(instance, incidents),
        "problem": _problems(instance, problems),
        "change_request": _changes(instance, changes),
        "sys_update_set": sets,
        "sys_update_xml": xml,
        "sys_user": _users(instance),
        "sys_user_group": _groups(instance),
        "sys_user_grmember": _memberships(instance),
        "sys_db_object": _tables(instance),
        "sys_journal_field": [],
    }
