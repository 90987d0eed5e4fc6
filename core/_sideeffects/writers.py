"""The standard library's C code that writes files without an "open" audit event (tester
twenty-nine F2), and what each would write.

- ``sqlite3.connect`` raises its own event (``sqlite3.connect``, the database as given), so it is
  judged at both levels: a database that does not exist yet is a new file (:func:`created_database`);
  one that exists is opened, and what is written through the connection is not followed.
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
