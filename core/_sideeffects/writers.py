"""The standard library's C code that writes files without an "open" audit event (tester
twenty-nine F2), and what each would write.

- ``sqlite3.connect`` raises its own event (``sqlite3.connect``, the database as given), so it is
  judged at both levels: a database that does not exist yet is a new file (:func:`created_database`);
  one that exists is opened, and what is written through the connection is not followed. A
  connection made in a read (its ``sqlite3.connect/handle`` event) gets an authorizer
  (:func:`guard_attaches`): ``ATTACH DATABASE`` and ``VACUUM INTO`` (which SQLite reports as an
  ATTACH) of a file are judged as ``sqlite3.connect`` of it would be (tester thirty-two F6). The
  event comes before the connection can take one, so it is given where ``sqlite3.connect`` returns
  (wrapped process-wide, :mod:`.files`' ``_patch_sqlite3``) and a connection made in a read any
  other way (``sqlite3.Connection(...)``) is refused. Not followed: at the audit-hook level alone
  (nothing patched); a connection made before the read; one whose authorizer the read's code
  replaces (``set_authorizer(None)``: SQLite has no way to keep it).
- ``readline.write_history_file`` and ``append_history_file`` write through the readline library,
  ``_tkinter.create`` makes a Tcl interpreter whose own code writes files and starts processes:
  no event at all, so wrapped process-wide only, when imported (:mod:`.files`'
  ``patch_unaudited``); a Tcl interpreter made before the read and used in it is not followed.
- Not found here: ``dbm.ndbm``/``dbm.gnu`` (``_dbm``/``_gdbm`` are not built in this interpreter;
  ``dbm.dumb`` writes with ``open``); ``curses``' ``putwin`` writes to a file object (opened with
  ``open``); ``mmap`` writes through a descriptor opened before (judged at its open);
  ``ssl.SSLContext.keylog_filename`` raises "open".
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from typing import Any, Final

SQLITE_ATTACH: Final = 24
"""``sqlite3.SQLITE_ATTACH``, the authorizer's action code (the module is not imported for it)."""
SQLITE_OK: Final = 0
SQLITE_DENY: Final = 1

READLINE_WRITERS = (("write_history_file", 0), ("append_history_file", 1))
"""``(name, index of its filename argument)``: ``None`` or absent writes ``~/.history``."""


def created_database(database: str | None) -> str | None:
    """The file ``sqlite3.connect(database)`` would create, or ``None``: an in-memory or temporary
    database (``":memory:"``, ``""``), a read-only or in-memory URI (``file:...?mode=ro``), a
    database that exists. A ``file:`` name is read as a URI (the event does not say whether
    ``uri=True``; either way its path lands where a relative or absolute file would)."""
    if database is None or database in ("", ":memory:"):
        return None
    path = database
    if database.startswith("file:"):
        parts = urllib.parse.urlsplit(database)
        modes = urllib.parse.parse_qs(parts.query).get("mode", [])
        if any(m in ("ro", "memory") for m in modes):
            return None
        path = urllib.parse.unquote(parts.path)
        if path in ("", ":memory:"):
            return None
    return None if os.path.exists(path) else path


def guard_attaches(connection: Any, judge: Callable[[str], None]) -> None:
    """Give ``connection`` (an ``sqlite3.Connection`` made in a read) an authorizer that judges each
    ``ATTACH DATABASE`` and ``VACUUM INTO`` of a file it would create: ``judge(path)`` records the
    attempt and raises to refuse it, and the statement is then denied (SQLite raises
    ``sqlite3.DatabaseError``, "authorization denied" or "not authorized"; the scope keeps the
    refusal). Every other action is allowed."""

    def authorizer(action: int, first: str | None, *_: object) -> int:
        if action != SQLITE_ATTACH or (created := created_database(first)) is None:
            return SQLITE_OK
        try:
            judge(created)
        except Exception:  # SideEffectRefused: SQLite cannot carry it, the scope holds it
            return SQLITE_DENY
        return SQLITE_OK

    connection.set_authorizer(authorizer)
