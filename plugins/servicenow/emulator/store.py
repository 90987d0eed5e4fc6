"""One emulated instance's data and what reads it: tables, tokens, the request log, queued faults.

:class:`Store` holds the state behind one lock. Methods that say "call with the lock held" expect
``with store.lock:`` around them (several of them make one consistent answer); the others take
the lock themselves. Row-level visibility for user tokens (:meth:`Store.visible`) and the values
a record renders to (:meth:`Store.render`: raw, display or both, reference links) live here too,
since both read other tables.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp_providers.plugins.servicenow.emulator.encoded_query import ParsedQuery, Term, as_number, compare
from mcp_providers.plugins.servicenow.emulator.faults import Fault, LoggedRequest
from mcp_providers.plugins.servicenow.seed import REFERENCES

__all__ = ["Record", "Scope", "Store", "Token", "now_text"]

Record = dict[str, str]

_CHOICES: dict[str, dict[str, dict[str, str]]] = {
    "incident": {
        "state": {"1": "New", "2": "In Progress", "3": "On Hold", "6": "Resolved", "7": "Closed", "8": "Canceled"},
        "priority": {"1": "1 - Critical", "2": "2 - High", "3": "3 - Moderate", "4": "4 - Low", "5": "5 - Planning"},
        "urgency": {"1": "1 - High", "2": "2 - Medium", "3": "3 - Low"},
        "impact": {"1": "1 - High", "2": "2 - Medium", "3": "3 - Low"},
    },
    "problem": {"state": {"101": "New", "102": "Assess", "103": "Root Cause Analysis", "107": "Closed"}},
    "change_request": {"state": {"-5": "New", "-4": "Assess", "-2": "Scheduled", "0": "Review", "3": "Closed"}},
}
_DISPLAY_FIELD = {"sys_user": "name", "sys_user_group": "name", "sys_update_set": "name", "sys_db_object": "label"}
_NUMBER_PREFIX = {"incident": "INC", "problem": "PRB", "change_request": "CHG"}
_JOURNAL_FIELDS = ("comments", "work_notes")
_READ_ONLY = ("sys_id", "sys_created_on", "sys_created_by", "sys_updated_by")
_EXTRA_COLUMNS = {
    "sys_journal_field": ("sys_id", "name", "element", "element_id", "value", "sys_created_on", "sys_created_by"),
}


def now_text() -> str:
    """The current UTC time as ServiceNow writes it: ``YYYY-MM-DD HH:MM:SS``."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")


@dataclass(slots=True)
class Token:
    """One issued access token: its client, its user (password grant), when it expires
    (monotonic seconds) and the refresh token issued with it."""

    client_id: str
    user: str | None
    expires_at: float
    refresh_token: str | None = None
    acting: str | None = None  # the sys_user user_name of a JWT bearer grant's token


@dataclass(frozen=True, slots=True)
class Scope:
    """What a user token may read: incidents of ``groups`` (sys_ids), or everything if ``admin``."""

    user_name: str
    admin: bool
    groups: frozenset[str]


@dataclass(slots=True)
class Store:
    """The state of one instance; see the module docstring for the locking rule.

    :param tables: ``{table: [record, ...]}``, string values (taken, not copied).
    """

    tables: dict[str, list[Record]]
    columns: dict[str, set[str]] = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)
    faults: deque[Fault] = field(default_factory=deque)
    requests: list[LoggedRequest] = field(default_factory=list)
    tokens: dict[str, Token] = field(default_factory=dict)
    refresh_tokens: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    hidden: dict[str, set[str]] = field(default_factory=dict)
    seen_jti: set[str] = field(default_factory=set)
    rate_limit_seconds: float | None = None
    rate_limited_until: float | None = None

    def __post_init__(self) -> None:
        self.columns = {name: {k for row in rows for k in row} for name, rows in self.tables.items()}
        for name, extra in _EXTRA_COLUMNS.items():
            self.columns.setdefault(name, set()).update(extra)
            self.tables.setdefault(name, [])

    # -- log, faults, rate limit (each takes the lock)

    def log(self, entry: LoggedRequest) -> None:
        """Append ``entry`` to the request log."""
        with self.lock:
            self.requests.append(entry)

    def next_fault(self, scope: str) -> Fault | None:
        """Take the oldest queued fault that applies to ``scope`` (``"table"`` or ``"oauth"``)."""
        with self.lock:
            for index, fault in enumerate(self.faults):
                if fault.scope in (scope, "any"):
                    del self.faults[index]
                    return fault
        return None

    def rate_limited(self) -> float | None:
        """Seconds left while the rate-limit rule's window is open, else ``None`` (a request
        opens the window; the first one after it spends the rule)."""
        with self.lock:
            if self.rate_limit_seconds is None:
                return None
            now = time.monotonic()
            if self.rate_limited_until is None:
                self.rate_limited_until = now + self.rate_limit_seconds
            elif now >= self.rate_limited_until:
                self.rate_limit_seconds = self.rate_limited_until = None
                return None
            return self.rate_limited_until - now

    # -- users and visibility (call with the lock held)

    def scope_of(self, user_name: str) -> Scope | None:
        """The row-level scope of an active ``sys_user``; ``None`` if the user is unknown or inactive."""
        user = next((u for u in self.tables.get("sys_user", []) if u.get("user_name") == user_name), None)
        if user is None or user.get("active") != "true":
            return None
        roles = {r.strip() for r in user.get("roles", "").split(",")}
        members = self.tables.get("sys_user_grmember", [])
        groups = frozenset(m.get("group", "") for m in members if m.get("user") == user["sys_id"])
        return Scope(user_name, "admin" in roles, groups)

    def visible(self, table: str, row: Record, scope: Scope | None) -> bool:
        """Whether a caller of ``scope`` may read ``row``."""
        if scope is None or scope.admin:
            return True
        if table == "incident":
            return row.get("assignment_group", "") in scope.groups
        if table == "sys_journal_field" and row.get("name") == "incident":
            parent = self.find("incident", row.get("element_id", ""))
            return parent is not None and self.visible("incident", parent, scope)
        return True

    # -- reading (call with the lock held)

    def find(self, table: str, sys_id: str) -> Record | None:
        """The row of ``table`` with ``sys_id``, if any (visibility not applied)."""
        return next((r for r in self.tables.get(table, []) if r.get("sys_id") == sys_id), None)

    def select(self, table: str, rows: list[Record], parsed: ParsedQuery, scope: Scope | None) -> list[Record]:
        """The rows matching ``parsed`` that ``scope`` may read, sorted."""
        matched = [row for row in rows if self.visible(table, row, scope) and self._matches(table, row, parsed, scope)]
        for name, descending in reversed(parsed.orders):
            matched.sort(key=functools.partial(self._sort_key, table, field=name, scope=scope), reverse=descending)
        return matched

    def lookup(self, table: str, row: Record, path: str, scope: Scope | None = None) -> str | None:
        """Raw value of ``path`` (one level of dot-walking); ``None`` for an unknown field. A walk to
        a record ``scope`` may not read gives ``""``, as a walk to a missing one does."""
        name, _, rest = path.partition(".")
        if name not in self.columns.get(table, ()):
            return None
        value = row.get(name, "")
        if not rest:
            return value
        target_table = REFERENCES.get(table, {}).get(name)
        if target_table is None:
            return None
        target = self.find(target_table, value)
        readable = target is not None and self.visible(target_table, target, scope)
        return target.get(rest, "") if target is not None and readable else ""

    def display(self, table: str, name: str, value: str, scope: Scope | None) -> str:
        """The display value of field ``name`` holding ``value``: a reference's display field
        (empty when unreadable), a choice's label, else the value itself."""
        target_table = REFERENCES.get(table, {}).get(name)
        if target_table is not None:
            target = self.find(target_table, value)
            field_name = _DISPLAY_FIELD.get(target_table, "number")
            readable = target is not None and self.visible(target_table, target, scope)
            return target.get(field_name, "") if target is not None and readable else ""
        return _CHOICES.get(table, {}).get(name, {}).get(value, value)

    def render(self, table: str, row: Record, params: Mapping[str, str], base_url: str,
               scope: Scope | None) -> dict[str, Any]:  # fmt: skip
        """``row`` as the Table API answers it for ``params`` (``sysparm_display_value``,
        ``sysparm_exclude_reference_link``, ``sysparm_fields``); links start with ``base_url``."""
        mode = params.get("sysparm_display_value", "false").lower()
        exclude_link = params.get("sysparm_exclude_reference_link", "false").lower() == "true"
        wanted = [f.strip() for f in params.get("sysparm_fields", "").split(",") if f.strip()]
        out: dict[str, Any] = {}
        for name in wanted or list(row):
            value = self.lookup(table, row, name, scope)
            if value is None:
                continue
            ref = REFERENCES.get(table, {}).get(name) if "." not in name else None
            link = f"{base_url}/api/now/table/{ref}/{value}" if ref and value and not exclude_link else None
            if mode == "true":
                display = self.display(table, name, value, scope) if "." not in name else value
                out[name] = {"display_value": display, "link": link} if link else display
            elif mode == "all":
                display = self.display(table, name, value, scope) if "." not in name else value
                cell: dict[str, str] = {"display_value": display, "value": value}
                if link:
                    cell["link"] = link
                out[name] = cell
            else:
                out[name] = {"link": link, "value": value} if link else value
        return out

    def _matches(self, table: str, row: Record, parsed: ParsedQuery, scope: Scope | None) -> bool:
        if not parsed.groups:
            return True
        return any(all(self._clause(table, row, clause, scope) for clause in group) for group in parsed.groups)

    def _clause(self, table: str, row: Record, clause: tuple[Term, ...], scope: Scope | None) -> bool:
        results = []
        for term in clause:
            actual = self.lookup(table, row, term.field, scope)
            # an unknown field makes the term invalid; ServiceNow ignores invalid terms by default
            results.append(True if actual is None else compare(term.operator, actual, term.value))
        return any(results)

    def _sort_key(self, table: str, row: Record, *, field: str, scope: Scope | None) -> tuple[int, float, str]:
        value = self.lookup(table, row, field, scope) or ""
        number = as_number(value)
        return (0, number, "") if number is not None else (1, 0.0, value)

    # -- writing (call with the lock held)

    def new_row(self, table: str, scope: Scope | None) -> Record:
        """A fresh row of ``table`` (not yet stored): every known column empty, a new sys_id, the
        next number for incident, problem and change_request, ``sys_created_by`` for a user token."""
        now = now_text()
        row: Record = dict.fromkeys(self.columns[table], "")
        row.update({"sys_id": uuid.uuid4().hex, "sys_created_on": now, "sys_updated_on": now})
        if table in _NUMBER_PREFIX:
            prefix = _NUMBER_PREFIX[table]
            rows = self.tables[table]
            taken = [int(r["number"][len(prefix) :]) for r in rows if r.get("number", "").startswith(prefix)]
            row["number"] = f"{prefix}{(max(taken) + 1 if taken else 10001):07d}"
            row["active"] = "true"
            row["state"] = "1" if table == "incident" else row.get("state", "")
        if scope is not None:
            self.columns[table].add("sys_created_by")
            row["sys_created_by"] = scope.user_name
        return row

    def write(self, table: str, row: Record, values: Mapping[str, Any], *, scope: Scope | None,
              principal: str | None) -> None:  # fmt: skip
        """Apply supplied fields (unknown ones are ignored, as ServiceNow does); journal fields append.

        A user token's write is stamped with its user_name (``sys_updated_by``, the journal's
        ``sys_created_by``); a service account's journal entry carries its logged ``principal``."""
        columns = self.columns[table]
        now = now_text()
        author = scope.user_name if scope is not None else principal or ""
        for name, value in values.items():
            text = value if isinstance(value, str) else json.dumps(value)
            if name in _JOURNAL_FIELDS:
                if text:
                    self.tables["sys_journal_field"].append({
                        "sys_id": uuid.uuid4().hex, "name": table, "element": name, "element_id": row["sys_id"],
                        "value": text, "sys_created_on": now, "sys_created_by": author,
                    })  # fmt: skip
                continue
            if name in columns and name not in _READ_ONLY:
                row[name] = text
        if table == "incident" and row.get("state") in ("6", "7", "8"):
            row["active"] = "false"
        row["sys_updated_on"] = now
        if scope is not None:
            columns.add("sys_updated_by")
            row["sys_updated_by"] = scope.user_name
